#include "registry/store_sink.h"

#include "image/layer_store.h"

namespace podvisor::registry {
namespace {

class StoreSink : public LayerSink {
 public:
  StoreSink(image::LayerStore store, Fd hold) : store_(std::move(store)), hold_(std::move(hold)) {}
  bool HasLayer(const image::Digest& diff_id) const override { return store_.HasLayer(diff_id); }
  Status IngestLayer(int blob_fd, const image::LayerDescriptor& layer,
                     image::LayerBudget& budget) override {
    return store_.IngestLayer(blob_fd, layer, budget);
  }
  Status PutImage(const image::ImageRecord& record) override { return store_.PutImage(record); }
  std::optional<image::ImageRecord> FindByName(std::string_view name) const override {
    return store_.FindByName(name);
  }
  std::optional<image::ImageRecord> FindByManifest(std::string_view digest) const override {
    return store_.FindByManifest(digest);
  }

 private:
  image::LayerStore store_;
  Fd hold_;
};

}  // namespace

Result<std::unique_ptr<LayerSink>> OpenStoreSink(const std::filesystem::path& root) {
  auto store = image::LayerStore::Open(root);
  if (!store) return store.take_error();
  auto hold = store->HoldForAdding();
  if (!hold) return hold.take_error();
  return std::unique_ptr<LayerSink>(new StoreSink(std::move(*store), std::move(*hold)));
}

}  // namespace podvisor::registry
