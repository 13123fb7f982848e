// S19.1 and S19.2: the podvisor.io/after annotation read and checked, with
// the field path every error names.
#include "pod/pod_order.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "pod/pod_test_util.h"

namespace podvisor::pod {
namespace {

using namespace test_util;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr const char* kPath = "metadata.annotations[podvisor.io/after]";

Pod After(const std::string& value) {
  Pod pod = MinimalPod();  // named "web"
  pod.metadata.annotations["podvisor.io/after"] = value;
  return pod;
}

TEST(AfterAnnotation, S19_1_NamesInOrderTrimmedEachOnce) {
  EXPECT_THAT(AfterPods(MinimalPod()), IsEmpty());
  EXPECT_THAT(AfterPods(After("db")), ElementsAre("db"));
  EXPECT_THAT(AfterPods(After(" db , cache,queue ")), ElementsAre("db", "cache", "queue"));
  EXPECT_THAT(AfterPods(After("db,cache,db")), ElementsAre("db", "cache"));
}

TEST(AfterAnnotation, S19_2_ValidListsPass) {
  EXPECT_THAT(Check(After("db")), IsEmpty());
  EXPECT_THAT(Check(After("db, cache.example, a-1")), IsEmpty());
  EXPECT_THAT(Check(MinimalPod()), IsEmpty());
}

TEST(AfterAnnotation, S19_2_EmptyValueIsRequired) {
  EXPECT_THAT(Check(After(" ")),
              ElementsAre(std::string(kPath) + ": Required value: a comma-separated list of pod "
                                               "names"));
}

TEST(AfterAnnotation, S19_2_EmptyEntryIsInvalid) {
  EXPECT_THAT(Check(After("db,,cache")),
              ElementsAre(std::string(kPath) +
                          ": Invalid value: \"db,,cache\": must be a comma-separated list of pod "
                          "names, without empty entries"));
}

TEST(AfterAnnotation, S19_2_NamesMustBePodNames) {
  const std::vector<std::string> lines = Check(After("Db_1"));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_THAT(lines[0], ::testing::StartsWith(std::string(kPath) +
                                              ": Invalid value: \"Db_1\": a lowercase RFC 1123 "
                                              "subdomain must consist of"));
}

TEST(AfterAnnotation, S19_2_APodCannotWaitForItself) {
  EXPECT_THAT(Check(After("db,web")),
              ElementsAre(std::string(kPath) + ": Invalid value: \"web\": a pod cannot wait for "
                                               "itself"));
}

TEST(AfterAnnotation, S19_2_ANameTwiceIsADuplicate) {
  EXPECT_THAT(Check(After("db,db")), ElementsAre(std::string(kPath) + ": Duplicate value: \"db\""));
}

}  // namespace
}  // namespace podvisor::pod
