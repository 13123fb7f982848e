// SelectPod's choice and its error among several pods, on state
// directories made here: a listening socket stands for a live supervisor.
#include "cli/pod_records.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/fd.h"
#include "common/pod_dir.h"

namespace podvisor::cli {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

class SelectPodTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/podvisor-select-XXXXXX";
    ASSERT_NE(::mkdtemp(templ.data()), nullptr);
    root_ = templ;
  }
  void TearDown() override {
    listeners_.clear();
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  // A pod's directory with its record; `running`: a socket that accepts.
  void AddPod(const std::string& name, const std::string& phase, bool running) {
    fs::create_directories(root_ / name);
    std::ofstream(root_ / name / PodDir::kRecordFile)
        << R"({"metadata":{"name":")" << name << R"("},"status":{"phase":")" << phase << R"("}})";
    if (!running) return;
    const fs::path sock = root_ / name / PodDir::kControlSocket;
    Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, sock.c_str(), sizeof addr.sun_path - 1);
    ASSERT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ASSERT_EQ(::listen(fd.get(), 8), 0);
    listeners_.push_back(std::move(fd));
  }

  fs::path root_;
  std::vector<Fd> listeners_;
};

TEST_F(SelectPodTest, TheOnlyRunningPodIsChosenAmongEndedOnes) {
  AddPod("old", "Succeeded", false);
  AddPod("web", "Running", true);
  auto pod = SelectPod(root_, "");
  ASSERT_TRUE(pod.ok()) << pod.error().message();
  EXPECT_EQ(*pod, "web");
}

TEST_F(SelectPodTest, SeveralRunningPodsListOnlyTheRunningOnes) {
  AddPod("api", "Running", true);
  AddPod("old", "Failed", false);
  AddPod("web", "Running", true);
  auto pod = SelectPod(root_, "");
  ASSERT_FALSE(pod.ok());
  EXPECT_THAT(pod.error().message(), HasSubstr("several running pods under " + root_.string() +
                                               ": api (Running), web (Running); name one"));
  EXPECT_THAT(pod.error().message(), Not(HasSubstr("old")));
}

TEST_F(SelectPodTest, SeveralEndedPodsListThemAll) {
  AddPod("a", "Succeeded", false);
  AddPod("b", "Failed", false);
  auto pod = SelectPod(root_, "");
  ASSERT_FALSE(pod.ok());
  EXPECT_THAT(pod.error().message(), HasSubstr(": a (Succeeded), b (Failed); name one"));
}

}  // namespace
}  // namespace podvisor::cli
