#include "pod/model.h"

namespace podvisor::pod {

std::string_view RestartPolicyName(RestartPolicy p) {
  switch (p) {
    case RestartPolicy::kAlways:
      return "Always";
    case RestartPolicy::kOnFailure:
      return "OnFailure";
    case RestartPolicy::kNever:
      return "Never";
  }
  return "Always";
}

std::string_view TerminationMessagePolicyName(TerminationMessagePolicy p) {
  switch (p) {
    case TerminationMessagePolicy::kFile:
      return "File";
    case TerminationMessagePolicy::kFallbackToLogsOnError:
      return "FallbackToLogsOnError";
  }
  return "File";
}

std::string_view LifecycleTypeName(LifecycleType t) {
  switch (t) {
    case LifecycleType::kStandard:
      return "Standard";
    case LifecycleType::kSidecar:
      return "Sidecar";
  }
  return "Standard";
}

}  // namespace podvisor::pod
