#include "shim/publisher.h"

#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <google/protobuf/any.pb.h>
#include <google/protobuf/message.h>
#include "common/log.h"

#include "process/spawn.h"

namespace podvisor::shim {

namespace {

constexpr int kMaxAttempts = 5;
constexpr auto kRetryDelay = std::chrono::seconds(1);

}  // namespace

Publisher::~Publisher() {
  if (running_.valid()) loop_.Remove(running_.pidfd());
  // An uncommitted ChildProcess is killed and reaped by its destructor.
}

void Publisher::Publish(const std::string& topic, const google::protobuf::Message& event) {
  google::protobuf::Any any;
  any.set_type_url(event.GetDescriptor()->full_name());
  any.set_value(event.SerializeAsString());
  queue_.push_back(Item{topic, any.SerializeAsString(), 0});
  Next();
}

void Publisher::Next() {
  if (running_.valid() || waiting_retry_ || queue_.empty()) return;
  Item& item = queue_.front();
  ++item.attempts;
  // The event goes through a memfd: a pipe would need its own writer on
  // the loop, and an Any is small.
  int fd = memfd_create("shim-event", MFD_CLOEXEC);
  if (fd < 0) {
    log::Error("publishing {}: memfd_create: {}", item.topic, std::strerror(errno));
    queue_.pop_front();
    Next();
    return;
  }
  Fd in(fd);
  if (write(fd, item.any.data(), item.any.size()) != static_cast<ssize_t>(item.any.size()) ||
      lseek(fd, 0, SEEK_SET) != 0) {
    log::Error("publishing {}: writing the memfd: {}", item.topic, std::strerror(errno));
    queue_.pop_front();
    Next();
    return;
  }
  auto child = process::Spawn({.argv = {binary_, "--address", address_, "publish", "--topic",
                                        item.topic, "--namespace", namespace_},
                               .stdin_fd = in.get(),
                               .stdout_fd = process::SpawnOptions::kDevNull,
                               .stderr_fd = process::SpawnOptions::kInherit});
  if (!child) {
    log::Error("publishing {}: {}", item.topic, child.error().message());
    queue_.pop_front();
    Next();
    return;
  }
  running_ = std::move(*child);
  if (auto added = loop_.Add(running_.pidfd(), EPOLLIN, [this](uint32_t) { OnExit(); }); !added) {
    log::Error("publishing {}: {}", item.topic, added.error().message());
    (void)running_.KillAndReap();
    queue_.pop_front();
  }
}

void Publisher::OnExit() {
  loop_.Remove(running_.pidfd());
  siginfo_t info{};
  int status =
      waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(running_.pidfd()), &info, WEXITED);
  bool ok = status == 0 && info.si_code == CLD_EXITED && info.si_status == 0;
  running_.Release();  // reaped above
  Item& item = queue_.front();
  if (ok) {
    ++published_;
    queue_.pop_front();
  } else if (item.attempts >= kMaxAttempts) {
    log::Error("publishing {}: gave up after {} attempts", item.topic, item.attempts);
    queue_.pop_front();
  } else {
    log::Warn("publishing {} failed (attempt {}), retrying in 1s", item.topic, item.attempts);
    waiting_retry_ = true;
    loop_.AddTimer(loop_.Now() + kRetryDelay, [this] {
      waiting_retry_ = false;
      Next();
    });
    return;
  }
  Next();
}

}  // namespace podvisor::shim
