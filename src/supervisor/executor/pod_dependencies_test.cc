// S19.3, S19.5, S19.8: the watcher of podvisor.io/after's pods on a
// temporary state directory, through the real EventLoop and inotify. The
// test plays the other pods' supervisors: it writes their kept records by
// rename, as PodRecord does, and listens on their control sockets.
#include "supervisor/executor/pod_dependencies.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/file_io.h"
#include "common/pod_dir.h"

namespace podvisor::supervisor::executor {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

// A kept record as PodRecord writes it, reduced to what is read.
std::string Record(const std::string& phase, bool ready, const std::string& after = "",
                   bool waiting = false) {
  nlohmann::json record;
  record["metadata"]["name"] = "x";
  if (!after.empty()) record["metadata"]["annotations"]["podvisor.io/after"] = after;
  record["status"]["phase"] = phase;
  record["status"]["conditions"] =
      nlohmann::json::array({{{"type", "Initialized"},
                              {"status", waiting ? "False" : "True"},
                              {"reason", waiting ? "WaitingForPods" : ""}},
                             {{"type", "Ready"}, {"status", ready ? "True" : "False"}}});
  return record.dump();
}

class PodDependenciesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = (fs::path(::testing::TempDir()) / "podvisor-after.XXXXXX").string();
    ASSERT_NE(::mkdtemp(templ.data()), nullptr);
    root_ = templ;
    auto loop = loop::EventLoop::Create();
    ASSERT_TRUE(loop) << loop.error().message();
    loop_.emplace(std::move(*loop));
  }
  void TearDown() override {
    deps_.reset();
    for (int fd : sockets_) ::close(fd);
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  void WriteRecord(const std::string& pod, const std::string& text) {
    fs::create_directories(root_ / pod);
    ASSERT_TRUE(
        WriteFileAtomic(PodDir(root_, pod).RecordFile(), text, 0644, Durability::kUnsynced).ok());
  }
  // The pod's supervisor, as far as liveness goes: a listening socket.
  void Listen(const std::string& pod) {
    fs::create_directories(root_ / pod);
    const std::string path = PodDir(root_, pod).ControlSocket().string();
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    ASSERT_LT(path.size(), sizeof addr.sun_path);
    std::memcpy(addr.sun_path, path.c_str(), path.size());
    ASSERT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0);
    ASSERT_EQ(::listen(fd, 16), 0);
    sockets_.push_back(fd);
  }
  // A supervisor that died: its socket file stays, nobody listens.
  void DeadSocket(const std::string& pod) {
    Listen(pod);
    ::close(sockets_.back());
    sockets_.pop_back();
  }

  void StartWatching(std::vector<std::string> names) {
    PodDependencies::Seams seams;
    seams.feed = [this](lifecycle::Event e) {
      reports_.push_back(std::get<lifecycle::AwaitedPods>(e).not_ready);
    };
    seams.publish = [this](const lifecycle::Publish& p) { warnings_.push_back(p.reason); };
    auto deps = PodDependencies::Watch(*loop_, root_, "web", std::move(names), std::move(seams));
    ASSERT_TRUE(deps) << deps.error().message();
    deps_ = std::move(*deps);
    deps_->Check();
  }
  // Runs the loop until a report arrives, at most `limit` (inotify is
  // prompt; the bound only keeps a broken watcher from hanging the test).
  bool AwaitReport(Duration limit = 5s) {
    const std::size_t before = reports_.size();
    const auto end = std::chrono::steady_clock::now() + limit;
    while (reports_.size() == before && std::chrono::steady_clock::now() < end) {
      EXPECT_TRUE(loop_->RunOnce(100ms).ok());
    }
    return reports_.size() > before;
  }
  // Lets the loop dispatch whatever inotify queued by now.
  void Settle() {
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(loop_->RunOnce(50ms).ok());
  }

  fs::path root_;
  std::optional<loop::EventLoop> loop_;
  std::unique_ptr<PodDependencies> deps_;
  std::vector<int> sockets_;
  std::vector<std::vector<std::string>> reports_;
  std::vector<std::string> warnings_;
};

TEST_F(PodDependenciesTest, S19_3_LookAtPodJudgesRecordAndSupervisor) {
  EXPECT_EQ(LookAtPod(root_, "db", "web"), AwaitedPodState::kMissing);
  WriteRecord("db", Record("Running", true));
  EXPECT_EQ(LookAtPod(root_, "db", "web"), AwaitedPodState::kStale) << "nobody answers";
  DeadSocket("db");
  EXPECT_EQ(LookAtPod(root_, "db", "web"), AwaitedPodState::kStale) << "a dead supervisor's socket";
  fs::remove(PodDir(root_, "db").ControlSocket());
  Listen("db");
  EXPECT_EQ(LookAtPod(root_, "db", "web"), AwaitedPodState::kReady);
  WriteRecord("db", Record("Running", false));
  EXPECT_EQ(LookAtPod(root_, "db", "web"), AwaitedPodState::kNotReady);
  WriteRecord("db", Record("Failed", false));
  EXPECT_EQ(LookAtPod(root_, "db", "web"), AwaitedPodState::kEnded);
  WriteRecord("db", Record("Pending", false, "cache, web", true));
  EXPECT_EQ(LookAtPod(root_, "db", "web"), AwaitedPodState::kWaitsForUs);
  EXPECT_EQ(LookAtPod(root_, "db", "other"), AwaitedPodState::kNotReady);
  WriteRecord("db", "{not json");
  EXPECT_EQ(LookAtPod(root_, "db", "web"), AwaitedPodState::kMissing);
}

TEST_F(PodDependenciesTest, S19_3_APodStartedLaterIsWaitedForAndSeenReady) {
  StartWatching({"db"});
  ASSERT_THAT(reports_, ElementsAre(ElementsAre("db")));
  // db's supervisor starts: its directory, its socket, a Pending record.
  Listen("db");
  WriteRecord("db", Record("Pending", false));
  Settle();
  EXPECT_EQ(reports_.size(), 1u) << "the list did not change: nothing reported";
  EXPECT_TRUE(deps_->watching());
  WriteRecord("db", Record("Running", true));
  ASSERT_TRUE(AwaitReport());
  EXPECT_THAT(reports_.back(), IsEmpty());
  EXPECT_FALSE(deps_->watching()) << "the wait is over";
}

TEST_F(PodDependenciesTest, S19_3_EveryPodMustBeReadyAndStaleRecordsDoNotCount) {
  // Left by the previous boot: Ready on paper, nobody behind it.
  WriteRecord("db", Record("Running", true));
  DeadSocket("db");
  Listen("cache");
  WriteRecord("cache", Record("Running", false));
  StartWatching({"db", "cache"});
  ASSERT_THAT(reports_, ElementsAre(ElementsAre("db", "cache")));

  WriteRecord("cache", Record("Running", true));
  ASSERT_TRUE(AwaitReport());
  EXPECT_THAT(reports_.back(), ElementsAre("db"));

  // db's next run: the stale socket replaced, then its record.
  fs::remove(PodDir(root_, "db").ControlSocket());
  Listen("db");
  WriteRecord("db", Record("Running", true));
  ASSERT_TRUE(AwaitReport());
  EXPECT_THAT(reports_.back(), IsEmpty());
}

TEST_F(PodDependenciesTest, S19_5_AnEndedPodIsWarnedAboutAndStillWaitedFor) {
  Listen("db");
  WriteRecord("db", Record("Running", false));
  StartWatching({"db"});
  WriteRecord("db", Record("Failed", false));
  Settle();
  EXPECT_THAT(warnings_, ElementsAre("AwaitedPodEnded"));
  EXPECT_TRUE(deps_->watching());
  EXPECT_THAT(reports_, ElementsAre(ElementsAre("db")));
}

TEST_F(PodDependenciesTest, S19_8_TwoPodsWaitingForEachOtherAreWarnedAbout) {
  Listen("db");
  WriteRecord("db", Record("Pending", false, "web", true));
  StartWatching({"db"});
  EXPECT_THAT(warnings_, ElementsAre("PodsWaitForEachOther"));
  EXPECT_THAT(reports_, ElementsAre(ElementsAre("db")));
}

TEST_F(PodDependenciesTest, S19_6_StoppedWatcherReportsNothing) {
  StartWatching({"db"});
  deps_->Stop();
  Listen("db");
  WriteRecord("db", Record("Running", true));
  Settle();
  EXPECT_EQ(reports_.size(), 1u);
}

TEST_F(PodDependenciesTest, S19_3_APodDirectoryRemovedAndMadeAgainIsWatchedAgain) {
  Listen("db");
  WriteRecord("db", Record("Running", false));
  StartWatching({"db"});
  for (int fd : sockets_) ::close(fd);
  sockets_.clear();
  fs::remove_all(root_ / "db");  // `podvisor rm db`
  Settle();
  Listen("db");
  WriteRecord("db", Record("Running", true));
  ASSERT_TRUE(AwaitReport());
  EXPECT_THAT(reports_.back(), IsEmpty());
}

}  // namespace
}  // namespace podvisor::supervisor::executor
