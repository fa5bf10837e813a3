//===- Producer.cpp - the wgmma prefill kernel's producer warpgroup -------===//
//
// One elected thread of the producer's first warp walks the ring: before
// refilling a slot it waits for the slot's empty barrier (MBarrierRing's
// producer parity: the first pass does not block), arrives on the full
// barrier expecting the tile's bytes and issues the tile's tensor copies,
// K first so Q.K^T can start while V is in flight. A tile is boxes of 64
// columns (128 bytes, the swizzle span) by boxRows keys at abi::kvTensorMap's
// coordinates: (column, KV head, pool row) for NHD pools and ragged rows,
// (column, slot, page * Hkv + head) for HND ones. Boxes of keys past the
// request's end read its last page (the consumers mask those keys and zero
// their V rows); the copy engine zero-fills what lies past the pool.
//
//===----------------------------------------------------------------------===//

#include "HopperPrefillBuilder.h"

#include "../Parts/AsyncProxy.h"

using namespace mlir;

namespace flashir::conversion::hopper {

void HopperPrefillBuilder::produce(LocBuilder &b) {
  Value firstWarp =
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, warpInWg, c0);
  scf::IfOp::create(b, firstWarp, [&](OpBuilder &wb, Location loc) {
    LocBuilder b(loc, wb);
    Value elected = NVVM::ElectSyncOp::create(b, b.getI1Type(), Value());
    scf::IfOp::create(b, elected, [&](OpBuilder &eb, Location loc) {
      LocBuilder b(loc, eb);
      // The generic addresses of the K and V maps (written by the host
      // before the launch: no tensor-map proxy fence).
      Value maps = arith::IndexCastOp::create(
          b, b.getI64Type(),
          memref::ExtractAlignedPointerAsIndexOp::create(b, f.kvMaps));
      kMap = parts::pointerTo(b, maps, 0);
      vMap = parts::pointerTo(
          b,
          arith::AddIOp::create(
              b, maps, arith::ConstantOp::create(b, b.getI64IntegerAttr(128))),
          0);
      buildFor(b, c0, numTiles, [&](LocBuilder &b, Value it) {
        Value slot, parity;
        std::tie(slot, parity) = slotAndParity(b, it);
        Value emptyParity = arith::XOrIOp::create(
            b, parity, arith::ConstantOp::create(b, b.getI32IntegerAttr(1)));
        for (Operand operand : {Operand::K, Operand::V}) {
          parts::mbarrierWait(b, barrier(b, operand, false, slot),
                              emptyParity);
          parts::mbarrierExpectTx(b, barrier(b, operand, true, slot),
                                  tileBytes);
          copyTile(b, operand, it, slot);
        }
      });
      scf::YieldOp::create(b);
    });
    scf::YieldOp::create(b);
  });
}

void HopperPrefillBuilder::copyTile(LocBuilder &b, Operand operand, Value it,
                                    Value slot) {
  auto i32Of = [&](Value index) -> Value {
    return arith::IndexCastOp::create(b, b.getI32Type(), index);
  };
  Value t0 =
      arith::AddIOp::create(b, f.kBegin, arith::MulIOp::create(b, it, cIndex(b, KV)));
  Value dstTile = tileOffset(b, operand, slot);
  Value full = barrier(b, operand, true, slot);
  Value map = operand == Operand::K ? kMap : vMap;
  Value lastKey = arith::SubIOp::create(b, f.kEnd, c1);
  parts::SwizzledTile image{KV, D, parts::SmemSwizzle::B128};
  for (int64_t r = 0; r < rowBoxes; ++r) {
    Value j = arith::AddIOp::create(b, t0, cIndex(b, r * boxRows));
    // The box's row coordinates (y, z).
    Value y, z;
    if (s.access.ragged) {
      y = i32Of(f.kvHead);
      z = i32Of(arith::AddIOp::create(b, f.pageBegin, j));
    } else {
      Value clamped = arith::MinUIOp::create(b, j, lastKey);
      Value entry = arith::AddIOp::create(
          b, f.pageBegin, arith::DivUIOp::create(b, clamped, cIndex(b, P)));
      Value page = k.poolPage(b, f, entry);
      Value slotInPage = arith::RemUIOp::create(b, j, cIndex(b, P));
      if (s.access.headMajor) {
        y = i32Of(slotInPage);
        z = i32Of(arith::AddIOp::create(
            b, arith::MulIOp::create(b, page, cIndex(b, s.numKvHeads)),
            f.kvHead));
      } else {
        y = i32Of(f.kvHead);
        z = i32Of(arith::AddIOp::create(
            b, arith::MulIOp::create(b, page, cIndex(b, P)), slotInPage));
      }
    }
    for (int64_t box = 0; box * image.boxColumns() < D; ++box) {
      int64_t offset = image.offset(r * boxRows, box * image.boxColumns());
      Value dst = sharedAddress(
          b, arith::AddIOp::create(b, dstTile, cIndex(b, offset)));
      Value column = arith::ConstantOp::create(
          b, b.getI32IntegerAttr(
                 static_cast<int32_t>(box * image.boxColumns())));
      parts::copyTensorBox(b, dst, map, ValueRange{column, y, z}, full);
    }
  }
}

} // namespace flashir::conversion::hopper
