#include "registry/layer_fetch.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include "image/digest.h"

namespace podvisor::registry {
namespace {

constexpr int kStallMs = 1000;
constexpr std::size_t kChunk = 64 * 1024;

// What the pump has seen; the lane waits for any of it before FinishPipe.
struct PumpState {
  std::mutex mutex;
  std::condition_variable changed;
  bool ready_to_finish = false;  // whole size, a stall, EOF or a dead reader
};

void Signal(PumpState& state) {
  std::lock_guard lock(state.mutex);
  state.ready_to_finish = true;
  state.changed.notify_all();
}

// Proxy pipe -> relay socket, counting. Closes both ends when done.
void Pump(Fd from, Fd to, const image::LayerDescriptor& layer, PumpState& state,
          const ProgressCallback& progress) {
  const uint64_t size = layer.blob.size > 0 ? static_cast<uint64_t>(layer.blob.size) : 0;
  uint64_t total = 0;
  std::vector<char> buffer(kChunk);
  ProgressEvent event{.kind = ProgressKind::kLayer,
                      .diff_id = layer.diff_id ? layer.diff_id->ToString() : "",
                      .layer_size = size};
  while (true) {
    pollfd pfd{.fd = from.get(), .events = POLLIN, .revents = 0};
    int ready = ::poll(&pfd, 1, kStallMs);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {
      Signal(state);  // a stall: let FinishPipe tell whether it died
      continue;
    }
    ssize_t n = ::read(from.get(), buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    bool reader_gone = false;
    for (ssize_t off = 0; off < n;) {
      ssize_t w =
          ::send(to.get(), buffer.data() + off, static_cast<std::size_t>(n - off), MSG_NOSIGNAL);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        reader_gone = true;
        break;
      }
      off += w;
    }
    if (reader_gone) break;  // closing `from` fails skopeo's write: FinishPipe returns
    total += static_cast<uint64_t>(n);
    event.bytes = total;
    if (progress) progress(event);
    if (size > 0 && total >= size) Signal(state);
  }
  from.Reset();
  to.Reset();
  Signal(state);
}

Status FetchOne(RegistrySource& source, LayerSink& sink, const image::LayerDescriptor& layer,
                image::LayerBudget& budget, const ProgressCallback& progress) {
  auto stream = source.OpenBlob(layer.blob);
  if (!stream) return stream.take_error();
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
    return Error::FromErrno("socketpair for a layer");
  }
  Fd relay_read(pair[0]);
  Fd relay_write(pair[1]);
  Status ingested;
  std::thread ingest([&] {
    ingested = sink.IngestLayer(relay_read.get(), layer, budget);
    relay_read.Reset();  // a reader that stopped early makes the pump's send fail
  });
  PumpState state;
  std::thread pump(Pump, std::move(stream->fd), std::move(relay_write), std::cref(layer),
                   std::ref(state), std::cref(progress));
  {
    std::unique_lock lock(state.mutex);
    state.changed.wait(lock, [&] { return state.ready_to_finish; });
  }
  Status finished = source.FinishBlob(stream->pipe_id);
  pump.join();
  ingest.join();
  // The proxy's verdict first: "connection reset" or "corrupted blob" says
  // more than the store's digest mismatch of a truncated stream.
  if (!finished) return finished;
  return ingested;
}

}  // namespace

Result<LayerFetchResult> FetchLayers(RegistrySource& source, LayerSink& sink,
                                     const std::vector<image::LayerDescriptor>& layers,
                                     int parallel, const image::LayerBudget& budget,
                                     const ProgressCallback& progress) {
  std::mutex mutex;  // guards next, spent, first_error and progress calls
  std::size_t next = 0;
  uint64_t spent_bytes = budget.bytes;
  uint64_t spent_entries = budget.entries;
  std::optional<Error> first_error;
  ProgressCallback locked_progress = [&](const ProgressEvent& e) {
    std::lock_guard lock(mutex);
    if (progress) progress(e);
  };
  auto lane = [&] {
    while (true) {
      image::LayerBudget mine = budget;
      const image::LayerDescriptor* layer = nullptr;
      uint64_t start_bytes = 0;
      uint64_t start_entries = 0;
      {
        std::lock_guard lock(mutex);
        if (first_error || next >= layers.size()) return;
        layer = &layers[next++];
        // S14.9 holds for the image: each layer may spend what the
        // finished ones left. Layers in flight together can overshoot
        // until they end; the total is checked when each ends.
        mine.bytes = start_bytes = spent_bytes;
        mine.entries = start_entries = spent_entries;
      }
      locked_progress(
          {.kind = ProgressKind::kLayer,
           .diff_id = layer->diff_id ? layer->diff_id->ToString() : "",
           .layer_size = static_cast<uint64_t>(std::max<int64_t>(layer->blob.size, 0))});
      Status status = FetchOne(source, sink, *layer, mine, locked_progress);
      std::lock_guard lock(mutex);
      if (status) {
        spent_bytes += mine.bytes - start_bytes;
        spent_entries += mine.entries - start_entries;
        if (spent_bytes > budget.max_bytes || spent_entries > budget.max_entries) {
          status = Error("the image unpacks to more than " + std::to_string(budget.max_bytes) +
                         " bytes or " + std::to_string(budget.max_entries) +
                         " entries (S14.9; PODVISOR_IMAGE_MAX_BYTES, PODVISOR_IMAGE_MAX_ENTRIES)");
        }
      }
      if (!status) {
        if (!first_error) {
          first_error = status.take_error().Wrap("layer " + layer->blob.digest.ToString());
        }
        return;
      }
      if (progress) {
        uint64_t size = static_cast<uint64_t>(std::max<int64_t>(layer->blob.size, 0));
        progress({.kind = ProgressKind::kLayer,
                  .diff_id = layer->diff_id ? layer->diff_id->ToString() : "",
                  .layer_size = size,
                  .bytes = size,
                  .unpacked = true});
      }
    }
  };
  const std::size_t lanes =
      std::min<std::size_t>(layers.size(), static_cast<std::size_t>(std::max(parallel, 1)));
  std::vector<std::thread> threads;
  for (std::size_t i = 1; i < lanes; ++i) threads.emplace_back(lane);
  if (lanes > 0) lane();
  for (std::thread& t : threads) t.join();
  if (first_error) return *first_error;
  return LayerFetchResult{.unpacked_bytes = spent_bytes - budget.bytes};
}

Result<std::string> ReadSmallBlob(RegistrySource& source, const image::Descriptor& blob,
                                  std::size_t max_size) {
  if (blob.size < 0 || static_cast<uint64_t>(blob.size) > max_size) {
    return Error("blob " + blob.digest.ToString() + " has size " + std::to_string(blob.size) +
                 ", more than the " + std::to_string(max_size) + " bytes allowed");
  }
  auto stream = source.OpenBlob(blob);
  if (!stream) return stream.take_error();
  std::string data;
  bool too_big = false;
  std::thread reader([&] {
    char chunk[16384];
    while (true) {
      ssize_t n = ::read(stream->fd.get(), chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      if (data.size() + static_cast<std::size_t>(n) > max_size) {
        too_big = true;
        break;
      }
      data.append(chunk, static_cast<std::size_t>(n));
    }
    stream->fd.Reset();
  });
  Status finished = source.FinishBlob(stream->pipe_id);
  reader.join();
  if (!finished) return finished.take_error();
  if (too_big) return Error("blob " + blob.digest.ToString() + " is larger than its descriptor");
  Status ok = image::CheckBlob(blob.digest, blob.size, image::HashHex(blob.digest.algorithm, data),
                               data.size());
  if (!ok) return ok.take_error();
  return data;
}

}  // namespace podvisor::registry
