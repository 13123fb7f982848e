// The two halves of unpacking one layer, shared by layer_unpack.cc (what
// each tar entry may do to the root) and layer_stream.cc (reading,
// decompressing and verifying the blob): the metered uncompressed stream
// between them, and the entry loop. Internal to image/.
#pragma once

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "image/digest.h"
#include "image/layer_unpack.h"
#include "image/tar_reader.h"

namespace podvisor::image {

// The uncompressed tar stream as the tar reader reads it: hashed for the
// diff_id (S14.8) and charged to the image's budget (S14.9) on the way,
// so nothing reads a layer twice.
class MeteredStream final : public Decompressor {
 public:
  MeteredStream(Decompressor& in, std::optional<DigestHasher> hasher, LayerBudget& budget)
      : in_(in), hasher_(std::move(hasher)), budget_(budget) {}

  Result<std::size_t> Read(char* buf, std::size_t size) override {
    auto n = in_.Read(buf, size);
    if (!n) return n;
    if (hasher_) hasher_->Update(buf, *n);
    budget_.bytes += *n;
    if (budget_.bytes > budget_.max_bytes) return OverBudget();
    return n;
  }

  // Before a file's data is written: refuses one that would not fit, so
  // an 18 MB blob claiming a 4 GiB file fails before the first byte.
  Status Reserve(uint64_t size) const {
    if (size > budget_.max_bytes - std::min(budget_.bytes, budget_.max_bytes)) return OverBudget();
    return Ok();
  }

  // The rest of the stream (end-of-archive blocks, padding) belongs to the
  // diff_id as much as the entries do.
  Status Drain() {
    std::vector<char> buf(1 << 16);
    for (;;) {
      auto n = Read(buf.data(), buf.size());
      if (!n) return n.take_error();
      if (*n == 0) return Ok();
    }
  }

  std::string FinishHex() { return hasher_ ? hasher_->FinishHex() : std::string(); }

 private:
  Error OverBudget() const {
    return Error("the image unpacks to more than " + std::to_string(budget_.max_bytes) +
                     " bytes (S14.9: the bound is " + LayerBudget::kMaxBytesVariable + ")",
                 EFBIG);
  }

  Decompressor& in_;
  std::optional<DigestHasher> hasher_;
  LayerBudget& budget_;
};

// Writes every entry of `reader` onto `root` in `format` (layer_unpack.h).
Status ApplyEntries(TarReader& reader, MeteredStream& stream, const std::filesystem::path& root,
                    const LayerDescriptor& layer, LayerFormat format, LayerBudget& budget);

}  // namespace podvisor::image
