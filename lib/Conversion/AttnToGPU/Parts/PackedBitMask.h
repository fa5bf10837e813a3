//===- PackedBitMask.h - masks read from a bit-packed buffer ----*- C++ -*-===//
//
// A mask hook that keeps key kpos of query qpos iff bit `rowBit + kpos` of
// an i8 buffer parameter is set (little bit order: bit i is bit i % 8 of
// byte i / 8), as the standard library's @custom_mask. Recognized in the
// hook's IR, such a mask is read 64 keys at a time instead of a byte per
// score: kernels classify whole key tiles (none, all or some keys visible)
// and test a score's bit in a register.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHIR_LIB_CONVERSION_ATTNTOGPU_PARTS_PACKEDBITMASK_H
#define FLASHIR_LIB_CONVERSION_ATTNTOGPU_PARTS_PACKEDBITMASK_H

#include "../../BuilderUtils.h"

#include <optional>
#include <utility>

namespace flashir::conversion::parts {

/// Key tiles whose classes a prefill CTA keeps in shared memory (2 bits
/// each); later tiles count as partly visible.
constexpr int64_t kClassifiedTiles = 2048;
/// The shared bytes of those classes (and the first and last visible tile).
constexpr int64_t kTileClassBytes = 4 * (2 * kClassifiedTiles / 32 + 2);

struct PackedBitMask {
  /// The buffer's index among the hook's parameters.
  unsigned buffer;
  /// In the hook: the kept bit's index minus kpos (i64, defined without
  /// kpos).
  Value rowBit;
};

/// The packed-bit form of `mask` (a variant's mask region), if it is one:
///   %bit = arith.addi %rowBit, (index_cast %kpos : index to i64)
///   %byte = tensor.extract %bits[index_cast (shrui %bit, 3)] : tensor<?xi8>
///   %keep = trunci (shrui %byte, (trunci (andi %bit, 7) : i64 to i8)) : i1
/// with the operands of addi and andi in either order.
std::optional<PackedBitMask> matchPackedBitMask(Region &mask);

/// Reads bit windows of an i8 buffer (a memref<?xi8> in global memory).
class BitWindows {
public:
  /// Binds the buffer's address, size and alignment (once per kernel).
  BitWindows(LocBuilder &b, Value bits);

  /// Bits [bit, bit + 64) of each i64 `bits` as (low, high) i32 words;
  /// bits outside the buffer read as 0. In a buffer aligned to 4 bytes (of
  /// at least 12) every window's three 4-byte loads go out before any is
  /// used; a window that leaves the buffer, or any in other buffers, takes
  /// twelve guarded byte loads.
  SmallVector<std::pair<Value, Value>> loadAll(LocBuilder &b,
                                               ArrayRef<Value> bits) const;

  /// Whether bit `index` (0..63) of a window is set.
  static Value test(LocBuilder &b, std::pair<Value, Value> window,
                    int64_t index);

private:
  /// Where a window lies: its first 4-byte group's byte, the bit offset in
  /// it, and whether its three groups are inside the buffer.
  struct Place {
    Value byte0, offset, inside;
  };
  Place place(LocBuilder &b, Value bit) const;
  SmallVector<Value> wordLoads(LocBuilder &b, Value byte0) const;
  SmallVector<Value> byteLoads(LocBuilder &b, Value byte0) const;
  /// byteLoads, or zeros for an empty buffer.
  SmallVector<Value> slowWords(LocBuilder &b, Value byte0) const;
  /// The 64 bits at `offset` of three words.
  static std::pair<Value, Value> align(LocBuilder &b, ArrayRef<Value> words,
                                       Value offset);

  Value bits, address, bytes, aligned;
};

} // namespace flashir::conversion::parts

#endif // FLASHIR_LIB_CONVERSION_ATTNTOGPU_PARTS_PACKEDBITMASK_H
