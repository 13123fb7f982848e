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

}  // namespace podvisor::pod
