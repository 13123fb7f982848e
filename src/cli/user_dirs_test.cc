#include "cli/user_dirs.h"

#include <gtest/gtest.h>

namespace podvisor::cli {
namespace {

TEST(DefaultDirsFor, RootKeepsTheSystemDirectories) {
  DirEnvironment env;
  env.uid = 0;
  env.runtime_dir = "/run/user/0";
  env.home = "/root";
  DefaultDirs dirs = DefaultDirsFor(env);
  EXPECT_EQ(dirs.state_dir, "/run/podvisor");
  EXPECT_EQ(dirs.log_dir, "/var/log/podvisor");
}

TEST(DefaultDirsFor, UserWithXdgDirectories) {
  DirEnvironment env;
  env.uid = 1000;
  env.runtime_dir = "/run/user/1000";
  env.data_home = "/data/alice";
  env.home = "/home/alice";
  DefaultDirs dirs = DefaultDirsFor(env);
  EXPECT_EQ(dirs.state_dir, "/run/user/1000/podvisor");
  EXPECT_EQ(dirs.log_dir, "/data/alice/podvisor/logs");
}

TEST(DefaultDirsFor, UserFallbacksInOrder) {
  DirEnvironment env;
  env.uid = 1000;
  env.home = "/home/alice";
  env.run_user_is_own = true;
  DefaultDirs dirs = DefaultDirsFor(env);
  EXPECT_EQ(dirs.state_dir, "/run/user/1000/podvisor");
  EXPECT_EQ(dirs.log_dir, "/home/alice/.local/share/podvisor/logs");
  env.run_user_is_own = false;
  env.home.clear();
  dirs = DefaultDirsFor(env);
  EXPECT_EQ(dirs.state_dir, "/tmp/podvisor-1000");
  EXPECT_EQ(dirs.log_dir, "/tmp/podvisor-1000/logs");
  env.home = "/";  // a system user's home: not a place for logs
  EXPECT_EQ(DefaultDirsFor(env).log_dir, "/tmp/podvisor-1000/logs");
}

}  // namespace
}  // namespace podvisor::cli
