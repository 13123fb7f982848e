// The image store as the puller's LayerSink (puller.h).
//
// store_sink.cc adapts image::LayerStore. Until the store's implementation
// (image/layer_store.cc, branch `store`) is in the tree, meson builds
// store_sink_pending.cc instead, whose OpenStoreSink says so: the puller
// and its tests build against the header alone. Remove the pending file
// and the meson condition once the store has landed.
#pragma once

#include <filesystem>
#include <memory>

#include "common/result.h"
#include "registry/puller.h"

namespace podvisor::registry {

// Opens (creating) the store at `root` (image::ImageCacheDir(state dir))
// and holds it for adding (LayerStore::HoldForAdding) while the sink lives.
Result<std::unique_ptr<LayerSink>> OpenStoreSink(const std::filesystem::path& root);

}  // namespace podvisor::registry
