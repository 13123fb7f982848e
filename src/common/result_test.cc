#include "common/result.h"

#include <gtest/gtest.h>

namespace podvisor {
namespace {

Result<int> Half(int v) {
  if (v % 2) return Error("odd value " + std::to_string(v));
  return v / 2;
}

TEST(Result, CarriesValueOrError) {
  auto ok = Half(4);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 2);
  auto bad = Half(3);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message(), "odd value 3");
  EXPECT_EQ(bad.error().code(), 0);
}

TEST(Result, ErrnoErrorsNameTheErrno) {
  Error e = Error::FromErrno("open /nope", ENOENT);
  EXPECT_EQ(e.code(), ENOENT);
  EXPECT_EQ(e.message(), "open /nope: ENOENT (No such file or directory)");
}

TEST(Result, WrapBuildsContextOutermostFirst) {
  Error e = Error::FromErrno("open memory.max", EACCES).Wrap("setting limits of pod web");
  EXPECT_EQ(e.message(), "setting limits of pod web: open memory.max: EACCES (Permission denied)");
  EXPECT_EQ(e.code(), EACCES);
}

TEST(Result, StatusDefaultsToOk) {
  Status s;
  EXPECT_TRUE(s.ok());
  Status failed = Error("boom");
  EXPECT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().message(), "boom");
}

}  // namespace
}  // namespace podvisor
