//===- Wgmma.h - warpgroup MMA products of a wgmma atom in NVVM -*- C++ -*-===//
//
// The IR side of a WgmmaAtom (WgmmaAtom.h): accumulators as the
// !llvm.struct of n / 2 f32 that NVVM's wgmma takes, shared-memory matrix
// descriptors from shared-window addresses, and the asynchronous products:
//  - ss: both operands in shared memory (nvvm.wgmma.mma_async);
//  - rs: A in registers (the previous product's accumulators as 16-bit
//    pairs), which neither NVVM nor nvgpu has an op for: inline PTX with
//    the accumulators tied to the results;
//  - fence / commit, and a wait that takes the accumulators of the groups
//    it completes as tied operands and returns them anew, so LLVM cannot
//    move a read of them above the wait (nvvm.wgmma.wait.group defines no
//    value; ptxas then inserts a wait of its own, C7517).
// docs/HopperPrefillPlan.md, section 2.2.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHIR_LIB_CONVERSION_ATTNTOGPU_PARTS_WGMMA_H
#define FLASHIR_LIB_CONVERSION_ATTNTOGPU_PARTS_WGMMA_H

#include "../../BuilderUtils.h"
#include "WgmmaAtom.h"

namespace flashir::conversion::parts {

class Wgmma {
public:
  /// `element`: the MLIR type of the operands (f16 or bf16).
  Wgmma(const WgmmaAtom &atom, Type element) : atom(atom), element(element) {}

  /// !llvm.struct<(f32 x n / 2)>.
  Type accumulatorType(MLIRContext *ctx) const;
  /// Accumulators whose values no product reads (the first k-step of a
  /// product that does not accumulate).
  Value undefined(LocBuilder &b) const;
  /// The accumulators as f32 values, and back.
  SmallVector<Value> unpack(LocBuilder &b, Value acc) const;
  Value pack(LocBuilder &b, ArrayRef<Value> values) const;

  /// The descriptor (i64) of `fields` with its start address replaced by
  /// the shared-window address `address` (i64) plus fields.address.
  static Value descriptor(LocBuilder &b, Value address,
                          const WgmmaDescriptor &fields);

  /// Orders register writes of accumulators and A operands before the
  /// products that follow (wgmma.fence).
  static void fence(LocBuilder &b);
  /// `values` (f32 or i32) through an empty side-effecting inline asm that
  /// ties each to a new value: the instructions that compute them stay
  /// before it, so placed before fence() they cannot sink between the
  /// products (ptxas then injects fences of its own, C7519).
  static SmallVector<Value> pinOperands(LocBuilder &b, ValueRange values);
  /// Closes the products issued since the last commit into a group.
  static void commit(LocBuilder &b);
  /// Waits until at most `pending` groups are in flight; `accs` are the
  /// accumulators of the groups that completed, returned as new values.
  SmallVector<Value> waitTied(LocBuilder &b, int64_t pending,
                              ArrayRef<Value> accs) const;

  /// acc = A . B (+ acc where `accumulate`) with A K-major (`descA`) and B
  /// K-major (`descB`, the product's B transposed in memory: keys as rows).
  Value ss(LocBuilder &b, Value acc, Value descA, Value descB,
           bool accumulate) const;
  /// acc += A . B with A's four registers `a` (16-bit pairs as i32) and B
  /// at `descB`, MN-major where `transB` (V: keys along k as rows).
  Value rs(LocBuilder &b, Value acc, ArrayRef<Value> a, Value descB,
           bool transB) const;
  /// The four A registers of k-step `kk` of a product whose A is the f32
  /// accumulator values `acc` of an m64 x (16 kk..) tile, converted to the
  /// element type (WgmmaAtom::registerAFromAccumulators).
  SmallVector<Value> registersA(LocBuilder &b, ArrayRef<Value> acc,
                                int64_t kk) const;

  const WgmmaAtom atom;

private:
  Type element;
};

} // namespace flashir::conversion::parts

#endif // FLASHIR_LIB_CONVERSION_ATTNTOGPU_PARTS_WGMMA_H
