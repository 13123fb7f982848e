// Test tier 3 (docs/TESTING.md) for `podvisor apply` (docs/SEMANTICS.md
// S18) with runc and the busybox bundle: a directory of manifests (the
// harness's bundle directory, its images/img beside them) applied to the
// test's state directory; pods start detached, as `apply` starts them.
// Every test stops what apply started, and the harness then checks that
// nothing is left (processes mentioning the test dir, mounts, cgroups).
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness.h"

namespace podvisor::e2e {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class RuncApply : public RuncE2eTest {
 protected:
  // `podvisor apply` with the test's state and log dirs and run's options
  // of the tier (runc, the test's cgroup parent, no network).
  std::vector<std::string> ApplyArgv(const std::vector<std::string>& extra) {
    TierConfig t = Tier();
    std::vector<std::string> argv = {RequiredEnv("PODVISOR"),
                                     "apply",
                                     "-f",
                                     bundle_.string(),
                                     "--state-dir",
                                     state_dir_.string(),
                                     "--log-dir",
                                     log_dir_.string(),
                                     "--runtime",
                                     t.runtime,
                                     "--cgroup-parent",
                                     t.cgroup_parent,
                                     "--run-arg=--network",
                                     "--run-arg=none",
                                     "--detach",
                                     "process"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return argv;
  }
  testing::CommandResult Apply(const std::vector<std::string>& extra = {}) {
    return testing::RunCommand(ApplyArgv(extra));
  }

  // A pod whose one container runs until SIGTERM; `marker` changes its
  // command (a replace), `extra` adds to the container.
  void WriteManifest(const std::string& name, const std::string& marker,
                     const std::string& extra = "", const std::string& labels = "{v: \"1\"}",
                     const std::string& helper_args = "trap-sigterm 0 0") {
    std::string yaml = "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name +
                       ", labels: " + labels +
                       "}\nspec:\n  terminationGracePeriodSeconds: 3\n"
                       "  volumes: [{name: shared, hostPath: {path: \"{{HOSTDIR}}\", type: "
                       "DirectoryOrCreate}}]\n  containers:\n"
                       "  - {name: app, image: img, command: " +
                       HelperCmd(name, helper_args) + ", env: [{name: MARKER, value: \"" + marker +
                       "\"}], volumeMounts: [{name: shared, mountPath: /shared}]" + extra + "}\n";
    // Written aside and renamed into place, as an editor saves.
    const fs::path tmp = bundle_ / ("." + name + ".yaml.tmp");
    std::ofstream(tmp) << Expand(yaml);
    fs::rename(tmp, bundle_ / (name + ".yaml"));
  }

  std::optional<nlohmann::json> PodStatus(const std::string& name) {
    auto r = Client({"status", name, "-o", "json"});
    if (r.exit_code != 0) return std::nullopt;
    return nlohmann::json::parse(r.out, nullptr, false);
  }
  std::string Uid(const std::string& name) {
    auto s = PodStatus(name);
    return s ? (*s)["metadata"].value("uid", "") : "";
  }
  bool Running(const std::string& name) {
    auto r = Client({"list"});
    return r.out.find(name) != std::string::npos && PodStatus(name) &&
           Phase(*PodStatus(name)) == "Running";
  }
  std::string Marker(const std::string& name) {
    auto s = PodStatus(name);
    if (!s) return "";
    for (const auto& e : (*s)["spec"]["containers"][0].value("env", nlohmann::json::array())) {
      if (e.value("name", "") == "MARKER") return e.value("value", "");
    }
    return "";
  }
  void Stop(const std::string& name) {
    auto r = Client({"stop", name});
    EXPECT_EQ(r.exit_code, 0) << r.err;
  }
};

TEST_F(RuncApply, S18_StartKeepMetadataOnlyAndReplace) {
  pod_name_ = "web";
  WriteManifest("web", "one");
  auto r = Apply();
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("pod/web created"));
  auto status = PodStatus("web");
  ASSERT_TRUE(status) << r.err;
  EXPECT_EQ(ConditionStatus(*status, "Ready"), "True");
  const std::string uid = Uid("web");
  EXPECT_TRUE(fs::exists(state_dir_ / ".apply" / "web" / "last-good" / "pod.json"));

  // Unchanged, and a label alone is no change: the same run goes on.
  r = Apply();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("pod/web unchanged"));
  WriteManifest("web", "one", "", "{v: \"2\"}");
  r = Apply();
  EXPECT_THAT(r.out, HasSubstr("pod/web unchanged"));
  EXPECT_EQ(Uid("web"), uid);

  // Any other change: stopped with reason Update, started, Ready.
  WriteManifest("web", "two");
  r = Apply();
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("pod/web replaced"));
  EXPECT_NE(Uid("web"), uid);
  EXPECT_EQ(Marker("web"), "two");
  // The old run's events say why it stopped.
  std::ifstream events(state_dir_ / "web" / ".runs" / uid / "events.jsonl");
  std::string text((std::istreambuf_iterator<char>(events)), std::istreambuf_iterator<char>());
  EXPECT_THAT(text, HasSubstr("Update"));
  Stop("web");
}

TEST_F(RuncApply, S18_ANewManifestThatIsNeverReadyIsRolledBack) {
  pod_name_ = "web";
  WriteManifest("web", "good");
  ASSERT_EQ(Apply().exit_code, 0);
  const std::string never_ready =
      ", readinessProbe: {exec: {command: [/bin/sh, -c, \"test -e /shared/never\"]}, "
      "periodSeconds: 1}";
  WriteManifest("web", "bad", never_ready);
  auto r = Apply({"--timeout", "4s"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("pod/web rolled back: not Ready within 4s"));
  EXPECT_THAT(r.out, HasSubstr("containers with unready status: [app]"));
  // The good manifest runs again, Ready.
  auto status = PodStatus("web");
  ASSERT_TRUE(status);
  EXPECT_EQ(Marker("web"), "good");
  EXPECT_EQ(ConditionStatus(*status, "Ready"), "True");
  // The same bad manifest is not tried again until it is edited.
  r = Apply({"--timeout", "4s"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.out, HasSubstr("pod/web skipped: this manifest was rolled back before"));
  EXPECT_EQ(Marker("web"), "good");
  Stop("web");
}

TEST_F(RuncApply, S18_ACrashingContainerIsRolledBackThoughReadyForAnInstant) {
  // Without a readiness probe a container is Ready once running: the new
  // one crashes right after, and --min-ready (1 s) sees the restart.
  pod_name_ = "web";
  WriteManifest("web", "good");
  ASSERT_EQ(Apply().exit_code, 0);
  WriteManifest("web", "crashes", "", "{v: \"1\"}", "exit 3");
  auto r = Apply({"--timeout", "5s"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("pod/web rolled back: "));
  EXPECT_EQ(Marker("web"), "good");
  auto status = PodStatus("web");
  ASSERT_TRUE(status);
  EXPECT_EQ(ConditionStatus(*status, "Ready"), "True");
  Stop("web");
}

TEST_F(RuncApply, S18_AnInvalidManifestLeavesTheRunningPodAlone) {
  pod_name_ = "web";
  WriteManifest("web", "one");
  ASSERT_EQ(Apply().exit_code, 0);
  const std::string uid = Uid("web");
  WriteManifest("web", "two", ", ports: [{containerPort: 70000}]");
  auto r = Apply();
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("spec.containers[0].ports[0].containerPort: Invalid value: 70000"));
  EXPECT_THAT(r.out, HasSubstr("pod/web invalid, left running"));
  EXPECT_THAT(r.err, HasSubstr("podvisor: apply: " + (bundle_ / "web.yaml").string() + ":"));
  EXPECT_EQ(Uid("web"), uid);
  EXPECT_EQ(Marker("web"), "one");
  Stop("web");
}

TEST_F(RuncApply, S18_DryRunChangesNothingAndPruneStopsWhatApplyStarted) {
  pod_name_ = "web";
  WriteManifest("web", "one");
  WriteManifest("db", "one");
  auto r = Apply({"--dry-run"});
  EXPECT_EQ(r.exit_code, 1) << r.err;  // not as asked yet
  EXPECT_THAT(r.out, HasSubstr("pod/db created (dry run)"));
  EXPECT_THAT(r.out, HasSubstr("pod/web created (dry run)"));
  EXPECT_FALSE(fs::exists(state_dir_ / "web"));
  EXPECT_FALSE(fs::exists(state_dir_ / ".apply"));

  r = Apply();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(Apply({"--dry-run"}).exit_code, 0);  // as asked
  fs::remove(bundle_ / "db.yaml");
  r = Apply({"--dry-run", "--prune"});
  EXPECT_THAT(r.out, HasSubstr("pod/db pruned (dry run)"));
  EXPECT_TRUE(Running("db"));
  // Without --prune a pod whose manifest is gone runs on.
  r = Apply();
  EXPECT_THAT(r.out, Not(HasSubstr("pod/db")));
  EXPECT_TRUE(Running("db"));
  r = Apply({"--prune"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("pod/db pruned"));
  EXPECT_FALSE(Running("db"));
  EXPECT_FALSE(fs::exists(state_dir_ / ".apply" / "db"));
  EXPECT_TRUE(Running("web"));
  Stop("web");
}

TEST_F(RuncApply, S18_AResourcesOnlyChangeIsAResizeInPlace) {
  pod_name_ = "web";
  const std::string small = ", resources: {limits: {memory: 64Mi, cpu: 200m}}";
  WriteManifest("web", "one", small);
  ASSERT_EQ(Apply().exit_code, 0);
  const std::string uid = Uid("web");
  WriteManifest("web", "one", ", resources: {limits: {memory: 96Mi, cpu: 300m}}");
  auto r = Apply();
  if (r.err.find("no resize in place (Unimplemented: ") != std::string::npos) {
    // Replaced instead, as apply does when the supervisor has no resize.
    EXPECT_THAT(r.out, HasSubstr("pod/web replaced"));
    Stop("web");
    GTEST_SKIP() << "this supervisor has no resize op yet (Unimplemented): apply replaced the pod";
  }
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("pod/web configured (resized)"));
  EXPECT_EQ(Uid("web"), uid);
  Stop("web");
}

TEST_F(RuncApply, S18_9_APodRunByHandIsLeftAlone) {
  // `podvisor run` of the bundle's pod.yaml, which apply reads as well.
  WritePod(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n"
      "  terminationGracePeriodSeconds: 3\n  containers:\n"
      "  - {name: app, image: img, command: [sleep, \"100\"]}\n");
  StartRun();
  WaitForStatus([](const nlohmann::json& p) { return Phase(p) == "Running"; }, "running");
  auto r = Apply({"--prune"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_THAT(r.out,
              HasSubstr("pod/web skipped: a pod of that name runs that apply did not start"));
  EXPECT_FALSE(fs::exists(state_dir_ / ".apply" / "web"));
  Stop("web");
  EXPECT_EQ(WaitRun(), 4);  // stopped on request
}

// `apply --watch` as a child process, its output in a file.
class Watcher {
 public:
  Watcher(const std::vector<std::string>& argv, const fs::path& out) : out_(out) {
    pid_ = ::fork();
    if (pid_ == 0) {
      int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
  }
  ~Watcher() { EXPECT_EQ(Stop(), 0); }
  int Stop() {
    if (pid_ <= 0) return exit_;
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    exit_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return exit_;
  }
  std::string Output() const {
    std::ifstream in(out_);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  bool WaitFor(const std::string& text, std::chrono::seconds timeout = std::chrono::seconds(30)) {
    auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
      if (Output().find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

 private:
  fs::path out_;
  pid_t pid_ = -1;
  int exit_ = 0;
};

TEST_F(RuncApply, S18_WatchReplacesAnEditedPodPrunesARemovedOneAndIgnoresEditorFiles) {
  pod_name_ = "web";
  WriteManifest("web", "one");
  WriteManifest("db", "one");
  {
    Watcher watcher(ApplyArgv({"--watch", "--prune", "--rescan", "1h"}), dir_ / "watch.out");
    ASSERT_TRUE(watcher.WaitFor("pod/web created")) << watcher.Output();
    ASSERT_TRUE(watcher.WaitFor("pod/db created")) << watcher.Output();
    const std::string uid = Uid("web");
    // An editor's swap and backup files are never read (a read would
    // print an error: they are no manifests).
    std::ofstream(bundle_ / ".web.yaml.swp") << "junk";
    std::ofstream(bundle_ / "web.yaml~") << "junk";
    WriteManifest("web", "two");  // renamed into place
    ASSERT_TRUE(watcher.WaitFor("pod/web replaced")) << watcher.Output();
    EXPECT_EQ(Marker("web"), "two");
    EXPECT_NE(Uid("web"), uid);
    fs::remove(bundle_ / "db.yaml");
    ASSERT_TRUE(watcher.WaitFor("pod/db pruned")) << watcher.Output();
    EXPECT_FALSE(Running("db"));
    EXPECT_THAT(watcher.Output(), Not(HasSubstr("podvisor:")));
    EXPECT_EQ(watcher.Stop(), 0);
  }
  // The watcher's end leaves the pod running.
  EXPECT_TRUE(Running("web"));
  Stop("web");
}

}  // namespace
}  // namespace podvisor::e2e
