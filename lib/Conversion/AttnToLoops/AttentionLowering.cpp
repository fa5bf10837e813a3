//===- AttentionLowering.cpp - attn.attention as a loop nest --------------===//
//
// Requests, then chunks, then (query row, head) pairs; each row reduces its
// visible keys with the variant's reduction (online or tiled softmax,
// sigmoid, sparsemax) into a shared accumulator and writes its output and
// lse. The keys are walked and read by KeyValueAccess.cpp.
//
//===----------------------------------------------------------------------===//

#include "LoopLowering.h"

#include "../VariantHooks.h"

namespace flashir::conversion::loops {

AttentionLowering::AttentionLowering(AttentionOp op, VariantOp variant,
                                     ArrayRef<View> views, RaggedQOp queries)
    : op(op), variant(variant), views(views), queries(queries) {
  RaggedQType qType = queries.getType();
  numQoHeads = qType.getNumHeads();
  numKvHeads = op.getNumKvHeads();
  headDim = qType.getHeadDim();
  groupSize = numQoHeads / numKvHeads;
  scale = op.getEffectiveScale();
  if (std::optional<ArrayRef<bool>> flags = op.getAttendedViews())
    attended.assign(flags->begin(), flags->end());
  else
    attended.assign(views.size(), true);
  if (TileConfigAttr tiles = op.getTilesAttr())
    kvTile = tiles.getKv();
}

SmallVector<Value> AttentionLowering::paramValues(LocBuilder &b, Value req,
                                                  Value head) {
  SmallVector<Value> values;
  for (auto [decl, value] :
       llvm::zip_equal(variant.getParamList(), op.getParams())) {
    switch (decl.getKind()) {
    case ParamKind::Scalar:
    case ParamKind::Buffer:
      values.push_back(value);
      break;
    case ParamKind::PerRequest:
      values.push_back(extract(b, value, {req}));
      break;
    case ParamKind::PerHead:
      values.push_back(extract(b, value, {head}));
      break;
    }
  }
  return values;
}

//===----------------------------------------------------------------------===//
// Requests and rows
//===----------------------------------------------------------------------===//

AttentionLowering::Request AttentionLowering::loadRequest(LocBuilder &b,
                                                          Value req) {
  Request r;
  r.index = req;
  Value qoIndptr = queries.getQoIndptr();
  r.qBegin = extractIndex(b, qoIndptr, req);
  Value qEnd =
      extractIndex(b, qoIndptr, arith::AddIOp::create(b, req, cIndex(b, 1)));
  r.numQ = arith::SubIOp::create(b, qEnd, r.qBegin);
  r.numKv = cIndex(b, 0);
  for (const View &view : views) {
    r.lengths.push_back(view.length(b, req));
    r.numKv = arith::AddIOp::create(b, r.numKv, r.lengths.back());
  }
  // Sparsemax keeps one row of scores per request (freed by the buffer
  // deallocation pipeline).
  if (variant.getReduction() == ReductionKind::Sparsemax)
    r.scores = memref::AllocOp::create(
        b, MemRefType::get({ShapedType::kDynamic}, b.getF32Type()),
        ValueRange{r.numKv});
  return r;
}

void AttentionLowering::emitRows(LocBuilder &b, const Request &r, Value outBase,
                                 KeyRange range, bool asState,
                                 Type outputElement) {
  Value c0 = cIndex(b, 0);
  if (!op.getFusedHeadGroups()) {
    buildFor(b, c0, r.numQ, [&](LocBuilder &b, Value i) {
      Value outRow = arith::AddIOp::create(b, outBase, i);
      buildFor(b, c0, cIndex(b, numQoHeads), [&](LocBuilder &b, Value head) {
        emitRow(b, r, i, head, outRow, range, asState, outputElement);
      });
    });
    return;
  }
  // Fused head groups (eq. 3): per KV head, g * Lq rows; row f is query
  // position f / g of query head g * hkv + f mod g.
  Value g = cIndex(b, groupSize);
  Value fusedRows = arith::MulIOp::create(b, r.numQ, g);
  buildFor(b, c0, cIndex(b, numKvHeads), [&](LocBuilder &b, Value kvHead) {
    buildFor(b, c0, fusedRows, [&](LocBuilder &b, Value f) {
      Value i = arith::DivUIOp::create(b, f, g);
      Value headBase = arith::MulIOp::create(b, kvHead, g);
      Value head =
          arith::AddIOp::create(b, headBase, arith::RemUIOp::create(b, f, g));
      Value outRow = arith::AddIOp::create(b, outBase, i);
      emitRow(b, r, i, head, outRow, range, asState, outputElement);
    });
  });
}

void AttentionLowering::emitRow(LocBuilder &b, const Request &r, Value i,
                                Value head, Value outRow, KeyRange range,
                                bool asState, Type outputElement) {
  Value c0 = cIndex(b, 0);
  Value q = queries.getQueries();
  Value req = r.index;
  Value qRow = arith::AddIOp::create(b, r.qBegin, i);
  // Queries are the last numQ tokens: qpos = i + Lkv - Lq.
  Value qpos =
      arith::SubIOp::create(b, arith::AddIOp::create(b, i, r.numKv), r.numQ);
  Value kvHead = arith::DivUIOp::create(b, head, cIndex(b, groupSize));
  SmallVector<Value> params = paramValues(b, req, head);
  ReductionKind reduction = variant.getReduction();
  Region &queryHook = variant.getQuery();

  // q' = query(q), kept in f32; the accumulator starts at 0.
  Value dim = cIndex(b, headDim), half = cIndex(b, headDim / 2);
  buildFor(b, c0, dim, [&](LocBuilder &b, Value d) {
    Value x = extractF32(b, q, {qRow, head, d});
    if (!queryHook.empty()) {
      Value rot =
          arith::RemUIOp::create(b, arith::AddIOp::create(b, d, half), dim);
      Value xRot = extractF32(b, q, {qRow, head, rot});
      x = VariantHooks(variant).query(b, x, xRot, d, qpos, head, params);
    }
    memref::StoreOp::create(b, x, qBuf, d);
    memref::StoreOp::create(b, cF32(b, 0.0f), acc, d);
  });

  Value oneF = cF32(b, 1.0f), zeroF = cF32(b, 0.0f);
  Row row{r,  range, head,  qpos, kvHead, std::move(params),
          c0, dim,   zeroF, oneF};
  Reduced reduced;
  if (reduction == ReductionKind::Softmax && kvTile > 0)
    reduced = reduceSoftmaxTiled(b, row);
  else if (reduction == ReductionKind::Softmax)
    reduced = reduceSoftmax(b, row);
  else if (reduction == ReductionKind::Sigmoid)
    reduced = reduceSigmoid(b, row);
  else
    reduced = reduceSparsemax(b, row);
  storeRow(b, row, outRow, reduced, asState, outputElement);
}

//===----------------------------------------------------------------------===//
// Row reductions
//===----------------------------------------------------------------------===//

Value AttentionLowering::logits(LocBuilder &b, const Row &row, const View &view,
                                Value j, Value kpos) {
  Value s =
      score(b, view, row.request.index, j, kpos, row.kvHead, row.params, qBuf);
  return VariantHooks(variant).logits(b, s, row.qpos, kpos, row.head,
                                      row.params);
}

SmallVector<Value> AttentionLowering::ifVisible(
    LocBuilder &b, const Row &row, Value kpos, ValueRange args,
    function_ref<SmallVector<Value>(LocBuilder &)> update) {
  Value keep = visible(b, row.qpos, kpos, row.head, row.params);
  if (!keep)
    return update(b);
  return llvm::to_vector(buildIf(
      b, keep, update, [&](LocBuilder &) { return SmallVector<Value>(args); }));
}

Value AttentionLowering::maskedLogits(LocBuilder &b, const Row &row,
                                      const View &view, Value j, Value kpos) {
  return ifVisible(b, row, kpos, {negInf(b)}, [&](LocBuilder &b) {
    return SmallVector<Value>{logits(b, row, view, j, kpos)};
  })[0];
}

AttentionLowering::Reduced
AttentionLowering::reduceSoftmaxTiled(LocBuilder &b, const Row &row) {
  // Tiled online softmax (FA2): a tile's logits, its max, one rescale of
  // the accumulator per tile, then the tile's weighted values.
  Value zeroF = row.zeroF;
  SmallVector<Value> ml = forEachTile(
      b, row.request, row.range, {negInf(b), zeroF},
      [&](LocBuilder &b, const View &view, Value j0, Value j1, Value viewBase,
          ValueRange args) -> SmallVector<Value> {
        Value m = args[0], l = args[1];
        Value tileMax = buildFor(
            b, j0, j1, {negInf(b)},
            [&](LocBuilder &b, Value j, ValueRange a) -> SmallVector<Value> {
              Value kpos = arith::AddIOp::create(b, viewBase, j);
              Value s = maskedLogits(b, row, view, j, kpos);
              memref::StoreOp::create(
                  b, s, tileScores,
                  ValueRange{arith::SubIOp::create(b, j, j0)});
              return {arith::MaximumFOp::create(b, a[0], s)};
            })[0];
        Value mNew = arith::MaximumFOp::create(b, m, tileMax);
        Value noMax = isNegInf(b, m);
        Value c = arith::SelectOp::create(
            b, noMax, zeroF,
            math::ExpOp::create(b, arith::SubFOp::create(b, m, mNew)));
        buildFor(b, row.c0, row.dim, [&](LocBuilder &b, Value d) {
          Value a = memref::LoadOp::create(b, acc, d);
          memref::StoreOp::create(b, arith::MulFOp::create(b, a, c), acc, d);
        });
        Value lNew = buildFor(
            b, j0, j1, {arith::MulFOp::create(b, l, c)},
            [&](LocBuilder &b, Value j, ValueRange a) -> SmallVector<Value> {
              Value s = memref::LoadOp::create(
                  b, tileScores, ValueRange{arith::SubIOp::create(b, j, j0)});
              Value masked = isNegInf(b, s);
              Value p = arith::SelectOp::create(
                  b, masked, zeroF,
                  math::ExpOp::create(b, arith::SubFOp::create(b, s, mNew)));
              accumulate(b, view, row.request.index, j, row.kvHead, acc,
                         nullptr, p);
              return {arith::AddFOp::create(b, a[0], p)};
            })[0];
        return {mNew, lNew};
      });
  return {ml[0], ml[1]};
}

AttentionLowering::Reduced AttentionLowering::reduceSoftmax(LocBuilder &b,
                                                            const Row &row) {
  // Online softmax: running max m, denominator l, rescaled acc.
  Value zeroF = row.zeroF;
  SmallVector<Value> ml = forEachKey(
      b, row.request, row.range, {negInf(b), zeroF},
      [&](LocBuilder &b, const View &view, Value j, Value kpos,
          ValueRange args) {
        return ifVisible(b, row, kpos, args, [&](LocBuilder &b) {
          Value m = args[0], l = args[1];
          Value s = logits(b, row, view, j, kpos);
          Value mNew = arith::MaximumFOp::create(b, m, s);
          // exp(-inf - -inf) is NaN: an empty history or a -inf logit
          // contributes exactly 0.
          Value noMax = isNegInf(b, m);
          Value c = arith::SelectOp::create(
              b, noMax, zeroF,
              math::ExpOp::create(b, arith::SubFOp::create(b, m, mNew)));
          Value masked = isNegInf(b, s);
          Value p = arith::SelectOp::create(
              b, masked, zeroF,
              math::ExpOp::create(b, arith::SubFOp::create(b, s, mNew)));
          accumulate(b, view, row.request.index, j, row.kvHead, acc, c, p);
          Value lNew =
              arith::AddFOp::create(b, arith::MulFOp::create(b, l, c), p);
          return SmallVector<Value>{mNew, lNew};
        });
      });
  return {ml[0], ml[1]};
}

AttentionLowering::Reduced AttentionLowering::reduceSigmoid(LocBuilder &b,
                                                            const Row &row) {
  Value oneF = row.oneF;
  Value denom = forEachKey(
      b, row.request, row.range, {row.zeroF},
      [&](LocBuilder &b, const View &view, Value j, Value kpos,
          ValueRange args) {
        return ifVisible(b, row, kpos, args, [&](LocBuilder &b) {
          Value s = logits(b, row, view, j, kpos);
          Value e = math::ExpOp::create(b, arith::NegFOp::create(b, s));
          Value p =
              arith::DivFOp::create(b, oneF, arith::AddFOp::create(b, oneF, e));
          accumulate(b, view, row.request.index, j, row.kvHead, acc, nullptr,
                     p);
          return SmallVector<Value>{arith::AddFOp::create(b, args[0], p)};
        });
      })[0];
  return {Value(), denom};
}

AttentionLowering::Reduced AttentionLowering::reduceSparsemax(LocBuilder &b,
                                                              const Row &row) {
  // Sparsemax: scores of the row (masked = -inf), then the threshold tau
  // with sum(max(s - tau, 0)) = 1 by bisection on [max - 1, max].
  const Request &r = row.request;
  Value scores = r.scores, zeroF = row.zeroF, oneF = row.oneF;
  Value rowMax = forEachKey(b, r, row.range, {negInf(b)},
                            [&](LocBuilder &b, const View &view, Value j,
                                Value kpos, ValueRange args) {
                              Value s = maskedLogits(b, row, view, j, kpos);
                              memref::StoreOp::create(b, s, scores, kpos);
                              return SmallVector<Value>{
                                  arith::MaximumFOp::create(b, args[0], s)};
                            })[0];
  auto mass = [&](LocBuilder &b, Value tau) {
    return forEachKey(
        b, r, row.range, {zeroF},
        [&](LocBuilder &b, const View &, Value, Value kpos, ValueRange args) {
          Value s = memref::LoadOp::create(b, scores, kpos);
          Value w = arith::MaximumFOp::create(
              b, arith::SubFOp::create(b, s, tau), zeroF);
          return SmallVector<Value>{arith::AddFOp::create(b, args[0], w)};
        })[0];
  };
  Value lo0 = arith::SubFOp::create(b, rowMax, oneF);
  SmallVector<Value> bounds = llvm::to_vector(buildFor(
      b, row.c0, cIndex(b, 40), {lo0, rowMax},
      [&](LocBuilder &b, Value, ValueRange args) -> SmallVector<Value> {
        Value sum = arith::AddFOp::create(b, args[0], args[1]);
        Value mid = arith::MulFOp::create(b, sum, cF32(b, 0.5f));
        Value above = arith::CmpFOp::create(b, arith::CmpFPredicate::OGT,
                                            mass(b, mid), oneF);
        return {arith::SelectOp::create(b, above, mid, args[0]),
                arith::SelectOp::create(b, above, args[1], mid)};
      }));
  // A row without visible keys has no threshold (-inf bounds give NaN);
  // any finite one leaves every weight 0.
  Value noMax = isNegInf(b, rowMax);
  Value boundSum = arith::AddFOp::create(b, bounds[0], bounds[1]);
  Value tau = arith::SelectOp::create(
      b, noMax, zeroF, arith::MulFOp::create(b, boundSum, cF32(b, 0.5f)));
  Value denom = forEachKey(
      b, r, row.range, {zeroF},
      [&](LocBuilder &b, const View &view, Value j, Value kpos,
          ValueRange args) {
        Value s = memref::LoadOp::create(b, scores, kpos);
        Value w = arith::MaximumFOp::create(b, arith::SubFOp::create(b, s, tau),
                                            zeroF);
        accumulate(b, view, r.index, j, row.kvHead, acc, nullptr, w);
        return SmallVector<Value>{arith::AddFOp::create(b, args[0], w)};
      })[0];
  return {rowMax, denom};
}

void AttentionLowering::storeRow(LocBuilder &b, const Row &row, Value outRow,
                                 Reduced reduced, bool asState,
                                 Type outputElement) {
  // Row result. No visible key: output 0, lse = -inf.
  Value zeroF = row.zeroF, oneF = row.oneF, head = row.head;
  Value denom = reduced.denom;
  Value empty =
      arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, denom, zeroF);
  Value inv = oneF, rowLse;
  Value logDenom = math::LogOp::create(b, denom);
  switch (variant.getReduction()) {
  case ReductionKind::Softmax:
    inv = arith::DivFOp::create(b, oneF, denom);
    rowLse = arith::AddFOp::create(b, reduced.rowMax, logDenom);
    break;
  case ReductionKind::Sigmoid:
    rowLse = logDenom;
    break;
  case ReductionKind::Sparsemax:
    // Normalising by the found mass absorbs the bisection's residue.
    inv = arith::DivFOp::create(b, oneF, denom);
    rowLse = zeroF;
    break;
  }
  inv = arith::SelectOp::create(b, empty, zeroF, inv);
  rowLse = arith::SelectOp::create(b, empty, negInf(b), rowLse);
  memref::StoreOp::create(b, rowLse, lse, ValueRange{outRow, head});
  buildFor(b, row.c0, row.dim, [&](LocBuilder &b, Value d) {
    Value o = arith::MulFOp::create(b, memref::LoadOp::create(b, acc, d), inv);
    if (!asState)
      o = VariantHooks(variant).output(b, o, d, head);
    memref::StoreOp::create(b, castFromF32(b, o, outputElement), out,
                            ValueRange{outRow, head, d});
  });
}

//===----------------------------------------------------------------------===//
// The nest
//===----------------------------------------------------------------------===//

std::pair<Value, Value> AttentionLowering::emit(LocBuilder &b, bool asState,
                                                Type outputElement) {
  Type f32 = b.getF32Type();
  Value c0 = cIndex(b, 0), c1 = cIndex(b, 1);
  Value qoIndptr = queries.getQoIndptr();
  Value numRequests =
      arith::SubIOp::create(b, tensor::DimOp::create(b, qoIndptr, 0), c1);
  Value chunkIndptr = op.getChunkIndptr();
  Value starts = op.getChunkStarts(), ends = op.getChunkEnds();

  // Output rows: the queries, or one per (request, chunk, query row).
  Value rows = tensor::DimOp::create(b, queries.getQueries(), 0);
  if (chunkIndptr)
    rows =
        buildFor(b, c0, numRequests, {c0},
                 [&](LocBuilder &b, Value req, ValueRange args) {
                   Value next = arith::AddIOp::create(b, req, c1);
                   Value qEnd = extractIndex(b, qoIndptr, next);
                   Value numQ = arith::SubIOp::create(
                       b, qEnd, extractIndex(b, qoIndptr, req));
                   Value chunksEnd = extractIndex(b, chunkIndptr, next);
                   Value numChunks = arith::SubIOp::create(
                       b, chunksEnd, extractIndex(b, chunkIndptr, req));
                   return SmallVector<Value>{arith::AddIOp::create(
                       b, args[0], arith::MulIOp::create(b, numQ, numChunks))};
                 })[0];
  int64_t dyn = ShapedType::kDynamic;
  out = memref::AllocOp::create(
      b, MemRefType::get({dyn, numQoHeads, headDim}, outputElement),
      ValueRange{rows});
  lse = memref::AllocOp::create(b, MemRefType::get({dyn, numQoHeads}, f32),
                                ValueRange{rows});
  auto vecType = MemRefType::get({headDim}, f32);
  qBuf = memref::AllocaOp::create(b, vecType);
  acc = memref::AllocaOp::create(b, vecType);
  if (kvTile > 0)
    tileScores = memref::AllocaOp::create(b, MemRefType::get({kvTile}, f32));

  if (!chunkIndptr) {
    buildFor(b, c0, numRequests, [&](LocBuilder &b, Value req) {
      Request r = loadRequest(b, req);
      emitRows(b, r, r.qBegin, KeyRange(), asState, outputElement);
    });
  } else {
    buildFor(
        b, c0, numRequests, {c0},
        [&](LocBuilder &b, Value req, ValueRange args) -> SmallVector<Value> {
          Request r = loadRequest(b, req);
          Value first = extractIndex(b, chunkIndptr, req);
          Value last =
              extractIndex(b, chunkIndptr, arith::AddIOp::create(b, req, c1));
          buildFor(b, first, last, [&](LocBuilder &b, Value c) {
            KeyRange range{extractIndex(b, starts, c),
                           extractIndex(b, ends, c)};
            Value base = arith::AddIOp::create(
                b, args[0],
                arith::MulIOp::create(b, arith::SubIOp::create(b, c, first),
                                      r.numQ));
            emitRows(b, r, base, range, asState, outputElement);
          });
          Value numChunks = arith::SubIOp::create(b, last, first);
          return {arith::AddIOp::create(
              b, args[0], arith::MulIOp::create(b, r.numQ, numChunks))};
        });
  }
  return {toTensor(b, out), toTensor(b, lse)};
}

} // namespace flashir::conversion::loops
