// The pod's kept record, DIR/<pod>/status.json: the v1 Pod of `status -o
// json`, rewritten whenever it changes so that `status`, `describe`, `list`
// and `run`'s last lines read the truth after the supervisor has gone
// (docs/INTERFACE.md "Kept records"). Runtime state, mounts and cgroups go
// with the pod; this file and events.jsonl stay until `podvisor rm`.
#include "common/file_io.h"
#include "common/log.h"
#include "common/pod_dir.h"

#include "supervisor/executor/internal.h"

namespace podvisor::supervisor {

void Executor::WriteRecord() {
  if (!owns_pod_) return;
  // Serialized once per batch and compared: most batches change nothing
  // visible (a probe success, a timer), and those cost no write. The same
  // text then answers `status` requests until the next event.
  // replace: a termination message is the container's bytes and may be
  // invalid UTF-8 (or cut inside a character by its 4096-byte tail);
  // strict dumping threw and aborted the supervisor.
  std::string text = StatusJson().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (!status_reply_) status_reply_.emplace(ControlReply::FromText(text));
  if (text == record_text_) return;
  // Unsynced: a reader sees the old record or the new one, never half of
  // one; the state dir is /run (tmpfs) by default, and a record that did
  // not survive a power loss is a pod that did not either.
  if (auto s = WriteFileAtomic(PodDir::At(options_.state_dir).RecordFile(), text + "\n", 0644,
                               Durability::kUnsynced);
      !s) {
    log::Warn("{}", s.error().message());
    return;
  }
  record_text_ = std::move(text);
}

}  // namespace podvisor::supervisor
