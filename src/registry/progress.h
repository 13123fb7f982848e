// The progress of one pull as JSON lines: the pull worker writes one line
// per event to its progress descriptor, the supervisor reads them on its
// loop and turns them into the kubelet's events (Pulling, Pulled, Failed)
// and the container's waiting reason; `podvisor pull` prints them for a
// human. One format, parsed and formatted here, so writer and reader
// cannot drift.
//
//   {"event":"Resolving","image":"nginx:1.25"}
//   {"event":"Pulling","image":"nginx:1.25","reference":"docker.io/library/nginx:1.25"}
//   {"event":"Layer","diffId":"sha256:…","size":3145728,"bytes":1048576,"unpacked":false}
//   {"event":"Pulled","image":…,"reference":…,"manifestDigest":"sha256:…",
//    "imageId":"sha256:<config>","repoDigest":"docker.io/library/nginx@sha256:…",
//    "size":12345,"seconds":1.234,"secondsWaiting":1.234,"alreadyPresent":false}
//   {"event":"Failed","image":…,"reason":"ErrImagePull","message":"…"}
//
// A Layer line comes when a layer starts (bytes 0), at most every 250 ms
// while it downloads (the writer throttles), and once with
// "unpacked":true when it is in the store; a layer the store already has
// gets only that last line. Messages never hold credentials (the puller
// scrubs skopeo's words before they get here).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "common/result.h"

namespace podvisor::registry {

// The kubelet's reasons (pkg/kubelet/images/types.go).
constexpr std::string_view kReasonErrImagePull = "ErrImagePull";
constexpr std::string_view kReasonErrImageNeverPull = "ErrImageNeverPull";
constexpr std::string_view kReasonInvalidImageName = "InvalidImageName";

enum class ProgressKind { kResolving, kPulling, kLayer, kPulled, kFailed };

// "Resolving", "Pulling", "Layer", "Pulled", "Failed".
const char* ProgressKindName(ProgressKind kind);

struct ProgressEvent {
  ProgressKind kind = ProgressKind::kResolving;
  std::string image{};      // as the pod wrote it
  std::string reference{};  // normalised (Pulling, Pulled)
  // Layer
  std::string diff_id{};
  uint64_t layer_size = 0;  // the compressed blob's size
  uint64_t bytes = 0;       // read so far
  bool unpacked = false;
  // Pulled
  std::string manifest_digest{};
  std::string image_id{};     // the config's digest, as crictl shows an image id
  std::string repo_digest{};  // the kubelet's imageID
  uint64_t size = 0;          // compressed layers added up
  double seconds = 0;
  double seconds_waiting = 0;  // from the request, waiting for a worker included
  bool already_present = false;
  // Failed
  std::string reason{};
  std::string message{};

  friend bool operator==(const ProgressEvent&, const ProgressEvent&) = default;
};

// One line, '\n' included; only the fields of its kind.
std::string FormatProgressLine(const ProgressEvent& event);
// The inverse; an error for anything else (the worker's bug or a stranger
// on the descriptor), naming what is wrong.
Result<ProgressEvent> ParseProgressLine(std::string_view line);

// The kubelet's event messages (pkg/kubelet/images/image_manager.go).
std::string PullingEventMessage(std::string_view image);  // Pulling image "X"
// Successfully pulled image "X" in 1.234s (1.234s including waiting). Image
// size: N bytes.  — or, for an image already there, Container image "X"
// already present on machine.
std::string PulledEventMessage(const ProgressEvent& pulled);
std::string FailedEventMessage(std::string_view image, std::string_view message);
std::string NeverPullMessage(std::string_view image);
// Go's time.Duration printing, truncated to milliseconds: "512ms",
// "1.234s", "2m3.5s".
std::string GoDuration(double seconds);

// Writes lines to a descriptor, whole lines with one write(2) each, from
// any thread; Layer byte counts are throttled per layer.
class ProgressWriter {
 public:
  explicit ProgressWriter(int fd) : fd_(fd) {}
  // Writes the event; a Layer event that only moves its bytes is dropped
  // when the same layer's last line is younger than 250 ms.
  void Emit(const ProgressEvent& event);

 private:
  int fd_;
  std::mutex mutex_;
  std::map<std::string, std::chrono::steady_clock::time_point> last_layer_line_{};
};

}  // namespace podvisor::registry
