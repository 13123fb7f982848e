// Small helpers of the Task service's two files (task_service.cc,
// task_control.cc); internal to src/shim.
#pragma once

#include <fcntl.h>

#include <chrono>
#include <cstdint>
#include <string>

#include <google/protobuf/timestamp.pb.h>

#include "common/fd.h"
#include "common/result.h"
#include "process/spawn.h"
#include "shim/ttrpc_server.h"

namespace podvisor::shim {

inline int64_t WallNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

inline void SetExitedAt(google::protobuf::Timestamp* ts, int64_t ns) {
  ts->set_seconds(ns / 1000000000);
  ts->set_nanos(static_cast<int32_t>(ns % 1000000000));
}

// Parses a request's payload, or answers INVALID_ARGUMENT.
template <typename Message>
bool ParseRequest(Message& message, const std::string& payload, const Reply& reply) {
  if (message.ParseFromString(payload)) return true;
  reply.Fail(RpcCode::kInvalidArgument, "cannot parse " + message.GetTypeName());
  return false;
}

// A task's stdout or stderr fifo as a descriptor for a child, opened so
// that neither the open nor a later write can block the supervisor: a fifo
// nobody reads fills up, and then lines are dropped. "" is /dev/null.
inline Result<Fd> OpenStdout(const std::string& path) {
  if (path.empty()) return Fd();
  int fd = open(path.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return Error::FromErrno("opening " + path);
  return Fd(fd);
}

// An exec's stdin: read-only, so that the writer's close is an EOF; opened
// without blocking (the client has its writing end open already), then
// made blocking for the process.
inline Result<Fd> OpenStdin(const std::string& path) {
  if (path.empty()) return Fd();
  int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return Error::FromErrno("opening " + path);
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return Fd(fd);
}

inline int DescriptorOrNull(const Fd& fd) {
  return fd.valid() ? fd.get() : process::SpawnOptions::kDevNull;
}

}  // namespace podvisor::shim
