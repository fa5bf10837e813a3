//===- Gather.cpp - the wgmma prefill producer's cp.async gather ----------===//
//
// Pages that tensor-copy boxes cannot tile (fewer than 8 keys, page 1
// included, or sizes that neither hold nor divide a K/V tile), and kernels
// built without tensor maps (copy=cp-async or bulk), fill the ring by a
// gather instead: every producer thread copies 16-byte chunks by cp.async
// into their places in the 128-byte-swizzled tile, zero-filling keys past
// the request's end, and arrives on the slot's full barrier when its copies
// land (cp.async.mbarrier.arrive.noinc: the barrier expects one arrival
// per producer thread). Warp w copies the tile's rows w * KV / 4.. (a pass
// of 32 lanes covers 32 / (D / 8) rows); each lane loads the page id of one
// of the warp's rows a tile ahead, and the warp's lanes take it by shuffle.
// The consumers fence the async proxy after their wait (cp.async writes
// through the generic proxy; wgmma reads through the async one).
//
//===----------------------------------------------------------------------===//

#include "HopperPrefillBuilder.h"

#include "../Parts/AsyncProxy.h"

#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

using namespace mlir;

namespace flashir::conversion::hopper {

bool gathersKeys(const KernelShape &s, bool tensorMaps) {
  // Ragged keys are one box per tile; pages need a multiple of 8 keys that
  // holds or divides the tile.
  bool boxesTile = s.access.ragged ||
                   (s.pageSize % 8 == 0 &&
                    (s.kvTile % s.pageSize == 0 || s.pageSize % s.kvTile == 0));
  return !boxesTile || !tensorMaps;
}

void HopperPrefillBuilder::gatherTiles(LocBuilder &b) {
  walkRing(
      b, [&](LocBuilder &b, Value it) { return gatherPage(b, it); },
      [&](LocBuilder &b, Operand operand, Value it, Value slot, Value page) {
        gatherTile(b, operand, it, slot, page);
        NVVM::CpAsyncMBarrierArriveOp::create(
            b, barrier(b, operand, true, slot), /*noinc=*/true);
      });
}

Value HopperPrefillBuilder::gatherPage(LocBuilder &b, Value it) {
  // Lane l: row l % (KV / 4) of the warp's; keys past the end read the
  // last key's page.
  int64_t rowsPerWarp = KV / 4;
  Value warpRow = arith::MulIOp::create(b, warpInWg, cIndex(b, rowsPerWarp));
  Value laneRow = arith::RemUIOp::create(b, lane, cIndex(b, rowsPerWarp));
  Value row = arith::AddIOp::create(b, warpRow, laneRow);
  Value key = arith::AddIOp::create(b, tileStart(b, it), row);
  Value lastKey = arith::SubIOp::create(b, f.kEnd, c1);
  Value clamped = arith::MinUIOp::create(b, key, lastKey);
  Value pageInRequest = arith::DivUIOp::create(b, clamped, cIndex(b, P));
  return k.poolPage32(b, f,
                      arith::AddIOp::create(b, f.pageBegin, pageInRequest));
}

void HopperPrefillBuilder::gatherTile(LocBuilder &b, Operand operand, Value it,
                                      Value slot, Value page) {
  int64_t rowsPerWarp = KV / 4;
  int64_t chunksPerRow = D / kernels::kVec;
  int64_t rowsPerPass = 32 / chunksPerRow;
  assert(rowsPerWarp % rowsPerPass == 0 && "passes cover the warp's rows");
  Value chunk = arith::RemUIOp::create(b, lane, cIndex(b, chunksPerRow));
  Value column = arith::MulIOp::create(b, chunk, cIndex(b, kernels::kVec));
  Value passRow = arith::DivUIOp::create(b, lane, cIndex(b, chunksPerRow));
  Value warpRow = arith::MulIOp::create(b, warpInWg, cIndex(b, rowsPerWarp));
  Value t0 = tileStart(b, it);
  Value tile = tileOffset(b, operand, slot);
  Value pool = operand == Operand::K ? f.kPool : f.vPool;
  Value width = arith::ConstantOp::create(b, b.getI32IntegerAttr(32));
  // Lane l takes rows passRow, passRow + rowsPerPass, ...: every lane runs
  // the same number of passes, so each shuffle has all 32 lanes. (A loop
  // over pass indices from 0 lets ptxas unroll it and spill.)
  Value end = cIndex(b, rowsPerWarp);
  Value step = cIndex(b, rowsPerPass);
  buildForStep(
      b, passRow, end, step, ValueRange{},
      [&](LocBuilder &b, Value rowInWarp, ValueRange) {
        Value row = arith::AddIOp::create(b, warpRow, rowInWarp);
        Value key = arith::AddIOp::create(b, t0, row);
        Value source = arith::IndexCastOp::create(b, b.getI32Type(), rowInWarp);
        Value rowPage = gpu::ShuffleOp::create(b, page, source, width,
                                               gpu::ShuffleMode::IDX)
                            .getShuffleResult();
        Value pageIndex =
            arith::IndexCastUIOp::create(b, b.getIndexType(), rowPage);
        Value slotInPage = arith::RemUIOp::create(b, key, cIndex(b, P));
        // Keys past the end copy nothing and zero their chunk.
        Value valid =
            arith::CmpIOp::create(b, arith::CmpIPredicate::ult, key, f.kEnd);
        Value all = cIndex(b, kernels::kVec);
        Value none = cIndex(b, 0);
        Value elements = arith::SelectOp::create(b, valid, all, none);
        Value offset = arith::AddIOp::create(
            b, tile, swizzledChunk(b, ringImage, row, chunk));
        Value element =
            arith::DivUIOp::create(b, offset, cIndex(b, elementBytes));
        nvgpu::DeviceAsyncCopyOp::create(
            b, layout, ValueRange{element}, pool,
            ValueRange{pageIndex, slotInPage, f.kvHead, column},
            b.getIndexAttr(kernels::kVec), elements,
            /*bypassL1=*/b.getUnitAttr());
        return SmallVector<Value>();
      });
}

} // namespace flashir::conversion::hopper
