#include "supervisor/executor/instance_table.h"

#include <algorithm>

#include "supervisor/executor/internal.h"

namespace podvisor::supervisor::executor {

InstanceTable::InstanceTable() = default;
InstanceTable::~InstanceTable() = default;

ContainerInstance& InstanceTable::Add(std::unique_ptr<ContainerInstance> record) {
  ContainerInstance& inst = *record;
  inst.seq = ++seq_;
  current_[{inst.container, inst.instance}] = inst.id;
  by_id_[inst.id] = std::move(record);
  return inst;
}

ContainerInstance& InstanceTable::Restore(std::unique_ptr<ContainerInstance> record) {
  ContainerInstance& inst = *record;
  seq_ = std::max(seq_, inst.seq);
  // Restored in creation order: the newest of a (container, instance) is its current.
  current_[{inst.container, inst.instance}] = inst.id;
  by_id_[inst.id] = std::move(record);
  return inst;
}

ContainerInstance* InstanceTable::Find(std::string_view container, int instance) {
  auto it = current_.find({std::string(container), instance});
  return it == current_.end() ? nullptr : FindById(it->second);
}

ContainerInstance* InstanceTable::FindById(const std::string& id) {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : it->second.get();
}

std::vector<ContainerInstance*> InstanceTable::EndedToRetire(
    const std::string& container, int current_instance,
    const std::function<bool(const ContainerInstance&)>& ended) {
  auto current = current_.find({container, current_instance});
  std::string current_id = current == current_.end() ? "" : current->second;
  std::vector<ContainerInstance*> found;
  for (auto& [id, inst] : by_id_) {
    if (inst->container == container && id != current_id && ended(*inst)) {
      found.push_back(inst.get());
    }
  }
  std::sort(found.begin(), found.end(), [](const ContainerInstance* a, const ContainerInstance* b) {
    return a->seq > b->seq;  // newest first: it is the one kept
  });
  if (!found.empty()) found.erase(found.begin());
  return found;
}

void InstanceTable::Erase(const ContainerInstance& record) {
  std::string id = record.id;  // a copy: erasing destroys `record`
  auto it = current_.find({record.container, record.instance});
  if (it != current_.end() && it->second == id) current_.erase(it);
  by_id_.erase(id);
}

void InstanceTable::Clear() {
  by_id_.clear();
  current_.clear();
}

}  // namespace podvisor::supervisor::executor
