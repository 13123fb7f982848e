// `podvisor pack BUNDLE OUT`: the bundle as an OCI image layout that
// skopeo, ctr or a registry can ship (oci/bundle_image.h), and that `run`
// and `validate` take back as BUNDLE.
#include <cstdio>
#include <filesystem>
#include <string>

#include "cli/commands.h"
#include "cli/pod_loading.h"
#include "image/bundle_image.h"
#include "oci/spec.h"
#include "pod/bundle.h"

namespace podvisor::cli {
namespace {

namespace fs = std::filesystem;

struct PackOptions {
  std::string bundle;
  std::string out;
  std::string tag = "latest";
};

int RunPack(const PackOptions& opts) {
  std::error_code ec;
  if (!fs::is_directory(opts.bundle, ec) || image::LooksLikeBundleImage(opts.bundle)) {
    std::fprintf(stderr, "podvisor: pack: %s is not a bundle directory (pod.yaml or pod.json)\n",
                 opts.bundle.c_str());
    return fs::exists(opts.bundle, ec) ? kExitUsage : kExitHost;
  }
  if (fs::exists(fs::symlink_status(opts.out, ec))) {
    std::fprintf(stderr, "podvisor: pack: OUT %s already exists; pack writes a new layout\n",
                 opts.out.c_str());
    return kExitUsage;
  }
  // What cannot run cannot be packed: the same checks as `validate`.
  LoadedPod loaded = cli::LoadPod(opts.bundle, /*check_images=*/true);
  if (!loaded.ok()) return loaded.exit_code;
  const pod::Pod& pod = loaded.pod;

  image::PackInput input;
  input.bundle = opts.bundle;
  input.manifest_file =
      fs::exists(fs::path(opts.bundle) / "pod.yaml", ec) ? "pod.yaml" : "pod.json";
  input.pod_name = pod.metadata.name;
  input.tag = opts.tag;
  for (const auto* list : {&pod.spec.init_containers, &pod.spec.containers}) {
    for (const auto& c : *list) {
      // The image travels inside the bundle, so it must live there.
      if (fs::path(c.image).is_absolute()) {
        std::fprintf(stderr,
                     "%s.image: Invalid value: \"%s\": pack takes images from BUNDLE/images/; "
                     "an absolute path stays on this host\n",
                     oci::ContainerFieldPath(pod, c).c_str(), c.image.c_str());
        return kExitUsage;
      }
      // S16.4: an image the bundle lacks is a registry reference; the
      // packed pod pulls it where it runs.
      if (!pod::ImageInBundle(opts.bundle, c.image)) {
        std::fprintf(stderr,
                     "Warning: %s.image: \"%s\" is not in BUNDLE/images/: the packed pod pulls "
                     "it from its registry where it runs (`podvisor pull --into BUNDLE BUNDLE` "
                     "packs it instead)\n",
                     oci::ContainerFieldPath(pod, c).c_str(), c.image.c_str());
        continue;
      }
      input.images.push_back(c.image);
    }
  }
  auto packed = image::PackBundle(input, opts.out);
  if (!packed) {
    std::fprintf(stderr, "podvisor: %s\n", packed.error().message().c_str());
    return packed.error().code() == EEXIST ? kExitUsage : kExitHost;
  }
  for (const auto& ref : packed->converted_images) {
    std::fprintf(stderr, "image %s: rootfs directory packed as an OCI layout\n", ref.c_str());
  }
  std::printf("pod/%s packed into %s: manifest %s (tag %s), layer %s, %lld bytes\n",
              pod.metadata.name.c_str(), opts.out.c_str(),
              packed->manifest.digest.ToString().c_str(), opts.tag.c_str(),
              packed->layer.digest.ToString().c_str(), static_cast<long long>(packed->layer.size));
  return kExitSucceeded;
}

}  // namespace

void AddPackCommand(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<PackOptions>();
  CLI::App* cmd = app.add_subcommand(
      "pack", "Write a bundle as an OCI image layout (skopeo copy oci:OUT ... ships it)");
  cmd->add_option("BUNDLE", opts->bundle, "the bundle directory (pod.yaml or pod.json, images/)")
      ->required();
  cmd->add_option("OUT", opts->out, "the OCI image layout to write; must not exist")->required();
  cmd->add_option("--tag", opts->tag, "the tag of the image in OUT's index.json")
      ->capture_default_str();
  cmd->callback([opts, &exit_code] { exit_code = RunPack(*opts); });
}

}  // namespace podvisor::cli
