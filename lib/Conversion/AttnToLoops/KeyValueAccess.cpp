//===- KeyValueAccess.cpp - KV views and the walk over their keys ---------===//
//
// Where a request's keys and values live (paged, shared-paged or ragged
// views) and how an attention row visits them: view by view in key order,
// one key or one tile at a time, scoring keys against the row's query and
// accumulating their values.
//
//===----------------------------------------------------------------------===//

#include "LoopLowering.h"

#include "../VariantHooks.h"

namespace flashir::conversion::loops {

//===----------------------------------------------------------------------===//
// Views
//===----------------------------------------------------------------------===//

Value View::length(LocBuilder &b, Value req) const {
  if (shared)
    return sharedLength;
  Value next = arith::AddIOp::create(b, req, cIndex(b, 1));
  if (!paged) {
    Value end = extractIndex(b, kvIndptr, next);
    return arith::SubIOp::create(b, end, extractIndex(b, kvIndptr, req));
  }
  Value pagesEnd = extractIndex(b, indptr, next);
  Value pages =
      arith::SubIOp::create(b, pagesEnd, extractIndex(b, indptr, req));
  Value fullPages = arith::SubIOp::create(b, pages, cIndex(b, 1));
  Value full = arith::MulIOp::create(b, fullPages, cIndex(b, pageSize));
  Value len = arith::AddIOp::create(b, full, extractIndex(b, lastPageLen, req));
  Value nonEmpty =
      arith::CmpIOp::create(b, arith::CmpIPredicate::sgt, pages, cIndex(b, 0));
  return arith::SelectOp::create(b, nonEmpty, len, cIndex(b, 0));
}

Value View::numRequests(LocBuilder &b) const {
  if (shared)
    return nullptr;
  Value ptr = paged ? indptr : kvIndptr;
  Value size = tensor::DimOp::create(b, ptr, 0);
  return arith::SubIOp::create(b, size, cIndex(b, 1));
}

SmallVector<Value> View::keyPrefix(LocBuilder &b, Value req, Value j,
                                   Value head) const {
  if (!paged) {
    Value row = arith::AddIOp::create(b, extractIndex(b, kvIndptr, req), j);
    return {row, head};
  }
  Value slot = arith::RemUIOp::create(b, j, cIndex(b, pageSize));
  Value logicalPage = arith::DivUIOp::create(b, j, cIndex(b, pageSize));
  Value entry = shared ? logicalPage
                       : arith::AddIOp::create(b, extractIndex(b, indptr, req),
                                               logicalPage);
  Value page = extractIndex(b, indices, entry);
  if (hnd)
    return {page, head, slot};
  return {page, slot, head};
}

static FailureOr<View> getView(Operation *user, Value value) {
  View view;
  auto setPools = [&](PagedKVType type, Value keys, Value values) {
    view.paged = true;
    view.hnd = type.getLayout() == KVLayout::HND;
    view.pageSize = type.getPageSize();
    view.keys = keys;
    view.values = values;
  };
  if (auto paged = value.getDefiningOp<PagedKVOp>()) {
    setPools(paged.getType(), paged.getKPages(), paged.getVPages());
    view.indptr = paged.getIndptr();
    view.indices = paged.getIndices();
    view.lastPageLen = paged.getLastPageLen();
    return view;
  }
  if (auto shared = value.getDefiningOp<SharedPagedKVOp>()) {
    setPools(shared.getType(), shared.getKPages(), shared.getVPages());
    view.shared = true;
    view.indices = shared.getIndices();
    view.sharedLength = shared.getLength();
    return view;
  }
  if (auto ragged = value.getDefiningOp<RaggedKVOp>()) {
    view.keys = ragged.getKeys();
    view.values = ragged.getValues();
    view.kvIndptr = ragged.getKvIndptr();
    return view;
  }
  return user->emitOpError("the CPU lowering needs every KV view to be "
                           "defined by attn.paged_kv, attn.shared_paged_kv or "
                           "attn.ragged_kv in the same function");
}

FailureOr<SmallVector<View>> getViews(Operation *user, ValueRange values) {
  SmallVector<View> views;
  for (Value value : values) {
    FailureOr<View> view = getView(user, value);
    if (failed(view))
      return failure();
    views.push_back(*view);
  }
  return views;
}

FailureOr<RaggedQOp> getQueries(Operation *user, Value value) {
  if (auto queries = value.getDefiningOp<RaggedQOp>())
    return queries;
  return user->emitOpError("the CPU lowering needs the queries to be "
                           "defined by attn.ragged_q in the same function");
}

//===----------------------------------------------------------------------===//
// Walking a request's keys
//===----------------------------------------------------------------------===//

/// Clamps `v - base` into [0, len].
static Value clampLocal(LocBuilder &b, Value v, Value base, Value len) {
  Value local = arith::SubIOp::create(b, v, base);
  local = arith::MaxSIOp::create(b, local, cIndex(b, 0));
  return arith::MinSIOp::create(b, local, len);
}

SmallVector<Value>
AttentionLowering::forEachView(LocBuilder &b, const Request &r, KeyRange range,
                               ValueRange inits, ViewBody viewBody) {
  SmallVector<Value> carried(inits);
  Value base = cIndex(b, 0);
  for (auto [index, view] : llvm::enumerate(views)) {
    Value length = r.lengths[index];
    if (attended[index]) {
      Value lo = cIndex(b, 0), hi = length;
      if (range.lo) {
        lo = clampLocal(b, range.lo, base, length);
        hi = clampLocal(b, range.hi, base, length);
      }
      carried = viewBody(b, view, lo, hi, base, carried);
    }
    base = arith::AddIOp::create(b, base, length);
  }
  return carried;
}

SmallVector<Value> AttentionLowering::forEachStride(
    LocBuilder &b, const Request &r, KeyRange range, ValueRange inits,
    int64_t step,
    function_ref<SmallVector<Value>(LocBuilder &, const View &, Value, Value,
                                    Value, Value, ValueRange)>
        body) {
  return forEachView(b, r, range, inits,
                     [&](LocBuilder &b, const View &v, Value lo, Value hi,
                         Value viewBase, ValueRange carried) {
                       Value stride = cIndex(b, step);
                       return llvm::to_vector(buildForStep(
                           b, lo, hi, stride, carried,
                           [&](LocBuilder &nb, Value j, ValueRange args) {
                             return body(nb, v, j, stride, hi, viewBase, args);
                           }));
                     });
}

SmallVector<Value>
AttentionLowering::forEachKey(LocBuilder &b, const Request &r, KeyRange range,
                              ValueRange inits, KeyBody body) {
  return forEachStride(b, r, range, inits, 1,
                       [&](LocBuilder &b, const View &v, Value j, Value, Value,
                           Value viewBase, ValueRange args) {
                         Value kpos = arith::AddIOp::create(b, viewBase, j);
                         return body(b, v, j, kpos, args);
                       });
}

SmallVector<Value>
AttentionLowering::forEachTile(LocBuilder &b, const Request &r, KeyRange range,
                               ValueRange inits, ViewBody tileBody) {
  return forEachStride(b, r, range, inits, kvTile,
                       [&](LocBuilder &b, const View &v, Value j0, Value tile,
                           Value hi, Value viewBase, ValueRange args) {
                         Value j1 = arith::MinSIOp::create(
                             b, arith::AddIOp::create(b, j0, tile), hi);
                         return tileBody(b, v, j0, j1, viewBase, args);
                       });
}

//===----------------------------------------------------------------------===//
// Reading keys and values
//===----------------------------------------------------------------------===//

Value AttentionLowering::visible(LocBuilder &b, Value qpos, Value kpos,
                                 Value head, ArrayRef<Value> params) {
  return VariantHooks(variant).mask(b, qpos, kpos, head, params);
}

Value AttentionLowering::score(LocBuilder &b, const View &view, Value req,
                               Value j, Value kpos, Value kvHead,
                               ArrayRef<Value> params, Value qBuf) {
  SmallVector<Value> prefix = view.keyPrefix(b, req, j, kvHead);
  Region &keyHook = variant.getKey();
  Value half = cIndex(b, headDim / 2), dim = cIndex(b, headDim);
  Value zero = cF32(b, 0.0f);
  Value dot = buildFor(
      b, cIndex(b, 0), dim, {zero},
      [&](LocBuilder &nb, Value d, ValueRange args) -> SmallVector<Value> {
        SmallVector<Value> idx(prefix);
        idx.push_back(d);
        Value k = extractF32(nb, view.keys, idx);
        if (!keyHook.empty()) {
          SmallVector<Value> rotIdx(prefix);
          rotIdx.push_back(arith::RemUIOp::create(
              nb, arith::AddIOp::create(nb, d, half), dim));
          Value kRot = extractF32(nb, view.keys, rotIdx);
          k = VariantHooks(variant).key(nb, k, kRot, d, kpos, kvHead, params);
        }
        Value q = memref::LoadOp::create(nb, qBuf, d);
        return {arith::AddFOp::create(nb, args[0],
                                      arith::MulFOp::create(nb, q, k))};
      })[0];
  return arith::MulFOp::create(b, dot, cF32(b, scale));
}

void AttentionLowering::accumulate(LocBuilder &b, const View &view, Value req,
                                   Value j, Value kvHead, Value acc,
                                   Value keepScale, Value weight) {
  SmallVector<Value> prefix = view.keyPrefix(b, req, j, kvHead);
  Value c0 = cIndex(b, 0);
  buildFor(b, c0, cIndex(b, headDim), [&](LocBuilder &nb, Value d) {
    SmallVector<Value> idx(prefix);
    idx.push_back(d);
    Value v = extractF32(nb, view.values, idx);
    Value a = memref::LoadOp::create(nb, acc, d);
    if (keepScale)
      a = arith::MulFOp::create(nb, a, keepScale);
    a = arith::AddFOp::create(nb, a, arith::MulFOp::create(nb, weight, v));
    memref::StoreOp::create(nb, a, acc, d);
  });
}

} // namespace flashir::conversion::loops
