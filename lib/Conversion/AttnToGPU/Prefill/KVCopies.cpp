//===- KVCopies.cpp - the prefill kernel's K/V copy ring ------------------===//
//
// K/V tiles of KV keys are staged CTA-wide by 16-byte cp.async into a ring
// of S slots of rows padded to Dp + 8 elements; keys past the end copy the
// last key (masked), or read nothing on the per-page path. Three ways in:
//  - raw addresses (sm_80+, pools with contiguous pages): each thread keeps
//    one 16-byte column of its keys, so its global base and shared offset
//    are loop invariant; page ids come by warp shuffle where at most 32
//    pages lie under a tile, and where a copy pass never straddles a page a
//    page costs one shuffle and one wide multiply (RawTileCopies);
//  - memref-indexed cp.async (other pool strides, e.g. HND);
//  - sm_75: plain 16-byte loads and stores into one slot.
// The key hook then rewrites a landed K tile in place.
//
//===----------------------------------------------------------------------===//

#include "PrefillBuilder.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

using namespace mlir;

namespace flashir::conversion::prefill {

void PrefillBuilder::forEachPiece(
    LocBuilder &b, int64_t total,
    function_ref<void(LocBuilder &, Value, int64_t)> fn) {
  for (int64_t p0 = 0; p0 < total; p0 += threads) {
    Value piece = arith::AddIOp::create(b, tid, cIndex(b, p0));
    if (p0 + threads <= total) {
      fn(b, piece, p0);
      continue;
    }
    scf::IfOp::create(b,
                      arith::CmpIOp::create(b, arith::CmpIPredicate::ult, piece,
                                            cIndex(b, total)),
                      [&](OpBuilder &iob, Location loc) {
                        LocBuilder ib(loc, iob);
                        fn(ib, piece, p0);
                        scf::YieldOp::create(ib);
                      });
  }
}

void PrefillBuilder::copy16(LocBuilder &b, Value view, ValueRange dst,
                            Value pool, ValueRange src) {
  if (s.turing)
    vector::StoreOp::create(b, k.loadRaw(b, pool, src), view, dst,
                            /*nontemporal=*/false, llvm::MaybeAlign(16));
  else
    nvgpu::DeviceAsyncCopyOp::create(
        b, view, dst, pool, src, b.getIndexAttr(kVec),
        /*srcElements=*/Value(), /*bypassL1=*/b.getUnitAttr());
}

void PrefillBuilder::bindRawCopies(LocBuilder &b) {
  Value key = arith::DivUIOp::create(b, tid, cIndex(b, chunksPerRow));
  Value chunk = arith::RemUIOp::create(b, tid, cIndex(b, chunksPerRow));
  Value col = arith::MulIOp::create(b, chunk, cIndex(b, kVec));
  Value headCol = arith::AddIOp::create(
      b, arith::MulIOp::create(b, f.kvHead, cIndex(b, poolStrides[2])), col);
  Value inRow =
      toI64(b, arith::MulIOp::create(b, headCol, cIndex(b, elementBytes)));
  auto threadBase = [&](Value pool) -> Value {
    return arith::AddIOp::create(
        b, toI64(b, memref::ExtractAlignedPointerAsIndexOp::create(b, pool)),
        inRow);
  };
  kThreadBase = threadBase(f.kPool);
  vThreadBase = threadBase(f.vPool);
  Value keyCol = arith::AddIOp::create(
      b, arith::MulIOp::create(b, key, cIndex(b, rowStride)), col);
  copyDst = toI64(b, arith::MulIOp::create(b, keyCol, cIndex(b, elementBytes)));
}

SmallVector<Value> PrefillBuilder::pagesOf(LocBuilder &b, Value it) {
  if (!warpPages)
    return {};
  Value t0 = toI32(b, tileStart(b, it));
  Value firstSlot = arith::AddIOp::create(
      b, arith::DivUIOp::create(b, t0, cI32(b, P)), lane32);
  Value last = toI32(b, lastKey);
  Value slot = arith::MinUIOp::create(
      b, firstSlot, arith::DivUIOp::create(b, last, cI32(b, P)));
  return {
      k.poolPage32(b, f,
                   arith::IndexCastUIOp::create(
                       b, b.getIndexType(),
                       arith::AddIOp::create(b, toI32(b, f.pageBegin), slot)))};
}

SmallVector<Value> PrefillBuilder::pagesIf(LocBuilder &b, Value it,
                                           ArrayRef<Value> otherwise) {
  return llvm::to_vector(buildIf(
      b, arith::CmpIOp::create(b, arith::CmpIPredicate::slt, it, numTiles),
      [&](LocBuilder &b) { return pagesOf(b, it); },
      [&](LocBuilder &) { return llvm::to_vector(otherwise); }));
}

PrefillBuilder::RawTileCopies::RawTileCopies(PrefillBuilder &pb, LocBuilder &b,
                                             Value it, ArrayRef<Value> pages,
                                             Value valid, bool withK,
                                             bool withV)
    : pb(pb), valid(valid), withK(withK), withV(withV) {
  Value slot = arith::RemUIOp::create(b, it, cIndex(b, pb.S));
  Value t32 = toI32(b, pb.tileStart(b, it));
  Value threadDst = arith::AddIOp::create(b, pb.ringBase, pb.copyDst);
  Value slot64 = toI64(b, slot);
  dst = pb.sharedPtr(
      b,
      arith::AddIOp::create(
          b, threadDst,
          arith::MulIOp::create(
              b, slot64, cI64(b, 2 * pb.KV * pb.rowStride * pb.elementBytes))));
  firstKey = arith::AddIOp::create(
      b, t32,
      toI32(b, arith::DivUIOp::create(b, pb.tid, cIndex(b, pb.chunksPerRow))));
  last32 = toI32(b, pb.lastKey);
  // The per-piece path's page lookups (the per-page path needs neither).
  if (!pb.pagedPasses) {
    pageBegin32 = toI32(b, pb.f.pageBegin);
    firstPage = arith::DivUIOp::create(b, t32, cI32(b, pb.P));
  }
  if (valid && !pb.pagedPasses) {
    Value full = cI32(b, 16);
    size = arith::SelectOp::create(b, valid, full, cI32(b, 0));
  }
  page0 = pb.warpPages ? pages[0] : Value();
  pageBases.assign(pb.P >= pb.KV ? 1 : pb.KV / pb.P, Value());
}

// With pagedPasses, page g of the tile is lane g's id (one shuffle per
// page) and a pass's sources are the page's base for the thread plus a
// constant (an immediate address offset), the base computed by the page's
// first pass. Keys past the end read nothing (src-size 0: zero fill)
// instead of repeating the last key; their addresses still lie in the
// tile's last page (or the request's, for pages past it).
PrefillBuilder::RawTileCopies::Sources
PrefillBuilder::RawTileCopies::pagedSources(LocBuilder &b, int64_t keyOffset) {
  int64_t P = pb.P, rowBytes = pb.poolStrides[1] * pb.elementBytes;
  int64_t pg = P >= pb.KV ? 0 : keyOffset / P;
  Value &pageBase = pageBases[pg];
  if (!pageBase) {
    Value srcLane = cI32(b, pg);
    Value page = gpu::ShuffleOp::create(b, page0, srcLane, cI32(b, 32),
                                        gpu::ShuffleMode::IDX)
                     .getShuffleResult();
    Value pageStart = arith::MulIOp::create(b, page, cI32(b, P));
    Value row = arith::AddIOp::create(
        b, pageStart, arith::RemUIOp::create(b, firstKey, cI32(b, P)));
    Value row64 = arith::ExtUIOp::create(b, b.getI64Type(), row);
    pageBase = arith::MulIOp::create(b, row64, cI64(b, rowBytes));
  }
  Value inRange = arith::CmpIOp::create(
      b, arith::CmpIPredicate::sle,
      arith::AddIOp::create(b, firstKey, cI32(b, keyOffset)), last32);
  if (valid)
    inRange = arith::AndIOp::create(b, inRange, valid);
  Sources src;
  Value full = cI32(b, 16);
  src.bytes = arith::SelectOp::create(b, inRange, full, cI32(b, 0));
  src.kBase = arith::AddIOp::create(b, pb.kThreadBase, pageBase);
  src.vBase = arith::AddIOp::create(b, pb.vThreadBase, pageBase);
  src.offset = cI64(b, (keyOffset - pg * P) * rowBytes);
  return src;
}

// Per piece: the key (clamped to the last), its page id (a shuffle, or a
// page-table load) and row.
PrefillBuilder::RawTileCopies::Sources
PrefillBuilder::RawTileCopies::keySources(LocBuilder &b, int64_t keyOffset) {
  int64_t P = pb.P;
  Value j = arith::MinSIOp::create(
      b, arith::AddIOp::create(b, firstKey, cI32(b, keyOffset)), last32);
  Value pageOfKey = arith::DivUIOp::create(b, j, cI32(b, P));
  Value page;
  if (pb.warpPages) {
    Value srcLane = arith::SubIOp::create(b, pageOfKey, firstPage);
    page = gpu::ShuffleOp::create(b, page0, srcLane, cI32(b, 32),
                                  gpu::ShuffleMode::IDX)
               .getShuffleResult();
  } else {
    page =
        pb.k.poolPage32(b, pb.f,
                        arith::IndexCastUIOp::create(
                            b, b.getIndexType(),
                            arith::AddIOp::create(b, pageBegin32, pageOfKey)));
  }
  Value pageStart = arith::MulIOp::create(b, page, cI32(b, P));
  Value row = arith::AddIOp::create(b, pageStart,
                                    arith::RemUIOp::create(b, j, cI32(b, P)));
  Value row64 = arith::ExtUIOp::create(b, b.getI64Type(), row);
  Sources src;
  src.kBase = pb.kThreadBase;
  src.vBase = pb.vThreadBase;
  src.bytes = size;
  src.offset = arith::MulIOp::create(
      b, row64, cI64(b, pb.poolStrides[1] * pb.elementBytes));
  return src;
}

void PrefillBuilder::RawTileCopies::pass(LocBuilder &b, int64_t pass) {
  auto globalPtr = LLVM::LLVMPointerType::get(pb.ctx, /*global=*/1);
  int64_t p0 = pass * pb.copyThreads, keyOffset = p0 / pb.chunksPerRow;
  // Every lane computes the sources, outside the guard of a partial pass:
  // the shuffle needs all lanes.
  Sources src =
      pb.pagedPasses ? pagedSources(b, keyOffset) : keySources(b, keyOffset);
  auto copies = [&](LocBuilder &b) {
    for (int64_t kind = 0; kind < 2; ++kind) {
      if (!(kind ? withV : withK))
        continue;
      Value address =
          arith::AddIOp::create(b, kind ? src.vBase : src.kBase, src.offset);
      Value from = LLVM::IntToPtrOp::create(b, globalPtr, address);
      int64_t dstOffset =
          (kind * pb.KV + keyOffset) * pb.rowStride * pb.elementBytes;
      Value to = LLVM::GEPOp::create(
          b, dst.getType(), b.getI8Type(), dst,
          ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(dstOffset)});
      NVVM::CpAsyncOp::create(b, to, from, 16u, NVVM::LoadCacheModifierKind::CG,
                              src.bytes);
    }
  };
  if (pb.copyThreads == pb.threads && p0 + pb.threads <= pb.pieces) {
    copies(b);
    return;
  }
  // The pass's pieces: p0 .. p0 + min(copyThreads, pieces - p0) - 1.
  Value piece = arith::AddIOp::create(b, pb.tid, cIndex(b, p0));
  int64_t passEnd = p0 + std::min(pb.copyThreads, pb.pieces - p0);
  scf::IfOp::create(b,
                    arith::CmpIOp::create(b, arith::CmpIPredicate::ult, piece,
                                          cIndex(b, passEnd)),
                    [&](OpBuilder &iob, Location loc) {
                      LocBuilder ib(loc, iob);
                      copies(ib);
                      scf::YieldOp::create(ib);
                    });
}

void PrefillBuilder::issue(LocBuilder &b, Value it, ArrayRef<Value> pages) {
  if (rawCopies) {
    RawTileCopies(*this, b, it, pages, Value()).all(b);
    return;
  }
  // Pieces (key, 16-byte chunk) of K and V, thread t taking t, t + threads,
  // ...; keys past the end copy the last key (valid memory; masked).
  Value slot = arith::RemUIOp::create(b, it, cIndex(b, S));
  Value t0 = tileStart(b, it);
  forEachPiece(b, KV * chunksPerRow, [&](LocBuilder &b, Value piece, int64_t) {
    Value key = arith::DivUIOp::create(b, piece, cIndex(b, chunksPerRow));
    Value chunk = arith::RemUIOp::create(b, piece, cIndex(b, chunksPerRow));
    Value j =
        arith::MinSIOp::create(b, arith::AddIOp::create(b, t0, key), lastKey);
    Value page = k.poolPage(
        b, f,
        arith::AddIOp::create(b, f.pageBegin,
                              arith::DivUIOp::create(b, j, cIndex(b, P))));
    Value inPage = arith::RemUIOp::create(b, j, cIndex(b, P));
    Value col = arith::MulIOp::create(b, chunk, cIndex(b, kVec));
    for (int64_t kind = 0; kind < 2; ++kind)
      copy16(b, ring, {slot, cIndex(b, kind), key, col},
             kind ? f.vPool : f.kPool, {page, inPage, f.kvHead, col});
  });
}

void PrefillBuilder::hookKeyTile(LocBuilder &b, Value slot, Value t0) {
  int64_t half = D / 2;
  int64_t width = half % kVec == 0 ? kVec : kVec / 2;
  int64_t unitsPerRow = half / width, units = KV * unitsPerRow;
  ValueRange params = paramsOf[0];
  Value zero = cIndex(b, 0);
  // Unit u: key u / unitsPerRow, columns col.. and their partners col + D/2..
  // (each the other's x_rot).
  auto hookUnit = [&](LocBuilder &b, Value unit) {
    Value key = arith::DivUIOp::create(b, unit, cIndex(b, unitsPerRow));
    Value inRow = arith::RemUIOp::create(b, unit, cIndex(b, unitsPerRow));
    Value col = arith::MulIOp::create(b, inRow, cIndex(b, width));
    Value partner = arith::AddIOp::create(b, col, cIndex(b, half));
    Value kpos = k.hookKeyPosition(b, f, arith::AddIOp::create(b, t0, key));
    SmallVector<Value> prefix = {slot, zero, key};
    Value x = k.loadColumns(b, ring, prefix, col, width);
    Value xRot = k.loadColumns(b, ring, prefix, partner, width);
    Value y =
        k.applyRowHook(b, /*isKey=*/true, x, xRot, col, kpos, f.kvHead, params);
    Value yRot = k.applyRowHook(b, /*isKey=*/true, xRot, x, partner, kpos,
                                f.kvHead, params);
    for (auto [value, column] : {std::pair(y, col), std::pair(yRot, partner)})
      vector::StoreOp::create(
          b, value, ring, ValueRange{slot, zero, key, column},
          /*nontemporal=*/false, llvm::MaybeAlign(width * elementBytes));
  };
  // A loop rather than unrolled rounds: the hook's temporaries of one unit
  // at a time next to O and Q (the rounds' loads would all be in flight).
  Value end = cIndex(b, units);
  Value step = cIndex(b, threads);
  buildForStep(b, tid, end, step, ValueRange{},
               [&](LocBuilder &b, Value unit, ValueRange) {
                 hookUnit(b, unit);
                 return SmallVector<Value>();
               });
}

} // namespace flashir::conversion::prefill
