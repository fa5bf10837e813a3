//===- KeyTile.cpp - one key tile of the tensor-core decode ---------------===//
//
// A warp's key tile of 16 keys: S = Q.K^T (two n-tiles of 8 keys, one
// m16n8k16 product per 16 columns and m tile), the logits hook and the mask
// per score, the online softmax (OnlineSoftmax.cpp), then O = O * corr + P.V
// with the S accumulators as P's A fragments (FlashAttention-2's layout: the
// probabilities never leave their lane).
//
//===----------------------------------------------------------------------===//

#include "TensorCoreDecodeBuilder.h"

using namespace mlir;

namespace flashir::conversion::kernels {

SmallVector<Value> TensorCoreDecodeBuilder::keyTile(LocBuilder &b, Value it,
                                                    ValueRange carried) {
  Value seq = bulk ? seqOf(b, it) : it;
  Value ring = arith::RemUIOp::create(b, seq, cIndex(b, S));
  Value t0 = tileStart(b, it);
  if (tensor)
    zeroOutsideRows(b, ring, t0);
  SmallVector<RowScores> score = scores(b, ring, t0);
  // Online softmax of each row half's row over the tile, in the base-2
  // domain.
  Value tig2 = arith::MulIOp::create(b, tig, cIndex(b, 2));
  SmallVector<Value> next(stateSize()), corr(R);
  SmallVector<Pair> pOperand(R);
  for (int64_t r = 0; r < R; ++r) {
    RowLogits logits = maskedLogits(b, t0, tig2, r, score[r]);
    updateRowHalf(b, r, logits, carried, next, corr[r], pOperand[r]);
  }
  addValueProducts(b, ring, carried, corr, pOperand, next);
  return next;
}

void TensorCoreDecodeBuilder::mmaRows(LocBuilder &b, Value a0, Value a1,
                                      Value a2, Value a3, Value b0, Value b1,
                                      MutableArrayRef<Value> acc) {
  // Without a second row half those rows are zero on input and ignored on
  // output.
  bool upper = static_cast<bool>(a1);
  Value aRegs[] = {a0, upper ? a1 : zeroOperand, a2, upper ? a3 : zeroOperand};
  Value bRegs[] = {b0, b1};
  Value cRegs[] = {acc[0], acc[1], upper ? acc[2] : zeroF,
                   upper ? acc[3] : zeroF};
  mma.build(b, aRegs, bRegs, cRegs);
  for (int64_t reg = 0; reg < (upper ? 4 : 2); ++reg)
    acc[reg] = cRegs[reg];
}

SmallVector<TensorCoreDecodeBuilder::RowScores>
TensorCoreDecodeBuilder::scores(LocBuilder &b, Value ring, Value t0) {
  // Row half r, keys 8h + 2tig + e (h, e in {0, 1}).
  SmallVector<RowScores> score(R);
  for (int64_t h = 0; h < 2; ++h) {
    SmallVector<Value> acc(4 * M, zeroF);
    SmallVector<Value> hookedK;
    if (hooks.hasKey())
      hookedK = keyHooked(b, ring, t0, h);
    for (int64_t c = 0; c < kPieces; ++c) {
      Value kPiece = hooks.hasKey() ? hookedK[c] : loadK(b, ring, h, c);
      for (int64_t half = 0; half < 2; ++half) {
        // The B fragment is loaded once and feeds every m tile.
        Value b0, b1;
        for (int64_t mt = 0; mt < M; ++mt) {
          ArrayRef<Value> lower = qPiece[2 * mt];
          Value a0 = pairAt(b, lower[c], 4 * half);
          Value a2 = pairAt(b, lower[c], 4 * half + 2);
          Value a1, a3;
          if (2 * mt + 1 < R) {
            a1 = pairAt(b, qPiece[2 * mt + 1][c], 4 * half);
            a3 = pairAt(b, qPiece[2 * mt + 1][c], 4 * half + 2);
          }
          if (!b0) {
            b0 = pairAt(b, kPiece, 4 * half);
            b1 = pairAt(b, kPiece, 4 * half + 2);
          }
          mmaRows(b, a0, a1, a2, a3, b0, b1,
                  MutableArrayRef<Value>(acc).slice(4 * mt, 4));
        }
      }
    }
    for (int64_t r = 0; r < R; ++r)
      for (int64_t e = 0; e < 2; ++e)
        score[r][h][e] = acc[4 * (r / 2) + 2 * (r % 2) + e];
  }
  return score;
}

TensorCoreDecodeBuilder::RowLogits
TensorCoreDecodeBuilder::maskedLogits(LocBuilder &b, Value t0, Value tig2,
                                      int64_t r, const RowScores &score) {
  RowLogits logits;
  logits.max = negInf(b);
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t e = 0; e < 2; ++e) {
      Value j = arith::AddIOp::create(
          b, t0, arith::AddIOp::create(b, tig2, cIndex(b, 8 * h + e)));
      Value hookKpos = kernel.hookKeyPosition(b, f, j);
      Value v;
      if (hooks.hasLogits()) {
        // Hooks see natural-domain logits.
        Value natural = arith::MulFOp::create(b, score[h][e], cF32(b, s.scale));
        Value logit =
            hooks.logits(b, natural, qpos, hookKpos, ownHead[r], ownParams[r]);
        v = arith::MulFOp::create(b, logit, cF32(b, kLog2E));
      } else {
        v = arith::MulFOp::create(b, score[h][e], cF32(b, s.scale * kLog2E));
      }
      Value keep =
          arith::CmpIOp::create(b, arith::CmpIPredicate::slt, j, f.kEnd);
      // Tensor copies' tiles may start before kBegin.
      if (tensor)
        keep = arith::AndIOp::create(
            b, keep,
            arith::CmpIOp::create(b, arith::CmpIPredicate::sge, j, f.kBegin));
      if (Value visible =
              hooks.mask(b, qpos, hookKpos, ownHead[r], ownParams[r]))
        keep = arith::AndIOp::create(b, keep, visible);
      logits.x[h][e] = arith::SelectOp::create(b, keep, v, negInf(b));
      if (!hooks.sigmoid())
        logits.max = arith::MaxNumFOp::create(b, logits.max, logits.x[h][e]);
    }
  return logits;
}

void TensorCoreDecodeBuilder::addValueProducts(LocBuilder &b, Value ring,
                                               ValueRange carried,
                                               ArrayRef<Value> corr,
                                               ArrayRef<Pair> pOperand,
                                               MutableArrayRef<Value> next) {
  // Over the n-tiles (c, e).
  for (int64_t c = 0; c < vPieces; ++c) {
    Value v[4];
    for (int64_t qk = 0; qk < 4; ++qk)
      v[qk] = loadV(b, ring, qk, c);
    for (int64_t e = 0; e < kVec; ++e) {
      int64_t t = c * kVec + e;
      Value b0, b1;
      for (int64_t mt = 0; mt < M; ++mt) {
        bool upper = 2 * mt + 1 < R;
        SmallVector<Value, 4> acc;
        for (int64_t r = 2 * mt; r < 2 * mt + (upper ? 2 : 1); ++r)
          for (int64_t reg = 0; reg < 2; ++reg)
            acc.push_back(
                arith::MulFOp::create(b, carried[oIndex(r, t, reg)], corr[r]));
        acc.resize(4);
        if (!b0) {
          // Keys (lo, hi)'s elements e pair into one B register.
          auto keys = [&](Value lo, Value hi) {
            return operand(b, vector::ShuffleOp::create(
                                  b, lo, hi, ArrayRef<int64_t>{e, kVec + e}));
          };
          b0 = keys(v[0], v[1]);
          b1 = keys(v[2], v[3]);
        }
        Pair lower = pOperand[2 * mt], higher = {};
        if (upper)
          higher = pOperand[2 * mt + 1];
        mmaRows(b, lower[0], higher[0], lower[1], higher[1], b0, b1, acc);
        for (int64_t r = 2 * mt; r < 2 * mt + (upper ? 2 : 1); ++r)
          for (int64_t reg = 0; reg < 2; ++reg)
            next[oIndex(r, t, reg)] = acc[2 * (r - 2 * mt) + reg];
      }
    }
  }
}

} // namespace flashir::conversion::kernels
