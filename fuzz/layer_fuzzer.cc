// libFuzzer target: any bytes as an uncompressed image layer, unpacked by
// the code every image and bundle image goes through (layer_unpack.h) into
// a fresh root; then the bundle-image check (bundle_fs.h) over the result.
// Whatever the tar says, nothing outside the root may change (S14.7): a
// sentinel file and directory beside the root, and the listing of the
// directory holding them, are compared after every input. Errors are
// fine; an escape, a crash or a sanitizer report is the bug.
//
// The scratch tree is /tmp/podvisor-layer-fuzz-<pid>/{layout,box/root,
// box/sentinel,box/sentinel-dir/}: relative escapes ("../sentinel") land
// on the sentinels.
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "image/bundle_fs.h"
#include "image/digest.h"
#include "image/layer_unpack.h"

namespace {

namespace fs = std::filesystem;
using namespace podvisor::image;

constexpr const char* kSentinelText = "outside the root";

struct Scratch {
  fs::path top = fs::path("/tmp") / ("podvisor-layer-fuzz-" + std::to_string(::getpid()));
  fs::path layout = top / "layout";
  fs::path box = top / "box";
  fs::path root = box / "root";

  Scratch() {
    fs::remove_all(top);
    fs::create_directories(layout / "blobs" / "sha256");
    fs::create_directories(box / "sentinel-dir");
    std::ofstream(box / "sentinel") << kSentinelText;
    std::ofstream(box / "sentinel-dir" / "file") << kSentinelText;
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(top, ec);
  }
};

std::set<std::string> Listing(const fs::path& dir) {
  std::set<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) names.insert(e.path().filename());
  return names;
}

std::string Read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void CheckNothingOutsideChanged(const Scratch& s) {
  static const std::set<std::string> kBox = {"root", "sentinel", "sentinel-dir"};
  static const std::set<std::string> kTop = {"box", "layout"};
  if (Listing(s.box) != kBox || Listing(s.top) != kTop ||
      Listing(s.box / "sentinel-dir") != std::set<std::string>{"file"} ||
      Read(s.box / "sentinel") != kSentinelText ||
      Read(s.box / "sentinel-dir" / "file") != kSentinelText || fs::is_symlink(s.root)) {
    std::abort();  // a layer reached outside its root
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Scratch scratch;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  std::string hex = HashHex("sha256", bytes);
  fs::path blob = scratch.layout / "blobs" / "sha256" / hex;
  std::ofstream(blob, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<long>(size));
  std::error_code ec;
  fs::remove_all(scratch.root, ec);
  fs::create_directory(scratch.root);
  LayerDescriptor layer;
  layer.blob = {"application/vnd.oci.image.layer.v1.tar",
                {"sha256", hex},
                static_cast<int64_t>(size),
                std::nullopt,
                ""};
  layer.compression = LayerCompression::kNone;
  layer.diff_id = Digest{"sha256", hex};  // uncompressed: the diff_id is the blob's digest
  // Small bounds: a fuzzed header must not fill the disk.
  LayerBudget budget;
  budget.max_bytes = 64 << 20;
  budget.max_entries = 10000;
  auto applied = ApplyLayer(scratch.layout, layer, scratch.root, budget);
  (void)(applied ? std::string() : applied.error().message());
  CheckNothingOutsideChanged(scratch);
  if (applied) (void)CheckConfinedTree(scratch.root, "fuzzed bundle", budget.max_entries);
  fs::remove(blob, ec);
  // A root left read-only (a layer's 0000 directory) must still go.
  fs::permissions(scratch.root, fs::perms::owner_all, fs::perm_options::add, ec);
  fs::remove_all(scratch.root, ec);
  // Removing the root must not have followed anything out of it either.
  fs::create_directory(scratch.root, ec);
  CheckNothingOutsideChanged(scratch);
  return 0;
}
