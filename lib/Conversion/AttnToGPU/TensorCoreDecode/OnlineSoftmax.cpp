//===- OnlineSoftmax.cpp - the tensor-core decode's state update ----------===//
//
// The online softmax of a row half over a key tile, in the base-2 domain:
// the row's maximum (over its 4 lanes: m is uniform across them, l is each
// lane's partial sum until the epilogue), the rescale of l and O, and the
// tile's probabilities as P.V's A operands. Sigmoid: p = sigmoid(s) =
// 1 / (1 + 2^-x), no maximum and no rescale (m stays 0, corr = 1): its
// states merge by plain sums; masked keys (x = -inf) weigh 0.
//
//===----------------------------------------------------------------------===//

#include "TensorCoreDecodeBuilder.h"

using namespace mlir;

namespace flashir::conversion::kernels {

void TensorCoreDecodeBuilder::updateRowHalf(LocBuilder &b, int64_t r,
                                            const RowLogits &logits,
                                            ValueRange carried,
                                            MutableArrayRef<Value> next,
                                            Value &corr, Pair &pOperand) {
  Value m = carried[r], l = carried[R + r], mNew = m, mSafe;
  if (hooks.sigmoid()) {
    corr = cF32(b, 1.0f);
  } else {
    Value tileMax = logits.max;
    for (int32_t off : {1, 2})
      tileMax = arith::MaxNumFOp::create(b, tileMax,
                                         kernel.shuffleXor(b, tileMax, off));
    mNew = arith::MaxNumFOp::create(b, m, tileMax);
    // exp2(-inf - mSafe) = 0 without a NaN when every score is -inf.
    Value noMax = isNegInf(b, mNew);
    mSafe = arith::SelectOp::create(b, noMax, cF32(b, 0.0f), mNew);
    corr = math::Exp2Op::create(b, arith::SubFOp::create(b, m, mSafe));
    l = arith::MulFOp::create(b, l, corr);
  }
  for (int64_t h = 0; h < 2; ++h) {
    Value p[2];
    for (int64_t e = 0; e < 2; ++e) {
      Value x = logits.x[h][e];
      p[e] = hooks.sigmoid() ? kernel.sigmoidBase2(b, x)
                             : Value(math::Exp2Op::create(
                                   b, arith::SubFOp::create(b, x, mSafe)));
      l = arith::AddFOp::create(b, l, p[e]);
    }
    Value pair = vector::FromElementsOp::create(b, VectorType::get({2}, f32),
                                                ValueRange{p[0], p[1]});
    pOperand[h] = operand(b, arith::TruncFOp::create(b, pairType, pair));
  }
  next[r] = mNew;
  next[R + r] = l;
}

} // namespace flashir::conversion::kernels
