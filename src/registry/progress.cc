#include "registry/progress.h"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

namespace podvisor::registry {
namespace {

using Json = nlohmann::json;

constexpr auto kLayerLineInterval = std::chrono::milliseconds(250);

constexpr ProgressKind kAllKinds[] = {ProgressKind::kResolving, ProgressKind::kPulling,
                                      ProgressKind::kLayer, ProgressKind::kPulled,
                                      ProgressKind::kFailed};

}  // namespace

const char* ProgressKindName(ProgressKind kind) {
  switch (kind) {
    case ProgressKind::kResolving:
      return "Resolving";
    case ProgressKind::kPulling:
      return "Pulling";
    case ProgressKind::kLayer:
      return "Layer";
    case ProgressKind::kPulled:
      return "Pulled";
    case ProgressKind::kFailed:
      return "Failed";
  }
  return "?";
}

std::string FormatProgressLine(const ProgressEvent& e) {
  Json j = {{"event", ProgressKindName(e.kind)}};
  switch (e.kind) {
    case ProgressKind::kResolving:
      j["image"] = e.image;
      break;
    case ProgressKind::kPulling:
      j["image"] = e.image;
      j["reference"] = e.reference;
      break;
    case ProgressKind::kLayer:
      j["diffId"] = e.diff_id;
      j["size"] = e.layer_size;
      j["bytes"] = e.bytes;
      j["unpacked"] = e.unpacked;
      break;
    case ProgressKind::kPulled:
      j["image"] = e.image;
      j["reference"] = e.reference;
      j["manifestDigest"] = e.manifest_digest;
      j["imageId"] = e.image_id;
      j["repoDigest"] = e.repo_digest;
      j["size"] = e.size;
      j["seconds"] = e.seconds;
      j["secondsWaiting"] = e.seconds_waiting;
      j["alreadyPresent"] = e.already_present;
      break;
    case ProgressKind::kFailed:
      j["image"] = e.image;
      j["reason"] = e.reason;
      j["message"] = e.message;
      break;
  }
  // Invalid UTF-8 (a registry's words) is replaced, never a throw.
  return j.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
}

Result<ProgressEvent> ParseProgressLine(std::string_view line) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  Json j = Json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return Error("progress line is not a JSON object");
  ProgressEvent e;
  bool known = false;
  const std::string name = j.value("event", "");
  for (ProgressKind kind : kAllKinds) {
    if (name == ProgressKindName(kind)) {
      e.kind = kind;
      known = true;
    }
  }
  if (!known) return Error("progress line has an unknown event \"" + name + "\"");
  try {
    e.image = j.value("image", "");
    e.reference = j.value("reference", "");
    e.diff_id = j.value("diffId", "");
    if (e.kind == ProgressKind::kLayer) {
      e.layer_size = j.value<uint64_t>("size", 0);
    } else {
      e.size = j.value<uint64_t>("size", 0);
    }
    e.bytes = j.value<uint64_t>("bytes", 0);
    e.unpacked = j.value("unpacked", false);
    e.manifest_digest = j.value("manifestDigest", "");
    e.image_id = j.value("imageId", "");
    e.repo_digest = j.value("repoDigest", "");
    e.seconds = j.value("seconds", 0.0);
    e.seconds_waiting = j.value("secondsWaiting", 0.0);
    e.already_present = j.value("alreadyPresent", false);
    e.reason = j.value("reason", "");
    e.message = j.value("message", "");
  } catch (const Json::exception& ex) {
    return Error(std::string("progress line ") + name + ": " + ex.what());
  }
  if (e.kind == ProgressKind::kLayer && e.diff_id.empty()) {
    return Error("progress line Layer has no diffId");
  }
  if (e.kind == ProgressKind::kFailed && e.reason.empty()) {
    return Error("progress line Failed has no reason");
  }
  return e;
}

std::string GoDuration(double seconds) {
  auto ms = static_cast<int64_t>(std::floor(seconds * 1000.0 + 1e-6));
  if (ms <= 0) return "0s";
  if (ms < 1000) return std::to_string(ms) + "ms";
  // Go prints the fraction without trailing zeros: 1.5s, 1.234s, 2s.
  auto fraction = [](int64_t part_ms) {
    if (part_ms == 0) return std::string();
    char buf[8];
    std::snprintf(buf, sizeof buf, ".%03d", static_cast<int>(part_ms));
    std::string text = buf;
    while (text.back() == '0') text.pop_back();
    return text;
  };
  int64_t total_s = ms / 1000;
  std::string secs = std::to_string(total_s % 60) + fraction(ms % 1000) + "s";
  if (total_s < 60) return secs;
  int64_t minutes = total_s / 60;
  if (minutes < 60) return std::to_string(minutes) + "m" + secs;
  return std::to_string(minutes / 60) + "h" + std::to_string(minutes % 60) + "m" + secs;
}

std::string PullingEventMessage(std::string_view image) {
  return "Pulling image \"" + std::string(image) + "\"";
}

std::string PulledEventMessage(const ProgressEvent& pulled) {
  if (pulled.already_present) {
    return "Container image \"" + pulled.image + "\" already present on machine";
  }
  return "Successfully pulled image \"" + pulled.image + "\" in " + GoDuration(pulled.seconds) +
         " (" + GoDuration(pulled.seconds_waiting) +
         " including waiting). Image size: " + std::to_string(pulled.size) + " bytes.";
}

std::string FailedEventMessage(std::string_view image, std::string_view message) {
  return "Failed to pull image \"" + std::string(image) + "\": " + std::string(message);
}

std::string NeverPullMessage(std::string_view image) {
  return "Container image \"" + std::string(image) + "\" is not present with pull policy of Never";
}

void ProgressWriter::Emit(const ProgressEvent& event) {
  std::lock_guard lock(mutex_);
  if (event.kind == ProgressKind::kLayer) {
    auto now = std::chrono::steady_clock::now();
    auto [it, fresh] = last_layer_line_.try_emplace(event.diff_id, now);
    bool milestone = fresh || event.unpacked || event.bytes == 0 || event.bytes == event.layer_size;
    if (!milestone && now - it->second < kLayerLineInterval) return;
    it->second = now;
  }
  std::string line = FormatProgressLine(event);
  std::string_view rest = line;
  while (!rest.empty()) {
    ssize_t n = ::write(fd_, rest.data(), rest.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the reader is gone: the pull goes on, unreported
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
}

}  // namespace podvisor::registry
