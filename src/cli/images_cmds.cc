#include "cli/images_cmds.h"

#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/default_dirs.h"
#include "cli/user_dirs.h"
#include "image/image_cache.h"
#include "image/layer_store.h"

namespace podvisor::cli {
namespace {

namespace fs = std::filesystem;

struct ImagesOptions {
  std::string state_dir = DefaultStateDir();
};

// docker's and crictl's sizes: decimal units, four significant digits.
std::string HumanSize(uint64_t bytes) {
  const char* units[] = {"B", "kB", "MB", "GB", "TB"};
  double value = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (value >= 1000 && unit + 1 < std::size(units)) {
    value /= 1000;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g%s", value, units[unit]);
  return buf;
}

std::string ShortDigest(const std::string& digest) {
  auto colon = digest.find(':');
  return colon == std::string::npos ? digest : digest.substr(colon + 1, 12);
}

int ImagesList(const ImagesOptions& o) {
  const fs::path root = image::ImageCacheDir(fs::absolute(o.state_dir));
  std::printf("%-48s %-14s %-7s %s\n", "IMAGE", "DIGEST", "LAYERS", "SIZE");
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return kExitSucceeded;
  auto store = image::LayerStore::Open(root);
  if (!store) {
    std::fprintf(stderr, "podvisor: %s\n", store.error().message().c_str());
    return kExitFailed;
  }
  for (const image::ImageRecord& record : store->List()) {
    std::string names;
    for (const auto& name : record.names) names += (names.empty() ? "" : ",") + name;
    // Layers shared with other images count for each, as with crictl.
    uint64_t size = 0;
    for (const auto& id : record.diff_ids)
      size += image::LayerStore::DiskUsage(store->LayerDir(id));
    std::printf("%-48s %-14s %-7zu %s\n", names.empty() ? "<none>" : names.c_str(),
                ShortDigest(record.manifest_digest).c_str(), record.diff_ids.size(),
                HumanSize(size).c_str());
  }
  return kExitSucceeded;
}

// S16.2: an image is in use while a pod holds a shared lock on it
// (HoldEntry); LayerStore::Prune takes it exclusively without waiting,
// which proves no pod does and keeps a starting pod from taking it until
// the image is gone (it then loads the image again).
int ImagesPrune(const ImagesOptions& o) {
  const fs::path root = image::ImageCacheDir(fs::absolute(o.state_dir));
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    std::fprintf(stderr, "0 images and 0 layers removed, 0B freed\n");
    return kExitSucceeded;
  }
  auto store = image::LayerStore::Open(root);
  if (!store) {
    std::fprintf(stderr, "podvisor: %s\n", store.error().message().c_str());
    return kExitFailed;
  }
  auto report = store->Prune();
  if (!report) {
    std::fprintf(stderr, "podvisor: %s\n", report.error().message().c_str());
    return kExitFailed;
  }
  for (const auto& digest : report->images_removed)
    std::printf("image %s removed\n", digest.c_str());
  for (const auto& id : report->layers_removed) std::printf("layer %s removed\n", id.c_str());
  std::size_t in_use = store->List().size();
  std::fprintf(stderr, "%zu images and %zu layers removed, %s freed; %zu images in use\n",
               report->images_removed.size(), report->layers_removed.size(),
               HumanSize(report->bytes_freed).c_str(), in_use);
  return kExitSucceeded;
}

}  // namespace

void AddImageSubcommands(CLI::App& images, int& exit_code) {
  {
    auto o = std::make_shared<ImagesOptions>();
    CLI::App* cmd = images.add_subcommand(
        "ls", "List the stored images: names, manifest digest, layers, size on disk");
    cmd->alias("list");
    cmd->add_option("--state-dir", o->state_dir, "as given to run")->capture_default_str();
    cmd->callback([o, &exit_code] { exit_code = ImagesList(*o); });
  }
  {
    auto o = std::make_shared<ImagesOptions>();
    CLI::App* cmd = images.add_subcommand(
        "prune", "Remove the images no pod uses, then the layers no image left uses");
    cmd->add_option("--state-dir", o->state_dir, "as given to run")->capture_default_str();
    cmd->callback([o, &exit_code] { exit_code = ImagesPrune(*o); });
  }
}

}  // namespace podvisor::cli
