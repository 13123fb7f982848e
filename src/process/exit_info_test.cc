#include "process/exit_info.h"

#include <gtest/gtest.h>

#include <csignal>
#include <sstream>

namespace podvisor::process {
namespace {

TEST(ExitInfo, ExitedRendersAsWords) {
  EXPECT_EQ(ExitInfo::Exited(10, 3).ToString(), "exited with code 3");
  EXPECT_EQ(ExitInfo::Exited(10, 0).ToString(), "exited with code 0");
}

TEST(ExitInfo, KilledRendersSignalName) {
  EXPECT_EQ(ExitInfo::Killed(10, SIGKILL).ToString(), "killed by SIGKILL");
  EXPECT_EQ(ExitInfo::Killed(10, SIGSEGV, true).ToString(), "killed by SIGSEGV (core dumped)");
  EXPECT_EQ(ExitInfo::Killed(10, SIGRTMIN + 2).ToString(), "killed by SIGRTMIN+2");
}

TEST(ExitInfo, StreamsWithPid) {
  std::ostringstream out;
  out << ExitInfo::Killed(42, SIGTERM);
  EXPECT_EQ(out.str(), "pid 42 killed by SIGTERM");
}

TEST(ExitInfo, KubernetesExitCodeIs128PlusSignalForSignalDeaths) {
  EXPECT_EQ(ExitInfo::Exited(1, 3).KubernetesExitCode(), 3);
  EXPECT_EQ(ExitInfo::Exited(1, 0).KubernetesExitCode(), 0);
  EXPECT_EQ(ExitInfo::Killed(1, SIGKILL).KubernetesExitCode(), 137);
  EXPECT_EQ(ExitInfo::Killed(1, SIGTERM).KubernetesExitCode(), 143);
  EXPECT_EQ(ExitInfo::Killed(1, SIGSEGV, true).KubernetesExitCode(), 139);
}

TEST(ExitInfo, FromSiginfoMapsChildCodes) {
  siginfo_t info = {};
  info.si_pid = 7;
  info.si_code = CLD_EXITED;
  info.si_status = 2;
  EXPECT_EQ(ExitInfo::FromSiginfo(info), ExitInfo::Exited(7, 2));
  info.si_code = CLD_KILLED;
  info.si_status = SIGTERM;
  EXPECT_EQ(ExitInfo::FromSiginfo(info), ExitInfo::Killed(7, SIGTERM, false));
  info.si_code = CLD_DUMPED;
  info.si_status = SIGABRT;
  EXPECT_EQ(ExitInfo::FromSiginfo(info), ExitInfo::Killed(7, SIGABRT, true));
}

TEST(ExitInfo, PredicatesAndKindNames) {
  EXPECT_TRUE(ExitInfo::Exited(1, 0).success());
  EXPECT_FALSE(ExitInfo::Exited(1, 1).success());
  EXPECT_FALSE(ExitInfo::Killed(1, SIGKILL).success());
  EXPECT_TRUE(ExitInfo::Killed(1, SIGKILL).killed());
  EXPECT_STREQ(ExitKindName(ExitKind::kExited), "exited");
  EXPECT_STREQ(ExitKindName(ExitKind::kKilled), "killed");
}

}  // namespace
}  // namespace podvisor::process
