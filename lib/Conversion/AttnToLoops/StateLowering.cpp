//===- StateLowering.cpp - attn states, merges and chunks as loops --------===//
//
// The state ops of split attention: empty states, the merge of states (eq. 6
// for softmax, a sum for sigmoid), the per-request merge of chunk states,
// the uniform chunk arrays those chunks come from, and finalize. A state is
// an (f32 output, lse) pair of tensors.
//
//===----------------------------------------------------------------------===//

#include "LoopLowering.h"

#include "../VariantHooks.h"

namespace flashir::conversion::loops {

StatePair emitEmptyState(LocBuilder &b, StateType type, Value rows) {
  int64_t dyn = ShapedType::kDynamic;
  Type f32 = b.getF32Type();
  Value out = memref::AllocOp::create(
      b, MemRefType::get({dyn, type.getNumHeads(), type.getHeadDim()}, f32),
      ValueRange{rows});
  Value lse = memref::AllocOp::create(
      b, MemRefType::get({dyn, type.getNumHeads()}, f32), ValueRange{rows});
  Value c0 = cIndex(b, 0);
  buildFor(b, c0, rows, [&](LocBuilder &b, Value r) {
    buildFor(b, c0, cIndex(b, type.getNumHeads()), [&](LocBuilder &b, Value h) {
      memref::StoreOp::create(b, negInf(b), lse, ValueRange{r, h});
      buildFor(
          b, c0, cIndex(b, type.getHeadDim()), [&](LocBuilder &b, Value d) {
            memref::StoreOp::create(b, cF32(b, 0.0f), out, ValueRange{r, h, d});
          });
    });
  });
  return {toTensor(b, out), toTensor(b, lse)};
}

namespace {
/// The merge of two (row, head) entries (eq. 6 for softmax, a sum for
/// sigmoid); an empty side (lse = -inf) is the identity.
struct MergeStep {
  Value aEmpty, bEmpty, wa, wb, inv, lse;

  MergeStep(LocBuilder &b, Value la, Value lb) {
    aEmpty = isNegInf(b, la);
    bEmpty = isNegInf(b, lb);
    Value m = arith::MaximumFOp::create(b, la, lb);
    Value zero = cF32(b, 0.0f);
    wa = arith::SelectOp::create(
        b, aEmpty, zero,
        math::ExpOp::create(b, arith::SubFOp::create(b, la, m)));
    wb = arith::SelectOp::create(
        b, bEmpty, zero,
        math::ExpOp::create(b, arith::SubFOp::create(b, lb, m)));
    Value sum = arith::AddFOp::create(b, wa, wb);
    Value none = arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, sum, zero);
    Value merged = arith::AddFOp::create(b, m, math::LogOp::create(b, sum));
    lse = arith::SelectOp::create(b, none, negInf(b), merged);
    inv = arith::DivFOp::create(b, cF32(b, 1.0f), sum);
  }

  Value element(LocBuilder &b, ReductionKind reduction, Value oa,
                Value ob) const {
    if (reduction == ReductionKind::Sigmoid)
      return arith::AddFOp::create(b, oa, ob);
    Value weightedA = arith::MulFOp::create(b, wa, oa);
    Value mix = arith::MulFOp::create(
        b,
        arith::AddFOp::create(b, weightedA, arith::MulFOp::create(b, wb, ob)),
        inv);
    return arith::SelectOp::create(b, aEmpty, ob,
                                   arith::SelectOp::create(b, bEmpty, oa, mix));
  }
};
} // namespace

/// Allocates an f32 state of `rows` rows.
static std::pair<Value, Value> allocState(LocBuilder &b, int64_t heads,
                                          int64_t dim, Value rows) {
  int64_t dyn = ShapedType::kDynamic;
  Type f32 = b.getF32Type();
  return {memref::AllocOp::create(b, MemRefType::get({dyn, heads, dim}, f32),
                                  ValueRange{rows}),
          memref::AllocOp::create(b, MemRefType::get({dyn, heads}, f32),
                                  ValueRange{rows})};
}

StatePair emitMerge(LocBuilder &b, StateType type, ReductionKind reduction,
                    StatePair lhs, StatePair rhs) {
  int64_t heads = type.getNumHeads(), dim = type.getHeadDim();
  Value rows = tensor::DimOp::create(b, lhs.first, 0);
  auto [outBuf, lseBuf] = allocState(b, heads, dim, rows);
  Value out = outBuf, lse = lseBuf;
  Value c0 = cIndex(b, 0);
  buildFor(b, c0, rows, [&](LocBuilder &b, Value r) {
    buildFor(b, c0, cIndex(b, heads), [&](LocBuilder &b, Value h) {
      Value lseA = extract(b, lhs.second, {r, h});
      MergeStep step(b, lseA, extract(b, rhs.second, {r, h}));
      memref::StoreOp::create(b, step.lse, lse, ValueRange{r, h});
      buildFor(b, c0, cIndex(b, dim), [&](LocBuilder &b, Value d) {
        Value oa = extract(b, lhs.first, {r, h, d});
        Value o =
            step.element(b, reduction, oa, extract(b, rhs.first, {r, h, d}));
        memref::StoreOp::create(b, o, out, ValueRange{r, h, d});
      });
    });
  });
  return {toTensor(b, out), toTensor(b, lse)};
}

StatePair emitMergeChunks(LocBuilder &b, StateType type,
                          ReductionKind reduction, StatePair parts,
                          Value qoIndptr, Value rowsTensor, Value chunkIndptr) {
  int64_t heads = type.getNumHeads(), dim = type.getHeadDim();
  Value c0 = cIndex(b, 0), c1 = cIndex(b, 1);
  Value rows = tensor::DimOp::create(b, rowsTensor, 0);
  auto [outBuf, lseBuf] = allocState(b, heads, dim, rows);
  Value out = outBuf, lse = lseBuf;
  Value acc =
      memref::AllocaOp::create(b, MemRefType::get({dim}, b.getF32Type()));
  Value numRequests =
      arith::SubIOp::create(b, tensor::DimOp::create(b, qoIndptr, 0), c1);
  buildFor(
      b, c0, numRequests, {c0},
      [&](LocBuilder &b, Value req, ValueRange args) -> SmallVector<Value> {
        Value next = arith::AddIOp::create(b, req, c1);
        Value qBegin = extractIndex(b, qoIndptr, req);
        Value numQ =
            arith::SubIOp::create(b, extractIndex(b, qoIndptr, next), qBegin);
        Value first = extractIndex(b, chunkIndptr, req);
        Value last = extractIndex(b, chunkIndptr, next);
        buildFor(b, c0, numQ, [&](LocBuilder &b, Value i) {
          buildFor(b, c0, cIndex(b, heads), [&](LocBuilder &b, Value h) {
            buildFor(b, c0, cIndex(b, dim), [&](LocBuilder &b, Value d) {
              memref::StoreOp::create(b, cF32(b, 0.0f), acc, d);
            });
            Value merged = buildFor(
                b, first, last, {negInf(b)},
                [&](LocBuilder &b, Value c,
                    ValueRange la) -> SmallVector<Value> {
                  Value part = arith::AddIOp::create(
                      b, args[0],
                      arith::AddIOp::create(
                          b,
                          arith::MulIOp::create(
                              b, arith::SubIOp::create(b, c, first), numQ),
                          i));
                  MergeStep step(b, la[0], extract(b, parts.second, {part, h}));
                  buildFor(b, c0, cIndex(b, dim), [&](LocBuilder &b, Value d) {
                    Value oa = memref::LoadOp::create(b, acc, d);
                    Value o =
                        step.element(b, reduction, oa,
                                     extract(b, parts.first, {part, h, d}));
                    memref::StoreOp::create(b, o, acc, d);
                  });
                  return {step.lse};
                })[0];
            Value row = arith::AddIOp::create(b, qBegin, i);
            memref::StoreOp::create(b, merged, lse, ValueRange{row, h});
            buildFor(b, c0, cIndex(b, dim), [&](LocBuilder &b, Value d) {
              memref::StoreOp::create(b, memref::LoadOp::create(b, acc, d), out,
                                      ValueRange{row, h, d});
            });
          });
        });
        Value numChunks = arith::SubIOp::create(b, last, first);
        return {arith::AddIOp::create(
            b, args[0], arith::MulIOp::create(b, numQ, numChunks))};
      });
  return {toTensor(b, out), toTensor(b, lse)};
}

SmallVector<Value> emitUniformChunks(LocBuilder &b, ArrayRef<View> views,
                                     int64_t chunkSize) {
  Value c0 = cIndex(b, 0), c1 = cIndex(b, 1), size = cIndex(b, chunkSize);
  Value numRequests;
  for (const View &view : views)
    if ((numRequests = view.numRequests(b)))
      break;
  auto keys = [&](LocBuilder &b, Value req) {
    Value total = c0;
    for (const View &view : views)
      total = arith::AddIOp::create(b, total, view.length(b, req));
    return total;
  };
  auto chunksOf = [&](LocBuilder &b, Value total) {
    return arith::CeilDivUIOp::create(b, total, size);
  };
  Value numChunks = buildFor(
      b, c0, numRequests, {c0}, [&](LocBuilder &b, Value req, ValueRange args) {
        return SmallVector<Value>{
            arith::AddIOp::create(b, args[0], chunksOf(b, keys(b, req)))};
      })[0];
  auto i32Array = MemRefType::get({ShapedType::kDynamic}, b.getI32Type());
  Value indptr = memref::AllocOp::create(
      b, i32Array, ValueRange{arith::AddIOp::create(b, numRequests, c1)});
  Value starts = memref::AllocOp::create(b, i32Array, ValueRange{numChunks});
  Value ends = memref::AllocOp::create(b, i32Array, ValueRange{numChunks});
  auto toI32 = [&](LocBuilder &b, Value v) {
    return arith::IndexCastOp::create(b, b.getI32Type(), v);
  };
  Value total = buildFor(
      b, c0, numRequests, {c0},
      [&](LocBuilder &b, Value req, ValueRange args) -> SmallVector<Value> {
        memref::StoreOp::create(b, toI32(b, args[0]), indptr, req);
        Value n = keys(b, req);
        Value count = chunksOf(b, n);
        buildFor(b, c0, count, [&](LocBuilder &b, Value c) {
          Value slot = arith::AddIOp::create(b, args[0], c);
          Value start = arith::MulIOp::create(b, c, size);
          Value end = arith::MinSIOp::create(
              b, arith::AddIOp::create(b, start, size), n);
          memref::StoreOp::create(b, toI32(b, start), starts, slot);
          memref::StoreOp::create(b, toI32(b, end), ends, slot);
        });
        return {arith::AddIOp::create(b, args[0], count)};
      })[0];
  memref::StoreOp::create(b, toI32(b, total), indptr, numRequests);
  return {toTensor(b, indptr), toTensor(b, starts), toTensor(b, ends)};
}

Value emitFinalize(LocBuilder &b, VariantOp variant, StateType type,
                   StatePair state, RankedTensorType outputType) {
  int64_t heads = type.getNumHeads(), dim = type.getHeadDim();
  Value rows = tensor::DimOp::create(b, state.first, 0);
  Type element = outputType.getElementType();
  Value out = memref::AllocOp::create(
      b, MemRefType::get({ShapedType::kDynamic, heads, dim}, element),
      ValueRange{rows});
  Value c0 = cIndex(b, 0);
  buildFor(b, c0, rows, [&](LocBuilder &b, Value r) {
    buildFor(b, c0, cIndex(b, heads), [&](LocBuilder &b, Value h) {
      buildFor(b, c0, cIndex(b, dim), [&](LocBuilder &b, Value d) {
        Value o = extract(b, state.first, {r, h, d});
        o = VariantHooks(variant).output(b, o, d, h);
        memref::StoreOp::create(b, castFromF32(b, o, element), out,
                                ValueRange{r, h, d});
      });
    });
  });
  Value tensor = toTensor(b, out);
  if (tensor.getType() != outputType)
    tensor = tensor::CastOp::create(b, outputType, tensor);
  return tensor;
}

} // namespace flashir::conversion::loops
