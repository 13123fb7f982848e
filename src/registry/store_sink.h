// The image store as the puller's LayerSink (puller.h).
//
// store_sink.cc adapts image::LayerStore; the puller's own tests use a
// fake sink, so they need no store on disk.
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
