//===- WgmmaAtomTest.cpp - wgmma layouts and descriptors ------------------===//

#include "../../lib/Conversion/AttnToGPU/Parts/WgmmaAtom.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <utility>

using namespace flashir::conversion::parts;

namespace {

// The descriptor as bench/gpu/probes/hopper/wgmma_probe.cu built it on the
// H200 (128-byte swizzle, base offset 0), transcribed as written there.
uint64_t probeDescriptor(uint32_t a, uint32_t l = 16, uint32_t s = 1024) {
  return (a & 0x3FFFF) >> 4 | uint64_t(l >> 4) << 16 | uint64_t(s >> 4) << 32 |
         1ull << 62;
}

TEST(WgmmaAtom, DescriptorsEncodeAsTheProbesDid) {
  for (uint32_t a : {0u, 1024u, 16384u + 96u, 32768u + 3 * 2048u, 0x3FFF0u}) {
    WgmmaDescriptor d{a, 16, 1024, 0, SmemSwizzle::B128};
    EXPECT_EQ(d.encode(), probeDescriptor(a)) << a;
    WgmmaDescriptor v{a, 8192, 1024, 0, SmemSwizzle::B128};
    EXPECT_EQ(v.encode(), probeDescriptor(a, 8192, 1024)) << a;
  }
  std::mt19937 gen(7);
  for (int t = 0; t < 200; ++t) {
    auto bytes = [&] { return (gen() & 0x3FFF) << 4; };
    WgmmaDescriptor d{
        static_cast<uint32_t>(bytes()), static_cast<uint32_t>(bytes()),
        static_cast<uint32_t>(bytes()), static_cast<uint32_t>(gen() & 7u),
        static_cast<SmemSwizzle>(gen() % 4)};
    EXPECT_EQ(WgmmaDescriptor::decode(d.encode()), d);
  }
}

TEST(WgmmaAtom, Shapes) {
  EXPECT_TRUE(WgmmaAtom::of(8, MmaType::bf16));
  EXPECT_TRUE(WgmmaAtom::of(256, MmaType::f16));
  EXPECT_FALSE(WgmmaAtom::of(12, MmaType::bf16));
  EXPECT_FALSE(WgmmaAtom::of(264, MmaType::bf16));
  EXPECT_FALSE(WgmmaAtom::of(64, MmaType::f32));
  EXPECT_EQ(WgmmaAtom::of(128, MmaType::bf16)->accumulators(), 64);
}

// Every element of D once; per warp and 8 columns, mma.sync's m16n8 C
// fragment (MmaAtom, tested against the PTX ISA) shifted by the warp's 16
// rows; and the probe's store order.
TEST(WgmmaAtom, AccumulatorLayout) {
  FragmentLayout c = MmaAtom::m16n8k16(MmaType::bf16).layout(MmaOperand::C);
  for (int64_t n : {8, 64, 128, 256}) {
    WgmmaAtom atom = *WgmmaAtom::of(n, MmaType::bf16);
    std::set<std::pair<int64_t, int64_t>> seen;
    for (int64_t t = 0; t < WgmmaAtom::kThreads; ++t)
      for (int64_t i = 0; i < atom.accumulators(); ++i) {
        FragmentCoord at = atom.accumulator(t, i);
        EXPECT_TRUE(at.row < 64 && at.col < n);
        seen.insert({at.row, at.col});
        FragmentCoord mma = c.coord(t % 32, i % 4);
        EXPECT_EQ(at.row, 16 * (t / 32) + mma.row);
        EXPECT_EQ(at.col, 8 * (i / 4) + mma.col);
        int64_t w = t / 32, g = t % 32 / 4, q = t % 4;
        EXPECT_EQ(at.row * n + at.col, (16 * w + g + 8 * (i / 2 % 2)) * n +
                                           8 * (i / 4) + 2 * q + i % 2);
      }
    EXPECT_EQ(static_cast<int64_t>(seen.size()), 64 * n);
  }
}

// P (an accumulator tile) as the A operand of k-step kk: per warp, its
// registers hold mma.sync m16n8k16's A fragment of D's columns 16kk.. (the
// order the H200 probe confirmed: register r packs accumulators 8kk + 2r,
// 8kk + 2r + 1, low half first).
TEST(WgmmaAtom, AccumulatorsAsRegisterA) {
  FragmentLayout a = MmaAtom::m16n8k16(MmaType::bf16).layout(MmaOperand::A);
  WgmmaAtom atom = *WgmmaAtom::of(64, MmaType::bf16);
  for (int64_t t = 0; t < WgmmaAtom::kThreads; ++t)
    for (int64_t kk = 0; kk < 4; ++kk)
      for (int64_t r = 0; r < 4; ++r) {
        auto [lo, hi] = WgmmaAtom::registerAFromAccumulators(kk, r);
        for (auto [element, acc] : {std::pair{2 * r, lo}, {2 * r + 1, hi}}) {
          FragmentCoord want = a.coord(t % 32, element);
          FragmentCoord got = atom.accumulator(t, acc);
          EXPECT_EQ(got.row, 16 * (t / 32) + want.row);
          EXPECT_EQ(got.col, 16 * kk + want.col);
        }
      }
}

// The probe's operand addresses: Q and K (64 x 128, K-major) k-step k at
// k / 4 * 8192 + k % 4 * 32, V (64 keys x 128, MN-major) at k * 2048 with
// LBO 8192 and SBO 1024.
TEST(WgmmaAtom, OperandDescriptors) {
  for (int64_t kStep = 0; kStep < 8; ++kStep) {
    WgmmaDescriptor q = WgmmaAtom::kMajor(
        16384, SwizzledTile{64, 128, SmemSwizzle::B128}, kStep);
    EXPECT_EQ(q.encode(),
              probeDescriptor(16384 + kStep / 4 * 8192 + kStep % 4 * 32));
    // 128 rows: boxes of 16 KiB.
    EXPECT_EQ(
        WgmmaAtom::kMajor(0, SwizzledTile{128, 128, SmemSwizzle::B128}, kStep)
            .address,
        kStep / 4 * 16384 + kStep % 4 * 32);
  }
  for (int64_t kStep = 0; kStep < 4; ++kStep)
    EXPECT_EQ(WgmmaAtom::mnMajor(
                  32768, SwizzledTile{64, 128, SmemSwizzle::B128}, kStep)
                  .encode(),
              probeDescriptor(32768 + kStep * 2048, 8192, 1024));
  EXPECT_EQ(WgmmaAtom::mnMajor(0, SwizzledTile{128, 128, SmemSwizzle::B128}, 1)
                .leadingByteOffset,
            16384u);
}

// wgmma's 128-byte-swizzled canonical layouts read through a descriptor
// (start address, LBO, SBO), with the swizzle applied to the absolute
// address (the tile 1024-aligned): K-major element (row r, k-step column
// j) at start + (r / 8) SBO + (r % 8) 128 + 2 j; MN-major element (key
// kk of the step, column n) at start + (n / 64) LBO + (kk / 8) SBO +
// (kk % 8) 128 + 2 (n % 64). Both must land where SwizzledTile put them,
// box-major and group-major alike.
int64_t swizzle128(int64_t linear) {
  return linear ^ (((linear >> 7) & 7) << 4);
}

TEST(WgmmaAtom, DescriptorsReadTheTilesImage) {
  for (bool groupMajor : {false, true})
    for (int64_t cols : {64, 128, 256}) {
      SwizzledTile tile{128, cols, SmemSwizzle::B128, groupMajor};
      for (int64_t kStep = 0; kStep < cols / WgmmaAtom::k; ++kStep) {
        WgmmaDescriptor d = WgmmaAtom::kMajor(0, tile, kStep);
        for (int64_t r = 0; r < tile.rows; ++r)
          for (int64_t j = 0; j < WgmmaAtom::k; ++j)
            ASSERT_EQ(swizzle128(d.address + r / 8 * d.strideByteOffset +
                                 r % 8 * 128 + 2 * j),
                      tile.offset(r, kStep * WgmmaAtom::k + j))
                << groupMajor << " " << cols << " " << kStep;
      }
      for (int64_t kStep = 0; kStep < tile.rows / WgmmaAtom::k; ++kStep) {
        WgmmaDescriptor d = WgmmaAtom::mnMajor(0, tile, kStep);
        for (int64_t kk = 0; kk < WgmmaAtom::k; ++kk)
          for (int64_t n = 0; n < cols; ++n)
            ASSERT_EQ(swizzle128(d.address + n / 64 * d.leadingByteOffset +
                                 kk / 8 * d.strideByteOffset + kk % 8 * 128 +
                                 2 * (n % 64)),
                      tile.offset(kStep * WgmmaAtom::k + kk, n))
                << groupMajor << " " << cols << " " << kStep;
      }
    }
}

} // namespace
