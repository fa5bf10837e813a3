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
// of 32 lanes covers 32 / (D / 8) rows; a loop iteration issues up to
// gatherPasses passes); each lane loads the page id of one of the warp's rows
// a tile ahead, and the warp's lanes take it by shuffle. The consumers fence
// the async proxy after their wait (cp.async writes through the generic proxy;
// wgmma reads through the async one).
//
//===----------------------------------------------------------------------===//

#include "HopperPrefillBuilder.h"

#include "../Parts/AsyncProxy.h"

#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>

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

int64_t gatherPasses(int64_t pageSize) {
  // One pass at a time leaves the producer latency-bound. A page size not
  // a power of two takes a 64-bit remainder per row: more of them in
  // flight spill the producer, and the 64 registers it would take then
  // spill split kernels' consumers.
  return llvm::isPowerOf2_64(pageSize) ? 8 : 1;
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
  GatherFrame g;
  g.pool = operand == Operand::K ? f.kPool : f.vPool;
  g.tile = tileOffset(b, operand, slot);
  g.page = page;
  g.warpRow = arith::MulIOp::create(b, warpInWg, cIndex(b, rowsPerWarp));
  g.t0 = tileStart(b, it);
  g.chunk = arith::RemUIOp::create(b, lane, cIndex(b, chunksPerRow));
  g.column = arith::MulIOp::create(b, g.chunk, cIndex(b, kernels::kVec));
  Value passRow = arith::DivUIOp::create(b, lane, cIndex(b, chunksPerRow));
  // Lane l takes rows passRow, passRow + rowsPerPass, ...: every lane runs
  // the same number of passes, so each shuffle has all 32 lanes.
  int64_t passes = rowsPerWarp / rowsPerPass;
  int64_t unroll = std::min(gatherPasses(P), passes);
  assert(passes % unroll == 0 && "iterations cover the warp's rows");
  Value end = cIndex(b, rowsPerWarp);
  Value step = cIndex(b, rowsPerPass * unroll);
  buildForStep(
      b, passRow, end, step, ValueRange{},
      [&](LocBuilder &b, Value firstRow, ValueRange) {
        for (int64_t pass = 0; pass < unroll; ++pass)
          gatherRow(b, g,
                    pass == 0 ? firstRow
                              : arith::AddIOp::create(
                                    b, firstRow, cIndex(b, pass * rowsPerPass))
                                    .getResult());
        return SmallVector<Value>();
      });
}

void HopperPrefillBuilder::gatherRow(LocBuilder &b, const GatherFrame &g,
                                     Value rowInWarp) {
  Value row = arith::AddIOp::create(b, g.warpRow, rowInWarp);
  Value key = arith::AddIOp::create(b, g.t0, row);
  Value width = arith::ConstantOp::create(b, b.getI32IntegerAttr(32));
  Value source = arith::IndexCastOp::create(b, b.getI32Type(), rowInWarp);
  Value rowPage =
      gpu::ShuffleOp::create(b, g.page, source, width, gpu::ShuffleMode::IDX)
          .getShuffleResult();
  Value pageIndex = arith::IndexCastUIOp::create(b, b.getIndexType(), rowPage);
  Value slotInPage = arith::RemUIOp::create(b, key, cIndex(b, P));
  // Keys past the end copy nothing and zero their chunk.
  Value valid =
      arith::CmpIOp::create(b, arith::CmpIPredicate::ult, key, f.kEnd);
  Value all = cIndex(b, kernels::kVec);
  Value none = cIndex(b, 0);
  Value elements = arith::SelectOp::create(b, valid, all, none);
  Value offset = arith::AddIOp::create(
      b, g.tile, swizzledChunk(b, ringImage, row, g.chunk));
  Value element = arith::DivUIOp::create(b, offset, cIndex(b, elementBytes));
  nvgpu::DeviceAsyncCopyOp::create(
      b, layout, ValueRange{element}, g.pool,
      ValueRange{pageIndex, slotInPage, f.kvHead, g.column},
      b.getIndexAttr(kernels::kVec), elements,
      /*bypassL1=*/b.getUnitAttr());
}

} // namespace flashir::conversion::hopper
