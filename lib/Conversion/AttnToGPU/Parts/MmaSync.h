//===- MmaSync.h - mma.sync products of an MMA atom in NVVM -----*- C++ -*-===//
//
// The IR side of an MmaAtom: its operand registers (16-bit element pairs,
// ldmatrix words) and the mma.sync instructions of one product, as NVVM ops
// (nvvm.mma.sync, nvvm.ldmatrix).
//
//===----------------------------------------------------------------------===//

#ifndef FLASHIR_LIB_CONVERSION_ATTNTOGPU_PARTS_MMASYNC_H
#define FLASHIR_LIB_CONVERSION_ATTNTOGPU_PARTS_MMASYNC_H

#include "../../BuilderUtils.h"
#include "MmaAtom.h"

#include <array>

namespace flashir::conversion::parts {

class MmaSync {
public:
  /// `element`: the MLIR type of the atom's element (f16 or bf16).
  MmaSync(const MmaAtom &atom, Type element) : atom(atom), element(element) {}

  /// The atom for 16-bit `element` products: m16n8k16, or on sm_75
  /// (`turing`) m16n8k8 pairs.
  static MmaAtom atomFor(Type element, bool turing);

  /// A lane's groupID (lane / 4) and threadID_in_group (lane % 4) and its
  /// base coordinate in `layout` (element i sits at base + offsets[i]).
  struct LaneBase {
    Value gid, tig, row, col;
  };
  static LaneBase laneBase(LocBuilder &b, Value lane,
                           const FragmentLayout &layout);

  /// A pair of elements (vector<2xT>) as an A or B register: bf16 pairs
  /// travel as i32, f16 pairs as vector<2xf16> (what NVVM's mma takes).
  Value operand(LocBuilder &b, Value pair) const;
  /// A 32-bit word holding a pair (an ldmatrix result) as a register.
  Value wordOperand(LocBuilder &b, Value word) const;
  /// ldmatrix.x4 (b16, 8x8, transposed for `transpose`) at the lane's
  /// shared pointer `ptr`: four registers.
  std::array<Value, 4> loadMatrixX4(LocBuilder &b, Value ptr,
                                    bool transpose) const;
  /// acc += A . B: the product's A registers `a`, B registers `bRegs` and
  /// f32 accumulators `acc` (replaced by the results), one mma.sync per
  /// instruction of the atom.
  void build(LocBuilder &b, ArrayRef<Value> a, ArrayRef<Value> bRegs,
             MutableArrayRef<Value> acc) const;

  const MmaAtom atom;

private:
  Type element;
};

} // namespace flashir::conversion::parts

#endif // FLASHIR_LIB_CONVERSION_ATTNTOGPU_PARTS_MMASYNC_H
