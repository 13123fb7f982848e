// Resolving paths beneath a root (beneath.h), with the kernel's openat2
// and with the component walk it falls back to: both must agree, and
// neither may leave the root nor create anything outside it.
#include "common/beneath.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace podvisor {
namespace {

namespace fs = std::filesystem;

class Beneath : public ::testing::TestWithParam<BeneathResolver> {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/podvisor-beneath-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    fs::create_directories(dir_ / "root/real/dir");
    fs::create_directories(dir_ / "outside");
    std::ofstream(dir_ / "root/real/dir/file") << "inside";
    root_.Reset(::open((dir_ / "root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    ASSERT_TRUE(root_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  Result<Fd> Open(std::string_view rel, int flags = O_PATH) {
    return OpenBeneath(root_.get(), rel, flags, 0, GetParam());
  }
  Result<Fd> MakeDirs(std::string_view rel, mode_t mode = 0755) {
    return MakeDirsBeneath(root_.get(), rel, mode, GetParam());
  }
  static std::string Read(const Fd& fd) {
    char buf[64] = {};
    ssize_t n = ::read(fd.get(), buf, sizeof buf - 1);
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : "";
  }
  static ino_t Inode(const Fd& fd) {
    struct stat st {};
    EXPECT_EQ(::fstat(fd.get(), &st), 0);
    return st.st_ino;
  }
  bool OutsideIsEmpty() { return fs::is_empty(dir_ / "outside"); }

  fs::path dir_;
  Fd root_;
};

TEST_P(Beneath, S14_1_OpensPathsAndSymlinksThatStayInside) {
  auto file = Open("real/dir/file", O_RDONLY);
  ASSERT_TRUE(file) << file.error().message();
  EXPECT_EQ(Read(*file), "inside");
  fs::create_symlink("real/dir", dir_ / "root/link");
  fs::create_symlink("../dir/file", dir_ / "root/real/dir/up");
  auto through = Open("link/up", O_RDONLY);
  ASSERT_TRUE(through) << through.error().message();
  EXPECT_EQ(Read(*through), "inside");
  struct stat root_st {};
  ASSERT_EQ(::stat((dir_ / "root").c_str(), &root_st), 0);
  for (const char* self : {"", ".", "real/..", "link/../.."}) {
    auto fd = Open(self);
    ASSERT_TRUE(fd) << self << ": " << fd.error().message();
    EXPECT_EQ(Inode(*fd), root_st.st_ino) << self;
  }
  auto unfollowed = Open("link", O_PATH | O_NOFOLLOW);
  ASSERT_TRUE(unfollowed);
  struct stat st {};
  ASSERT_EQ(::fstat(unfollowed->get(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode)) << "O_NOFOLLOW leaves a final symlink unfollowed";
}

TEST_P(Beneath, S14_1_AnythingThatLeadsOutIsExdev) {
  fs::create_symlink(dir_ / "outside", dir_ / "root/absolute");
  fs::create_symlink("../../outside", dir_ / "root/real/relative");
  fs::create_symlink("/", dir_ / "root/slash");
  for (const char* rel : {"..", "real/../..", "absolute", "absolute/x", "real/relative",
                          "real/relative/x", "slash/etc", "/etc", "/"}) {
    auto fd = Open(rel);
    ASSERT_FALSE(fd) << rel;
    EXPECT_TRUE(IsOutsideRoot(fd.error())) << rel << ": " << fd.error().message();
    EXPECT_EQ(fd.error().message(), "\"" + std::string(rel) + "\": resolves outside its root");
  }
}

TEST_P(Beneath, S14_1_MagicLinksAndLoopsAreRefused) {
  Fd proc(::open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(proc);
  auto magic = OpenBeneath(proc.get(), "self/root/etc", O_PATH, 0, GetParam());
  ASSERT_FALSE(magic);
  EXPECT_EQ(magic.error().code(), ELOOP) << magic.error().message();
  fs::create_symlink("loop-b", dir_ / "root/loop-a");
  fs::create_symlink("loop-a", dir_ / "root/loop-b");
  auto loop = Open("loop-a");
  ASSERT_FALSE(loop);
  EXPECT_EQ(loop.error().code(), ELOOP);
  auto missing = Open("real/nope");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), ENOENT);
  auto not_dir = Open("real/dir/file/x");
  ASSERT_FALSE(not_dir);
  EXPECT_EQ(not_dir.error().code(), ENOTDIR);
}

TEST_P(Beneath, S14_1_MakeDirsCreatesBeneathWithTheExactMode) {
  mode_t old = ::umask(077);
  auto made = MakeDirs("real/a/b/c", 0755);
  ::umask(old);
  ASSERT_TRUE(made) << made.error().message();
  EXPECT_TRUE(fs::is_directory(dir_ / "root/real/a/b/c"));
  EXPECT_EQ(fs::status(dir_ / "root/real/a/b").permissions(), static_cast<fs::perms>(0755));
  EXPECT_EQ(Inode(*made), Inode(*Open("real/a/b/c")));
  ASSERT_TRUE(MakeDirs("real/a/b/c")) << "idempotent";
  // Through a symlink that stays inside: made where it leads.
  fs::create_symlink("real/dir", dir_ / "root/link");
  ASSERT_TRUE(MakeDirs("link/new/deeper"));
  EXPECT_TRUE(fs::is_directory(dir_ / "root/real/dir/new/deeper"));
  auto onto_file = MakeDirs("real/dir/file/x");
  ASSERT_FALSE(onto_file);
  EXPECT_EQ(onto_file.error().code(), ENOTDIR);
}

TEST_P(Beneath, S14_1_MakeDirsCreatesNothingOutside) {
  fs::create_symlink(dir_ / "outside", dir_ / "root/absolute");
  fs::create_symlink("../../outside", dir_ / "root/real/relative");
  // Dangling: mkdir(2) would create the directory it names.
  fs::create_symlink(dir_ / "outside/planted", dir_ / "root/dangling");
  fs::create_symlink("../../outside/planted", dir_ / "root/real/dangling");
  for (const char* rel : {"absolute/a/b", "real/relative/a", "dangling", "dangling/a",
                          "real/dangling/a", "../a", "real/../../a"}) {
    auto made = MakeDirs(rel);
    ASSERT_FALSE(made) << rel;
    EXPECT_TRUE(IsOutsideRoot(made.error()) || made.error().code() == ENOENT)
        << rel << ": " << made.error().message();
    EXPECT_TRUE(OutsideIsEmpty()) << rel;
  }
  EXPECT_FALSE(fs::exists(dir_ / "a"));
}

INSTANTIATE_TEST_SUITE_P(Resolvers, Beneath,
                         ::testing::Values(BeneathResolver::kKernel, BeneathResolver::kWalk),
                         [](const ::testing::TestParamInfo<BeneathResolver>& info) {
                           return info.param == BeneathResolver::kKernel ? "Openat2" : "Walk";
                         });

}  // namespace
}  // namespace podvisor
