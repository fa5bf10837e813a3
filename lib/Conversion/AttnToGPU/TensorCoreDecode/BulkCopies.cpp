//===- BulkCopies.cpp - the tensor-core decode's sm_90a copies ------------===//
//
// Bulk copies (sm_90): one `cp.async.bulk` of a whole K or V row per lane
// (lanes 0-15: K rows, 16-31: V rows of the tile's 16 keys), or lane 0's
// tensor copies of whole tiles of one page through the host's tensor maps,
// completing on the stage's mbarrier (one per warp and stage, after the
// buffer). Before the copy engine (async proxy) refills a slot, the warp
// synchronises and fences the generic proxy's reads of its previous tile.
//
//===----------------------------------------------------------------------===//

#include "TensorCoreDecodeBuilder.h"

#include "../Parts/AsyncProxy.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

using namespace mlir;

namespace flashir::conversion::kernels {

namespace {
using parts::fenceAsyncShared;
using parts::pointerTo;
using parts::sharedClusterPointer;
constexpr unsigned kGlobal = parts::kGlobalSpace, kShared = parts::kSharedSpace;

Value i64Of(LocBuilder &b, Value index) {
  return arith::IndexCastOp::create(b, b.getI64Type(), index);
}
} // namespace

void TensorCoreDecodeBuilder::bindBarriers(LocBuilder &b) {
  sharedBase =
      i64Of(b, memref::ExtractAlignedPointerAsIndexOp::create(b, f.buf));
  auto poolBase = [&](Value pool) -> Value {
    auto meta = memref::ExtractStridedMetadataOp::create(b, pool);
    Value aligned = memref::ExtractAlignedPointerAsIndexOp::create(b, pool);
    return i64Of(b, arith::AddIOp::create(
                        b, aligned,
                        arith::MulIOp::create(b, meta.getOffset(),
                                              cIndex(b, elementBytes))));
  };
  // Row copies address the pools directly (tensor copies go through the
  // tensor maps).
  if (!tensor) {
    kBase = poolBase(f.kPool);
    vBase = poolBase(f.vPool);
  }
  laneIsZero = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, lane, c0);
  // Lane 0 of each warp initialises the warp's barriers (one arrival: its
  // own expect-tx); the fence makes them visible to the copy engine.
  scf::IfOp::create(b, laneIsZero, [&](OpBuilder &iob, Location loc) {
    LocBuilder b(loc, iob);
    for (int64_t st = 0; st < S; ++st) {
      Value barrier = barrierOf(b, cIndex(b, st));
      NVVM::MBarrierInitOp::create(
          b, barrier, arith::ConstantOp::create(b, b.getI32IntegerAttr(1)),
          Value());
    }
    scf::YieldOp::create(b);
  });
  fenceAsyncShared(b);
  NVVM::SyncWarpOp::create(b, fullMask);
}

Value TensorCoreDecodeBuilder::barrierOf(LocBuilder &b, Value slot) {
  Value base = cIndex(b, barrierOffset);
  Value index = arith::AddIOp::create(
      b, arith::MulIOp::create(b, warp, cIndex(b, S)), slot);
  Value offset = arith::AddIOp::create(
      b, base, arith::MulIOp::create(b, index, cIndex(b, 8)));
  return pointerTo(b, arith::AddIOp::create(b, sharedBase, i64Of(b, offset)),
                   kShared);
}

Value TensorCoreDecodeBuilder::claimSlot(LocBuilder &b, Value seq) {
  NVVM::SyncWarpOp::create(b, fullMask);
  fenceAsyncShared(b);
  return arith::RemUIOp::create(b, seq, cIndex(b, S));
}

void TensorCoreDecodeBuilder::expectTile(LocBuilder &b, Value barrier) {
  NVVM::MBarrierArriveExpectTxOp::create(
      b, Type(), barrier,
      arith::ConstantOp::create(
          b, b.getI32IntegerAttr(static_cast<int32_t>(tileBytes))),
      NVVM::MemScopeKindAttr::get(ctx, NVVM::MemScopeKind::CTA),
      b.getBoolAttr(false), Value());
}

void TensorCoreDecodeBuilder::issueBulkRows(LocBuilder &b, Value it, Value seq,
                                            Value pageId) {
  Value slot = claimSlot(b, seq);
  Value barrier = barrierOf(b, slot);
  scf::IfOp::create(b, laneIsZero, [&](OpBuilder &iob, Location loc) {
    LocBuilder b(loc, iob);
    expectTile(b, barrier);
    scf::YieldOp::create(b);
  });
  Value key = arith::RemUIOp::create(b, lane, cIndex(b, kTileKeys));
  Value isV = arith::CmpIOp::create(b, arith::CmpIPredicate::uge, lane,
                                    cIndex(b, kTileKeys));
  Value j = clampKey(b, arith::AddIOp::create(b, tileStart(b, it), key));
  Value page = arith::IndexCastOp::create(b, b.getIndexType(), pageId);
  Value row = poolRow(b, page, j);
  Value pool = arith::SelectOp::create(b, isV, vBase, kBase);
  Value src = arith::AddIOp::create(
      b, pool,
      i64Of(b, arith::MulIOp::create(b, row, cIndex(b, D * elementBytes))));
  // Element offset of [warp][slot][K or V][key][0] in the stage view.
  Value warpSlot = arith::AddIOp::create(
      b, arith::MulIOp::create(b, warp, cIndex(b, S)), slot);
  Value slotBase = arith::MulIOp::create(b, warpSlot, cIndex(b, 2));
  Value kvIndex = arith::AddIOp::create(
      b, slotBase, arith::DivUIOp::create(b, lane, cIndex(b, kTileKeys)));
  Value keyRow = arith::AddIOp::create(
      b, arith::MulIOp::create(b, kvIndex, cIndex(b, kTileKeys)), key);
  Value dstElements = arith::MulIOp::create(b, keyRow, cIndex(b, rowStride));
  Value dst = arith::AddIOp::create(
      b, sharedBase,
      i64Of(b, arith::MulIOp::create(b, dstElements, cIndex(b, elementBytes))));
  Value dstCluster = sharedClusterPointer(b, dst);
  Value srcPointer = pointerTo(b, src, kGlobal);
  NVVM::CpAsyncBulkGlobalToSharedClusterOp::create(
      b, dstCluster, srcPointer, barrier,
      arith::ConstantOp::create(
          b, b.getI32IntegerAttr(static_cast<int32_t>(D * elementBytes))),
      Value(), Value());
}

Value TensorCoreDecodeBuilder::poolRow(LocBuilder &b, Value page, Value j) {
  if (s.access.headMajor) {
    // HND: the head's rows of the page follow one another.
    Value slotInPage = arith::RemUIOp::create(b, j, cIndex(b, s.pageSize));
    Value headRow = arith::MulIOp::create(b, f.kvHead,
                                          cIndex(b, s.access.strides()[2] / D));
    Value pageRow =
        arith::MulIOp::create(b, page, cIndex(b, s.access.strides()[0] / D));
    return arith::AddIOp::create(b, arith::AddIOp::create(b, pageRow, headRow),
                                 slotInPage);
  }
  Value pageStart = arith::MulIOp::create(b, page, cIndex(b, s.pageSize));
  Value token = arith::AddIOp::create(
      b, pageStart, arith::RemUIOp::create(b, j, cIndex(b, s.pageSize)));
  return arith::AddIOp::create(
      b, arith::MulIOp::create(b, token, cIndex(b, s.numKvHeads)), f.kvHead);
}

void TensorCoreDecodeBuilder::bindTensorMaps(LocBuilder &b) {
  // The generic addresses of the K and V maps (written by the host before
  // the launch, so no tensor-map proxy fence is needed).
  Value maps =
      i64Of(b, memref::ExtractAlignedPointerAsIndexOp::create(b, f.kvMaps));
  kMap = pointerTo(b, maps, 0);
  vMap = pointerTo(
      b,
      arith::AddIOp::create(
          b, maps, arith::ConstantOp::create(b, b.getI64IntegerAttr(128))),
      0);
}

void TensorCoreDecodeBuilder::issueTensorBoxes(LocBuilder &b, Value it,
                                               Value seq, Value pageId) {
  // Lane 0 copies the boxes of 16 rows x boxColumns elements of K and V, at
  // abi::kvTensorMap's coordinates (column, head, token) in NHD pools and
  // (column, slot, page * Hkv + head) in HND ones.
  Value slot = claimSlot(b, seq);
  Value barrier = barrierOf(b, slot);
  Value t0 = tileStart(b, it);
  scf::IfOp::create(b, laneIsZero, [&](OpBuilder &iob, Location loc) {
    LocBuilder b(loc, iob);
    expectTile(b, barrier);
    auto i32Of = [&](Value index) -> Value {
      return arith::IndexCastOp::create(b, i32, index);
    };
    Value page = arith::IndexCastOp::create(b, b.getIndexType(), pageId);
    Value slotInPage = arith::RemUIOp::create(b, t0, cIndex(b, s.pageSize));
    Value x, y;
    if (s.access.headMajor) {
      x = i32Of(slotInPage);
      Value pageHeads = arith::MulIOp::create(b, page, cIndex(b, s.numKvHeads));
      y = i32Of(arith::AddIOp::create(b, pageHeads, f.kvHead));
    } else {
      x = i32Of(f.kvHead);
      Value pageStart = arith::MulIOp::create(b, page, cIndex(b, s.pageSize));
      y = i32Of(arith::AddIOp::create(b, pageStart, slotInPage));
    }
    for (int64_t kind = 0; kind < 2; ++kind)
      for (int64_t box = 0; box < boxes; ++box)
        copyBox(b, slot, kind, box, x, y, barrier);
    scf::YieldOp::create(b);
  });
}

void TensorCoreDecodeBuilder::copyBox(LocBuilder &b, Value slot, int64_t kind,
                                      int64_t box, Value x, Value y,
                                      Value barrier) {
  // Byte offset of [warp][slot][kind][box][0][0] in the ring.
  Value warpSlot = arith::AddIOp::create(
      b, arith::MulIOp::create(b, warp, cIndex(b, S)), slot);
  Value slotBase = arith::MulIOp::create(b, warpSlot, cIndex(b, 2 * boxes));
  Value boxIndex =
      arith::AddIOp::create(b, slotBase, cIndex(b, kind * boxes + box));
  Value ringBase = arith::AddIOp::create(b, sharedBase, i64Of(b, ringShift));
  Value boxAddress = arith::AddIOp::create(
      b, ringBase,
      i64Of(b, arith::MulIOp::create(
                   b, boxIndex,
                   cIndex(b, kTileKeys * boxColumns * elementBytes))));
  Value dst = sharedClusterPointer(b, boxAddress);
  NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(
      b, dst, kind == 0 ? kMap : vMap,
      ValueRange{
          arith::ConstantOp::create(
              b, b.getI32IntegerAttr(static_cast<int32_t>(box * boxColumns))),
          x, y},
      barrier, ValueRange{}, Value(), Value(), NVVM::TMALoadMode::TILE, false,
      NVVM::CTAGroupKindAttr(), Value());
}

void TensorCoreDecodeBuilder::waitBulk(LocBuilder &b, Value seq) {
  // The slot's barrier completes its (seq / S)-th phase.
  Value slot = arith::RemUIOp::create(b, seq, cIndex(b, S));
  Value phase = arith::DivUIOp::create(b, seq, cIndex(b, S));
  Value parity = arith::IndexCastOp::create(
      b, b.getI32Type(), arith::RemUIOp::create(b, phase, cIndex(b, 2)));
  Value barrier = barrierOf(b, slot);
  NVVM::MBarrierTryWaitParityOp::create(
      b, barrier, parity,
      arith::ConstantOp::create(b, b.getI32IntegerAttr(10000000)));
}

void TensorCoreDecodeBuilder::zeroOutsideRows(LocBuilder &b, Value ring,
                                              Value t0) {
  // Tensor copies load whole tiles: V rows of keys outside [kBegin, kEnd)
  // may hold anything (a last page's unwritten rows: NaN * 0 would poison
  // O), so a tile that has such keys zeroes them after it arrives. Lane l
  // clears 16-byte chunks l / 16 + 2k of row l % 16 (the swizzle only
  // permutes a row's chunks).
  Value startsBefore =
      arith::CmpIOp::create(b, arith::CmpIPredicate::slt, t0, f.kBegin);
  Value t1 = arith::AddIOp::create(b, t0, cIndex(b, kTileKeys));
  Value partial = arith::OrIOp::create(
      b, startsBefore,
      arith::CmpIOp::create(b, arith::CmpIPredicate::sgt, t1, f.kEnd));
  scf::IfOp::create(b, partial, [&](OpBuilder &iob, Location loc) {
    LocBuilder b(loc, iob);
    Value key = arith::RemUIOp::create(b, lane, cIndex(b, kTileKeys));
    Value j = arith::AddIOp::create(b, t0, key);
    Value before =
        arith::CmpIOp::create(b, arith::CmpIPredicate::slt, j, f.kBegin);
    Value outside = arith::OrIOp::create(
        b, before,
        arith::CmpIOp::create(b, arith::CmpIPredicate::sge, j, f.kEnd));
    scf::IfOp::create(b, outside, [&](OpBuilder &zob, Location loc) {
      LocBuilder b(loc, zob);
      Value first = arith::DivUIOp::create(b, lane, cIndex(b, kTileKeys));
      for (int64_t box = 0; box < boxes; ++box)
        for (int64_t k = 0; k < boxColumns / kVec / 2; ++k) {
          Value chunk = arith::AddIOp::create(b, first, cIndex(b, 2 * k));
          vector::StoreOp::create(
              b, zeroPiece, stage,
              ValueRange{warp, ring, cIndex(b, 1), cIndex(b, box), key,
                         arith::MulIOp::create(b, chunk, cIndex(b, kVec))},
              /*nontemporal=*/false, llvm::MaybeAlign(16));
        }
      scf::YieldOp::create(b);
    });
    NVVM::SyncWarpOp::create(b, fullMask);
    scf::YieldOp::create(b);
  });
}

} // namespace flashir::conversion::kernels
