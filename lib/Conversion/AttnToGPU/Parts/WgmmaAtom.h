//===- WgmmaAtom.h - warpgroup MMA layouts, descriptors ---------*- C++ -*-===//
//
// A wgmma atom is one warpgroup-wide product D = A.B + D of m64 x n x k16
// (f16 or bf16, f32 accumulators) as sm_90a's wgmma.mma_async computes it:
// which (row, column) of D each of the 128 threads' accumulators holds, how
// an accumulator fragment becomes the register A operand of the next
// product (P.V with P in registers), and the 64-bit shared-memory matrix
// descriptors of operands in the swizzled images tensor copies write
// (SwizzledTile.h). Plain data, unit-tested against formulas checked on an
// H200 (bench/gpu/probes/hopper/wgmma_probe.cu); no MLIR. The plan:
// docs/HopperPrefillPlan.md, section 2.1.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHIR_LIB_CONVERSION_ATTNTOGPU_PARTS_WGMMAATOM_H
#define FLASHIR_LIB_CONVERSION_ATTNTOGPU_PARTS_WGMMAATOM_H

#include "MmaAtom.h"
#include "SwizzledTile.h"

#include <cstdint>
#include <optional>
#include <utility>

namespace flashir::conversion::parts {

/// A wgmma shared-memory matrix descriptor. Byte quantities; encode() keeps
/// them in 16-byte units: bits [0,14) start address, [16,30) leading byte
/// offset, [32,46) stride byte offset, [49,52) base offset, [62,64)
/// swizzle.
struct WgmmaDescriptor {
  uint32_t address = 0, leadingByteOffset = 0, strideByteOffset = 0;
  uint32_t baseOffset = 0;
  SmemSwizzle swizzle = SmemSwizzle::B128;

  uint64_t encode() const {
    auto field = [](uint64_t bytes, int shift) {
      return ((bytes >> 4) & 0x3FFF) << shift;
    };
    return field(address, 0) | field(leadingByteOffset, 16) |
           field(strideByteOffset, 32) | uint64_t(baseOffset & 0x7) << 49 |
           uint64_t(swizzle) << 62;
  }
  static WgmmaDescriptor decode(uint64_t bits) {
    auto bytes = [&](int shift) {
      return static_cast<uint32_t>(((bits >> shift) & 0x3FFF) << 4);
    };
    return {bytes(0), bytes(16), bytes(32),
            static_cast<uint32_t>((bits >> 49) & 0x7),
            static_cast<SmemSwizzle>(bits >> 62)};
  }
  bool operator==(const WgmmaDescriptor &o) const {
    return address == o.address && leadingByteOffset == o.leadingByteOffset &&
           strideByteOffset == o.strideByteOffset &&
           baseOffset == o.baseOffset && swizzle == o.swizzle;
  }
};

struct WgmmaAtom {
  static constexpr int64_t m = 64, k = 16;
  static constexpr int64_t kThreads = 128;
  int64_t n = 64;
  MmaType element = MmaType::bf16;

  /// The atom of m64 x `n` x k16 over `element`, if wgmma has it (n a
  /// multiple of 8 in 8..256; f16 or bf16).
  static std::optional<WgmmaAtom> of(int64_t n, MmaType element) {
    if (n < 8 || n > 256 || n % 8 != 0 || element == MmaType::f32)
      return std::nullopt;
    return WgmmaAtom{n, element};
  }

  /// f32 accumulators per thread.
  int64_t accumulators() const { return n / 2; }

  /// Where accumulator `i` of warpgroup thread `thread` sits in D: each warp
  /// holds 16 rows, laid out per 8 columns as mma.sync's m16n8 C fragment.
  FragmentCoord accumulator(int64_t thread, int64_t i) const {
    int64_t warp = thread / 32, lane = thread % 32;
    return {16 * warp + lane / 4 + 8 * ((i / 2) % 2),
            8 * (i / 4) + 2 * (lane % 4) + i % 2};
  }

  /// The accumulators (low half, high half) that register `r` (0..3) of the
  /// A operand of k-step `kk` packs, when an m64 x n accumulator tile is the
  /// A operand (m64 x K = n) of the next product: the identity order, two
  /// per register.
  static std::pair<int64_t, int64_t> registerAFromAccumulators(int64_t kk,
                                                               int64_t r) {
    return {8 * kk + 2 * r, 8 * kk + 2 * r + 1};
  }

  /// The descriptor of k-step `kStep` of a K-major operand (A = Q, or B = K
  /// read as its transpose) stored as the 128-byte-swizzled `tile` at
  /// `base` (columns along k): a k16 step moves 32 bytes inside a box, then
  /// to the next box; the stride byte offset is the tile's 8-row group
  /// stride (the leading one is unused with a swizzle).
  static WgmmaDescriptor kMajor(uint32_t base, const SwizzledTile &tile,
                                int64_t kStep) {
    int64_t col = kStep * k;
    uint32_t address = base + static_cast<uint32_t>(
                                  col / tile.boxColumns() * tile.boxStride() +
                                  col % tile.boxColumns() * 2);
    return {address, 16, static_cast<uint32_t>(tile.groupStride()), 0,
            SmemSwizzle::B128};
  }

  /// The descriptor of k-step `kStep` of an MN-major B operand (V, keys
  /// along k, head dim along n; wgmma's trans-b) stored as the
  /// 128-byte-swizzled `tile` at `base` (keys along rows): the leading
  /// byte offset is the distance between 64-column boxes, the stride one
  /// between 8-key groups, and a k16 step starts two groups further.
  static WgmmaDescriptor mnMajor(uint32_t base, const SwizzledTile &tile,
                                 int64_t kStep) {
    uint32_t address =
        base + static_cast<uint32_t>(kStep * (k / 8) * tile.groupStride());
    return {address, static_cast<uint32_t>(tile.boxStride()),
            static_cast<uint32_t>(tile.groupStride()), 0, SmemSwizzle::B128};
  }
};

} // namespace flashir::conversion::parts

#endif // FLASHIR_LIB_CONVERSION_ATTNTOGPU_PARTS_WGMMAATOM_H
