// Reliability: the supervisor's own limits (SEMANTICS "The supervisor's own
// limits", S14.10-S14.14):
//   its soft descriptor limit is raised to the hard one, children get the
//   original back; a pod that may need more than the limit is warned about
//   running out of descriptors mid-create leaves no container, process,
//   mount or runtime state behind (fake runtime and runc)
//   a crash loop keeps a bounded number of instance directories and a
//   bounded heap
//   an exec process file does not outlive the exec's start
#include <sys/resource.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tiers.h"

namespace podvisor::e2e {
namespace {

using ::testing::AnyOf;

// "Max open files  SOFT  HARD  files" of /proc/<pid>/limits.
std::pair<std::string, std::string> OpenFilesLimit(const std::string& limits_text) {
  std::istringstream in(limits_text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("Max open files", 0) != 0) continue;
    std::istringstream words(line.substr(14));
    std::string soft, hard;
    words >> soft >> hard;
    return {soft, hard};
  }
  return {};
}

std::string ReadText(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Kilobytes of a /proc/<pid>/status field ("VmRSS").
long StatusKb(pid_t pid, const std::string& field) {
  std::istringstream in(ReadText("/proc/" + std::to_string(pid) + "/status"));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(field + ":", 0) == 0) return std::atol(line.c_str() + field.size() + 1);
  }
  return -1;
}

// Starts `podvisor run` under RLIMIT_NOFILE soft:hard, set by a shell
// between the test and podvisor (the harness spawns $PODVISOR), so that
// podvisor starts with exactly that limit.
template <class Tier>
class Limited : public Tier {
 protected:
  void StartLimited(uint64_t soft, uint64_t hard, const std::vector<std::string>& args = {},
                    const std::vector<std::string>& env = {}) {
    std::string real = RequiredEnv("PODVISOR");
    fs::path wrapper = this->dir_ / "podvisor-limited";
    {
      std::ofstream out(wrapper);
      // Soft first: the hard limit may not go below it.
      out << "#!/bin/sh\nulimit -S -n " << soft << " && ulimit -H -n " << hard
          << " || exit 99\nexec '" << real << "' \"$@\"\n";
    }
    ::chmod(wrapper.c_str(), 0755);
    ::setenv("PODVISOR", wrapper.c_str(), 1);
    this->StartRun(args, env);
    ::setenv("PODVISOR", real.c_str(), 1);
  }

  // Starts `podvisor run` under RLIMIT_FSIZE of `blocks` 512-byte blocks
  // (the unit of sh's ulimit -f), through the same kind of wrapper.
  void StartFileSizeLimited(int blocks) {
    std::string real = RequiredEnv("PODVISOR");
    fs::path wrapper = this->dir_ / "podvisor-fsize";
    {
      std::ofstream out(wrapper);
      out << "#!/bin/sh\nulimit -f " << blocks << " || exit 99\nexec '" << real << "' \"$@\"\n";
    }
    ::chmod(wrapper.c_str(), 0755);
    ::setenv("PODVISOR", wrapper.c_str(), 1);
    this->StartRun();
    ::setenv("PODVISOR", real.c_str(), 1);
  }

  // Pod events of `reason` so far (events.jsonl, read without the control
  // socket, which a supervisor out of descriptors may not answer).
  int EventsWithReason(const std::string& reason) {
    int n = 0;
    for (const auto& e : this->PodEvents()) n += e.value("reason", "") == reason;
    return n;
  }

  bool WaitForEvent(const std::string& reason, int count, std::chrono::seconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (EventsWithReason(reason) < count) {
      if (std::chrono::steady_clock::now() > deadline || !this->RunIsAlive()) return false;
      std::this_thread::sleep_for(milliseconds(50));
    }
    return true;
  }

  // SIGTERM, not `podvisor stop`: the control socket may be out of reach
  // while descriptors are short.
  int StopBySignal() {
    ::kill(this->run_pid(), SIGTERM);
    return this->WaitRun(std::chrono::seconds(60));
  }
};

std::string ManyContainers(const std::string& name, int count, const std::string& command) {
  std::string pod = PodHeader(name, "Always", 1) + "  containers:\n";
  for (int i = 0; i < count; ++i) pod += PodEntry("c" + std::to_string(i), command);
  return pod;
}

using LimitsFake = Limited<FakeRuntimeTier>;
using LimitsRunc = Limited<RuncTier>;

TEST_F(LimitsFake, S14_10_SoftLimitIsRaisedAndChildrenGetTheOriginal) {
  WritePod(PodHeader("fdlimit", "Never", 1) + "  containers:\n" +
           PodEntry("app", ShCmd("grep 'Max open files' /proc/self/limits > {{DIR}}/limits; "
                                 "exec sleep 100000")));
  StartLimited(200, 4096);
  WaitUntilRunning();
  auto own = OpenFilesLimit(ReadText("/proc/" + std::to_string(run_pid()) + "/limits"));
  EXPECT_EQ(own.first, "4096") << "podvisor's soft limit";
  EXPECT_EQ(own.second, "4096");
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (ReadScratch("limits").empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(50));
  }
  auto child = OpenFilesLimit(ReadScratch("limits"));
  EXPECT_EQ(child.first, "200") << "the container's soft limit";
  EXPECT_EQ(child.second, "4096");
  EXPECT_EQ(EventsWithReason("DescriptorLimit"), 0);
  EXPECT_EQ(Client({"stop"}).exit_code, 0);
  EXPECT_THAT(WaitRun(), AnyOf(0, 4)) << RunStderr();
}

TEST_F(LimitsFake, S14_10_APodThatMayNeedMoreDescriptorsIsWarnedAbout) {
  // 64 + 16 x 5 = 144 > 128.
  WritePod(ManyContainers("fdwarn", 5, HelperCmd("app", "sleep 100000")));
  StartLimited(128, 128);
  ASSERT_TRUE(WaitForEvent("DescriptorLimit", 1, std::chrono::seconds(15))) << RunStderr();
  EXPECT_THAT(RunStderr(), ::testing::HasSubstr("RLIMIT_NOFILE allows 128"));
  EXPECT_THAT(StopBySignal(), AnyOf(0, 4)) << RunStderr();
}

// S14.11: more containers than descriptors. Creates fail at every step
// (config.json, the log file, pipes, spawning the runtime, its pid file,
// adopting the init, the delete), are retried, and when the pod stops
// nothing of any attempt is left (the fixture checks runtime state,
// processes and mounts).
TEST_F(LimitsFake, S14_11_RunningOutOfDescriptorsLeavesNothingBehind) {
  WritePod(ManyContainers("fdout", 40, HelperCmd("app", "sleep 100000")));
  StartLimited(96, 96, {"--backoff-initial", "100ms", "--backoff-max", "400ms"});
  ASSERT_TRUE(WaitForEvent("Failed", 40, std::chrono::seconds(30))) << RunStderr();
  EXPECT_THAT(RunStderr(), ::testing::HasSubstr("Too many open files"));
  EXPECT_THAT(StopBySignal(), AnyOf(0, 4)) << RunStderr();
}

TEST_F(LimitsRunc, S14_11_RunningOutOfDescriptorsLeavesNothingBehind) {
  WritePod(ManyContainers("fdout-runc", 12, HelperCmd("app", "sleep 100000")));
  StartLimited(64, 64, {"--backoff-initial", "100ms", "--backoff-max", "400ms"});
  ASSERT_TRUE(WaitForEvent("Failed", 12, std::chrono::seconds(60))) << RunStderr();
  EXPECT_THAT(StopBySignal(), AnyOf(0, 4)) << RunStderr();
}

// S14.12: 300 restarts of a crash-looping container. The instance
// directories stay at most three (current, the newest ended, one whose
// delete is in flight), and the supervisor's RSS grows by less than
// 1 MiB between restart 50 and restart 300 (it grew ~10 KB a restart).
TEST_F(LimitsFake, S14_12_ACrashLoopRunsInConstantMemoryAndDisk) {
  WritePod(
      PodHeader("crashloop", "Always", 1) + "  containers:\n" +
      PodEntry("app", "[\"{{H}}\", \"exit\", \"1\"]", ", env: [{name: SECRET, value: s3cr3t}]"));
  StartRun({"--backoff-initial", "0s", "--backoff-max", "0s"});
  fs::path instances = state_dir_ / "crashloop" / "containers" / "app";
  auto restarts_reach = [&](int n) {
    WaitForStatus(
        [n](const nlohmann::json& p) {
          const auto* c = FindContainerStatus(p, "app");
          return c && c->value("restartCount", -1) >= n;
        },
        "app restarted " + std::to_string(n) + " times", std::chrono::seconds(120));
  };
  auto count_dirs = [&] {
    int n = 0;
    std::error_code ec;
    for (auto it = fs::directory_iterator(instances, ec); !ec && it != fs::directory_iterator();
         it.increment(ec)) {
      ++n;
    }
    return n;
  };
  restarts_reach(50);
  long rss_before = StatusKb(run_pid(), "VmRSS");
  restarts_reach(300);
  long rss_after = StatusKb(run_pid(), "VmRSS");
  EXPECT_LE(count_dirs(), 3) << "instance directories after 300 restarts";
  EXPECT_LT(rss_after - rss_before, 1024)
      << "RSS " << rss_before << " kB -> " << rss_after << " kB";
  EXPECT_EQ(Client({"stop"}).exit_code, 0);
  EXPECT_THAT(WaitRun(), AnyOf(0, 4)) << RunStderr();
}

// S14.13: an exec the client never runs (here: no client at all) does
// not leave the container's environment on disk.
TEST_F(LimitsFake, S14_13_AnExecNeverRunLeavesNoProcessFile) {
  WritePod(
      PodHeader("execfile", "Never", 1) + "  containers:\n" +
      PodEntry("app", HelperCmd("app", "sleep 100000"), ", env: [{name: SECRET, value: s3cr3t}]"));
  StartRun();
  WaitUntilRunning();
  std::string reply = RawControlRequest(R"({"op":"exec","container":"app","args":["true"]})"
                                        "\n");
  auto parsed = nlohmann::json::parse(reply, nullptr, false);
  ASSERT_TRUE(parsed.is_object() && parsed.contains("processFile")) << reply;
  fs::path file = parsed["processFile"].get<std::string>();
  EXPECT_TRUE(fs::exists(file)) << "handed to the client";
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (fs::exists(file) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(200));
  }
  EXPECT_FALSE(fs::exists(file)) << file << " still holds the environment";
  EXPECT_EQ(Client({"stop"}).exit_code, 0);
  EXPECT_THAT(WaitRun(), AnyOf(0, 4)) << RunStderr();
}

// A log that reaches the file size limit (ulimit -f, or LimitFSIZE= of
// a unit) is a write that fails with EFBIG (S14.16), not a SIGXFSZ that
// kills the supervisor and leaves the pod unsupervised.
TEST_F(LimitsFake, S14_16_AFileSizeLimitNeverKillsTheSupervisor) {
  // 3000 records of about 120 bytes: ten times the 32 KiB allowed.
  WritePod(PodHeader("fsize", "Never", 1) + "  containers:\n" +
           PodEntry("app", ShCmd("i=0; while [ $i -lt 3000 ]; do echo \"line-$i-" +
                                 std::string(80, '.') + "-end\"; i=$((i+1)); done")));
  StartFileSizeLimited(64);
  EXPECT_EQ(WaitRun(std::chrono::seconds(60)), 0) << RunStderr().substr(0, 4000);
  // S14.17: at most one report a minute, and what is left when the output
  // ends: one event when all of it failed before the first report, two
  // when the pipe had gone empty in between (how the reads fall is the
  // scheduler's choice). Never one per record.
  int reports = EventsWithReason("LogWriteFailed");
  EXPECT_GE(reports, 1);
  EXPECT_LE(reports, 2);
}

}  // namespace
}  // namespace podvisor::e2e
