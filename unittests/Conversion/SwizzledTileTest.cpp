//===- SwizzledTileTest.cpp - TMA's swizzled shared-memory images ---------===//

#include "../../lib/Conversion/AttnToGPU/Parts/SwizzledTile.h"

#include <gtest/gtest.h>

#include <set>

using namespace flashir::conversion::parts;

namespace {

// The swizzle as an address-bit XOR (bits [4, 4 + b) ^= bits [7, 7 + b),
// b = 3, 2, 1 for 128, 64, 32 bytes) of the unswizzled box layout.
int64_t xorSwizzled(const SwizzledTile &t, int64_t r, int64_t c) {
  int64_t rowBytes = swizzleBytes(t.swizzle);
  int64_t box = c / t.boxColumns(), inBox = c % t.boxColumns();
  int64_t linear = box * t.rows * rowBytes + r * rowBytes + inBox * 2;
  int64_t mask = rowBytes / 16 - 1;
  return linear ^ (((linear >> 7) & mask) << 4);
}

TEST(SwizzledTile, MatchesTheAddressBitSwizzle) {
  for (SmemSwizzle s : {SmemSwizzle::B128, SmemSwizzle::B64, SmemSwizzle::B32,
                        SmemSwizzle::None}) {
    SwizzledTile tile{64, 128, s};
    std::set<int64_t> seen;
    for (int64_t r = 0; r < tile.rows; ++r)
      for (int64_t c = 0; c < tile.cols; ++c) {
        int64_t at = tile.offset(r, c);
        EXPECT_EQ(at, xorSwizzled(tile, r, c))
            << int(s) << " " << r << " " << c;
        EXPECT_EQ(at % 2, 0);
        EXPECT_TRUE(at >= 0 && at < tile.bytes());
        seen.insert(at);
      }
    // A bijection onto the tile's bytes (two per element).
    EXPECT_EQ(static_cast<int64_t>(seen.size()) * 2, tile.bytes());
  }
}

// The layout the H200 probe wrote Q, K and V in (64 rows, 128 columns).
TEST(SwizzledTile, MatchesTheProbesStores) {
  SwizzledTile tile{64, 128, SmemSwizzle::B128};
  for (int64_t r = 0; r < 64; ++r)
    for (int64_t c = 0; c < 128; ++c)
      EXPECT_EQ(tile.offset(r, c), (c >> 6) * 8192 + r * 128 +
                                       ((((c & 63) >> 3) ^ (r & 7)) << 4) +
                                       (c & 7) * 2);
  EXPECT_EQ(tile.bytes(), 16384);
  EXPECT_EQ((SwizzledTile{64, 72, SmemSwizzle::B128}.bytes()), 16384);
  EXPECT_EQ((SwizzledTile{16, 64, SmemSwizzle::B64}.boxColumns()), 32);
}

// Group-major: 8-row group g of box b at (g * boxes + b) KiB (128-byte
// swizzle), the same swizzle inside each group; a bijection onto the tile.
TEST(SwizzledTile, GroupMajorPutsEachGroupsBoxesTogether) {
  for (int64_t cols : {64, 128, 256}) {
    SwizzledTile tile{128, cols, SmemSwizzle::B128, /*groupMajor=*/true};
    SwizzledTile boxMajor{128, cols, SmemSwizzle::B128};
    int64_t boxes = cols / 64;
    std::set<int64_t> seen;
    for (int64_t r = 0; r < tile.rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        int64_t at = tile.offset(r, c);
        int64_t inGroup = boxMajor.offset(r % 8, c % 64);
        EXPECT_EQ(at, (r / 8 * boxes + c / 64) * 1024 + inGroup) << r << c;
        seen.insert(at);
      }
    EXPECT_EQ(static_cast<int64_t>(seen.size()) * 2, tile.bytes());
    EXPECT_EQ(tile.boxStride(), 1024);
    EXPECT_EQ(tile.groupStride(), boxes * 1024);
  }
  // One box: both orders are the same image.
  SwizzledTile one{64, 64, SmemSwizzle::B128, true};
  for (int64_t r = 0; r < 64; ++r)
    for (int64_t c = 0; c < 64; ++c)
      EXPECT_EQ(one.offset(r, c),
                (SwizzledTile{64, 64, SmemSwizzle::B128}.offset(r, c)));
}

} // namespace
