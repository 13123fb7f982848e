#include "process/user_namespace_entry.h"

#include <grp.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/file_io.h"

namespace podvisor::process {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(ParseSubordinateIds, ByNameOrUidInFileOrder) {
  const char* text =
      "# a comment\n"
      "\n"
      "alice:100000:65536\n"
      "bob:200000:65536\n"
      "1000:300000:1000\n"
      "alice:400000:10\n";
  auto alice = ParseSubordinateIds(text, "alice", 1000);
  ASSERT_TRUE(alice) << alice.error().message();
  EXPECT_THAT(*alice,
              ElementsAre(IdRange{100000, 65536}, IdRange{300000, 1000}, IdRange{400000, 10}));
  // A uid without a passwd name is looked up by number only.
  auto nameless = ParseSubordinateIds(text, "", 1000);
  ASSERT_TRUE(nameless);
  EXPECT_THAT(*nameless, ElementsAre(IdRange{300000, 1000}));
  auto nobody = ParseSubordinateIds(text, "carol", 1002);
  ASSERT_TRUE(nobody);
  EXPECT_THAT(*nobody, IsEmpty());
}

TEST(PasswdEntryOf, NameAndHomeByUid) {
  const char* text =
      "root:x:0:0:root:/root:/bin/bash\n"
      "alice:x:1000:1000:Alice,,,:/home/alice:/bin/sh\n"
      "broken:x:1001\n";
  auto alice = PasswdEntryOf(text, 1000);
  ASSERT_TRUE(alice);
  EXPECT_EQ(alice->name, "alice");
  EXPECT_EQ(alice->home, "/home/alice");
  EXPECT_FALSE(PasswdEntryOf(text, 1001));
  EXPECT_FALSE(PasswdEntryOf(text, 1002));
}

TEST(ParseSubordinateIds, MalformedLineOfThisUserNamesIt) {
  auto bad = ParseSubordinateIds("bob:x:1\nalice:100000\n", "alice", 1000);
  ASSERT_FALSE(bad);
  EXPECT_THAT(bad.error().message(), HasSubstr("line 2"));
  // Another user's malformed line is not this user's business.
  auto other = ParseSubordinateIds("bob:x:1\nalice:5:6\n", "alice", 1000);
  ASSERT_TRUE(other);
  EXPECT_THAT(*other, ElementsAre(IdRange{5, 6}));
  auto overflow = ParseSubordinateIds("alice:4294967000:1000\n", "alice", 1000);
  EXPECT_FALSE(overflow);
}

TEST(IdMap, ParseFormatAndInitial) {
  auto map = ParseIdMap("         0          0 4294967295\n");
  ASSERT_TRUE(map);
  EXPECT_TRUE(IsInitialUserNamespace(*map));
  auto nested = ParseIdMap("0 1000 1\n1 100000 65536\n");
  ASSERT_TRUE(nested);
  EXPECT_FALSE(IsInitialUserNamespace(*nested));
  EXPECT_EQ(FormatIdMap(*nested), "0 1000 1\n1 100000 65536\n");
  EXPECT_FALSE(ParseIdMap("0 1000\n"));
}

UserNamespaceFacts UserFacts() {
  UserNamespaceFacts f;
  f.uid = 1000;
  f.gid = 1001;
  f.user = "alice";
  f.own_uid_map = {{0, 0, UINT32_MAX}};
  f.own_gid_map = {{0, 0, UINT32_MAX}};
  f.subuid = "alice:100000:65536\n";
  f.subgid = "alice:200000:65536\n";
  f.newuidmap = "/usr/bin/newuidmap";
  f.newgidmap = "/usr/bin/newgidmap";
  return f;
}

TEST(PlanUserNamespace, PrivilegedRootEntersNone) {
  UserNamespaceFacts f = UserFacts();
  f.uid = 0;
  f.cap_sys_admin = true;
  f.cap_setuid = f.cap_setgid = true;
  auto plan = PlanUserNamespace(f);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->mode, UserNamespaceMode::kNone);
}

TEST(PlanUserNamespace, HostRootWithoutCapabilitiesEntersNoneEither) {
  UserNamespaceFacts f = UserFacts();
  f.uid = 0;
  auto plan = PlanUserNamespace(f);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->mode, UserNamespaceMode::kNone);
}

TEST(PlanUserNamespace, UserWithSubordinateIdsMapsZeroToItselfThenTheRanges) {
  auto plan = PlanUserNamespace(UserFacts());
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->mode, UserNamespaceMode::kSubordinateIds);
  EXPECT_THAT(plan->uid_map, ElementsAre(IdMapping{0, 1000, 1}, IdMapping{1, 100000, 65536}));
  EXPECT_THAT(plan->gid_map, ElementsAre(IdMapping{0, 1001, 1}, IdMapping{1, 200000, 65536}));
  EXPECT_EQ(plan->newuidmap, "/usr/bin/newuidmap");
  EXPECT_TRUE(plan->warning.empty());
}

TEST(PlanUserNamespace, RootOfAnUnprivilegedContainerMapsTheIdsItHas) {
  UserNamespaceFacts f = UserFacts();
  f.uid = 0;
  f.gid = 0;
  f.own_uid_map = {{0, 100000, 65536}};
  f.own_gid_map = {{0, 100000, 65536}};
  f.cap_setuid = f.cap_setgid = true;
  // CAP_SYS_ADMIN of a user namespace it was given is not the host's.
  f.cap_sys_admin = true;
  auto plan = PlanUserNamespace(f);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->mode, UserNamespaceMode::kOwnIds);
  EXPECT_THAT(plan->uid_map, ElementsAre(IdMapping{0, 0, 65536}));
  EXPECT_THAT(plan->gid_map, ElementsAre(IdMapping{0, 0, 65536}));
}

TEST(PlanUserNamespace, WithoutSubordinateIdsOrUidmapOneIdAndAWarning) {
  UserNamespaceFacts no_subgid = UserFacts();
  no_subgid.subgid = "bob:1:2\n";
  UserNamespaceFacts no_helper = UserFacts();
  no_helper.newgidmap.clear();
  UserNamespaceFacts nameless = UserFacts();
  nameless.user.clear();
  for (auto [facts, why] : {std::pair{&no_subgid, "no /etc/subgid entry for alice (uid 1000)"},
                            std::pair{&no_helper, "package uidmap"},
                            std::pair{&nameless, "no /etc/subuid entry for uid 1000"}}) {
    auto plan = PlanUserNamespace(*facts);
    ASSERT_TRUE(plan);
    EXPECT_EQ(plan->mode, UserNamespaceMode::kSingleId);
    EXPECT_THAT(plan->uid_map, ElementsAre(IdMapping{0, 1000, 1}));
    EXPECT_THAT(plan->gid_map, ElementsAre(IdMapping{0, 1001, 1}));
    EXPECT_THAT(plan->warning, HasSubstr(why));
    EXPECT_THAT(plan->warning, HasSubstr("S21.2"));
  }
}

TEST(PlanUserNamespace, MalformedSubuidOfThisUserIsAnError) {
  UserNamespaceFacts f = UserFacts();
  f.subuid = "alice:100000\n";
  auto plan = PlanUserNamespace(f);
  ASSERT_FALSE(plan);
  EXPECT_THAT(plan.error().message(), HasSubstr("/etc/subuid: line 1"));
}

// Runs `body` in a forked child (the entry changes the process for good)
// and returns its exit status: 0 when every check in it held.
template <typename Body>
int InChild(Body body) {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(body());
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

ino_t NamespaceInode(const char* name) {
  struct stat st {};
  if (::stat((std::string("/proc/self/ns/") + name).c_str(), &st) != 0) return 0;
  return st.st_ino;
}

// A plain user (no capabilities) enters a one-id namespace written by its
// own writer child: root inside, its own uid outside, a new mount
// namespace whose / is private.
TEST(EnterUserNamespace, SingleIdAsAnUnprivilegedUser) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to become an unprivileged uid";
  const ino_t user_before = NamespaceInode("user");
  const ino_t mnt_before = NamespaceInode("mnt");
  int code = InChild([&] {
    if (::setgroups(0, nullptr) != 0 || ::setresgid(65534, 65534, 65534) != 0 ||
        ::setresuid(65533, 65533, 65533) != 0) {
      return 10;
    }
    // As after an exec: a uid change made the process undumpable, which
    // would hide its /proc files from its own map writer.
    ::prctl(PR_SET_DUMPABLE, 1);
    UserNamespacePlan plan;
    plan.mode = UserNamespaceMode::kSingleId;
    plan.uid_map = {{0, 65533, 1}};
    plan.gid_map = {{0, 65534, 1}};
    if (!EnterUserNamespace(plan)) return 11;
    if (::geteuid() != 0 || ::getegid() != 0) return 12;
    auto uid_map = ReadFileBounded("/proc/self/uid_map");
    if (!uid_map || !ParseIdMap(*uid_map) ||
        *ParseIdMap(*uid_map) != std::vector<IdMapping>{{0, 65533, 1}}) {
      return 13;
    }
    if (NamespaceInode("user") == user_before || NamespaceInode("mnt") == mnt_before) return 14;
    if (!InNonInitialUserNamespace()) return 15;
    // Root of its own namespace: it may mount a tmpfs, which stays here.
    if (::mount("tmpfs", "/mnt", "tmpfs", 0, nullptr) != 0) return 16;
    auto mountinfo = ReadFileBounded("/proc/self/mountinfo", 1 << 20);
    if (!mountinfo || mountinfo->find(" / / ") == std::string::npos) return 17;
    if (mountinfo->find("shared:") != std::string::npos) return 18;  // all private
    return 0;
  });
  EXPECT_EQ(code, 0);
  auto host_mounts = ReadFileBounded("/proc/self/mountinfo", 1 << 20);
  ASSERT_TRUE(host_mounts);
  EXPECT_EQ(host_mounts->find(" /mnt tmpfs"), std::string::npos);
}

// As root of a user namespace it was given (PID 1 of an unprivileged
// container): a multi-line map of its own ids, which only a writer in the
// parent namespace may write.
TEST(EnterUserNamespace, OwnIdsNestedInAUserNamespace) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to make the outer namespace";
  int code = InChild([] {
    UserNamespacePlan outer;
    outer.mode = UserNamespaceMode::kOwnIds;
    // This process (host root) is the namespace's root, as PID 1 of a
    // container is: its own id must be in the map.
    outer.uid_map = {{0, 0, 1}, {1, 100000, 999}, {1000, 200000, 1000}};
    outer.gid_map = {{0, 0, 1}, {1, 100000, 1999}};
    if (!EnterUserNamespace(outer)) return 20;
    auto facts = ReadUserNamespaceFacts();
    if (!facts) return 21;
    auto plan = PlanUserNamespace(*facts);
    if (!plan || plan->mode != UserNamespaceMode::kOwnIds) return 22;
    if (!EnterUserNamespace(*plan)) return 23;
    auto uid_map = ReadFileBounded("/proc/self/uid_map");
    if (!uid_map) return 24;
    auto map = ParseIdMap(*uid_map);
    if (!map || *map != std::vector<IdMapping>{{0, 0, 1}, {1, 1, 999}, {1000, 1000, 1000}}) {
      return 25;
    }
    return ::geteuid() == 0 ? 0 : 26;
  });
  EXPECT_EQ(code, 0);
}

// S21.9: the owner joins a namespace pair another of its processes holds.
TEST(JoinUserNamespaceOf, JoinsTheHoldersUserAndMountNamespaces) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to become an unprivileged uid";
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t holder = ::fork();
  if (holder == 0) {
    ::close(ready[0]);
    if (::setgroups(0, nullptr) != 0 || ::setresgid(65534, 65534, 65534) != 0 ||
        ::setresuid(65533, 65533, 65533) != 0) {
      ::_exit(1);
    }
    ::prctl(PR_SET_DUMPABLE, 1);
    UserNamespacePlan plan;
    plan.mode = UserNamespaceMode::kSingleId;
    plan.uid_map = {{0, 65533, 1}};
    plan.gid_map = {{0, 65534, 1}};
    if (!EnterUserNamespace(plan)) ::_exit(2);
    (void)!::write(ready[1], "r", 1);
    ::pause();
    ::_exit(0);
  }
  ::close(ready[1]);
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  ::close(ready[0]);
  struct stat holder_mnt {};
  ASSERT_EQ(::stat(("/proc/" + std::to_string(holder) + "/ns/mnt").c_str(), &holder_mnt), 0);
  int code = InChild([&] {
    if (::setgroups(0, nullptr) != 0 || ::setresgid(65534, 65534, 65534) != 0 ||
        ::setresuid(65533, 65533, 65533) != 0) {
      return 30;
    }
    if (auto s = JoinUserNamespaceOf(holder); !s) return 31;
    if (::geteuid() != 0) return 32;
    return NamespaceInode("mnt") == holder_mnt.st_ino ? 0 : 33;
  });
  ::kill(holder, SIGKILL);
  ::waitpid(holder, nullptr, 0);
  EXPECT_EQ(code, 0);
}

}  // namespace
}  // namespace podvisor::process
