// S20.3-S20.6: the arithmetic of pod id blocks, the configured range, and
// the host-wide claims (held, released, reclaimed when nobody holds them).
#include "common/pod_id_blocks.h"

#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace podvisor {
namespace {

namespace fs = std::filesystem;

TEST(PodIdRange, S20_3_TheDefaultIsTheKubeletsBlocksFrom65536Up) {
  PodIdRange range;
  EXPECT_EQ(range.first, 65536u);
  EXPECT_EQ(range.BlockStart(0), 65536u);
  EXPECT_EQ(range.BlockStart(1), 131072u);
  // 65535 blocks fill 65536..2^32-1; the last one would hold (uid_t)-1.
  EXPECT_EQ(range.BlockCount(), 65534u);
  EXPECT_EQ(uint64_t{range.BlockStart(range.BlockCount() - 1)} + kPodIdBlockSize - 1, 4294901759u);
}

TEST(PodIdRange, S20_3_AConfiguredRangeHoldsItsWholeBlocks) {
  PodIdRange range{1u << 20, 3 * 65536, "x"};
  EXPECT_EQ(range.BlockCount(), 3u);
  EXPECT_EQ(range.BlockStart(2), (1u << 20) + 2 * 65536);
}

TEST(SubordinateIds, S20_3_FindsTheUsersFirstEntryByNameOrUid) {
  const std::string text =
      "alice:100000:65536\n"
      "broken line\n"
      "podvisor:notanumber:65536\n"
      "1500:262144:131072\n"
      "podvisor:524288:65536\n";
  auto by_uid = FindSubordinateIds(text, "podvisor", 1500);
  ASSERT_TRUE(by_uid);
  EXPECT_EQ(*by_uid, (std::pair<uint32_t, uint64_t>{262144, 131072}));
  auto by_name = FindSubordinateIds(text, "podvisor", std::nullopt);
  ASSERT_TRUE(by_name);
  EXPECT_EQ(*by_name, (std::pair<uint32_t, uint64_t>{524288, 65536}));
  EXPECT_FALSE(FindSubordinateIds(text, "bob", std::nullopt));
}

TEST(SubordinateIds, S20_3_TheUsersUidComesFromPasswd) {
  const std::string passwd =
      "root:x:0:0:root:/root:/bin/bash\n"
      "podvisorx:x:7:7::/:/bin/false\n"
      "podvisor:x:998:998:podvisor:/nonexistent:/usr/sbin/nologin\n";
  EXPECT_EQ(UidInPasswd(passwd, "podvisor"), 998u);
  EXPECT_EQ(UidInPasswd(passwd, "nobody"), std::nullopt);
}

class PodIdBlockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("pod-id-blocks-test-" + std::to_string(::getpid()));
    fs::create_directories(dir_ / "a" / "web");
    fs::create_directories(dir_ / "b" / "web");
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
  }
  Result<PodIdRange> Range() {
    return ReadPodIdRange(dir_ / "subuid", dir_ / "subgid", "podvisor", std::nullopt);
  }
  fs::path root() const { return dir_ / "claims"; }
  ClaimOwner a() const { return {dir_ / "a", "web"}; }
  ClaimOwner b() const { return {dir_ / "b", "web"}; }
  fs::path dir_;
};

TEST_F(PodIdBlockTest, S20_3_NoEntryMeansTheDefaultRange) {
  Write("subuid", "alice:100000:65536\n");
  auto range = Range();
  ASSERT_TRUE(range) << range.error().message();
  EXPECT_EQ(range->first, 65536u);
  EXPECT_EQ(range->source, "the default range");
}

TEST_F(PodIdBlockTest, S20_3_AConfiguredRangeMustBeWholeBlocksAndTheSameForGroups) {
  Write("subuid", "podvisor:1048576:131072\n");
  Write("subgid", "podvisor:1048576:131072\n");
  auto range = Range();
  ASSERT_TRUE(range) << range.error().message();
  EXPECT_EQ(range->first, 1048576u);
  EXPECT_EQ(range->BlockCount(), 2u);

  Write("subgid", "podvisor:2097152:131072\n");
  EXPECT_NE(Range().error().message().find("differ"), std::string::npos);
  Write("subgid", "");
  EXPECT_NE(Range().error().message().find("subgid has no entry for user podvisor"),
            std::string::npos);
  Write("subuid", "podvisor:100000:65536\n");
  Write("subgid", "podvisor:100000:65536\n");
  EXPECT_NE(Range().error().message().find("multiple of 65536"), std::string::npos);
}

TEST_F(PodIdBlockTest, S20_4_PodsRunningAtOnceGetDisjointBlocksAndTheLowestFreeOne) {
  PodIdRange range{65536, 3 * 65536, "three blocks"};
  auto first = PodIdBlock::Claim(root(), range, a());
  ASSERT_TRUE(first) << first.error().message();
  auto second = PodIdBlock::Claim(root(), range, b());
  ASSERT_TRUE(second) << second.error().message();
  EXPECT_EQ(first->start(), 65536u);
  EXPECT_EQ(second->start(), 131072u);
  EXPECT_EQ(first->size(), 65536u);
  EXPECT_TRUE(fs::exists(root() / "userns" / "65536"));
  // Released at the end: the lowest block is free again, and taken first.
  first->Release();
  EXPECT_FALSE(fs::exists(root() / "userns" / "65536"));
  ClaimOwner c{dir_ / "a", "other"};
  auto third = PodIdBlock::Claim(root(), range, c);
  ASSERT_TRUE(third);
  EXPECT_EQ(third->start(), 65536u);
}

TEST_F(PodIdBlockTest, S20_4_EveryBlockHeldIsABusyErrorNamingTheRange) {
  PodIdRange range{65536, 65536, "one block"};
  auto only = PodIdBlock::Claim(root(), range, a());
  ASSERT_TRUE(only);
  auto none = PodIdBlock::Claim(root(), range, b());
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code(), EBUSY);
  EXPECT_EQ(none.error().message(),
            "every block of 65536 host ids of one block (1) is held by a running pod");
}

// S20.5: the holder inherits the lock; while it lives the block stays
// taken, though the supervisor is gone; once it is gone too, the block is
// anyone's, even while the owner's pod directory is still there.
TEST_F(PodIdBlockTest, S20_5_AClaimIsHeldByItsHolderAndReclaimedWhenNobodyHoldsIt) {
  PodIdRange range{65536, 2 * 65536, "two blocks"};
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  pid_t holder = -1;
  {
    auto block = PodIdBlock::Claim(root(), range, a());
    ASSERT_TRUE(block);
    holder = ::fork();
    ASSERT_GE(holder, 0);
    if (holder == 0) {
      // The holder: the inherited descriptor keeps the lock.
      ::close(go[1]);
      char c;
      (void)::read(go[0], &c, 1);
      ::_exit(0);
    }
    ::close(go[0]);
    // The supervisor dies without releasing: its descriptor closes.
  }
  auto other = PodIdBlock::Claim(root(), range, b());
  ASSERT_TRUE(other);
  EXPECT_EQ(other->start(), 131072u) << "the holder still holds the first block";
  // A later supervisor of the same pod resumes the held block.
  auto resumed = PodIdBlock::Resume(root(), 65536, a());
  ASSERT_TRUE(resumed) << resumed.error().message();
  EXPECT_EQ(resumed->lock_fd(), -1);
  EXPECT_FALSE(PodIdBlock::Resume(root(), 65536, b()));
  ::close(go[1]);
  int status = 0;
  ASSERT_EQ(::waitpid(holder, &status, 0), holder);
  // Nobody holds it now: the next pod gets it.
  other->Release();
  ClaimOwner c{dir_ / "b", "third"};
  auto reclaimed = PodIdBlock::Claim(root(), range, c);
  ASSERT_TRUE(reclaimed) << reclaimed.error().message();
  EXPECT_EQ(reclaimed->start(), 65536u);
}

TEST(PodIdBlockText, S20_7_TheRangeAsStatusSaysIt) {
  EXPECT_EQ(PodIdBlockText(65536, 65536), "65536-131071");
}

TEST(RootIdMap, S20_8_OneLineMappingZeroIsRead) {
  auto m = ParseRootIdMap("         0      65536      65536\n");
  ASSERT_TRUE(m);
  EXPECT_EQ(*m, (std::pair<uint32_t, uint32_t>{65536, 65536}));
  EXPECT_FALSE(ParseRootIdMap("         0          0 4294967295\n"));
  EXPECT_FALSE(ParseRootIdMap("0 65536 1\n1 70000 5\n"));
  EXPECT_FALSE(ParseRootIdMap("1 65536 65536\n"));
  EXPECT_FALSE(ParseRootIdMap(""));
}

}  // namespace
}  // namespace podvisor
