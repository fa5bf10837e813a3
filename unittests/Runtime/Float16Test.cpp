//===- Float16Test.cpp - f16 / bf16 host conversions ----------------------===//

#include "flashir/Runtime/Float16.h"

#include <gtest/gtest.h>

using namespace flashir::runtime;

namespace {

// Every finite or infinite 16-bit value survives the round trip exactly.
TEST(Float16, RoundTripsEveryValue) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    float f16 = fromF16(uint16_t(h));
    float bf16 = fromBF16(uint16_t(h));
    if (!std::isnan(f16)) {
      EXPECT_EQ(toF16(f16), h) << std::hex << h;
    } else {
      EXPECT_TRUE(std::isnan(fromF16(toF16(f16))));
    }
    if (!std::isnan(bf16)) {
      EXPECT_EQ(toBF16(bf16), h) << std::hex << h;
    }
  }
}

// Halfway cases round to the even neighbour; overflow goes to infinity.
TEST(Float16, RoundsToNearestEven) {
  EXPECT_EQ(fromBF16(toBF16(1.0f + 0x1p-8f)), 1.0f); // tie -> even
  EXPECT_EQ(fromBF16(toBF16(1.0f + 3 * 0x1p-8f)), 1.0f + 0x1p-6f);
  EXPECT_EQ(fromF16(toF16(1.0f + 0x1p-11f)), 1.0f); // tie -> even
  EXPECT_EQ(fromF16(toF16(1.0f + 3 * 0x1p-11f)), 1.0f + 0x1p-9f);
  EXPECT_EQ(fromF16(toF16(65520.0f)), INFINITY);
  EXPECT_EQ(fromF16(toF16(65504.0f)), 65504.0f);
  EXPECT_EQ(fromF16(toF16(0x1p-24f)), 0x1p-24f); // smallest subnormal
}

} // namespace
