// instances.h: the Lifecycle's create, start and delete of an instance,
// driven through the FakeLauncher (runtime calls exit in the order a test
// chooses) on a loop with a FakeClock, with a fake host that records every
// event fed. Each test asserts the Lifecycle events, each once and in order.
//
// The container's init is the one real process: a fork of the test, which
// the instance adopts from the pid file as it adopts a runtime's init
// (pidfd, reaper) and which exits when the test says so. Nothing is exec'd.
#include "supervisor/executor/instances.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include <gtest/gtest.h>

#include "supervisor/executor/fake_launcher.h"
#include "supervisor/executor/internal.h"

namespace podvisor::supervisor::executor {
namespace {

namespace fs = std::filesystem;

// A directory of its own per test: bundle, pod state and logs.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (fs::temp_directory_path() / "podvisor-instances-XXXXXX").string();
    EXPECT_NE(::mkdtemp(pattern.data()), nullptr);
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

class RecordingHost : public InstanceHost {
 public:
  void Feed(lifecycle::Event event) override { events.push_back(lifecycle::ToString(event)); }
  void OnPublish(const lifecycle::Publish& p) override { published.push_back(p.reason); }
  void MaybeFinish() override { ++maybe_finish; }
  bool PodFinished() const override { return false; }
  int CurrentInstance(const std::string&) const override { return current_instance; }
  void AddPodFacts(hostfs::InstanceFacts&) const override {}

  std::vector<std::string> events;
  std::vector<std::string> published;
  int maybe_finish = 0;
  int current_instance = 0;
};

// A stand-in for a container init: our child, blocked until Exit.
class FakeInit {
 public:
  FakeInit() {
    int fds[2];
    EXPECT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(fds[1]);
      unsigned char code = 0;
      ssize_t n = ::read(fds[0], &code, 1);
      ::_exit(n == 1 ? code : 99);
    }
    ::close(fds[0]);
    release_ = fds[1];
  }
  ~FakeInit() {
    if (release_ >= 0) ::close(release_);  // it exits at EOF
    ::waitpid(pid_, nullptr, 0);           // unless the instance's reaper did
  }
  pid_t pid() const { return pid_; }
  // Lets it exit with `code` and waits until it has.
  void Exit(unsigned char code) {
    EXPECT_EQ(::write(release_, &code, 1), 1);
    ::close(release_);
    release_ = -1;
    WaitExited();
  }
  // Waits until it has exited, leaving it a zombie: the instance's reaper
  // collects it.
  void WaitExited() {
    siginfo_t info{};
    EXPECT_EQ(::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOWAIT), 0);
  }

 private:
  pid_t pid_ = 0;
  int release_ = -1;
};

class InstancesTest : public ::testing::Test {
 protected:
  InstancesTest() : layout_(dir_.path() / "state", "web") {
    pod_.metadata.name = "web";
    pod::Container c;
    c.name = "app";
    c.image = "img";
    c.command = {"/bin/app"};
    pod_.spec.containers = {c};
    image::Image image;
    image.reference = "img";
    image.dir = dir_.path() / "bundle" / "images" / "img";
    image.rootfs = image.dir / "rootfs";
    fs::create_directories(image.rootfs);
    images_.emplace("app", image);
    options_.bundle = dir_.path() / "bundle";
    options_.state_dir = layout_.dir();
    options_.log_dir = dir_.path() / "logs";
    options_.sandbox = false;
    options_.node_memory_bytes = int64_t{1} << 30;  // S10.3: oom_score_adj needs it
    options_.node_hostname = "node";
    options_.runtime = {"runc", "/nonexistent/runc"};
    fs::create_directories(layout_.dir());
    fs::create_directories(options_.log_dir);
    auto launcher = std::make_unique<FakeLauncher>();
    launcher_ = launcher.get();
    instances_ = std::make_unique<Instances>(
        Instances::Pod{*loop_, reaper_, layout_, options_, pod_, images_}, host_,
        std::move(launcher));
  }
  ~InstancesTest() override {
    instances_.reset();
    (void)process::ReapAll();
  }

  // The running call `what` of the app's current instance.
  int Running(const std::string& what) {
    ContainerInstance* inst = instances_->Find("app", 0);
    return inst ? launcher_->Running(what, inst->id) : -1;
  }
  // The runtime's create wrote the init's pid and exits.
  void CreateReturns(const FakeInit& init, int exit_code = 0, const std::string& what = "create") {
    ContainerInstance* inst = instances_->Find("app", 0);
    ASSERT_NE(inst, nullptr);
    std::ofstream(inst->dir / "init.pid") << init.pid();
    ASSERT_TRUE(launcher_->Exit(Running(what), exit_code));
  }
  // The init exited; the reaper tells its owner.
  void InitExits(FakeInit& init, unsigned char code) {
    init.Exit(code);
    ASSERT_TRUE(reaper_.Dispatch());
  }
  void RunLoopAfter(Duration d) {
    clock_.Advance(d);
    ASSERT_TRUE(loop_->RunOnce(Duration::zero()));
  }

  ScratchDir dir_;
  FakeClock clock_;
  Result<loop::EventLoop> loop_ = loop::EventLoop::Create(clock_);
  process::Reaper reaper_;
  pod::Pod pod_;
  hostfs::PodLayout layout_;
  ExecutorOptions options_;
  std::map<std::string, image::Image> images_;
  RecordingHost host_;
  FakeLauncher* launcher_ = nullptr;
  std::unique_ptr<Instances> instances_;
};

TEST_F(InstancesTest, CreateExitsBeforeInitExitsThenStartDeleteEachReportedOnceInOrder) {
  launcher_->detached_run = false;
  FakeInit init;
  instances_->Create(lifecycle::CreateContainer{"app", 0, true});
  EXPECT_TRUE(host_.events.empty()) << "nothing before the create call returns";
  CreateReturns(init);
  EXPECT_EQ(host_.events, std::vector<std::string>{"RuntimeCreated(app#0)"});

  instances_->Start(lifecycle::StartContainer{"app", 0});
  ASSERT_TRUE(launcher_->Exit(Running("start")));
  InitExits(init, 3);
  instances_->Delete(lifecycle::DeleteContainer{"app", 0});
  ASSERT_TRUE(launcher_->Exit(Running("delete")));

  EXPECT_EQ(host_.events,
            (std::vector<std::string>{"RuntimeCreated(app#0)", "RuntimeStarted(app#0)",
                                      "ContainerExited(app#0, code=3)"}));
  ContainerInstance* inst = instances_->Find("app", 0);
  ASSERT_NE(inst, nullptr);
  EXPECT_TRUE(inst->state.Deleted());
  EXPECT_FALSE(fs::exists(inst->dir / "config.json")) << "S14.12: removed after the delete";
  EXPECT_TRUE(instances_->SettleForEnd());
}

TEST_F(InstancesTest, InitExitsBeforeStartReturnsIsReportedAfterRuntimeStarted) {
  launcher_->detached_run = false;
  FakeInit init;
  instances_->Create(lifecycle::CreateContainer{"app", 0, false});
  CreateReturns(init);
  instances_->Start(lifecycle::StartContainer{"app", 0});
  InitExits(init, 0);
  EXPECT_EQ(host_.events, std::vector<std::string>{"RuntimeCreated(app#0)"})
      << "the exit waits for the start's report";
  ASSERT_TRUE(launcher_->Exit(Running("start")));
  EXPECT_EQ(host_.events,
            (std::vector<std::string>{"RuntimeCreated(app#0)", "RuntimeStarted(app#0)",
                                      "ContainerExited(app#0, code=0)"}));
}

TEST_F(InstancesTest, RunInitExitedBeforeRunReturnedIsAdoptedAndReportedAfterTheStart) {
  launcher_->detached_run = true;
  FakeInit init;
  instances_->Create(lifecycle::CreateContainer{"app", 0, true});
  ASSERT_GE(Running("run"), 0) << "create and start in one call";
  init.Exit(1);  // a zombie child before the run's exit is handled
  CreateReturns(init, 0, "run");
  ASSERT_TRUE(reaper_.Dispatch());
  EXPECT_EQ(host_.events, std::vector<std::string>{"RuntimeCreated(app#0)"});
  instances_->Start(lifecycle::StartContainer{"app", 0});
  EXPECT_EQ(Running("start"), -1) << "run started it: no start call";
  EXPECT_EQ(host_.events,
            (std::vector<std::string>{"RuntimeCreated(app#0)", "RuntimeStarted(app#0)",
                                      "ContainerExited(app#0, code=1)"}));
}

TEST_F(InstancesTest, S5_9_SignalReachesTheInitWhoseDeathIsReportedWithTheSignal) {
  launcher_->detached_run = false;
  FakeInit init;
  instances_->Create(lifecycle::CreateContainer{"app", 0, false});
  CreateReturns(init);
  instances_->Start(lifecycle::StartContainer{"app", 0});
  ASSERT_TRUE(launcher_->Exit(Running("start")));
  instances_->Signal(lifecycle::SignalContainer{"app", 0, SIGKILL});
  init.WaitExited();
  ASSERT_TRUE(reaper_.Dispatch());
  EXPECT_EQ(host_.events,
            (std::vector<std::string>{"RuntimeCreated(app#0)", "RuntimeStarted(app#0)",
                                      "ContainerExited(app#0, code=137, SIGKILL)"}));
}

TEST_F(InstancesTest, FailedCreateReportsRuntimeFailedOnceAndTheEndStillDeletesIt) {
  launcher_->detached_run = false;
  instances_->Create(lifecycle::CreateContainer{"app", 0, false});
  ContainerInstance* inst = instances_->Find("app", 0);
  ASSERT_NE(inst, nullptr);
  ASSERT_TRUE(launcher_->Exit(Running("create"), 1));
  ASSERT_EQ(host_.events.size(), 1u);
  EXPECT_EQ(host_.events[0].rfind("RuntimeFailed(app#0, create, runtime create exited", 0), 0u)
      << host_.events[0];
  // The runtime may hold what the failed create made: the end deletes it.
  EXPECT_FALSE(instances_->SettleForEnd());
  ASSERT_TRUE(launcher_->Exit(Running("delete")));
  EXPECT_TRUE(instances_->SettleForEnd());
  EXPECT_EQ(host_.events.size(), 1u);
}

TEST_F(InstancesTest, CreateThatCannotBeSpawnedFailsAtOnceAndNeedsNoDelete) {
  launcher_->fail_next_spawn = EAGAIN;
  instances_->Create(lifecycle::CreateContainer{"app", 0, false});
  ASSERT_EQ(host_.events.size(), 1u);
  EXPECT_EQ(host_.events[0].rfind("RuntimeFailed(app#0, create", 0), 0u) << host_.events[0];
  EXPECT_TRUE(instances_->SettleForEnd()) << "the runtime never saw it";
}

TEST_F(InstancesTest, S14_11_DeleteThatCannotBeSpawnedIsTriedAgainAfterASecond) {
  launcher_->detached_run = false;
  FakeInit init;
  instances_->Create(lifecycle::CreateContainer{"app", 0, false});
  CreateReturns(init);
  launcher_->fail_next_spawn = EMFILE;  // no reserve refilled: nothing to fall back on
  instances_->Delete(lifecycle::DeleteContainer{"app", 0});
  EXPECT_EQ(Running("delete"), -1);
  EXPECT_FALSE(instances_->SettleForEnd()) << "the pod's end waits for the retry";
  RunLoopAfter(std::chrono::milliseconds(999));
  EXPECT_EQ(Running("delete"), -1);
  RunLoopAfter(std::chrono::milliseconds(1));
  ASSERT_GE(Running("delete"), 0) << "tried again";
  ASSERT_TRUE(launcher_->Exit(Running("delete")));
  EXPECT_TRUE(instances_->Find("app", 0)->state.Deleted());
  EXPECT_EQ(host_.events, std::vector<std::string>{"RuntimeCreated(app#0)"});
}

TEST_F(InstancesTest, S14_11_DeleteOutOfDescriptorsUsesTheReserveAtOnce) {
  launcher_->detached_run = false;
  FakeInit init;
  instances_->Create(lifecycle::CreateContainer{"app", 0, false});
  CreateReturns(init);
  instances_->RefillDescriptorReserve();
  launcher_->fail_next_spawn = EMFILE;
  instances_->Delete(lifecycle::DeleteContainer{"app", 0});
  EXPECT_GE(Running("delete"), 0) << "spawned again with the reserve's descriptors";
}

TEST_F(InstancesTest, FailedDeleteCallStillEndsTheInstanceWithoutAnotherEvent) {
  launcher_->detached_run = false;
  FakeInit init;
  instances_->Create(lifecycle::CreateContainer{"app", 0, false});
  CreateReturns(init);
  InitExits(init, 0);  // exited before it was ever started: reported after the create
  EXPECT_EQ(host_.events,
            (std::vector<std::string>{"RuntimeCreated(app#0)", "ContainerExited(app#0, code=0)"}));
  instances_->Delete(lifecycle::DeleteContainer{"app", 0});
  ASSERT_TRUE(launcher_->Exit(Running("delete"), 1));
  EXPECT_EQ(host_.events.size(), 2u);
  EXPECT_TRUE(instances_->Find("app", 0)->state.Deleted());
  EXPECT_EQ(launcher_->calls().size(), 2u) << "create, delete: a failed delete is not repeated";
  EXPECT_TRUE(instances_->SettleForEnd());
}

}  // namespace
}  // namespace podvisor::supervisor::executor
