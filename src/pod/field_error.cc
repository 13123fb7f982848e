#include "pod/field_error.h"

#include <cstdio>

namespace podvisor::pod {

std::string_view FieldErrorTypeName(FieldErrorType type) {
  switch (type) {
    case FieldErrorType::kRequired:
      return "Required value";
    case FieldErrorType::kInvalid:
    case FieldErrorType::kTypeInvalid:
      return "Invalid value";
    case FieldErrorType::kUnsupported:
      return "Unsupported value";
    case FieldErrorType::kDuplicate:
      return "Duplicate value";
    case FieldErrorType::kForbidden:
      return "Forbidden";
    case FieldErrorType::kNotFound:
      return "Not found";
    case FieldErrorType::kTooLong:
      return "Too long";
  }
  return "Invalid value";
}

std::string QuoteValue(std::string_view v) {
  std::string out = "\"";
  for (unsigned char c : v) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
  return out;
}

std::string FieldError::ToString() const {
  // Mirrors k8s.io/apimachinery/pkg/util/validation/field.Error.Error():
  // Required, Forbidden and TooLong print no value.
  std::string out = field;
  out += ": ";
  out += FieldErrorTypeName(type);
  bool show_value = type == FieldErrorType::kInvalid || type == FieldErrorType::kTypeInvalid ||
                    type == FieldErrorType::kUnsupported || type == FieldErrorType::kDuplicate ||
                    type == FieldErrorType::kNotFound;
  if (show_value && !value.empty()) {
    out += ": ";
    out += value;
  }
  if (!detail.empty()) {
    out += ": ";
    out += detail;
  }
  return out;
}

FieldError Required(std::string field, std::string detail) {
  return {FieldErrorType::kRequired, std::move(field), {}, std::move(detail)};
}

FieldError Invalid(std::string field, std::string value, std::string detail) {
  return {FieldErrorType::kInvalid, std::move(field), std::move(value), std::move(detail)};
}

FieldError Unsupported(std::string field, std::string value,
                       const std::vector<std::string>& supported) {
  std::string detail = "supported values: ";
  for (std::size_t i = 0; i < supported.size(); ++i) {
    if (i) detail += ", ";
    detail += QuoteValue(supported[i]);
  }
  return {FieldErrorType::kUnsupported, std::move(field), std::move(value), std::move(detail)};
}

FieldError Duplicate(std::string field, std::string value) {
  return {FieldErrorType::kDuplicate, std::move(field), std::move(value), {}};
}

FieldError Forbidden(std::string field, std::string detail) {
  return {FieldErrorType::kForbidden, std::move(field), {}, std::move(detail)};
}

FieldError NotFound(std::string field, std::string value) {
  return {FieldErrorType::kNotFound, std::move(field), std::move(value), {}};
}

FieldError TooLong(std::string field, std::size_t max) {
  return {FieldErrorType::kTooLong,
          std::move(field),
          {},
          "may not be more than " + std::to_string(max) + " bytes"};
}

}  // namespace podvisor::pod
