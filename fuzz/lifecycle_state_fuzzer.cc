// libFuzzer target: any bytes as the Lifecycle's handover state (issue 30),
// restored for a fixed pod with every kind of container, probe and hook.
// The state comes from the previous supervisor's process, or a file it
// left beside the pod: whatever it holds must come back as a Lifecycle or
// an Error, never an exception, an abort or a sanitizer report, and an
// accepted one must survive Resume, its status and its own SaveState.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "supervisor/lifecycle/lifecycle.h"

namespace {

using namespace podvisor;
using namespace podvisor::supervisor::lifecycle;

pod::Container Container(std::string name) {
  pod::Container c;
  c.name = std::move(name);
  c.image = "busybox";
  return c;
}

pod::Probe ExecProbe() {
  pod::Probe p;
  p.handler.exec = pod::ExecAction{{"true"}};
  return p;
}

pod::Pod FuzzPod() {
  pod::LifecycleHandler sleep;
  sleep.handler.sleep = pod::SleepAction{1};
  pod::Container init = Container("init");
  pod::Container proxy = Container("proxy");
  proxy.restart_policy = pod::RestartPolicy::kAlways;  // a sidecar
  proxy.startup_probe = ExecProbe();
  proxy.readiness_probe = ExecProbe();
  pod::Container web = Container("web");
  web.liveness_probe = ExecProbe();
  web.readiness_probe = ExecProbe();
  web.lifecycle.emplace();
  web.lifecycle->post_start = sleep;
  web.lifecycle->pre_stop = sleep;
  pod::Container mesh = Container("mesh");
  mesh.lifecycle.emplace();
  mesh.lifecycle->type = pod::LifecycleType::kSidecar;  // a draft sidecar
  pod::Pod p;
  p.metadata.name = "fuzz";
  p.spec.init_containers = {init, proxy};
  p.spec.containers = {web, mesh, Container("worker")};
  p.spec.restart_policy = pod::RestartPolicy::kOnFailure;
  p.spec.termination_grace_period_seconds = 5;
  p.spec.active_deadline_seconds = 600;
  p.job = pod::JobLimits{3};
  return p;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const pod::Pod kPod = FuzzPod();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const nlohmann::json state = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (state.is_discarded()) return 0;
  Result<Lifecycle> restored = Lifecycle::RestoreState(kPod, {}, state);
  if (!restored.ok()) {
    (void)restored.error().message();
    return 0;
  }
  const Now now{MonoTime(std::chrono::seconds(20)), WallTime(std::chrono::seconds(1'700'000'000))};
  (void)restored->Resume(now);
  (void)pod::PodStatusToJson(restored->Status())
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  (void)restored->SaveState().dump();  // valid UTF-8 by construction: must not throw
  (void)restored->Handle(StopRequested{std::nullopt, std::chrono::seconds(1)}, now);
  (void)restored->Handle(TimerFired{TimerId{TimerKind::kGraceBudget, "", 0}}, now);
  return 0;
}
