//===- OnlineSoftmax.cpp - the prefill kernel's softmax weights -----------===//
//
// Online softmax of the lane's rows over a tile (base 2), with the running
// maximum kept lazily: a warp rescales O and l only when one of its rows'
// tile maximum exceeds that row's reference by more than kLazyRescale (then
// every row moves to max(reference, tile maximum)). Otherwise
// P = exp2(x - m) <= 2^kLazyRescale: exact in f32 sums and bf16 P, and O / l
// and lse = m + log l use the same m. Once the maxima settle most tiles skip
// the O multiplies. Sigmoid: p = sigmoid(s) needs no maximum (m stays 0) and
// no rescale. A row's maximum and sum span its 4 lanes (shuffles); within a
// lane they are balanced trees, not chains: the softmax is latency-bound.
//
//===----------------------------------------------------------------------===//

#include "PrefillBuilder.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;

namespace flashir::conversion::prefill {

/// A row's maximum or sum as a balanced tree: depth log2(n) instead of a
/// chain of n dependent instructions.
static Value pairwise(LocBuilder &b, ArrayRef<Value> values,
                      function_ref<Value(LocBuilder &, Value, Value)> combine) {
  SmallVector<Value> level(values);
  while (level.size() > 1) {
    SmallVector<Value> up;
    for (size_t i = 0; i + 1 < level.size(); i += 2)
      up.push_back(combine(b, level[i], level[i + 1]));
    if (level.size() % 2)
      up.push_back(level.back());
    level = std::move(up);
  }
  return level.front();
}

SmallVector<Value> PrefillBuilder::rescaledState(LocBuilder &b,
                                                 ArrayRef<SmallVector<Value>> x,
                                                 ValueRange carried) {
  if (hooks.sigmoid())
    return SmallVector<Value>(carried.begin(),
                              carried.begin() + 2 * R +
                                  M * cLayout.elements() * oTiles);
  return lazyRescale(b, x, carried);
}

SmallVector<Value> PrefillBuilder::lazyRescale(LocBuilder &b,
                                               ArrayRef<SmallVector<Value>> x,
                                               ValueRange carried) {
  SmallVector<Value> m(carried.begin(), carried.begin() + R),
      l(carried.begin() + R, carried.begin() + 2 * R), tileMax(R);
  Value grows;
  for (int64_t ri = 0; ri < R; ++ri) {
    Value tm = pairwise(b, x[ri], [&](LocBuilder &b, Value u, Value v) {
      return arith::MaxNumFOp::create(b, u, v).getResult();
    });
    for (int32_t off : {1, 2})
      tm = arith::MaxNumFOp::create(b, tm, k.shuffleXor(b, tm, off));
    if (factor != 1.0f)
      tm = arith::MulFOp::create(b, tm, cF32(b, factor));
    tileMax[ri] = tm;
    Value up = arith::CmpFOp::create(
        b, arith::CmpFPredicate::OGT, tm,
        arith::AddFOp::create(b, m[ri], cF32(b, kernels::kLazyRescale)));
    grows = grows ? arith::OrIOp::create(b, grows, up).getResult() : up;
  }
  Value rescale = NVVM::VoteSyncOp::create(
      b, b.getI1Type(), arith::ConstantOp::create(b, b.getI32IntegerAttr(-1)),
      grows, NVVM::VoteSyncKindAttr::get(ctx, NVVM::VoteSyncKind::any));
  int64_t oValues = M * cLayout.elements() * oTiles;
  return buildIf(
      b, rescale,
      [&](LocBuilder &b) {
        SmallVector<Value> next, corr(R);
        for (int64_t ri = 0; ri < R; ++ri) {
          Value mNew = arith::MaxNumFOp::create(b, m[ri], tileMax[ri]);
          Value noMax = isNegInf(b, mNew);
          Value mSafe = arith::SelectOp::create(b, noMax, cF32(b, 0.0f), mNew);
          corr[ri] =
              kernels::exp2Ftz(b, arith::SubFOp::create(b, m[ri], mSafe));
          next.push_back(mNew);
        }
        for (int64_t ri = 0; ri < R; ++ri)
          next.push_back(arith::MulFOp::create(b, l[ri], corr[ri]));
        // O's accumulator e of m block mb belongs to row half
        // halfOf(offsets[e].row).
        for (int64_t i = 0; i < oValues; ++i) {
          int64_t mb = i / (cLayout.elements() * oTiles),
                  e = i % cLayout.elements();
          int64_t half = halfOf(cLayout.offsets[e].row);
          next.push_back(arith::MulFOp::create(b, carried[2 * R + i],
                                               corr[H * mb + half]));
        }
        return next;
      },
      [&](LocBuilder &) {
        return SmallVector<Value>(carried.begin(),
                                  carried.begin() + 2 * R + oValues);
      });
}

// P as A fragments (FlashAttention-2: the lane's accumulators of nPerK
// n-tiles are the A fragment of one P.V k-step): pFrag[mb * sTiles / nPerK
// + kk] covers n-tiles nPerK kk.. of m block mb.
SmallVector<PrefillBuilder::Fragment>
PrefillBuilder::weights(LocBuilder &b, ArrayRef<SmallVector<Value>> x,
                        ArrayRef<Value> m, MutableArrayRef<Value> l) {
  SmallVector<Value> negM(R);
  if (!hooks.sigmoid())
    for (int64_t ri = 0; ri < R; ++ri) {
      Value noMax = isNegInf(b, m[ri]);
      negM[ri] = arith::NegFOp::create(
          b, arith::SelectOp::create(b, noMax, cF32(b, 0.0f), m[ri]));
    }
  SmallVector<Fragment> pFrag(M * sTiles / nPerK);
  SmallVector<SmallVector<Value>> rowP(R);
  for (int64_t ri = 0; ri < R; ++ri)
    for (int64_t nt = 0; nt < sTiles; ++nt) {
      Value p[2];
      for (int64_t e = 0; e < laneCols; ++e) {
        Value xe = x[ri][laneCols * nt + e];
        if (hooks.sigmoid()) {
          // sigmoid(s) = 1 / (1 + 2^-x); masked keys (-inf) weigh 0.
          if (factor != 1.0f)
            xe = arith::MulFOp::create(b, xe, cF32(b, factor));
          p[e] = k.sigmoidBase2(b, xe);
        } else {
          Value arg =
              factor != 1.0f
                  ? math::FmaOp::create(b, xe, cF32(b, factor), negM[ri])
                        .getResult()
                  : arith::AddFOp::create(b, xe, negM[ri]).getResult();
          p[e] = kernels::exp2Ftz(b, arg);
        }
        rowP[ri].push_back(p[e]);
      }
      Value pair = vector::FromElementsOp::create(b, VectorType::get({2}, f32),
                                                  ValueRange{p[0], p[1]});
      int64_t reg =
          aLayout.registerAt(halves[ri % H], mma.atom.n * (nt % nPerK));
      pFrag[(ri / H) * (sTiles / nPerK) + nt / nPerK][reg] =
          mma.operand(b, arith::TruncFOp::create(b, pairType, pair));
    }
  for (int64_t ri = 0; ri < R; ++ri)
    l[ri] = arith::AddFOp::create(
        b, l[ri], pairwise(b, rowP[ri], [&](LocBuilder &b, Value u, Value v) {
          return arith::AddFOp::create(b, u, v).getResult();
        }));
  return pFrag;
}

} // namespace flashir::conversion::prefill
