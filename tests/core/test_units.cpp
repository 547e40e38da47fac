#include "scalefit/core/error.hpp"
#include "scalefit/core/units.hpp"

#include <gtest/gtest.h>

using namespace scalefit;

TEST(Units, ParsesNcclTestsSizeSuffixes) {
  EXPECT_EQ(parse_bytes("8"), 8u);
  EXPECT_EQ(parse_bytes("1K"), 1024u);
  EXPECT_EQ(parse_bytes("64M"), 64u << 20);
  EXPECT_EQ(parse_bytes("8G"), 8ull << 30);
  EXPECT_EQ(parse_bytes("2g"), 2ull << 30);
  EXPECT_EQ(parse_bytes("16KB"), 16u << 10);
  EXPECT_EQ(parse_bytes("1MiB"), 1u << 20);
}

TEST(Units, RejectsMalformedSizesNamingTheArgument) {
  for (const char *bad : {"", "abc", "-8", "1.5M", "8Q", "99999999999999999999"}) {
    try {
      parse_bytes(bad, "-b");
      FAIL() << bad;
    } catch (const InputError &e) {
      EXPECT_EQ(e.field(), "-b");
      EXPECT_NE(std::string(e.what()).find("byte count"), std::string::npos);
    }
  }
}

TEST(Units, FormatsAndConvertsBandwidth) {
  EXPECT_EQ(format_bytes(64u << 20), "64M");
  EXPECT_EQ(format_bytes(1000), "1000");
  // 1 GB in 1 s = 1 GB/s; 8 MiB in 74.78 us ~ 112.2 GB/s.
  EXPECT_DOUBLE_EQ(gbps(1e9, 1e6), 1.0);
  EXPECT_NEAR(gbps(8388608, 74.78), 112.18, 0.01);
  EXPECT_EQ(gbps(100, 0), 0.0);
}
