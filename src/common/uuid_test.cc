#include "common/uuid.h"

#include <cctype>
#include <set>

#include <gtest/gtest.h>

namespace podvisor {
namespace {

TEST(RandomUuid, HasTheVersion4Form) {
  std::string u = RandomUuid();
  ASSERT_EQ(u.size(), 36u) << u;
  for (size_t i : {8u, 13u, 18u, 23u}) EXPECT_EQ(u[i], '-') << u;
  EXPECT_EQ(u[14], '4') << u;
  EXPECT_NE(std::string("89ab").find(u[19]), std::string::npos) << u;
  for (size_t i = 0; i < u.size(); ++i) {
    if (u[i] == '-') continue;
    EXPECT_TRUE(std::isxdigit(static_cast<unsigned char>(u[i])) && !std::isupper(u[i])) << u;
  }
}

TEST(RandomUuid, TwoCallsDiffer) {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) seen.insert(RandomUuid());
  EXPECT_EQ(seen.size(), 100u);
}

}  // namespace
}  // namespace podvisor
