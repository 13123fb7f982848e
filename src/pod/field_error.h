// Validation errors in the form the Kubernetes API server (and so kubectl)
// prints them: "<field path>: <type>: <value>: <detail>", e.g.
//   spec.containers[0].name: Invalid value: "App": a lowercase RFC 1123 label ...
//   spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", ...
//   spec.containers: Required value
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace podvisor::pod {

enum class FieldErrorType {
  kRequired,     // "Required value"
  kInvalid,      // "Invalid value"
  kUnsupported,  // "Unsupported value"
  kDuplicate,    // "Duplicate value"
  kForbidden,    // "Forbidden"
  kNotFound,     // "Not found"
  kTooLong,      // "Too long"
  kTypeInvalid,  // "Invalid value" for a value of the wrong JSON type
};

std::string_view FieldErrorTypeName(FieldErrorType type);

struct FieldError {
  FieldErrorType type;
  std::string field;  // "spec.containers[0].name"
  std::string value;  // already quoted when it is a string: "\"App\""; may be empty
  std::string detail;

  // The kubectl line.
  std::string ToString() const;
};

// Quotes a string value the way Go's %q does for the printable ASCII case.
std::string QuoteValue(std::string_view v);

// Warnings are plain lines: "spec.containers[0].foo: unknown field".
struct FieldWarning {
  std::string field;
  std::string message;
  std::string ToString() const { return field + ": " + message; }
};

using FieldErrors = std::vector<FieldError>;
using FieldWarnings = std::vector<FieldWarning>;

// Builders that read like the API server's field.Required(...) etc.
FieldError Required(std::string field, std::string detail = {});
FieldError Invalid(std::string field, std::string value, std::string detail);
FieldError Unsupported(std::string field, std::string value,
                       const std::vector<std::string>& supported);
FieldError Duplicate(std::string field, std::string value);
FieldError Forbidden(std::string field, std::string detail);
FieldError NotFound(std::string field, std::string value);
FieldError TooLong(std::string field, std::size_t max);

}  // namespace podvisor::pod
