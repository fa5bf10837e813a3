//===- MmaAtom.h - warp-level MMA shapes and fragment layouts ---*- C++ -*-===//
//
// An MMA atom is one warp-wide product D = A.B + C as the kernels use it:
// its shape (m, n, k), element and accumulator types, the mma.sync
// instructions it takes, and which (row, column) of each operand every
// lane's fragment element holds. The coordinates are plain data, so they
// are unit-tested against the PTX ISA's formulas and kernels read their
// constant offsets here instead of spelling out lane arithmetic. No MLIR:
// MmaSync.h emits the instructions.
//
// Every layout here is affine in a lane's groupID (lane / 4) and
// threadID_in_group (lane % 4) plus a per-element offset that is the same
// for every lane. m16n8k32 fp8 fragments fit as they are (4 elements a
// register); a wgmma atom's accumulators add a term for the warp of the
// warpgroup (16 rows each).
//
//===----------------------------------------------------------------------===//

#ifndef FLASHIR_LIB_CONVERSION_ATTNTOGPU_PARTS_MMAATOM_H
#define FLASHIR_LIB_CONVERSION_ATTNTOGPU_PARTS_MMAATOM_H

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace flashir::conversion::parts {

/// Element types of products and accumulators.
enum class MmaType { f16, bf16, f32 };

/// Bits of one element of `type`.
constexpr int64_t mmaTypeBits(MmaType type) {
  return type == MmaType::f32 ? 32 : 16;
}

/// A: m x k (row-major), B: k x n (column-major), C and D: m x n.
enum class MmaOperand { A, B, C };

struct FragmentCoord {
  int64_t row = 0, col = 0;
  bool operator==(const FragmentCoord &o) const {
    return row == o.row && col == o.col;
  }
};

/// The fragment every lane of a warp holds of one operand: element i of lane
/// L sits at base(L) + offsets[i], base(L) = (rowPerGroup * gid +
/// rowPerThread * tig, colPerGroup * gid + colPerThread * tig) with gid =
/// L / 4, tig = L % 4. Elements pack `perRegister` to a 32-bit register in
/// order (register r holds elements r * perRegister ..).
struct FragmentLayout {
  int64_t rows = 0, cols = 0;
  int64_t perRegister = 1;
  int64_t rowPerGroup = 0, rowPerThread = 0, colPerGroup = 0, colPerThread = 0;
  std::vector<FragmentCoord> offsets;

  static constexpr int64_t kLanes = 32;

  int64_t elements() const { return static_cast<int64_t>(offsets.size()); }
  int64_t registers() const { return elements() / perRegister; }
  /// Where lane `lane` holds element `i`.
  FragmentCoord coord(int64_t lane, int64_t i) const {
    int64_t gid = lane / 4, tig = lane % 4;
    const FragmentCoord &o = offsets[static_cast<size_t>(i)];
    return {rowPerGroup * gid + rowPerThread * tig + o.row,
            colPerGroup * gid + colPerThread * tig + o.col};
  }
  /// The element at offset (row, col) from a lane's base: the constant
  /// index kernels use for a coordinate they compute from gid and tig.
  int64_t elementAt(int64_t row, int64_t col) const {
    for (int64_t i = 0; i < elements(); ++i)
      if (offsets[static_cast<size_t>(i)] == FragmentCoord{row, col})
        return i;
    return -1;
  }
  /// The register holding the element at offset (row, col).
  int64_t registerAt(int64_t row, int64_t col) const {
    int64_t i = elementAt(row, col);
    return i < 0 ? -1 : i / perRegister;
  }
  /// The distinct row offsets of the elements, in element order (the two
  /// 8-row halves of a 16-row fragment: 0, 8).
  std::vector<int64_t> rowOffsets() const {
    std::vector<int64_t> rowsSeen;
    for (const FragmentCoord &o : offsets)
      if (std::find(rowsSeen.begin(), rowsSeen.end(), o.row) == rowsSeen.end())
        rowsSeen.push_back(o.row);
    return rowsSeen;
  }
  /// The (lane, element) holding (row, col) of the operand, if any.
  std::optional<std::pair<int64_t, int64_t>> owner(int64_t row,
                                                   int64_t col) const {
    for (int64_t lane = 0; lane < kLanes; ++lane)
      for (int64_t i = 0; i < elements(); ++i)
        if (coord(lane, i) == FragmentCoord{row, col})
          return std::pair(lane, i);
    return std::nullopt;
  }
};

/// mma.sync shapes over 16-bit elements with f32 accumulators.
struct MmaAtom {
  int64_t m = 16, n = 8, k = 16;
  MmaType element = MmaType::bf16, accumulator = MmaType::f32;
  /// The k of each mma.sync instruction: k (one instruction) or k / 2
  /// (m16n8k8 pairs on sm_75).
  int64_t instructionK = 16;

  /// One m16n8k16 mma.sync (sm_80+; f16 or bf16).
  static MmaAtom m16n8k16(MmaType element) {
    return {16, 8, 16, element, MmaType::f32, 16};
  }
  /// An m16n8k16 product as two m16n8k8 mma.sync (sm_75 has no m16n8k16;
  /// f16 only).
  static MmaAtom m16n8k8Pair() {
    return {16, 8, 16, MmaType::f16, MmaType::f32, 8};
  }

  int64_t instructions() const { return k / instructionK; }

  /// The fragment layout of one instruction (k = instructionK).
  FragmentLayout instructionLayout(MmaOperand operand) const {
    return layout(operand, instructionK);
  }
  /// The fragment layout of the whole product. For m16n8k8 pairs it is
  /// m16n8k16's: instruction j reads A registers [2j, 2j + 2) and B register
  /// j (instructionRegisters).
  FragmentLayout layout(MmaOperand operand) const { return layout(operand, k); }

  /// The first register and the count of `operand`'s registers that
  /// instruction `j` reads (C: all of them, accumulated in turn).
  std::pair<int64_t, int64_t> instructionRegisters(MmaOperand operand,
                                                   int64_t j) const {
    if (operand == MmaOperand::C)
      return {0, layout(operand).registers()};
    int64_t count = instructionLayout(operand).registers();
    return {j * count, count};
  }

private:
  FragmentLayout layout(MmaOperand operand, int64_t kk) const {
    FragmentLayout l;
    int64_t pack = 32 / mmaTypeBits(element);
    switch (operand) {
    case MmaOperand::A:
      // a_i: row gid (+8 for i / 2 odd), column 2 tig + i % 2 (+8 from
      // i = 4).
      l.rows = m, l.cols = kk, l.perRegister = pack;
      l.rowPerGroup = 1, l.colPerThread = pack;
      for (int64_t i = 0; i < m * kk / kLanes; ++i)
        l.offsets.push_back({8 * (i / 2 % 2), i % 2 + 8 * (i / 4)});
      break;
    case MmaOperand::B:
      // b_i: row (k) 2 tig + i % 2 (+8 from i = 2), column (n) gid.
      l.rows = kk, l.cols = n, l.perRegister = pack;
      l.rowPerThread = pack, l.colPerGroup = 1;
      for (int64_t i = 0; i < kk * n / kLanes; ++i)
        l.offsets.push_back({i % 2 + 8 * (i / 2), 0});
      break;
    case MmaOperand::C:
      // c_i: row gid (+8 from i = 2), column 2 tig + i % 2.
      l.rows = m, l.cols = n, l.perRegister = 32 / mmaTypeBits(accumulator);
      l.rowPerGroup = 1, l.colPerThread = 2;
      for (int64_t i = 0; i < m * n / kLanes; ++i)
        l.offsets.push_back({8 * (i / 2), i % 2});
      break;
    }
    return l;
  }
  static constexpr int64_t kLanes = FragmentLayout::kLanes;
};

} // namespace flashir::conversion::parts

#endif // FLASHIR_LIB_CONVERSION_ATTNTOGPU_PARTS_MMAATOM_H
