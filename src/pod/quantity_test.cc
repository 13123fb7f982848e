#include "pod/quantity.h"

#include <gtest/gtest.h>

namespace podvisor::pod {
namespace {

int64_t Milli(std::string_view text) {
  auto q = Quantity::Parse(text);
  EXPECT_TRUE(q.ok()) << text << ": " << (q.ok() ? "" : q.error().message());
  return q.ok() ? q->milli() : -1;
}

TEST(Quantity, ParsesDecimalSuffixes) {
  EXPECT_EQ(Milli("100m"), 100);
  EXPECT_EQ(Milli("1"), 1000);
  EXPECT_EQ(Milli("1.5"), 1500);
  EXPECT_EQ(Milli("0.25"), 250);
  EXPECT_EQ(Milli("1k"), 1'000'000);
  EXPECT_EQ(Milli("1G"), 1'000'000'000'000);
  EXPECT_EQ(Milli("2M"), 2'000'000'000);
  EXPECT_EQ(Milli("+3"), 3000);
  EXPECT_EQ(Milli("-3"), -3000);
  EXPECT_EQ(Milli(".5"), 500);
  EXPECT_EQ(Milli("5."), 5000);
}

TEST(Quantity, ParsesBinarySuffixes) {
  EXPECT_EQ(Milli("128Mi"), 128LL * 1024 * 1024 * 1000);
  EXPECT_EQ(Milli("1Ki"), 1024'000);
  EXPECT_EQ(Milli("1.5Gi"), 1536LL * 1024 * 1024 * 1000);
}

TEST(Quantity, ParsesExponents) {
  EXPECT_EQ(Milli("1e3"), 1'000'000);
  EXPECT_EQ(Milli("1E3"), 1'000'000);
  EXPECT_EQ(Milli("12e-3"), 12);
  EXPECT_EQ(Milli("1e+2"), 100'000);
}

TEST(Quantity, RoundsSubMilliPrecisionUp) {
  // Kubernetes keeps milli precision and rounds up: 1n of cpu is 1m.
  EXPECT_EQ(Milli("1n"), 1);
  EXPECT_EQ(Milli("0.0001"), 1);
  EXPECT_EQ(Milli("1500u"), 2);
}

TEST(Quantity, ValueRoundsUp) {
  EXPECT_EQ(Quantity::Parse("100m")->value(), 1);
  EXPECT_EQ(Quantity::Parse("1")->value(), 1);
  EXPECT_EQ(Quantity::Parse("1.001")->value(), 2);
  EXPECT_EQ(Quantity::Parse("1Gi")->value(), 1073741824);
}

TEST(Quantity, RejectsMalformed) {
  for (const char* bad : {"", "abc", "1.2.3", "12Q", "1e", "e3", "--1", "1 Gi", "Mi", "1ii",
                          "1.5.Gi", "1e3.5", "0x10"}) {
    auto q = Quantity::Parse(bad);
    ASSERT_FALSE(q.ok()) << bad;
    EXPECT_NE(q.error().message().find("regular expression"), std::string::npos) << bad;
  }
}

TEST(Quantity, RejectsValuesBeyond63BitsOfMilli) {
  EXPECT_FALSE(Quantity::Parse("100Ei").ok());
  EXPECT_FALSE(Quantity::Parse("1e30").ok());
  EXPECT_FALSE(Quantity::Parse("99999999999999999999999999999").ok());
  EXPECT_TRUE(Quantity::Parse("1Pi").ok());
  EXPECT_TRUE(Quantity::Parse("0e999").ok());  // zero stays zero whatever the scale
}

TEST(Quantity, CanonicalSpelling) {
  auto str = [](std::string_view t) { return Quantity::Parse(t)->ToString(); };
  EXPECT_EQ(str("500m"), "500m");
  EXPECT_EQ(str("0.5"), "500m");
  EXPECT_EQ(str("1000m"), "1");
  EXPECT_EQ(str("1024Mi"), "1Gi");
  EXPECT_EQ(str("1536Mi"), "1536Mi");
  EXPECT_EQ(str("1000"), "1k");
  EXPECT_EQ(str("1e3"), "1e3");
  EXPECT_EQ(str("128Mi"), "128Mi");
  EXPECT_EQ(str("0"), "0");
  EXPECT_EQ(str("-2Gi"), "-2Gi");
}

TEST(Quantity, ComparesByAmount) {
  EXPECT_EQ(*Quantity::Parse("1Gi"), *Quantity::Parse("1024Mi"));
  EXPECT_LT(*Quantity::Parse("1G"), *Quantity::Parse("1Gi"));
  EXPECT_EQ((*Quantity::Parse("300m") + *Quantity::Parse("0.2")).milli(), 500);
}

}  // namespace
}  // namespace podvisor::pod
