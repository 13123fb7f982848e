#include "process/proc_stat.h"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include <gtest/gtest.h>

namespace podvisor::process {
namespace {

TEST(ProcStat, ParsesFieldTwentyTwoPastACommandWithParentheses) {
  // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt
  // cmajflt utime stime cutime cstime priority nice threads itrealvalue
  // starttime ...
  auto start = ParseStartTime(
      "42 (a) b (c) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1234 56\n");
  ASSERT_TRUE(start.ok()) << start.error().message();
  EXPECT_EQ(*start, 987654U);
}

TEST(ProcStat, RefusesWhatIsNotAStatLine) {
  EXPECT_EQ(ParseStartTime("").error().code(), EINVAL);
  EXPECT_EQ(ParseStartTime("42 (x) S 1 2 3").error().code(), EINVAL);
  EXPECT_EQ(ParseStartTime("42 (x) S 1 42 42 0 -1 1 1 0 0 0 1 2 0 0 20 0 1 0 12x 1").error().code(),
            EINVAL);
}

TEST(ProcStat, AChildStartsNoEarlierThanItsParent) {
  auto self = ProcessStartTime(getpid());
  ASSERT_TRUE(self.ok()) << self.error().message();
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t child = fork();
  if (child == 0) {
    // A name that a naive split on ')' or ' ' would miscount.
    prctl(PR_SET_NAME, ") x ( y");
    (void)write(ready[1], "x", 1);
    pause();
    _exit(0);
  }
  close(ready[1]);
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  close(ready[0]);
  auto start = ProcessStartTime(child);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  ASSERT_TRUE(start.ok()) << start.error().message();
  EXPECT_GE(*start, *self);
}

TEST(ProcStat, NoSuchProcessIsEsrch) {
  pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);  // reaped: its pid names nothing now (barring reuse)
  auto start = ProcessStartTime(child);
  if (start.ok()) GTEST_SKIP() << "pid " << child << " was reused at once";
  EXPECT_EQ(start.error().code(), ESRCH) << start.error().message();
}

}  // namespace
}  // namespace podvisor::process
