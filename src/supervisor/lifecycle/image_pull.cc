// S16.5-S16.6: a container whose image could not be had. The kubelet
// keeps such a pod Pending and tries again with its image backoff, under
// every restartPolicy: no container existed, so nothing ran, nothing
// failed, and the restart count does not move.
#include <algorithm>

#include "supervisor/lifecycle/lifecycle.h"

namespace podvisor::supervisor::lifecycle {
namespace {

constexpr std::string_view kErrImagePull = "ErrImagePull";
constexpr std::string_view kImagePullBackOff = "ImagePullBackOff";

// The kubelet shows ErrImagePull until its next sync of the pod, which
// finds the image in backoff and says ImagePullBackOff. Its pod workers
// resync a failed pod after about 10 s; two seconds here keeps both
// reasons observable without making a user wait for the second.
constexpr Duration kShowBackOffAfter = std::chrono::seconds(2);

// The kubelet's image backoff (flowcontrol.Backoff with 10 s and 300 s):
// the first retry waits `initial`, each further one twice the last, capped
// at `max`. The supervisor's --backoff-initial and --backoff-max set both
// backoffs, as both default to the kubelet's same numbers.
Duration ImagePullDelay(const BackoffOptions& options, int failures) {
  Duration delay = options.initial;
  for (int i = 1; i < failures && delay < options.max; ++i) delay *= 2;
  return std::min(delay, options.max);
}

}  // namespace

void Lifecycle::OnImagePullFailed(const ImagePullFailed& e, Now now) {
  Container* c = Current(e.container, e.instance);
  // kAbandoned: the pod began terminating during the pull; done already.
  if (!c || c->state != RunState::kCreating) return;
  if (c->ahead) {
    // Not its turn yet (S1.1): the turn asks for the image again.
    c->ahead = false;
    c->state = RunState::kWaiting;
    return;
  }
  if (c->InRegularList() && !c->start_attempt_finished) {
    c->start_attempt_finished = true;  // S1.4: the next ones need not wait for this image
    StartCreatedRegulars();
  }
  c->image_pending = false;
  ++c->image_pull_failures;
  c->start_error = pod::ContainerStateWaiting{e.reason, e.message};
  if (e.reason == "ErrImageNeverPull") {
    AnnounceFor(*c, EventType::kWarning, "ErrImageNeverPull", e.message);
  } else {
    AnnounceFor(*c, EventType::kWarning, "Failed",
                "Failed to pull image \"" + c->spec.image + "\": " + e.message);
  }
  AnnounceFor(*c, EventType::kWarning, "Failed", "Error: " + e.reason);
  const Duration delay = ImagePullDelay(options_.backoff, c->image_pull_failures);
  c->state = RunState::kBackOff;
  c->backoff_delay = delay;
  c->restart_at = now.mono + delay;
  c->restart_timer_armed = true;
  Emit(ArmTimer{TimerId{TimerKind::kRestart, c->spec.name, c->NextInstance()}, c->restart_at});
  if (e.reason == kErrImagePull) {
    Emit(ArmTimer{TimerId{TimerKind::kImagePullBackOff, c->spec.name, c->instance},
                  now.mono + std::min(kShowBackOffAfter, delay)});
  }
}

void Lifecycle::OnImagePulling(const ImagePulling& e) {
  Container* c = Current(e.container, e.instance);
  if (c && c->state == RunState::kCreating) c->image_pending = true;
}

// S9.1, S16.5: waiting for its image, being pulled or in its backoff.
bool Lifecycle::WaitsForImage(const Container& c) const {
  if (c.state == RunState::kCreating) return c.image_pending;
  if (c.state != RunState::kBackOff || !c.start_error) return false;
  const std::string& reason = c.start_error->reason;
  return reason == kErrImagePull || reason == kImagePullBackOff || reason == "ErrImageNeverPull" ||
         reason == "InvalidImageName";
}

void Lifecycle::ShowImagePullBackOff(Container& c) {
  if (c.state != RunState::kBackOff || !c.start_error || c.start_error->reason != kErrImagePull) {
    return;
  }
  const std::string message = "Back-off pulling image \"" + c.spec.image + "\"";
  c.start_error = pod::ContainerStateWaiting{std::string(kImagePullBackOff), message};
  AnnounceFor(c, EventType::kNormal, "BackOff", message);
  AnnounceFor(c, EventType::kWarning, "Failed", "Error: " + std::string(kImagePullBackOff));
}

void Lifecycle::SetImageStopSignal(const std::string& container, int signo) {
  options_.image_stop_signals[container] = signo;
}

}  // namespace podvisor::supervisor::lifecycle
