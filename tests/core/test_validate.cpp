// Validated reads: ranges, finiteness, UTF-8.
#include "scalefit/core/error.hpp"
#include "scalefit/core/validate.hpp"
#include "scalefit/core/yaml.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace scalefit;

TEST(Validate, BoundsRefuseNanInfDenormalsAndOutOfRange) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (double bad : {nan, inf, -inf, 4.9e-324, 0.0, -1.0, 2e6})
    EXPECT_FALSE(bounds::bandwidth_gbps.contains(bad)) << bad;
  EXPECT_TRUE(bounds::bandwidth_gbps.contains(400));
  EXPECT_TRUE(bounds::latency_us.contains(0));
  EXPECT_FALSE(bounds::latency_us.contains(nan));
  const Bounds open{0, 1, true, false};
  EXPECT_FALSE(open.contains(0));
  EXPECT_TRUE(open.contains(1));
  EXPECT_EQ(open.text(), "(0, 1]");
}

TEST(Validate, RequireInNamesFileLineAndFieldAndTheRange) {
  try {
    require_in(4.9e-324, bounds::bandwidth_gbps, "communication.inter.bandwidth_gbps", "sys.yaml", 7);
    FAIL();
  } catch (const InputError &e) {
    EXPECT_EQ(e.file(), "sys.yaml");
    EXPECT_EQ(e.line(), 7);
    EXPECT_EQ(e.field(), "communication.inter.bandwidth_gbps");
    EXPECT_NE(e.message().find("[1e-06, 1e+06]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(require_int_in(-3, 1, 100, "--min-points"), InputError);
  EXPECT_EQ(require_int_in(5, 1, 100, "--min-points"), 5);
}

TEST(Validate, Utf8CheckFindsTheLineAndColumn) {
  EXPECT_TRUE(is_valid_utf8("plain ascii, caf\xC3\xA9, \xF0\x9F\x98\x80"));
  EXPECT_FALSE(is_valid_utf8("caf\xE9"));         // Latin-1
  EXPECT_FALSE(is_valid_utf8("\xC0\xAF"));        // overlong
  EXPECT_FALSE(is_valid_utf8("\xED\xA0\x80"));    // surrogate
  EXPECT_FALSE(is_valid_utf8("\xE2\x82"));        // cut short
  try {
    require_utf8("a: 1\nname: caf\xE9\n", "model.yaml");
    FAIL();
  } catch (const InputError &e) {
    EXPECT_EQ(e.file(), "model.yaml");
    EXPECT_EQ(e.line(), 2);
    EXPECT_NE(e.message().find("0xE9 at column 10"), std::string::npos) << e.what();
  }
  EXPECT_EQ(to_valid_utf8("caf\xE9!"), "caf\xEF\xBF\xBD!");
  EXPECT_EQ(to_valid_utf8("caf\xC3\xA9"), "caf\xC3\xA9");
}

// YAML 1.2 wants unique keys; yaml-cpp keeps both and a lookup takes one silently. Refused with
// the line of the second and of the first, block and flow style, at any depth.
TEST(Validate, YamlKeyGivenTwiceIsRefusedWithBothLines) {
  const auto refused = [](const std::string &text, long line, const std::string &field) {
    try {
      (void)parse_yaml(text, "m.yaml");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const InputError &e) {
      EXPECT_EQ(e.file(), "m.yaml");
      EXPECT_EQ(e.line(), line) << text;
      EXPECT_EQ(e.field(), field) << text;
      EXPECT_NE(e.message().find("twice"), std::string::npos) << e.what();
    }
  };
  refused("layers: 2\nhidden: 8\nlayers: 4\n", 3, "layers");
  refused("device: {peak: 1, peak: 2}\n", 1, "peak");
  refused("tiers:\n  - name: a\n    bw: 1\n    bw: 2\n", 4, "bw");
  EXPECT_NO_THROW((void)parse_yaml("a: {x: 1}\nb: {x: 1}\nc: [1, 1]\n", "m.yaml"));
  EXPECT_THROW((void)parse_yaml("- 1\n- 2\n", "m.yaml"), InputError);        // not a mapping
  EXPECT_THROW((void)parse_yaml("a: [1, 2\n", "m.yaml"), InputError);        // not YAML
  std::string deep = "a: ";
  for (int i = 0; i < 100; ++i)
    deep += "[";
  EXPECT_THROW((void)parse_yaml(deep + std::string(100, ']') + "\n", "m.yaml"), InputError);
}
