#include "common/result.h"

#include <cstring>

namespace podvisor {

Error Error::FromErrno(std::string_view what, int err) {
  std::string msg(what);
  msg += ": ";
  msg += strerrorname_np(err) ? strerrorname_np(err) : "E?";
  msg += " (";
  msg += std::strerror(err);
  msg += ")";
  return Error(std::move(msg), err);
}

Error Error::Wrap(std::string_view context) const& {
  Error copy = *this;
  return std::move(copy).Wrap(context);
}

Error Error::Wrap(std::string_view context) && {
  std::string msg(context);
  msg += ": ";
  msg += message_;
  message_ = std::move(msg);
  return std::move(*this);
}

}  // namespace podvisor
