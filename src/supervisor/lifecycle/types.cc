#include "supervisor/lifecycle/types.h"

#include <cstdio>

#include "common/signal_names.h"

namespace podvisor::supervisor::lifecycle {

namespace {

std::string Ref(const std::string& container, int instance) {
  return container + "#" + std::to_string(instance);
}

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

}  // namespace

std::string_view HookKindName(HookKind kind) {
  switch (kind) {
    case HookKind::kPostStart:
      return "postStart";
    case HookKind::kPreStop:
      return "preStop";
  }
  return "?";
}

std::string_view ProbeKindName(ProbeKind kind) {
  switch (kind) {
    case ProbeKind::kStartup:
      return "startup";
    case ProbeKind::kReadiness:
      return "readiness";
    case ProbeKind::kLiveness:
      return "liveness";
  }
  return "?";
}

std::string_view RuntimeStepName(RuntimeStep step) {
  switch (step) {
    case RuntimeStep::kCreate:
      return "create";
    case RuntimeStep::kStart:
      return "start";
  }
  return "?";
}

std::string_view EventTypeName(EventType type) {
  switch (type) {
    case EventType::kNormal:
      return "Normal";
    case EventType::kWarning:
      return "Warning";
  }
  return "?";
}

std::string_view TimerKindName(TimerKind kind) {
  switch (kind) {
    case TimerKind::kActiveDeadline:
      return "ActiveDeadline";
    case TimerKind::kGraceBudget:
      return "GraceBudget";
    case TimerKind::kRestart:
      return "Restart";
    case TimerKind::kKillBudget:
      return "KillBudget";
    case TimerKind::kSigkill:
      return "Sigkill";
    case TimerKind::kImagePullBackOff:
      return "ImagePullBackOff";
  }
  return "?";
}

std::string ToString(const TimerId& id) {
  std::string out(TimerKindName(id.kind));
  if (!id.container.empty()) out += "(" + Ref(id.container, id.instance) + ")";
  return out;
}

std::string FormatMono(MonoTime t) {
  return FormatDuration(t.time_since_epoch());
}

std::string FormatDuration(Duration d) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  char buf[48];
  if (ms % 1000 == 0) {
    std::snprintf(buf, sizeof buf, "%llds", static_cast<long long>(ms / 1000));
  } else {
    std::snprintf(buf, sizeof buf, "%lld.%03llds", static_cast<long long>(ms / 1000),
                  static_cast<long long>(ms % 1000));
  }
  return buf;
}

std::string ToString(const Event& event) {
  return std::visit(
      Overloaded{
          [](const RuntimeCreated& e) {
            return "RuntimeCreated(" + Ref(e.container, e.instance) + ")";
          },
          [](const RuntimeStarted& e) {
            return "RuntimeStarted(" + Ref(e.container, e.instance) + ")";
          },
          [](const RuntimeFailed& e) {
            return "RuntimeFailed(" + Ref(e.container, e.instance) + ", " +
                   std::string(RuntimeStepName(e.step)) + ", " + e.message + ")";
          },
          [](const ContainerExited& e) {
            std::string out = "ContainerExited(" + Ref(e.container, e.instance) +
                              ", code=" + std::to_string(e.exit_code);
            if (e.signal != 0) out += ", " + SignalName(e.signal);
            if (e.oom_killed) out += ", oom";
            return out + ")";
          },
          [](const HookFinished& e) {
            return "HookFinished(" + Ref(e.container, e.instance) + ", " +
                   std::string(HookKindName(e.kind)) + ", " + (e.success ? "ok" : "failed") + ")";
          },
          [](const ProbeResult& e) {
            return "ProbeResult(" + Ref(e.container, e.instance) + ", " +
                   std::string(ProbeKindName(e.kind)) + ", " + (e.success ? "success" : "failure") +
                   ")";
          },
          [](const TimerFired& e) { return "TimerFired(" + ToString(e.id) + ")"; },
          [](const ImagePulling& e) {
            return "ImagePulling(" + Ref(e.container, e.instance) + ")";
          },
          [](const ResizeRestart& e) {
            return "ResizeRestart(" + Ref(e.container, e.instance) + ")";
          },
          [](const ImagePullFailed& e) {
            return "ImagePullFailed(" + Ref(e.container, e.instance) + ", " + e.reason + ")";
          },
          [](const AwaitedPods& e) {
            std::string out = "AwaitedPods(";
            for (std::size_t i = 0; i < e.not_ready.size(); ++i) {
              out += (i ? ", " : "") + e.not_ready[i];
            }
            return out + ")";
          },
          [](const StopRequested& e) {
            std::string out = "StopRequested(";
            out += e.reason ? *e.reason : "-";
            if (e.grace) {
              out += ", grace=" + FormatDuration(*e.grace);
            }
            return out + ")";
          },
      },
      event);
}

std::string ToString(const Action& action) {
  return std::visit(
      Overloaded{
          [](const CreateContainer& a) { return "Create(" + Ref(a.container, a.instance) + ")"; },
          [](const StartContainer& a) { return "Start(" + Ref(a.container, a.instance) + ")"; },
          [](const DeleteContainer& a) { return "Delete(" + Ref(a.container, a.instance) + ")"; },
          [](const SignalContainer& a) {
            return "Signal(" + Ref(a.container, a.instance) + ", " + SignalName(a.signo) + ")";
          },
          [](const RunHook& a) {
            std::string out = "RunHook(" + Ref(a.container, a.instance) + ", " +
                              std::string(HookKindName(a.kind));
            if (a.stop_reason) out += ", reason=" + *a.stop_reason;
            return out + ")";
          },
          [](const CancelHook& a) {
            return "CancelHook(" + Ref(a.container, a.instance) + ", " +
                   std::string(HookKindName(a.kind)) + ")";
          },
          [](const StartProbes& a) {
            std::string out = "StartProbes(" + Ref(a.container, a.instance) + ", " +
                              std::string(ProbeKindName(a.kind));
            if (a.resumed_result)
              out += *a.resumed_result ? ", resumed=success" : ", resumed=failure";
            return out + ")";
          },
          [](const StopProbes& a) {
            return "StopProbes(" + Ref(a.container, a.instance) + ", " +
                   std::string(ProbeKindName(a.kind)) + ")";
          },
          [](const ArmTimer& a) {
            return "ArmTimer(" + ToString(a.id) + ", " + FormatMono(a.deadline) + ")";
          },
          [](const CancelTimer& a) { return "CancelTimer(" + ToString(a.id) + ")"; },
          [](const Publish& a) {
            return "Publish(" + std::string(EventTypeName(a.type)) + " " + a.reason + " " +
                   a.object + ": " + a.message + ")";
          },
          [](const PodEnded& a) {
            return "PodEnded(" + std::string(pod::PodPhaseName(a.phase)) + ")";
          },
      },
      action);
}

}  // namespace podvisor::supervisor::lifecycle
