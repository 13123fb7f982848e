// OpenStoreSink while image/layer_store.cc has not landed (store_sink.h).
#include "registry/store_sink.h"

namespace podvisor::registry {

Result<std::unique_ptr<LayerSink>> OpenStoreSink(const std::filesystem::path& root) {
  return Error("the image store (" + root.string() +
               ") is not part of this build yet: pull with --into BUNDLE");
}

}  // namespace podvisor::registry
