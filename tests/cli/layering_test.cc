// The layering of docs/ARCHITECTURE.md, checked on every build: each
// folder of src/ includes only the folders below it, so dependencies point
// one way and the pure core (supervisor/lifecycle) never includes the
// shell. A new folder must be given its place here before it can build
// green, which is the point: its place is a decision, not an accident.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace podvisor::testing {
namespace {

namespace fs = std::filesystem;

// Each folder and the folders (besides itself) it may include from.
const std::map<std::string, std::set<std::string>>& AllowedIncludes() {
  static const std::map<std::string, std::set<std::string>> allowed = {
      {"common", {}},
      {"pod", {"common"}},
      {"process", {"common"}},
      {"cgroups", {"common", "pod"}},
      // The image store, the OCI runtime (spec and command line), and the
      // pod's host filesystem, which plans an instance from both.
      {"image", {"common", "pod"}},
      {"oci", {"common", "pod", "image"}},
      {"hostfs", {"common", "pod", "image", "oci"}},
      {"network", {"common", "process"}},
      // Pulling from registries (skopeo's image proxy) into the image store.
      {"registry", {"common", "process", "pod", "image"}},
      // Parse, default and validate a pod from a bundle: below the CLI and
      // the containerd shim, which both load pods.
      {"loading", {"common", "pod", "image", "oci", "hostfs", "network", "registry"}},
      // The pure core: the pod model and plain values, nothing that acts.
      {"supervisor/lifecycle", {"common", "pod"}},
      {"supervisor/loop", {"common"}},
      {"supervisor/probes", {"common", "pod", "supervisor/lifecycle", "supervisor/loop"}},
      {"supervisor/logs", {"common", "pod", "supervisor/lifecycle"}},
      {"supervisor/control", {"common", "pod", "supervisor/loop"}},
      {"supervisor/sandbox", {"common", "process"}},
      {"supervisor/executor",
       {"common", "pod", "process", "cgroups", "image", "oci", "hostfs", "network", "registry",
        "supervisor/lifecycle", "supervisor/loop", "supervisor/probes", "supervisor/logs",
        "supervisor/control", "supervisor/sandbox"}},
      {"cli",
       {"common", "pod", "process", "cgroups", "image", "oci", "hostfs", "network", "registry",
        "loading", "supervisor/lifecycle", "supervisor/loop", "supervisor/probes",
        "supervisor/logs", "supervisor/control", "supervisor/sandbox", "supervisor/executor"}},
      // containerd's shim: a client of running pods, like the CLI, and not
      // a user of it.
      {"shim",
       {"common", "pod", "process", "cgroups", "image", "oci", "hostfs", "loading",
        "supervisor/loop", "supervisor/control", "supervisor/executor"}},
  };
  return allowed;
}

fs::path SourceRoot() {
  const char* root = std::getenv("PODVISOR_SOURCE_ROOT");
  return root ? fs::path(root) : fs::path();
}

// The folder part of `#include "a/b/c.h"` ("a/b"), or "" for a system or
// generated header such as "podvisor_version.h".
std::string IncludedFolder(const std::string& line) {
  const std::string prefix = "#include \"";
  if (line.rfind(prefix, 0) != 0) return "";
  auto end = line.find('"', prefix.size());
  if (end == std::string::npos) return "";
  std::string path = line.substr(prefix.size(), end - prefix.size());
  auto slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

// Every folder of src/ that holds C++ sources, as "pod" or "supervisor/loop".
std::vector<std::string> SourceFolders(const fs::path& src) {
  std::set<std::string> folders;
  for (const auto& e : fs::recursive_directory_iterator(src)) {
    if (!e.is_regular_file()) continue;
    auto ext = e.path().extension();
    if (ext != ".cc" && ext != ".h") continue;
    std::string rel = fs::relative(e.path().parent_path(), src).generic_string();
    if (rel != ".") folders.insert(rel);
  }
  return {folders.begin(), folders.end()};
}

TEST(Layering, EveryFolderHasItsPlace) {
  const fs::path root = SourceRoot();
  ASSERT_FALSE(root.empty()) << "run through meson (PODVISOR_SOURCE_ROOT)";
  for (const auto& folder : SourceFolders(root / "src")) {
    if (folder.find("testdata") != std::string::npos) continue;
    EXPECT_TRUE(AllowedIncludes().count(folder))
        << "src/" << folder << " is not in the layering table of tests/cli/layering_test.cc "
        << "(docs/ARCHITECTURE.md): say which folders it may include";
  }
}

// Calls `check(where, line)` for every line of the C++ files of
// src/<folder>; `where` is "src/<folder>/<file>:<line number>".
template <typename Check>
void ForEachLine(const fs::path& root, const std::string& folder, Check check) {
  const fs::path dir = root / "src" / folder;
  if (!fs::is_directory(dir)) return;
  for (const auto& e : fs::directory_iterator(dir)) {
    auto ext = e.path().extension();
    if (!e.is_regular_file() || (ext != ".cc" && ext != ".h")) continue;
    std::ifstream in(e.path());
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
      ++n;
      check("src/" + folder + "/" + e.path().filename().string() + ":" + std::to_string(n), line);
    }
  }
}

TEST(Layering, IncludesPointOneWay) {
  const fs::path root = SourceRoot();
  ASSERT_FALSE(root.empty()) << "run through meson (PODVISOR_SOURCE_ROOT)";
  int checked = 0;
  for (const auto& entry : AllowedIncludes()) {
    // Named copies: a lambda may not capture structured bindings (C++20
    // as clang 14 reads it).
    const std::string& folder = entry.first;
    const std::set<std::string>& allowed = entry.second;
    ForEachLine(root, folder, [&](const std::string& where, const std::string& line) {
      std::string included = IncludedFolder(line);
      if (included.empty() || included == folder) return;
      ++checked;
      EXPECT_TRUE(allowed.count(included)) << where << ": " << line << ": src/" << folder
                                           << " may not include from src/" << included;
    });
  }
  EXPECT_GT(checked, 50) << "the scan found almost no includes: is the source root right?";
}

// docs/ARCHITECTURE.md: each folder is one namespace, podvisor::<folder>
// ("supervisor/loop": podvisor::supervisor::loop; common: podvisor), and
// its files open only that namespace or ones nested in it.
TEST(Layering, EachFolderIsOneNamespace) {
  const fs::path root = SourceRoot();
  ASSERT_FALSE(root.empty()) << "run through meson (PODVISOR_SOURCE_ROOT)";
  int checked = 0;
  for (const auto& entry : AllowedIncludes()) {
    const std::string& folder = entry.first;  // captured below: no structured binding
    std::string own = "podvisor";
    if (folder != "common") own += "::" + folder;
    for (auto slash = own.find('/'); slash != std::string::npos; slash = own.find('/')) {
      own.replace(slash, 1, "::");
    }
    ForEachLine(root, folder, [&](const std::string& where, const std::string& line) {
      if (line.rfind("namespace podvisor", 0) != 0) return;
      std::string name = line.substr(std::string("namespace ").size());
      name = name.substr(0, name.find_first_of(" {"));
      if (name.empty() || line.find('=') != std::string::npos) return;  // an alias
      ++checked;
      EXPECT_TRUE(name == own || name.rfind(own + "::", 0) == 0)
          << where << ": " << line << ": src/" << folder << " is namespace " << own;
    });
  }
  EXPECT_GT(checked, 100) << "the scan found almost no namespaces: is the source root right?";
}

TEST(Layering, IncludedFolderParsesQuotedIncludesOnly) {
  EXPECT_EQ(IncludedFolder("#include \"supervisor/loop/event_loop.h\""), "supervisor/loop");
  EXPECT_EQ(IncludedFolder("#include \"pod/model.h\"  // why"), "pod");
  EXPECT_EQ(IncludedFolder("#include <sys/epoll.h>"), "");
  EXPECT_EQ(IncludedFolder("#include \"podvisor_version.h\""), "");
  EXPECT_EQ(IncludedFolder("// #include \"cli/cli.h\""), "");
}

}  // namespace
}  // namespace podvisor::testing
