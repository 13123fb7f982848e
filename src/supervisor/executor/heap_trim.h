// supervisor::HeapTrim: gives setup's and churn's memory back to the
// kernel once the pod is quiet, so the supervisor's RSS is what the
// running pod needs (bench/ "memory").
//
// Creates and deletes (config generation, images, runtime output) leave
// freed heap behind. A batch that churned the heap moves a one-second
// timer: one trim when the starts (or restarts) have settled, not one per
// container. The trim is malloc_trim, and dropping the pages of
// podvisor's own code that only setup ran.
#pragma once

#include "supervisor/loop/event_loop.h"

namespace podvisor::supervisor::executor {

class HeapTrim {
 public:
  explicit HeapTrim(loop::EventLoop& loop) : loop_(loop) {}
  ~HeapTrim();
  HeapTrim(const HeapTrim&) = delete;
  HeapTrim& operator=(const HeapTrim&) = delete;

  void Churned() { churned_ = true; }  // a create or delete ran
  void AfterBatch();                   // the Lifecycle's batch is done

 private:
  loop::EventLoop& loop_;
  bool churned_ = false;
  loop::EventLoop::TimerId timer_ = 0;
};

}  // namespace podvisor::supervisor::executor
