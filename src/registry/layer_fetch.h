// The layer part of a pull (puller.h): every missing layer streamed from
// the registry into the store, `parallel` at a time over one proxy.
//
// skopeo answers one request at a time, and its FinishPipe waits until
// the blob's goroutine has written everything, so calling FinishPipe
// while a blob is still arriving would stop every other request. Each
// layer therefore gets a pump thread between the proxy's pipe and the
// store's reader (a socketpair, so a reader that gave up is an EPIPE, not
// a SIGPIPE): FinishPipe is called once the pump has the blob's whole
// size, or after a second without data (the transfer died, or crawls:
// then FinishPipe waits for it, and the others wait behind it).
#pragma once

#include <atomic>
#include <vector>

#include "image/layer_unpack.h"
#include "image/oci_layout.h"
#include "registry/puller.h"

namespace podvisor::registry {

struct LayerFetchResult {
  uint64_t unpacked_bytes = 0;  // the budget the fetched layers spent
};

// Fetches `layers` (all missing from the sink) in parallel; the first
// error stops the rest. `progress` gets the Layer events.
Result<LayerFetchResult> FetchLayers(RegistrySource& source, LayerSink& sink,
                                     const std::vector<image::LayerDescriptor>& layers,
                                     int parallel, const image::LayerBudget& budget,
                                     const ProgressCallback& progress);

// Reads a whole small blob (the config) through the source, verified.
Result<std::string> ReadSmallBlob(RegistrySource& source, const image::Descriptor& blob,
                                  std::size_t max_size);

}  // namespace podvisor::registry
