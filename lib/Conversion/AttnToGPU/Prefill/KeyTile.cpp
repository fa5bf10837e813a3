//===- KeyTile.cpp - one key tile of the prefill kernel -------------------===//
//
// S = Q.K^T takes K's B fragments by ldmatrix.x4 (two n-tiles of 8 keys per
// instruction), P.V takes V's by ldmatrix.x4.trans; the S accumulators are
// P's A fragments, so probabilities never leave their lanes. Between the
// two: the logits hook per score and the mask, only on tiles that need it
// (every key below the request's end needs none without a mask hook, nor
// with exactly `kpos <= qpos` where every key precedes the CTA's first
// query position).
//
//===----------------------------------------------------------------------===//

#include "PrefillBuilder.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

using namespace mlir;

namespace flashir::conversion::prefill {

Value PrefillBuilder::sharedPtr(LocBuilder &b, Value address) {
  return LLVM::IntToPtrOp::create(
      b, LLVM::LLVMPointerType::get(ctx, /*shared=*/3), address);
}

// A GEP, so the offset folds into the instruction.
PrefillBuilder::Fragment PrefillBuilder::ldmatrix(LocBuilder &b, Value base,
                                                  int64_t offset,
                                                  bool transpose) {
  Value ptr =
      LLVM::GEPOp::create(b, base.getType(), b.getI8Type(), base,
                          ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(offset)});
  return mma.loadMatrixX4(b, ptr, transpose);
}

void PrefillBuilder::bindFragmentPointers(LocBuilder &b) {
  // The lane's ldmatrix rows in a ring slot, in bytes: K (matrices: k half
  // lmLow, n-tile lmHigh) and V (key half lmLow, n-tile lmHigh).
  Value lmRow = arith::RemUIOp::create(b, lane, cIndex(b, 8));
  Value lmMatrix = arith::DivUIOp::create(b, lane, cIndex(b, 8));
  Value lmLow = arith::RemUIOp::create(b, lmMatrix, cIndex(b, 2));
  Value lmHigh = arith::DivUIOp::create(b, lmMatrix, cIndex(b, 2));
  auto laneBytes = [&](LocBuilder &b, Value rowBlock, Value colBlock) {
    Value row = arith::AddIOp::create(
        b, arith::MulIOp::create(b, rowBlock, cIndex(b, 8)), lmRow);
    Value rowElement = arith::MulIOp::create(b, row, cIndex(b, rowStride));
    Value element = arith::AddIOp::create(
        b, rowElement, arith::MulIOp::create(b, colBlock, cIndex(b, 8)));
    return arith::IndexCastOp::create(
        b, b.getI64Type(),
        arith::MulIOp::create(b, element, cIndex(b, elementBytes)));
  };
  kLane = laneBytes(b, lmHigh, lmLow);
  vLane = laneBytes(b, lmLow, lmHigh);
  tileBytes = KV * rowStride * elementBytes;
  qTilePtr = qShared ? sharedPtr(b, qTileBase) : Value();
}

Value PrefillBuilder::slotPtr(LocBuilder &b, Value slot, int64_t kind) {
  Value slot64 = arith::IndexCastOp::create(b, b.getI64Type(), slot);
  Value slotBytes = arith::MulIOp::create(
      b, slot64,
      arith::ConstantOp::create(b, b.getI64IntegerAttr(2 * tileBytes)));
  Value base = arith::AddIOp::create(
      b, arith::AddIOp::create(b, ringBase, slotBytes), kind ? vLane : kLane);
  if (kind)
    base = arith::AddIOp::create(
        b, base, arith::ConstantOp::create(b, b.getI64IntegerAttr(tileBytes)));
  return sharedPtr(b, base);
}

// The ldmatrix.x4's matrices 0, 1 are B0, 2 and 3 B1, shared by the m
// blocks.
void PrefillBuilder::productPairs(LocBuilder &b, ArrayRef<Fragment> a,
                                  Value base, int64_t offset, bool transpose,
                                  function_ref<Value *(int64_t)> acc0,
                                  function_ref<Value *(int64_t)> acc1) {
  Fragment w = ldmatrix(b, base, offset, transpose);
  ArrayRef<Value> b0 = ArrayRef<Value>(w).take_front(2),
                  b1 = ArrayRef<Value>(w).drop_front(2);
  for (int64_t mb = 0; mb < M; ++mb) {
    mma.build(b, a[mb], b0, MutableArrayRef<Value>(acc0(mb), 4));
    mma.build(b, a[mb], b1, MutableArrayRef<Value>(acc1(mb), 4));
  }
}

// `copiesAt(b, c)`, when given, emits copies of a later tile after k-step c
// of Q.K^T. `afterScores(b)`, when given, runs between Q.K^T and the
// softmax (the one-stage schedule's second wait); `pvCopiesAt(b, kk)` after
// k-step kk of P.V.
SmallVector<Value> PrefillBuilder::tileBody(
    LocBuilder &b, Value it, ValueRange carried, StepFn copiesAt,
    function_ref<void(LocBuilder &)> afterScores, StepFn pvCopiesAt) {
  Value slot = arith::RemUIOp::create(b, it, cIndex(b, S));
  Value t0 = tileStart(b, it);
  // A key hook transforms the landed K tile in place, between the barrier
  // that made it visible (every schedule calls tileBody after one; the
  // copies in flight fill other slots, or V) and a second one before the
  // ldmatrix reads. The slot's last readers (tile it - S) passed the
  // first barrier.
  if (hooks.hasKey()) {
    hookKeyTile(b, slot, t0);
    gpu::BarrierOp::create(b);
  }
  Value kPtr = slotPtr(b, slot, 0), vPtr = slotPtr(b, slot, 1);
  SmallVector<Fragment> score = scores(b, kPtr, copiesAt);
  if (afterScores)
    afterScores(b);
  SmallVector<SmallVector<Value>> x = logits(b, t0, score);
  mask(b, it, t0, x);
  SmallVector<Value> state = rescaledState(b, x, carried);
  SmallVector<Value> m(state.begin(), state.begin() + R),
      l(state.begin() + R, state.begin() + 2 * R);
  SmallVector<Fragment> pFrag = weights(b, x, m, l);
  // O = O * corr + P.V.
  SmallVector<Value> next(m);
  next.append(l);
  SmallVector<Fragment> o(M * oTiles);
  for (int64_t i = 0; i < M * cLayout.elements() * oTiles; ++i)
    o[i / cLayout.elements()][i % cLayout.elements()] = state[2 * R + i];
  addProducts(b, vPtr, pFrag, o, pvCopiesAt);
  for (auto &acc : o)
    next.append(acc.begin(), acc.end());
  return next;
}

// n-tiles of 8 keys; ldmatrix.x4 gives the B fragments of two n-tiles
// (matrices: k half lmLow, n-tile lmHigh).
SmallVector<PrefillBuilder::Fragment>
PrefillBuilder::scores(LocBuilder &b, Value kPtr, StepFn copiesAt) {
  SmallVector<Fragment> score(M * sTiles);
  for (auto &acc : score)
    acc = {zeroF, zeroF, zeroF, zeroF};
  for (int64_t c = 0; c < kSteps; ++c) {
    SmallVector<Fragment> a = qFragments(b, c);
    for (int64_t nt = 0; nt < sTiles; nt += 2) {
      productPairs(
          b, a, kPtr,
          (mma.atom.n * nt * rowStride + mma.atom.k * c) * elementBytes,
          /*transpose=*/false,
          [&](int64_t mb) { return score[mb * sTiles + nt].data(); },
          [&](int64_t mb) { return score[mb * sTiles + nt + 1].data(); });
    }
    if (copiesAt)
      copiesAt(b, c);
  }
  return score;
}

Value PrefillBuilder::keyOf(LocBuilder &b, Value t0, int64_t nt, int64_t e) {
  return arith::AddIOp::create(
      b, t0, arith::AddIOp::create(b, laneCol, cIndex(b, mma.atom.n * nt + e)));
}

SmallVector<SmallVector<Value>>
PrefillBuilder::logits(LocBuilder &b, Value t0, ArrayRef<Fragment> score) {
  SmallVector<SmallVector<Value>> x(R);
  for (int64_t ri = 0; ri < R; ++ri)
    for (int64_t nt = 0; nt < sTiles; ++nt)
      for (int64_t e = 0; e < laneCols; ++e) {
        Value raw =
            score[(ri / H) * sTiles + nt][cLayout.elementAt(halves[ri % H], e)];
        if (rawScores) {
          x[ri].push_back(raw);
          continue;
        }
        Value j = keyOf(b, t0, nt, e);
        // Hooks see natural-domain logits.
        Value natural = arith::MulFOp::create(b, raw, cF32(b, s.scale));
        Value hookKpos = k.hookKeyPosition(b, f, j);
        Value v = hooks.logits(b, natural, hookQpos[ri], hookKpos, headOf[ri],
                               paramsOf[ri]);
        x[ri].push_back(arith::MulFOp::create(b, v, cF32(b, kernels::kLog2E)));
      }
  return x;
}

Value PrefillBuilder::inChunk(LocBuilder &b, Value cond,
                              arith::CmpIPredicate pred, Value key) {
  if (!alignedChunks)
    return cond;
  Value started = arith::CmpIOp::create(b, pred, key, f.kBegin);
  return arith::AndIOp::create(b, cond, started);
}

Value PrefillBuilder::keyExists(LocBuilder &b, Value key) {
  Value keep = arith::CmpIOp::create(b, arith::CmpIPredicate::slt, key, f.kEnd);
  return inChunk(b, keep, arith::CmpIPredicate::sge, key);
}

// Keys past kEnd (and, for aligned split chunks, before kBegin) and those
// `rowVisibility` hides.
SmallVector<Value> PrefillBuilder::maskedScores(
    LocBuilder &b, Value t0, ArrayRef<SmallVector<Value>> x,
    function_ref<KeyVisibility(LocBuilder &, int64_t)> rowVisibility) {
  SmallVector<Value> flat;
  for (int64_t ri = 0; ri < R; ++ri) {
    KeyVisibility visibleKey = rowVisibility(b, ri);
    for (int64_t nt = 0; nt < sTiles; ++nt)
      for (int64_t e = 0; e < laneCols; ++e) {
        Value j = keyOf(b, t0, nt, e);
        Value keep = keyExists(b, j);
        if (visibleKey) {
          Value visible = visibleKey(b, j, nt, e);
          keep = arith::AndIOp::create(b, keep, visible);
        }
        flat.push_back(arith::SelectOp::create(
            b, keep, x[ri][laneCols * nt + e], negInf(b)));
      }
  }
  return flat;
}

PrefillBuilder::KeyVisibility PrefillBuilder::hookVisibility(LocBuilder &,
                                                             int64_t ri) {
  if (!hasMask)
    return nullptr;
  return [this, ri](LocBuilder &b, Value j, int64_t, int64_t) {
    Value hookKpos = k.hookKeyPosition(b, f, j);
    return hooks.mask(b, hookQpos[ri], hookKpos, headOf[ri], paramsOf[ri]);
  };
}

void PrefillBuilder::mask(LocBuilder &b, Value it, Value t0,
                          SmallVector<SmallVector<Value>> &x) {
  SmallVector<Value> flat;
  auto byHook = [&](LocBuilder &b, int64_t ri) {
    return hookVisibility(b, ri);
  };
  auto unmasked = [&](LocBuilder &) {
    SmallVector<Value> all;
    for (auto &row : x)
      all.append(row.begin(), row.end());
    return all;
  };
  if (packedMask) {
    // Tiles of existing keys that are all visible need no mask.
    Value tEnd = arith::AddIOp::create(b, t0, cIndex(b, KV));
    Value full =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ule, tEnd, f.kEnd);
    full = inChunk(b, full, arith::CmpIPredicate::uge, t0);
    full =
        arith::AndIOp::create(b, full, tileClass(b, it, /*allVisible=*/true));
    flat = llvm::to_vector(buildIf(b, full, unmasked, [&](LocBuilder &b) {
      Value laneKey = arith::AddIOp::create(b, t0, laneCol);
      SmallVector<KeyVisibility> rows = packedVisibility(b, laneKey);
      return maskedScores(b, t0, x,
                          [&](LocBuilder &, int64_t ri) { return rows[ri]; });
    }));
  } else if (hasMask && !causalOnly) {
    flat = maskedScores(b, t0, x, byHook);
  } else {
    // Tiles that need no mask: every key is < kEnd and, where the mask is
    // exactly causal, <= the CTA's first query position (signed: rows with
    // fewer keys before them than rows have negative positions).
    Value tEnd = arith::AddIOp::create(b, t0, cIndex(b, KV));
    Value full =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ule, tEnd, f.kEnd);
    full = inChunk(b, full, arith::CmpIPredicate::uge, t0);
    if (causalOnly) {
      Value tEndPos =
          f.keyOffset ? arith::AddIOp::create(b, tEnd, f.keyOffset) : tEnd;
      full = arith::AndIOp::create(
          b, full,
          arith::CmpIOp::create(b, arith::CmpIPredicate::sle, tEndPos,
                                arith::AddIOp::create(b, firstQpos, c1)));
    }
    flat = llvm::to_vector(buildIf(b, full, unmasked, [&](LocBuilder &b) {
      return maskedScores(b, t0, x, byHook);
    }));
  }
  for (int64_t ri = 0; ri < R; ++ri)
    for (int64_t i = 0; i < laneCols * sTiles; ++i)
      x[ri][i] = flat[ri * laneCols * sTiles + i];
}

// ldmatrix.trans gives the B fragments of two n-tiles of 8 head dims
// (matrices: key half lmLow, n-tile lmHigh).
void PrefillBuilder::addProducts(LocBuilder &b, Value vPtr,
                                 ArrayRef<Fragment> pFrag,
                                 MutableArrayRef<Fragment> o,
                                 StepFn pvCopiesAt) {
  for (int64_t kk = 0; kk < sTiles / nPerK; ++kk) {
    SmallVector<Fragment> a;
    for (int64_t mb = 0; mb < M; ++mb)
      a.push_back(pFrag[mb * (sTiles / nPerK) + kk]);
    for (int64_t nd = 0; nd < oTiles; nd += 2) {
      int64_t at = mma.atom.k * kk * rowStride + mma.atom.n * nd;
      productPairs(
          b, a, vPtr, at * elementBytes,
          /*transpose=*/true,
          [&](int64_t mb) { return o[mb * oTiles + nd].data(); },
          [&](int64_t mb) { return o[mb * oTiles + nd + 1].data(); });
    }
    if (pvCopiesAt)
      pvCopiesAt(b, kk);
  }
}

} // namespace flashir::conversion::prefill
