// What the other pods of the node hold (SEMANTICS S17.12), for the
// kubelet's Deferred resize: the requests allocated to the pods of the
// same state directory whose supervisors run, and a watcher that says
// when they may have changed, so that a deferred resize is tried again
// without polling.
//
// A pod counts while its supervisor answers on its control socket (a
// record left by a supervisor that died holds nothing) and its phase is
// not Succeeded or Failed. Its allocation is its kept record's: the
// spec's requests, with each container's status.allocatedResources where
// a resize left the spec asking for more than was allocated (S17.6).
// Pods of other state directories are not seen; the kubelet's periodic
// retry (every 3 minutes, the first after 30 s) covers what the watch
// cannot.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "common/fd.h"
#include "common/result.h"
#include "pod/resize.h"
#include "supervisor/loop/event_loop.h"

namespace podvisor::supervisor::executor {

// The sum of the effective requests allocated to the running pods under
// `state_root`, the pod `self` left out.
pod::NodeRequests OtherPodsAllocated(const std::filesystem::path& state_root,
                                     const std::string& self);

// The allocation a kept record (`status -o json`'s document) shows; an
// Error for a record that does not decode.
Result<pod::NodeRequests> RecordAllocation(const nlohmann::json& record);

class AllocationWatch {
 public:
  // Calls `changed` (from the loop) after any pod directory of
  // `state_root` but `self`'s was made or removed, or a record or control
  // socket in one of them was replaced or removed, and at the kubelet's
  // retry times; at most once per loop wakeup.
  static Result<std::unique_ptr<AllocationWatch>> Start(loop::EventLoop& loop,
                                                        std::filesystem::path state_root,
                                                        std::string self,
                                                        std::function<void()> changed);
  ~AllocationWatch();
  AllocationWatch(const AllocationWatch&) = delete;
  AllocationWatch& operator=(const AllocationWatch&) = delete;

  // The kubelet's pending-resize retry (allocation_manager.go).
  static constexpr std::chrono::seconds kFirstRetry{30};
  static constexpr std::chrono::seconds kRetryPeriod{180};

 private:
  AllocationWatch(loop::EventLoop& loop, std::filesystem::path state_root, std::string self,
                  std::function<void()> changed, Fd inotify);
  void WatchPodDir(const std::string& name);
  void OnReadable();
  void ArmRetry(std::chrono::seconds after);

  loop::EventLoop& loop_;
  std::filesystem::path state_root_;
  std::string self_;
  std::function<void()> changed_;
  Fd inotify_;
  std::map<int, std::string> pod_watches_;  // watch descriptor -> pod name
  loop::EventLoop::TimerId retry_ = 0;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace podvisor::supervisor::executor
