//===- HopperPrefillBuilder.h - the sm_90a wgmma prefill kernel -*- C++ -*-===//
//
// The warp-specialized prefill kernel of the WgmmaPrefill family (see
// HopperPrefillKernel.cpp for its design) is built by one
// HopperPrefillBuilder; the member functions of each part sit in the file
// named after it:
//   HopperPrefillKernel.cpp  the CTA's frame, the shared-memory layout, the
//                            ring's barriers and the warpgroup roles
//   Producer.cpp             the producer warpgroup: K/V tiles by tensor
//                            copies into the ring
//   Consumer.cpp             a consumer warpgroup: its Q rows, the key loop
//                            (Q.K^T and P.V by wgmma), the online softmax
//   Epilogue.cpp             O / l and lse out
// docs/HopperPrefillPlan.md has the plan and its milestones.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHIR_LIB_CONVERSION_ATTNTOGPU_HOPPER_HOPPERPREFILLBUILDER_H
#define FLASHIR_LIB_CONVERSION_ATTNTOGPU_HOPPER_HOPPERPREFILLBUILDER_H

#include "../KernelBuilder.h"
#include "../Parts/MBarrierRing.h"
#include "../Parts/Wgmma.h"

namespace flashir::conversion::hopper {
using kernels::KernelBuilder;
using kernels::KernelShape;

/// The kernel's fixed configuration: consumer warpgroups of 64 query rows
/// each plus one producer warpgroup, registers per thread of each role.
constexpr int64_t kConsumers = 2, kRowsPerConsumer = 64;
constexpr int64_t kProducerRegisters = 40, kConsumerRegisters = 232;

/// The shared memory the kernel's layout takes from its dynamic buffer
/// (the alignment slack of the 1024-byte swizzle bases included).
int64_t hopperPrefillSharedBytes(int64_t qRows, int64_t kvTile,
                                 int64_t headDim, int64_t stages,
                                 int64_t elementBytes);

class HopperPrefillBuilder {
public:
  explicit HopperPrefillBuilder(KernelBuilder &kernel);
  gpu::GPUFuncOp build(OpBuilder &moduleBuilder, StringRef name);

private:
  using Frame = KernelBuilder::Frame;
  /// A K or V tile of the ring.
  enum class Operand { K = 0, V = 1 };

  // HopperPrefillKernel.cpp.
  /// The CTA's request, q tile and head; leaves `b` inside the guard CTAs
  /// past their request's rows skip.
  void bindFrame(LocBuilder &b);
  /// The 1024-aligned base of the layout and the ring's barriers, which
  /// thread 0 initialises before every thread passes a CTA barrier.
  void bindSharedMemory(LocBuilder &b);
  /// Shared-window address of byte `offset` of the layout.
  Value sharedAddress(LocBuilder &b, Value offset);
  /// The full (`full`) or empty barrier of `operand` in ring slot `slot`.
  Value barrier(LocBuilder &b, Operand operand, bool full, Value slot);
  /// Byte offset of `operand`'s tile in ring slot `slot`.
  Value tileOffset(LocBuilder &b, Operand operand, Value slot);
  /// The slot and phase parity of the ring's use `it` (consumers' waits;
  /// the producer's flips the parity).
  std::pair<Value, Value> slotAndParity(LocBuilder &b, Value it);

  // Producer.cpp.
  /// One elected thread of the producer warpgroup copies every K and V
  /// tile of the CTA's keys into the ring.
  void produce(LocBuilder &b);
  /// The tensor copies of `operand`'s tile `it` into ring slot `slot`.
  void copyTile(LocBuilder &b, Operand operand, Value it, Value slot);

  // Consumer.cpp.
  /// Consumer warpgroup `wg` (1..): its rows' attention over every tile.
  void consume(LocBuilder &b);
  /// The warpgroup's Q rows, swizzled into the Q tile for wgmma.
  void loadQueryRows(LocBuilder &b);
  /// One key tile: S = Q.K^T, the softmax, O += P.V. `state`: m and l of
  /// the thread's two rows, then O.
  SmallVector<Value> keyTile(LocBuilder &b, Value it, ValueRange state);
  /// The scores of tile `it` (t0 its first key), keys past the end at
  /// -inf.
  SmallVector<Value> maskedScores(LocBuilder &b, Value t0,
                                  ArrayRef<Value> scores);
  /// Zeroes V rows of keys past the end in the tile at `vOffset` (both
  /// consumer warpgroups, then a consumer barrier).
  void zeroTailRows(LocBuilder &b, Value t0, Value vOffset);

  // Epilogue.cpp.
  /// O / l and lse of the thread's rows from the final `state`.
  void writeOutput(LocBuilder &b, ValueRange state);

  KernelBuilder &k;
  const KernelShape &s;
  MLIRContext *ctx;
  Type f32;
  int64_t D, KV, S, P, elementBytes, qRows;
  /// Keys per tensor-copy box (a page's, or a tile's where pages hold
  /// whole tiles or the keys are contiguous) and boxes per 64 columns.
  int64_t boxRows, rowBoxes;
  parts::WgmmaAtom scoreAtom, outputAtom;
  parts::Wgmma scoreMma, outputMma;
  parts::MBarrierRing ring;
  /// The layout: Q tile, then K tiles, V tiles, then barriers.
  int64_t tileBytes, qBytes, barrierOffset;
  float factor;

  gpu::GPUFuncOp func;
  Frame f;
  Value c0, c1, qTile, head, rowBase, numTiles;
  Value tid, wg, wgThread, warpInWg, lane;
  Value alignedAddress, layout;
  Value kMap, vMap;
};

} // namespace flashir::conversion::hopper

#endif // FLASHIR_LIB_CONVERSION_ATTNTOGPU_HOPPER_HOPPERPREFILLBUILDER_H
