#include "process/fd_limit.h"

#include <sys/resource.h>

#include <gtest/gtest.h>

#include "process/spawn.h"
#include "process/test_util.h"

namespace podvisor::process {
namespace {

using testing::MakePipe;
using testing::Pipe;
using testing::ReadAll;
using testing::RunInForkedProcess;

// In a forked copy of the test process: the limit is process-wide.
TEST(FdLimit, S14_10_SoftIsRaisedToHardAndChildrenGetTheOriginalBack) {
  std::string result = RunInForkedProcess([]() -> std::string {
    rlimit start{100, 200};
    if (::setrlimit(RLIMIT_NOFILE, &start) != 0) return "setrlimit 100:200 refused";
    FdLimit raised = RaiseFdLimit();
    if (raised.soft != 200 || raised.hard != 200 || raised.original_soft != 100) {
      return "raised to " + std::to_string(raised.soft) + ":" + std::to_string(raised.hard) +
             " from " + std::to_string(raised.original_soft);
    }
    if (RaiseFdLimit().original_soft != 100) return "a second raise forgot the original";
    Pipe out = MakePipe();
    auto child = Spawn(
        {.argv = {"/bin/sh", "-c", "ulimit -S -n; ulimit -H -n"}, .stdout_fd = out.write.get()});
    if (!child.ok()) return child.error().message();
    out.write.Reset();
    std::string text = ReadAll(out.read.get());
    (void)child->KillAndReap();
    return text == "100\n200\n" ? "ok" : "the child's limits: " + text;
  });
  EXPECT_EQ(result, "ok");
}

}  // namespace
}  // namespace podvisor::process
