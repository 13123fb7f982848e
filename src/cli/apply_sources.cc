#include "cli/apply_sources.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <system_error>

#include "cli/apply_plan.h"
#include "common/file_io.h"
#include "pod/bundle.h"
#include "pod/config_objects.h"
#include "pod/parse.h"
#include "pod/workloads.h"

namespace podvisor::cli::apply {
namespace fs = std::filesystem;
namespace {

std::string KindOf(const nlohmann::json& doc) {
  auto kind = doc.find("kind");
  return kind != doc.end() && kind->is_string() ? kind->get<std::string>() : "";
}

std::string NameOf(const nlohmann::json& doc) {
  auto meta = doc.find("metadata");
  if (meta == doc.end() || !meta->is_object()) return "";
  auto name = meta->find("name");
  return name != meta->end() && name->is_string() ? name->get<std::string>() : "";
}

Status Fail(const std::string& what, std::error_code ec) {
  return Error(what + ": " + ec.message(), ec.value());
}

}  // namespace

std::vector<fs::path> ManifestFiles(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return {path};
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(path, ec)) {
    if (!IsManifestFileName(entry.path().filename().string())) continue;
    if (!entry.is_regular_file(ec)) continue;  // follows symlinks, as kubectl
    files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

Result<ManifestSet> ReadManifests(const fs::path& path) {
  std::error_code ec;
  const bool dir = fs::is_directory(path, ec);
  if (!dir && !fs::is_regular_file(path, ec)) {
    return Error(path.string() + ": no such file or directory", ENOENT);
  }
  ManifestSet set;
  fs::path images = (dir ? path : path.parent_path()) / "images";
  if (fs::is_directory(images, ec)) set.images = fs::absolute(images).lexically_normal();
  std::map<std::string, std::string> first_source;  // pod name -> where it was first
  std::set<std::string> twice;
  for (const fs::path& file : ManifestFiles(path)) {
    auto docs = pod::ReadManifestDocuments(file);
    if (!docs) {
      set.errors.push_back(docs.error().message());
      continue;
    }
    for (std::size_t i = 0; i < docs->size(); ++i) {
      nlohmann::json& doc = (*docs)[i];
      const std::string source =
          file.string() + (docs->size() > 1 ? " (document " + std::to_string(i + 1) + ")" : "");
      if (!doc.is_object()) {
        set.errors.push_back(source + ": a document must be a mapping (a Kubernetes object)");
        continue;
      }
      const std::string kind = KindOf(doc);
      if (pod::IsConfigObjectKind(kind)) {
        set.config_objects.push_back(std::move(doc));
        continue;
      }
      if (!kind.empty() && kind != "Pod" && !pod::IsWorkloadKind(kind)) {
        std::string warning = source;
        warning += ": kind ";
        warning += kind;
        warning += " skipped: apply runs Pods, workloads, ConfigMaps and Secrets";
        set.warnings.push_back(std::move(warning));
        continue;
      }
      PodDocument pod{NameOf(doc), source, std::move(doc)};
      if (pod.name.empty()) {
        set.errors.push_back(source + ": metadata.name: Required value");
        continue;
      }
      if (auto [it, inserted] = first_source.emplace(pod.name, source); !inserted) {
        set.errors.push_back(source + ": pod " + pod.name + " is also in " + it->second +
                             "; each pod has one manifest");
        twice.insert(pod.name);
        continue;
      }
      set.pods.push_back(std::move(pod));
    }
  }
  // A pod named twice is nobody's: which manifest would win is a guess.
  std::erase_if(set.pods, [&](const PodDocument& p) { return twice.contains(p.name); });
  set.invalid_pods.assign(twice.begin(), twice.end());
  return set;
}

Status WriteBundle(const fs::path& dir, const PodDocument& pod, const ManifestSet& set) {
  std::error_code ec;
  if (!fs::create_directory(dir, ec)) return Fail("creating " + dir.string(), ec);
  ::chmod(dir.c_str(), 0700);
  if (Status s =
          WriteFileAtomic(dir / "pod.json", pod.doc.dump(2) + "\n", 0600, Durability::kUnsynced);
      !s) {
    return s;
  }
  // Only the ConfigMaps and Secrets the pod names: a change of another
  // one is no change of this pod (S18.2).
  ConfigNames used;
  if (auto parsed = pod::ParseManifest(pod.doc.dump(), pod::ManifestFormat::kJson)) {
    used = UsedConfigNames(parsed->pod.spec);
  }
  auto uses = [](const std::vector<std::string>& names, const std::string& name) {
    return std::binary_search(names.begin(), names.end(), name);
  };
  int index = 0;
  for (const auto& object : set.config_objects) {
    const std::string kind = KindOf(object);
    const std::string name = NameOf(object);
    if (!uses(kind == "Secret" ? used.secrets : used.config_maps, name)) continue;
    if (index == 0) {
      if (!fs::create_directory(dir / "config", ec)) return Fail("creating config/", ec);
    }
    // Numbered: two documents of one name both reach loading, which says
    // Duplicate value as `validate` does.
    char prefix[16];
    std::snprintf(prefix, sizeof prefix, "%03d-", index++);
    std::string file = std::string(prefix) + (kind == "Secret" ? "secret-" : "configmap-") +
                       (pod::HasDotDotComponent(name) || name.find('/') != std::string::npos
                            ? std::string("unnamed")
                            : name) +
                       ".json";
    if (Status s = WriteFileAtomic(dir / "config" / file, object.dump(2) + "\n", 0600,
                                   Durability::kUnsynced);
        !s) {
      return s;
    }
  }
  if (!set.images.empty()) {
    fs::create_directory_symlink(set.images, dir / "images", ec);
    if (ec) return Fail("linking images/ to " + set.images.string(), ec);
  }
  return Ok();
}

Status CopyBundle(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::path tmp = to;
  tmp += ".tmp";
  fs::remove_all(tmp, ec);
  fs::copy(from, tmp, fs::copy_options::recursive | fs::copy_options::copy_symlinks, ec);
  if (ec) return Fail("copying " + from.string() + " to " + tmp.string(), ec);
  return ReplaceDir(tmp, to);
}

Status ReplaceDir(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::path old = to;
  old += ".old";
  fs::remove_all(old, ec);
  if (fs::exists(to, ec)) {
    fs::rename(to, old, ec);
    if (ec) return Fail("moving " + to.string() + " aside", ec);
  }
  fs::rename(from, to, ec);
  if (ec) return Fail("renaming " + from.string() + " to " + to.string(), ec);
  fs::remove_all(old, ec);
  return Ok();
}

}  // namespace podvisor::cli::apply
