//===- SwizzledTile.h - TMA's swizzled tiles in smem ------------*- C++ -*-===//
//
// Where a 16-bit element of a tile lives in shared memory when a tensor copy
// (TMA) wrote it with a 128-, 64- or 32-byte swizzle: the tile is a row of
// boxes, each `swizzleBytes` wide (64, 32 or 16 elements) and `rows` tall;
// inside a box, row r's 16-byte chunks are permuted by XOR with a phase of
// r. Boxes sit side by side (box-major), or, group-major, each 8-row
// group's boxes sit together so that one tensor copy of whole 8-row groups
// over every box lands contiguously. One formula serves the copies, the
// stores that write tiles by hand (queries, the key hook, zero fill) and
// the wgmma descriptors (WgmmaAtom.h), which read the same image. Plain
// data, unit-tested against the swizzle as an address-bit XOR; no MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHIR_LIB_CONVERSION_ATTNTOGPU_PARTS_SWIZZLEDTILE_H
#define FLASHIR_LIB_CONVERSION_ATTNTOGPU_PARTS_SWIZZLEDTILE_H

#include <cstdint>

namespace flashir::conversion::parts {

/// Shared-memory swizzles of tensor copies and wgmma descriptors; the
/// values are the descriptor's 2-bit swizzle field.
enum class SmemSwizzle { None = 0, B128 = 1, B64 = 2, B32 = 3 };

/// Bytes per swizzled row of a box (16: no swizzle, one chunk).
constexpr int64_t swizzleBytes(SmemSwizzle swizzle) {
  switch (swizzle) {
  case SmemSwizzle::B128:
    return 128;
  case SmemSwizzle::B64:
    return 64;
  case SmemSwizzle::B32:
    return 32;
  case SmemSwizzle::None:
    break;
  }
  return 16;
}

/// A `rows` x `cols` tile of 16-bit elements as tensor copies write it:
/// boxes of swizzleBytes / 2 columns, each rows x that, in 8-row groups
/// (the swizzle's period). Box-major: box after box, each its groups in
/// order. Group-major (rows a multiple of 8): group after group, each its
/// boxes in order.
struct SwizzledTile {
  int64_t rows = 0, cols = 0;
  SmemSwizzle swizzle = SmemSwizzle::B128;
  bool groupMajor = false;

  /// A swizzled tile's base must be aligned to this (the swizzle pattern
  /// repeats every 8 rows of 128 bytes).
  static constexpr int64_t kAlign = 1024;

  int64_t boxColumns() const { return swizzleBytes(swizzle) / 2; }
  int64_t boxBytes() const { return rows * swizzleBytes(swizzle); }
  int64_t boxes() const { return (cols + boxColumns() - 1) / boxColumns(); }
  int64_t bytes() const { return boxes() * boxBytes(); }
  /// Bytes of one box's 8-row group.
  int64_t groupBytes() const { return 8 * swizzleBytes(swizzle); }
  /// Bytes from a box to the next one of the same rows.
  int64_t boxStride() const { return groupMajor ? groupBytes() : boxBytes(); }
  /// Bytes from an 8-row group to the next one of the same box.
  int64_t groupStride() const {
    return groupMajor ? boxes() * groupBytes() : groupBytes();
  }

  /// The XOR phase of row `r`'s 16-byte chunks.
  int64_t phase(int64_t r) const {
    switch (swizzle) {
    case SmemSwizzle::B128:
      return r % 8;
    case SmemSwizzle::B64:
      return (r / 2) % 4;
    case SmemSwizzle::B32:
      return (r / 4) % 2;
    case SmemSwizzle::None:
      break;
    }
    return 0;
  }

  /// The byte offset of element (r, c) from the tile's base.
  int64_t offset(int64_t r, int64_t c) const {
    int64_t box = c / boxColumns(), inBox = c % boxColumns();
    return box * boxStride() + r / 8 * groupStride() +
           r % 8 * swizzleBytes(swizzle) + ((inBox / 8) ^ phase(r)) * 16 +
           (inBox % 8) * 2;
  }
};

} // namespace flashir::conversion::parts

#endif // FLASHIR_LIB_CONVERSION_ATTNTOGPU_PARTS_SWIZZLEDTILE_H
