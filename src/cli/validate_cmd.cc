// `podvisor validate BUNDLE|MANIFEST`: every problem of the pod, one per
// line in kubectl's form, without starting anything.
#include <cstdio>
#include <filesystem>
#include <string>

#include "cli/commands.h"
#include "pod/defaults.h"
#include "pod/parse.h"
#include "pod/validate.h"

namespace podvisor::cli {
namespace {

struct ValidateOptions {
  std::string path;
  bool skip_images = false;
  bool quiet = false;
};

std::string Plural(std::size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

int RunValidate(const ValidateOptions& opts) {
  std::filesystem::path path(opts.path);
  std::error_code ec;
  bool is_bundle = std::filesystem::is_directory(path, ec);
  auto parsed = pod::ParseManifestFile(path);
  if (!parsed) {
    std::fprintf(stderr, "podvisor: %s\n", parsed.error().message().c_str());
    // A file we could not read is a host problem; one we could read but
    // not parse is the user's input.
    return parsed.error().code() != 0 ? kExitHost : kExitUsage;
  }
  pod::ParseOutput& out = *parsed;
  for (const auto& w : out.warnings) {
    std::fprintf(stderr, "Warning: %s\n", w.ToString().c_str());
  }
  pod::ApplyDefaults(out.pod);
  pod::FieldErrors errors = std::move(out.errors);
  for (auto& e : pod::ValidatePod(out.pod)) errors.push_back(std::move(e));
  if (!opts.skip_images) {
    // A manifest inside a bundle resolves its images against that bundle.
    std::filesystem::path bundle = is_bundle ? path : path.parent_path();
    if (bundle.empty()) bundle = ".";
    for (auto& e : pod::ValidateImages(out.pod, bundle)) errors.push_back(std::move(e));
  }
  if (!errors.empty()) {
    for (const auto& e : errors) std::fprintf(stderr, "%s\n", e.ToString().c_str());
    std::fprintf(stderr, "podvisor: pod \"%s\" is invalid: %s\n", out.pod.metadata.name.c_str(),
                 Plural(errors.size(), "problem", "problems").c_str());
    return kExitUsage;
  }
  if (!opts.quiet) {
    std::size_t sidecars = 0;
    for (const auto& c : out.pod.spec.init_containers) sidecars += pod::IsSidecar(c) ? 1 : 0;
    std::printf("pod/%s is valid: %s, %s, %s\n", out.pod.metadata.name.c_str(),
                Plural(out.pod.spec.init_containers.size() - sidecars, "init container",
                       "init containers")
                    .c_str(),
                Plural(sidecars, "sidecar", "sidecars").c_str(),
                Plural(out.pod.spec.containers.size(), "container", "containers").c_str());
  }
  return kExitSucceeded;
}

}  // namespace

void AddValidateCommand(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<ValidateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "validate", "Check a pod bundle or manifest without running it; print every problem");
  cmd->add_option("BUNDLE|MANIFEST", opts->path,
                  "a bundle directory (with pod.yaml or pod.json) or a manifest file")
      ->required();
  cmd->add_flag("--no-images", opts->skip_images,
                "do not check that each container's image directory exists");
  cmd->add_flag("-q,--quiet", opts->quiet, "print nothing when the pod is valid");
  cmd->callback([opts, &exit_code] { exit_code = RunValidate(*opts); });
}

}  // namespace podvisor::cli
