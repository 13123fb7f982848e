#include "common/file_io.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace podvisor {
namespace {

namespace fs = std::filesystem;

// Samples copied from a Linux 6.1 host, tabs and trailing newlines kept.
constexpr std::string_view kMemoryEvents =
    "low 0\n"
    "high 0\n"
    "max 12\n"
    "oom 3\n"
    "oom_kill 2\n"
    "oom_group_kill 0\n";

constexpr std::string_view kCgroupEventsPopulated =
    "populated 1\n"
    "frozen 0\n";

constexpr std::string_view kMemoryStat =
    "anon 4145152\n"
    "file 10412032\n"
    "kernel 1228800\n"
    "kernel_stack 65536\n"
    "pagetables 110592\n"
    "sock 0\n"
    "shmem 0\n"
    "file_mapped 5369856\n"
    "workingset_refault_anon 0\n"
    "pgfault 31846\n"
    "thp_collapse_alloc 0\n";

constexpr std::string_view kMemoryOomControlV1 =
    "oom_kill_disable 0\n"
    "under_oom 0\n"
    "oom_kill 5\n";

constexpr std::string_view kProcStatus =
    "Name:\tpodvisor\n"
    "Umask:\t0022\n"
    "State:\tS (sleeping)\n"
    "Tgid:\t4242\n"
    "Uid:\t0\t0\t0\t0\n"
    "CapEff:\t000001ffffffffff\n"
    "NoNewPrivs:\t0\n"
    "Seccomp:\t2\n";

TEST(FlatKeyed, ParsesMemoryEventsCounts) {
  FlatKeyed events = FlatKeyed::Parse(kMemoryEvents);
  EXPECT_EQ(events.FindUnsigned("oom_kill"), 2u);
  EXPECT_EQ(events.FindUnsigned("oom"), 3u);
  EXPECT_EQ(events.FindUnsigned("max"), 12u);
  EXPECT_EQ(events.FindUnsigned("oom_group_kill"), 0u);
  EXPECT_EQ(events.entries().size(), 6u);
  EXPECT_FALSE(events.Find("oom_kill_disable").has_value());
}

TEST(FlatKeyed, ParsesCgroupEventsPopulated) {
  EXPECT_EQ(FlatKeyed::Parse(kCgroupEventsPopulated).Find("populated"), "1");
  EXPECT_EQ(FlatKeyed::Parse("populated 0\nfrozen 0\n").Find("populated"), "0");
}

TEST(FlatKeyed, ParsesMemoryStatLargeValues) {
  FlatKeyed stat = FlatKeyed::Parse(kMemoryStat);
  EXPECT_EQ(stat.FindUnsigned("anon"), 4145152u);
  EXPECT_EQ(stat.FindUnsigned("file_mapped"), 5369856u);
  EXPECT_EQ(stat.FindUnsigned("thp_collapse_alloc"), 0u);
  // A key that is a prefix of another is not a match for it.
  EXPECT_FALSE(stat.Find("file_map").has_value());
  EXPECT_EQ(stat.FindUnsigned("18446744073709551615 overflow"), std::nullopt);
  EXPECT_EQ(FlatKeyed::Parse("big 18446744073709551615\n").FindUnsigned("big"),
            18446744073709551615u);
}

TEST(FlatKeyed, ParsesCgroupV1OomControl) {
  EXPECT_EQ(FlatKeyed::Parse(kMemoryOomControlV1).FindUnsigned("oom_kill"), 5u);
}

TEST(FlatKeyed, ProcStatusKeysLoseTheirColonAndValuesKeepInnerTabs) {
  FlatKeyed status = FlatKeyed::Parse(kProcStatus);
  EXPECT_EQ(status.Find("Name"), "podvisor");
  EXPECT_EQ(status.Find("State"), "S (sleeping)");
  EXPECT_EQ(status.Find("Uid"), "0\t0\t0\t0");
  EXPECT_EQ(status.FindUnsigned("Tgid"), 4242u);
  EXPECT_EQ(status.Find("CapEff"), "000001ffffffffff");
  EXPECT_FALSE(status.Find("Name:").has_value());
}

TEST(FlatKeyed, NonNumbersAndEmptyLinesAreNotCounts) {
  FlatKeyed f = FlatKeyed::Parse("\nmax max\nweird 12abc\nlonely\n  \r\nneg -1\n");
  EXPECT_EQ(f.Find("max"), "max");
  EXPECT_EQ(f.FindUnsigned("max"), std::nullopt);
  EXPECT_EQ(f.FindUnsigned("weird"), std::nullopt);
  EXPECT_EQ(f.Find("lonely"), "");
  EXPECT_EQ(f.FindUnsigned("lonely"), std::nullopt);
  EXPECT_EQ(f.FindUnsigned("neg"), std::nullopt);
  EXPECT_EQ(f.entries().size(), 4u);
}

TEST(FlatKeyed, LastLineWithoutNewlineAndFirstOfDuplicateKeys) {
  FlatKeyed f = FlatKeyed::Parse("a 1\na 2\nb 3");
  EXPECT_EQ(f.FindUnsigned("a"), 1u);
  EXPECT_EQ(f.FindUnsigned("b"), 3u);
}

class FileIoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("file-io-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static std::string Slurp(const fs::path& file) {
    std::ifstream in(file);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  fs::path dir_;
};

TEST_F(FileIoTest, ReadFileBoundedReadsTheWholeFile) {
  std::string text(10000, 'x');
  std::ofstream(dir_ / "f") << text;
  auto read = ReadFileBounded(dir_ / "f", 10000);
  ASSERT_TRUE(read) << read.error().message();
  EXPECT_EQ(*read, text);
}

TEST_F(FileIoTest, ReadFileBoundedRefusesALargerFileNamingIt) {
  std::ofstream(dir_ / "big") << std::string(10001, 'x');
  auto read = ReadFileBounded(dir_ / "big", 10000);
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error().code(), EFBIG);
  EXPECT_NE(read.error().message().find((dir_ / "big").string()), std::string::npos)
      << read.error().message();
}

TEST_F(FileIoTest, ReadFileBoundedNamesAMissingFile) {
  auto read = ReadFileBounded(dir_ / "absent");
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error().code(), ENOENT);
  EXPECT_NE(read.error().message().find((dir_ / "absent").string()), std::string::npos);
}

TEST_F(FileIoTest, ReadFileBoundedReadsProcFilesWhoseSizeIsZero) {
  auto read = ReadFlatKeyed("/proc/self/status");
  ASSERT_TRUE(read) << read.error().message();
  EXPECT_EQ(read->FindUnsigned("Pid"), static_cast<uint64_t>(getpid()));
}

TEST_F(FileIoTest, WriteFileAtomicReplacesContentsWithTheMode) {
  for (Durability d : {Durability::kSynced, Durability::kUnsynced}) {
    fs::path file = dir_ / "record.json";
    std::ofstream(file) << "old contents, longer than the new\n";
    ASSERT_TRUE(WriteFileAtomic(file, "new\n", 0600, d));
    EXPECT_EQ(Slurp(file), "new\n");
    struct stat st {};
    ASSERT_EQ(::stat(file.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    EXPECT_FALSE(fs::exists(dir_ / "record.json.tmp"));
    fs::remove(file);
  }
}

TEST_F(FileIoTest, WriteFileAtomicCreatesANewFile) {
  ASSERT_TRUE(WriteFileAtomic(dir_ / "fresh", "", 0644));
  EXPECT_TRUE(fs::exists(dir_ / "fresh"));
  EXPECT_EQ(fs::file_size(dir_ / "fresh"), 0u);
}

TEST_F(FileIoTest, WriteFileAtomicLeavesNoTempFileWhenTheRenameFails) {
  // A non-empty directory in the way: the temporary file is written, then
  // rename(2) refuses to put a file over a directory.
  fs::create_directories(dir_ / "busy" / "child");
  Status s = WriteFileAtomic(dir_ / "busy", "text", 0644);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message().find("busy.tmp"), std::string::npos) << s.error().message();
  EXPECT_FALSE(fs::exists(dir_ / "busy.tmp"));
  EXPECT_TRUE(fs::is_directory(dir_ / "busy" / "child"));
}

TEST_F(FileIoTest, WriteFileAtomicFailsNamingTheFileWhenItsDirectoryIsMissing) {
  Status s = WriteFileAtomic(dir_ / "no-such-dir" / "f", "text", 0644);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code(), ENOENT);
  EXPECT_NE(s.error().message().find("no-such-dir/f.tmp"), std::string::npos);
}

}  // namespace
}  // namespace podvisor
