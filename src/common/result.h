// Result<T> and Error: how every library folder reports failure.
//
// An Error carries the errno that caused it (0 when the cause is not a
// system call) and a context chain built on the way up, outermost first:
// "writing memory.max for pod web: open /sys/fs/cgroup/...: EACCES".
// Library code wraps and returns; only the supervisor and the CLI log.
#pragma once

#include <cerrno>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace podvisor {

class Error {
 public:
  Error() = default;
  explicit Error(std::string message, int err = 0) : message_(std::move(message)), errno_(err) {}

  // An error from a failed system call: the message gets ": <strerror>".
  static Error FromErrno(std::string_view what, int err = errno);

  // Prefixes context: Error("EACCES").Wrap("writing x") -> "writing x: EACCES".
  Error Wrap(std::string_view context) const&;
  Error Wrap(std::string_view context) &&;

  const std::string& message() const { return message_; }
  int code() const { return errno_; }

 private:
  std::string message_;
  int errno_ = 0;
};

// Result<T>: either a value or an Error. A tiny stand-in for C++23's
// std::expected that the toolchain here (g++ 12) lacks.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const { return std::get<1>(v_); }
  Error&& take_error() { return std::get<1>(std::move(v_)); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return error_; }
  Error&& take_error() { return std::move(error_); }

 private:
  Error error_;
  bool ok_ = true;
};

using Status = Result<void>;

inline Status Ok() {
  return {};
}

}  // namespace podvisor
