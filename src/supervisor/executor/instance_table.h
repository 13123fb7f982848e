// The Executor's records of container instances: one per runtime id (a
// failed create is retried under the same instance number with a new id),
// the current one of each (container, instance), and their creation order
// (S14.12). Callbacks of runtime calls hold the id; the Lifecycle's actions
// name (container, instance).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace podvisor::supervisor::executor {

struct ContainerInstance;  // internal.h

class InstanceTable {
 public:
  using Records = std::map<std::string, std::unique_ptr<ContainerInstance>>;

  InstanceTable();
  ~InstanceTable();
  InstanceTable(const InstanceTable&) = delete;
  InstanceTable& operator=(const InstanceTable&) = delete;

  // Takes the record of a new attempt: it gets the next creation number
  // and becomes its (container, instance)'s current record. An earlier
  // attempt's record stays under its own id until it is erased.
  ContainerInstance& Add(std::unique_ptr<ContainerInstance> record);
  // A record carried over from an earlier supervisor (S15.1), keeping its
  // creation number; later records number after it.
  ContainerInstance& Restore(std::unique_ptr<ContainerInstance> record);
  ContainerInstance* Find(std::string_view container, int instance);
  ContainerInstance* FindById(const std::string& id);

  // S14.12: the records of `container` that `ended` says are over, except
  // the current one of `current_instance` and the newest ended one (the
  // one kept), newest first.
  std::vector<ContainerInstance*> EndedToRetire(
      const std::string& container, int current_instance,
      const std::function<bool(const ContainerInstance&)>& ended);
  // Forgets a record; a (container, instance) it was current for has none.
  void Erase(const ContainerInstance& record);
  void Clear();

  Records::iterator begin() { return by_id_.begin(); }
  Records::iterator end() { return by_id_.end(); }
  std::size_t size() const { return by_id_.size(); }

 private:
  Records by_id_;
  std::map<std::pair<std::string, int>, std::string> current_;  // -> runtime id
  uint64_t seq_ = 0;
};

}  // namespace podvisor::supervisor::executor
