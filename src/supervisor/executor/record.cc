// The pod's kept record, DIR/<pod>/status.json: the v1 Pod of `status -o
// json`, rewritten whenever it changes so that `status`, `describe`, `list`
// and `run`'s last lines read the truth after the supervisor has gone
// (docs/INTERFACE.md "Kept records"). Runtime state, mounts and cgroups go
// with the pod; this file and events.jsonl stay until `podvisor rm`.
#include <fcntl.h>
#include <unistd.h>

#include "common/log.h"

#include "supervisor/executor/internal.h"

namespace podvisor::supervisor {

namespace {

// write(2) of the whole text to a temporary file then rename(2) over the
// record: a reader sees the old record or the new one, never half of one.
// No fsync: the state dir is /run (tmpfs) by default, and a record that
// did not survive a power loss is a pod that did not either.
Status WriteAtomically(const std::filesystem::path& file, const std::string& text) {
  std::filesystem::path tmp = file;
  tmp += ".tmp";
  Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd) return Error::FromErrno("creating " + tmp.string());
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd.get(), text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error::FromErrno("writing " + tmp.string());
    }
    done += static_cast<std::size_t>(n);
  }
  fd.Reset();
  if (::rename(tmp.c_str(), file.c_str()) != 0) return Error::FromErrno("renaming " + tmp.string());
  return Ok();
}

}  // namespace

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
  if (auto s = WriteAtomically(options_.state_dir / kRecordFile, text + "\n"); !s) {
    log::Warn("{}", s.error().message());
    return;
  }
  record_text_ = std::move(text);
}

}  // namespace podvisor::supervisor
