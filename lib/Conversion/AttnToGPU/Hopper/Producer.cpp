//===- Producer.cpp - the wgmma prefill kernel's producer warpgroup -------===//
//
// The producer's first warp walks the ring: before refilling a slot it
// waits for the slot's empty barrier (MBarrierRing's producer parity: the
// first pass does not block), one elected lane arrives on the full barrier
// expecting the tile's bytes, and the lanes issue the tile's tensor copies,
// one box each, K first so Q.K^T can start while V is in flight. A tile is
// boxes of 64 columns (128 bytes, the swizzle span) by boxRows keys at
// abi::kvTensorMap's coordinates: (column, KV head, pool row) for NHD pools
// and ragged rows, (column, slot, page * Hkv + head) for HND ones; with a
// grouped ring (KernelShape::groupedRing) one box per boxRows keys brings
// their 8-key groups over every column box into the group-major image.
// Each lane loads the page id of its box one tile ahead, so the copies
// never wait for the page table. Boxes of keys past the request's end read its
// last page (the consumers mask those keys and zero their V rows); the
// copy engine zero-fills what lies past the pool.
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
    Value elected = NVVM::ElectSyncOp::create(b, b.getI1Type(), Value());
    walkRing(
        b, [&](LocBuilder &b, Value it) { return boxRow(b, it); },
        [&](LocBuilder &b, Operand operand, Value it, Value slot, Value row) {
          scf::IfOp::create(b, elected, [&](OpBuilder &eb, Location loc) {
            LocBuilder b(loc, eb);
            parts::mbarrierExpectTx(b, barrier(b, operand, true, slot),
                                    tileBytes);
            scf::YieldOp::create(b);
          });
          // The expected bytes are on the barrier before any box lands.
          NVVM::SyncWarpOp::create(
              b, arith::ConstantOp::create(b, b.getI32IntegerAttr(-1)));
          copyBox(b, operand, it, slot, row);
        });
    scf::YieldOp::create(b);
  });
}

void HopperPrefillBuilder::walkRing(LocBuilder &b, AheadFn ahead, FillFn fill) {
  Value any = arith::CmpIOp::create(b, arith::CmpIPredicate::ugt, numTiles, c0);
  Value first = buildIf(
      b, any,
      [&](LocBuilder &b) -> SmallVector<Value> { return {ahead(b, c0)}; },
      [&](LocBuilder &b) -> SmallVector<Value> {
        return {arith::ConstantOp::create(b, b.getI32IntegerAttr(0))};
      })[0];
  buildFor(
      b, c0, numTiles, ValueRange{first},
      [&](LocBuilder &b, Value it, ValueRange fetched) -> SmallVector<Value> {
        // The next tile's value loads while this tile's slots are awaited.
        Value next = arith::AddIOp::create(b, it, c1);
        Value more =
            arith::CmpIOp::create(b, arith::CmpIPredicate::ult, next, numTiles);
        Value ahead1 = buildIf(
            b, more,
            [&](LocBuilder &b) -> SmallVector<Value> {
              return {ahead(b, next)};
            },
            [&](LocBuilder &) -> SmallVector<Value> {
              return {fetched[0]};
            })[0];
        Value slot, parity;
        std::tie(slot, parity) = slotAndParity(b, it);
        Value one = arith::ConstantOp::create(b, b.getI32IntegerAttr(1));
        Value emptyParity = arith::XOrIOp::create(b, parity, one);
        // K first, so Q.K^T can start while V is in flight.
        for (Operand operand : {Operand::K, Operand::V}) {
          parts::mbarrierWait(b, barrier(b, operand, false, slot), emptyParity);
          fill(b, operand, it, slot, fetched[0]);
        }
        return {ahead1};
      });
}

Value HopperPrefillBuilder::boxRow(LocBuilder &b, Value it) {
  // Lane l copies box l: row group l / columnBoxes of the tile. Lanes past
  // the boxes load nothing.
  int64_t columnBoxes = boxesPerRowGroup();
  Value laneGroup = arith::DivUIOp::create(b, lane, cIndex(b, columnBoxes));
  Value lastGroup = cIndex(b, rowBoxes - 1);
  Value group = arith::MinUIOp::create(b, laneGroup, lastGroup);
  Value t0 = tileStart(b, it);
  Value j = arith::AddIOp::create(
      b, t0, arith::MulIOp::create(b, group, cIndex(b, boxRows)));
  auto i32Of = [&](Value index) -> Value {
    return arith::IndexCastOp::create(b, b.getI32Type(), index);
  };
  if (s.access.ragged)
    return i32Of(arith::AddIOp::create(b, f.pageBegin, j));
  // The pool row (NHD) or page (HND) of key j's page; keys past the end
  // read the last page.
  Value lastKey = arith::SubIOp::create(b, f.kEnd, c1);
  Value clamped = arith::MinUIOp::create(b, j, lastKey);
  Value entry = arith::AddIOp::create(
      b, f.pageBegin, arith::DivUIOp::create(b, clamped, cIndex(b, P)));
  Value page = k.poolPage(b, f, entry);
  if (s.access.headMajor)
    return i32Of(page);
  Value slotInPage = arith::RemUIOp::create(b, j, cIndex(b, P));
  return i32Of(arith::AddIOp::create(
      b, arith::MulIOp::create(b, page, cIndex(b, P)), slotInPage));
}

void HopperPrefillBuilder::copyBox(LocBuilder &b, Operand operand, Value it,
                                   Value slot, Value row) {
  int64_t columnBoxes = boxesPerRowGroup();
  Value active = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, lane,
                                       cIndex(b, rowBoxes * columnBoxes));
  scf::IfOp::create(b, active, [&](OpBuilder &ib, Location loc) {
    LocBuilder b(loc, ib);
    auto i32Of = [&](Value index) -> Value {
      return arith::IndexCastOp::create(b, b.getI32Type(), index);
    };
    Value group = arith::DivUIOp::create(b, lane, cIndex(b, columnBoxes));
    // A grouped box spans every column box (columnBoxes 1: column 0).
    Value column = arith::RemUIOp::create(b, lane, cIndex(b, columnBoxes));
    // SwizzledTile's offset of (group * boxRows, 64 * column).
    Value columnStart =
        arith::MulIOp::create(b, column, cIndex(b, ringImage.boxStride()));
    Value rowStart = arith::MulIOp::create(
        b, group, cIndex(b, boxRows / 8 * ringImage.groupStride()));
    Value offset = arith::AddIOp::create(b, columnStart, rowStart);
    Value dst = sharedAddress(
        b, arith::AddIOp::create(b, tileOffset(b, operand, slot), offset));
    Value map = operand == Operand::K ? kMap : vMap;
    Value barrierAt = barrier(b, operand, true, slot);
    if (s.groupedRing) {
      parts::copyTensorBox(b, dst, map, groupedBoxStart(b, it, group, row),
                           barrierAt);
      scf::YieldOp::create(b);
      return;
    }
    Value x = i32Of(arith::MulIOp::create(b, column, cIndex(b, 64)));
    Value y, z;
    if (s.access.headMajor) {
      // HND: (column, slot, page * Hkv + head).
      y = i32Of(boxSlot(b, it, group));
      Value heads = arith::ConstantOp::create(
          b, b.getI32IntegerAttr(static_cast<int32_t>(s.numKvHeads)));
      Value pageHeads = arith::MulIOp::create(b, row, heads);
      z = arith::AddIOp::create(b, pageHeads, i32Of(f.kvHead));
    } else {
      y = i32Of(f.kvHead);
      z = row;
    }
    parts::copyTensorBox(b, dst, map, ValueRange{x, y, z}, barrierAt);
    scf::YieldOp::create(b);
  });
}

Value HopperPrefillBuilder::boxSlot(LocBuilder &b, Value it, Value group) {
  // Slot j % P of the box's first key j.
  Value t0 = tileStart(b, it);
  Value j = arith::AddIOp::create(
      b, t0, arith::MulIOp::create(b, group, cIndex(b, boxRows)));
  return arith::RemUIOp::create(b, j, cIndex(b, P));
}

SmallVector<Value> HopperPrefillBuilder::groupedBoxStart(LocBuilder &b,
                                                         Value it, Value group,
                                                         Value row) {
  // abi::kvTensorMap's grouped coordinates of the box's first key: NHD
  // (0, 0, 0, KV head, pool row / 8), HND (0, 0, 0, slot / 8, page * Hkv +
  // head).
  auto i32 = [&](int64_t v) -> Value {
    return arith::ConstantOp::create(b, b.getI32IntegerAttr(int32_t(v)));
  };
  auto i32Of = [&](Value index) -> Value {
    return arith::IndexCastOp::create(b, b.getI32Type(), index);
  };
  Value zero = i32(0);
  if (!s.access.headMajor)
    return {zero, zero, zero, i32Of(f.kvHead),
            arith::DivUIOp::create(b, row, i32(8))};
  Value slot = boxSlot(b, it, group);
  Value slotGroup = arith::DivUIOp::create(b, slot, cIndex(b, 8));
  Value pageHeads = arith::MulIOp::create(b, row, i32(s.numKvHeads));
  return {zero, zero, zero, i32Of(slotGroup),
          arith::AddIOp::create(b, pageHeads, i32Of(f.kvHead))};
}

} // namespace flashir::conversion::hopper
