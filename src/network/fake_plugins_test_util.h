// Fake CNI plugins for the tier-2 tests: shell scripts written into a
// temporary plugin directory that record what they were given (stdin and
// the CNI_* environment, one file per call, numbered in call order) and
// answer a canned result or error.
#pragma once

#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace podvisor::network::testing {

class FakePluginDir {
 public:
  FakePluginDir() {
    std::string tmpl = (std::filesystem::path(::testing::TempDir()) / "cni-fake-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) != nullptr) dir_ = tmpl;
    std::filesystem::create_directories(dir_ / "calls");
  }
  ~FakePluginDir() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  FakePluginDir(const FakePluginDir&) = delete;
  FakePluginDir& operator=(const FakePluginDir&) = delete;

  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path calls() const { return dir_ / "calls"; }

  // A plugin that records its call and then runs `body` (shell), which
  // answers on stdout and picks the exit status.
  void Add(const std::string& type, const std::string& body) {
    auto file = dir_ / type;
    std::ofstream out(file);
    out << "#!/bin/sh\n"
           "calls="
        << calls().string()
        << "\n"
           "n=$(ls \"$calls\" | wc -l)\n"
           "n=$(printf %03d $((n / 2)))\n"
           "cat > \"$calls/$n-"
        << type
        << "-$CNI_COMMAND.stdin\"\n"
           "env | grep '^CNI_' | sort > \"$calls/$n-"
        << type << "-$CNI_COMMAND.env\"\n"
        << body << "\n";
    out.close();
    ::chmod(file.c_str(), 0755);
  }

  // Answers `result` to ADD and nothing to DEL/CHECK.
  void AddSucceeding(const std::string& type, const std::string& result) {
    Add(type, "if [ \"$CNI_COMMAND\" = ADD ]; then cat <<'JSON'\n" + result + "\nJSON\nfi\nexit 0");
  }

  // Answers ADD with the stdin's prevResult, as a meta plugin does.
  void AddPassingPrevResult(const std::string& type) {
    Add(type,
        "if [ \"$CNI_COMMAND\" = ADD ]; then\n"
        "  python3 -c 'import json, sys; "
        "print(json.dumps(json.load(open(sys.argv[1]))[\"prevResult\"]))' "
        "\"$calls/$n-" +
            type +
            "-ADD.stdin\"\n"
            "fi\nexit 0");
  }

  // The recorded calls, as "<type>-<COMMAND>" in call order.
  std::vector<std::string> CallOrder() const {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(calls())) {
      if (e.path().extension() == ".stdin") names.push_back(e.path().stem().string());
    }
    std::sort(names.begin(), names.end());
    for (auto& n : names) n = n.substr(4);
    return names;
  }

  // The stdin or env of the index-th call ("stdin" / "env").
  std::string Recorded(size_t index, const std::string& kind) const {
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(calls())) {
      if (e.path().extension() == "." + kind) files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    if (index >= files.size()) return {};
    std::ifstream in(files[index]);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

 private:
  std::filesystem::path dir_;
};

// A 1.0.0 result as bridge gives it: host veth, bridge, the pod's eth0.
inline std::string BridgeResult(const std::string& address = "10.99.0.5/16") {
  return R"({"cniVersion":"1.0.0","interfaces":[{"name":"pvtest0","mac":"aa:bb:cc:dd:ee:01"},)"
         R"({"name":"veth1","mac":"aa:bb:cc:dd:ee:02"},)"
         R"({"name":"eth0","mac":"aa:bb:cc:dd:ee:03","sandbox":"/proc/1/ns/net"}],)"
         R"("ips":[{"address":")" +
         address +
         R"(","gateway":"10.99.0.1","interface":2}],)"
         R"("routes":[{"dst":"0.0.0.0/0"}],"dns":{}})";
}

}  // namespace podvisor::network::testing
