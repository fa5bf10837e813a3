//===- AttnToLoops.cpp - attn ops to scf loop nests -----------------------===//
//
// The executable meaning of the attn dialect: each op becomes a plain loop
// nest with the variant's hooks inlined. This is the reference lowering the
// CPU path runs and later transforms are checked against; it favours being
// obviously right over being fast.
//
//===----------------------------------------------------------------------===//

#include "../BuilderUtils.h"
#include "../VariantHooks.h"
#include "flashir/Conversion/Passes.h"
#include "flashir/Dialect/Attn/IR/Attn.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

#include <limits>

namespace flashir {
#define GEN_PASS_DEF_CONVERTATTNTOLOOPS
#include "flashir/Conversion/Passes.h.inc"
} // namespace flashir

using namespace mlir;
using namespace flashir::attn;
using namespace flashir::conversion;

namespace {

Value extract(LocBuilder &b, Value tensor, ValueRange indices) {
  return tensor::ExtractOp::create(b, tensor, indices);
}

/// Reads an i32 metadata entry as an index.
Value extractIndex(LocBuilder &b, Value tensor, Value i) {
  return arith::IndexCastOp::create(b, b.getIndexType(),
                                    extract(b, tensor, {i}));
}

/// Reads a float element and widens it to f32 (the accumulation type).
Value extractF32(LocBuilder &b, Value tensor, ValueRange indices) {
  Value v = extract(b, tensor, indices);
  if (v.getType().isF32())
    return v;
  if (v.getType().getIntOrFloatBitWidth() < 32)
    return arith::ExtFOp::create(b, b.getF32Type(), v);
  return arith::TruncFOp::create(b, b.getF32Type(), v);
}

/// Converts an f32 to the element type of a result.
Value castFromF32(LocBuilder &b, Value v, Type type) {
  if (type.isF32())
    return v;
  if (type.getIntOrFloatBitWidth() < 32)
    return arith::TruncFOp::create(b, type, v);
  return arith::ExtFOp::create(b, type, v);
}

/// Builds a buffer of `type` and returns it with a tensor view of it.
Value toTensor(LocBuilder &b, Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  auto tensorType =
      RankedTensorType::get(type.getShape(), type.getElementType());
  return bufferization::ToTensorOp::create(b, tensorType, buffer,
                                           /*restrict=*/true,
                                           /*writable=*/true);
}

//===----------------------------------------------------------------------===//
// KV views
//===----------------------------------------------------------------------===//

struct View {
  // Paged (per-request or shared page list) or ragged.
  bool paged = false;
  bool shared = false;
  bool hnd = false;
  int64_t pageSize = 1;
  Value keys, values;
  Value indptr, indices, lastPageLen; // paged
  Value sharedLength;                 // shared
  Value kvIndptr;                     // ragged

  /// KV length of request `req`.
  Value length(LocBuilder &b, Value req) const {
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
    Value len =
        arith::AddIOp::create(b, full, extractIndex(b, lastPageLen, req));
    Value nonEmpty = arith::CmpIOp::create(b, arith::CmpIPredicate::sgt, pages,
                                           cIndex(b, 0));
    return arith::SelectOp::create(b, nonEmpty, len, cIndex(b, 0));
  }

  /// Number of requests the view describes, or null for a shared view.
  Value numRequests(LocBuilder &b) const {
    if (shared)
      return nullptr;
    Value ptr = paged ? indptr : kvIndptr;
    Value size = tensor::DimOp::create(b, ptr, 0);
    return arith::SubIOp::create(b, size, cIndex(b, 1));
  }

  /// Indices of key `j` of request `req`, KV head `head`, without the dim:
  /// computed once per key, the dim appended per element.
  SmallVector<Value> keyPrefix(LocBuilder &b, Value req, Value j,
                               Value head) const {
    if (!paged) {
      Value row = arith::AddIOp::create(b, extractIndex(b, kvIndptr, req), j);
      return {row, head};
    }
    Value slot = arith::RemUIOp::create(b, j, cIndex(b, pageSize));
    Value logicalPage = arith::DivUIOp::create(b, j, cIndex(b, pageSize));
    Value entry = shared ? logicalPage
                         : arith::AddIOp::create(
                               b, extractIndex(b, indptr, req), logicalPage);
    Value page = extractIndex(b, indices, entry);
    if (hnd)
      return {page, head, slot};
    return {page, slot, head};
  }
};

FailureOr<View> getView(Operation *user, Value value) {
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

/// A half-open range of key positions [lo, hi) a chunk attends; null bounds
/// mean every key.
struct KeyRange {
  Value lo, hi;
};

using KeyBody = function_ref<SmallVector<Value>(LocBuilder &, const View &,
                                                Value, Value, ValueRange)>;

//===----------------------------------------------------------------------===//
// attn.attention
//===----------------------------------------------------------------------===//

class AttentionLowering {
public:
  AttentionLowering(AttentionOp op, VariantOp variant, ArrayRef<View> views,
                    RaggedQOp queries)
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

  /// Emits the loop nest before `op`; returns (output, lse) tensors. The
  /// output is f32 without the output hook when `asState`. With chunks, rows
  /// are the chunked-state rows.
  std::pair<Value, Value> emit(LocBuilder &b, bool asState, Type outputElement);

private:
  /// Everything about one request the row computation needs.
  struct Request {
    Value index, qBegin, numQ, numKv;
    SmallVector<Value> lengths;
    Value scores; // sparsemax scratch
  };

  Request loadRequest(LocBuilder &b, Value req);

  /// Computes one (query row, head) into out[outRow], lse[outRow].
  void emitRow(LocBuilder &b, const Request &r, Value i, Value head,
               Value outRow, KeyRange range, bool asState, Type outputElement);

  /// Runs the rows of request `r` (fused or not) with `range`, writing to
  /// output rows `outBase + i`.
  void emitRows(LocBuilder &b, const Request &r, Value outBase, KeyRange range,
                bool asState, Type outputElement);

  /// Parameter values visible to hooks of request `req`, query head `head`.
  SmallVector<Value> paramValues(LocBuilder &b, Value req, Value head);

  /// Runs `body(b, view, j, kpos, args)` for every attended key of request
  /// `r` within `range`, in order across the views; with `tile` > 0 runs
  /// `tileBody(b, view, j0, j1, kposBase, args)` per tile of keys instead.
  SmallVector<Value> forEachKey(LocBuilder &b, const Request &r, KeyRange range,
                                ValueRange inits, KeyBody body);
  /// Runs `viewBody(b, view, lo, hi, viewBase, carried)` for each attended
  /// view with its key range [lo, hi) (view-local) clipped to `range`.
  SmallVector<Value>
  forEachView(LocBuilder &b, const Request &r, KeyRange range, ValueRange inits,
              function_ref<SmallVector<Value>(LocBuilder &, const View &, Value,
                                              Value, Value, ValueRange)>
                  viewBody);
  SmallVector<Value>
  forEachTile(LocBuilder &b, const Request &r, KeyRange range, ValueRange inits,
              function_ref<SmallVector<Value>(LocBuilder &, const View &, Value,
                                              Value, Value, ValueRange)>
                  tileBody);

  /// Whether key `kpos` is visible to (qpos, head); null if no mask hook.
  Value visible(LocBuilder &b, Value qpos, Value kpos, Value head,
                ArrayRef<Value> params);

  /// scale * <q', key(k)>.
  Value score(LocBuilder &b, const View &view, Value req, Value j, Value kpos,
              Value kvHead, ArrayRef<Value> params, Value qBuf);

  /// acc[d] = acc[d] * keepScale + weight * v[d].
  void accumulate(LocBuilder &b, const View &view, Value req, Value j,
                  Value kvHead, Value acc, Value keepScale, Value weight);

  AttentionOp op;
  VariantOp variant;
  ArrayRef<View> views;
  RaggedQOp queries;
  SmallVector<bool> attended;
  int64_t numQoHeads, numKvHeads, headDim, groupSize;
  int64_t kvTile = 0;
  float scale;
  // Buffers shared by every row.
  Value out, lse, qBuf, acc, tileScores;
};

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

/// Clamps `v - base` into [0, len].
static Value clampLocal(LocBuilder &b, Value v, Value base, Value len) {
  Value local = arith::SubIOp::create(b, v, base);
  local = arith::MaxSIOp::create(b, local, cIndex(b, 0));
  return arith::MinSIOp::create(b, local, len);
}

SmallVector<Value> AttentionLowering::forEachView(
    LocBuilder &b, const Request &r, KeyRange range, ValueRange inits,
    function_ref<SmallVector<Value>(LocBuilder &, const View &, Value, Value,
                                    Value, ValueRange)>
        viewBody) {
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

SmallVector<Value>
AttentionLowering::forEachKey(LocBuilder &b, const Request &r, KeyRange range,
                              ValueRange inits, KeyBody body) {
  return forEachView(
      b, r, range, inits,
      [&](LocBuilder &b, const View &v, Value lo, Value hi, Value viewBase,
          ValueRange carried) {
        return llvm::to_vector(buildFor(
            b, lo, hi, carried, [&](LocBuilder &nb, Value j, ValueRange args) {
              Value kpos = arith::AddIOp::create(nb, viewBase, j);
              return body(nb, v, j, kpos, args);
            }));
      });
}

SmallVector<Value> AttentionLowering::forEachTile(
    LocBuilder &b, const Request &r, KeyRange range, ValueRange inits,
    function_ref<SmallVector<Value>(LocBuilder &, const View &, Value, Value,
                                    Value, ValueRange)>
        tileBody) {
  return forEachView(
      b, r, range, inits,
      [&](LocBuilder &b, const View &v, Value lo, Value hi, Value viewBase,
          ValueRange carried) {
        Value tile = cIndex(b, kvTile);
        auto loop = scf::ForOp::create(
            b, lo, hi, tile, carried,
            [&](OpBuilder &ob, Location loc, Value j0, ValueRange args) {
              LocBuilder nb(loc, ob);
              Value j1 = arith::MinSIOp::create(
                  nb, arith::AddIOp::create(nb, j0, tile), hi);
              scf::YieldOp::create(nb, tileBody(nb, v, j0, j1, viewBase, args));
            });
        return SmallVector<Value>(loop.getResults());
      });
}

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
  Value row = arith::AddIOp::create(b, r.qBegin, i);
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
    Value x = extractF32(b, q, {row, head, d});
    if (!queryHook.empty()) {
      Value rot =
          arith::RemUIOp::create(b, arith::AddIOp::create(b, d, half), dim);
      Value xRot = extractF32(b, q, {row, head, rot});
      x = VariantHooks(variant).query(b, x, xRot, d, qpos, head, params);
    }
    memref::StoreOp::create(b, x, qBuf, d);
    memref::StoreOp::create(b, cF32(b, 0.0f), acc, d);
  });

  // The logits of key kpos (score + hook).
  auto logits = [&](LocBuilder &b, const View &view, Value j,
                    Value kpos) -> Value {
    Value s = score(b, view, req, j, kpos, kvHead, params, qBuf);
    return VariantHooks(variant).logits(b, s, qpos, kpos, head, params);
  };
  // Runs `update` only for visible keys; masked keys leave the carried
  // values untouched (they are excluded, not down-weighted).
  auto ifVisible = [&](LocBuilder &b, Value kpos, ValueRange args,
                       function_ref<SmallVector<Value>(LocBuilder &)> update) {
    Value keep = visible(b, qpos, kpos, head, params);
    if (!keep)
      return update(b);
    return llvm::to_vector(buildIf(b, keep, update, [&](LocBuilder &) {
      return SmallVector<Value>(args);
    }));
  };
  // The logit of a key, -inf when masked.
  auto maskedLogits = [&](LocBuilder &b, const View &view, Value j,
                          Value kpos) {
    return ifVisible(b, kpos, {negInf(b)}, [&](LocBuilder &b) {
      return SmallVector<Value>{logits(b, view, j, kpos)};
    })[0];
  };

  Value rowMax, denom;
  Value oneF = cF32(b, 1.0f), zeroF = cF32(b, 0.0f);
  if (reduction == ReductionKind::Softmax && kvTile > 0) {
    // Tiled online softmax (FA2): a tile's logits, its max, one rescale of
    // the accumulator per tile, then the tile's weighted values.
    SmallVector<Value> ml = forEachTile(
        b, r, range, {negInf(b), zeroF},
        [&](LocBuilder &b, const View &view, Value j0, Value j1, Value viewBase,
            ValueRange args) -> SmallVector<Value> {
          Value m = args[0], l = args[1];
          Value tileMax = buildFor(
              b, j0, j1, {negInf(b)},
              [&](LocBuilder &b, Value j, ValueRange a) -> SmallVector<Value> {
                Value kpos = arith::AddIOp::create(b, viewBase, j);
                Value s = maskedLogits(b, view, j, kpos);
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
          buildFor(b, c0, dim, [&](LocBuilder &b, Value d) {
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
                accumulate(b, view, req, j, kvHead, acc, nullptr, p);
                return {arith::AddFOp::create(b, a[0], p)};
              })[0];
          return {mNew, lNew};
        });
    rowMax = ml[0];
    denom = ml[1];
  } else if (reduction == ReductionKind::Softmax) {
    // Online softmax: running max m, denominator l, rescaled acc.
    SmallVector<Value> ml = forEachKey(
        b, r, range, {negInf(b), zeroF},
        [&](LocBuilder &b, const View &view, Value j, Value kpos,
            ValueRange args) {
          return ifVisible(b, kpos, args, [&](LocBuilder &b) {
            Value m = args[0], l = args[1];
            Value s = logits(b, view, j, kpos);
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
            accumulate(b, view, req, j, kvHead, acc, c, p);
            Value lNew =
                arith::AddFOp::create(b, arith::MulFOp::create(b, l, c), p);
            return SmallVector<Value>{mNew, lNew};
          });
        });
    rowMax = ml[0];
    denom = ml[1];
  } else if (reduction == ReductionKind::Sigmoid) {
    denom = forEachKey(
        b, r, range, {zeroF},
        [&](LocBuilder &b, const View &view, Value j, Value kpos,
            ValueRange args) {
          return ifVisible(b, kpos, args, [&](LocBuilder &b) {
            Value s = logits(b, view, j, kpos);
            Value e = math::ExpOp::create(b, arith::NegFOp::create(b, s));
            Value p = arith::DivFOp::create(b, oneF,
                                            arith::AddFOp::create(b, oneF, e));
            accumulate(b, view, req, j, kvHead, acc, nullptr, p);
            return SmallVector<Value>{arith::AddFOp::create(b, args[0], p)};
          });
        })[0];
  } else {
    // Sparsemax: scores of the row (masked = -inf), then the threshold tau
    // with sum(max(s - tau, 0)) = 1 by bisection on [max - 1, max].
    Value scores = r.scores;
    rowMax = forEachKey(b, r, range, {negInf(b)},
                        [&](LocBuilder &b, const View &view, Value j,
                            Value kpos, ValueRange args) {
                          Value s = maskedLogits(b, view, j, kpos);
                          memref::StoreOp::create(b, s, scores, kpos);
                          return SmallVector<Value>{
                              arith::MaximumFOp::create(b, args[0], s)};
                        })[0];
    auto mass = [&](LocBuilder &b, Value tau) {
      return forEachKey(
          b, r, range, {zeroF},
          [&](LocBuilder &b, const View &, Value, Value kpos, ValueRange args) {
            Value s = memref::LoadOp::create(b, scores, kpos);
            Value w = arith::MaximumFOp::create(
                b, arith::SubFOp::create(b, s, tau), zeroF);
            return SmallVector<Value>{arith::AddFOp::create(b, args[0], w)};
          })[0];
    };
    Value lo0 = arith::SubFOp::create(b, rowMax, oneF);
    SmallVector<Value> bounds = llvm::to_vector(buildFor(
        b, c0, cIndex(b, 40), {lo0, rowMax},
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
    denom = forEachKey(b, r, range, {zeroF},
                       [&](LocBuilder &b, const View &view, Value j, Value kpos,
                           ValueRange args) {
                         Value s = memref::LoadOp::create(b, scores, kpos);
                         Value w = arith::MaximumFOp::create(
                             b, arith::SubFOp::create(b, s, tau), zeroF);
                         accumulate(b, view, req, j, kvHead, acc, nullptr, w);
                         return SmallVector<Value>{
                             arith::AddFOp::create(b, args[0], w)};
                       })[0];
  }

  // Row result. No visible key: output 0, lse = -inf.
  Value empty =
      arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, denom, zeroF);
  Value inv = oneF, rowLse;
  Value logDenom = math::LogOp::create(b, denom);
  switch (reduction) {
  case ReductionKind::Softmax:
    inv = arith::DivFOp::create(b, oneF, denom);
    rowLse = arith::AddFOp::create(b, rowMax, logDenom);
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
  buildFor(b, c0, dim, [&](LocBuilder &b, Value d) {
    Value o = arith::MulFOp::create(b, memref::LoadOp::create(b, acc, d), inv);
    if (!asState)
      o = VariantHooks(variant).output(b, o, d, head);
    memref::StoreOp::create(b, castFromF32(b, o, outputElement), out,
                            ValueRange{outRow, head, d});
  });
}

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

//===----------------------------------------------------------------------===//
// States
//===----------------------------------------------------------------------===//

using StatePair = std::pair<Value, Value>; // (output f32 tensor, lse tensor)

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

/// Allocates an f32 state of `rows` rows.
std::pair<Value, Value> allocState(LocBuilder &b, int64_t heads, int64_t dim,
                                   Value rows) {
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

/// Merges each row's chunk states in chunk order (attn.merge_chunks).
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

/// Chunks of `chunkSize` keys per request (attn.uniform_chunks).
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

/// Applies the output hook and converts to `outputType`'s element type.
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

/// Casts a lowered tensor to the type the original result had (static vs
/// dynamic dimensions).
Value castTo(LocBuilder &b, Value value, Type type) {
  if (value.getType() == type)
    return value;
  return tensor::CastOp::create(b, type, value);
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

struct ConvertAttnToLoopsPass
    : flashir::impl::ConvertAttnToLoopsBase<ConvertAttnToLoopsPass> {
  void runOnOperation() override {
    SmallVector<Operation *> ops;
    getOperation().walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (isa<VariantOp>(op))
        return WalkResult::skip();
      if (isa<AttentionOp, EmptyStateOp, MakeStateOp, MergeOp, MergeChunksOp,
              UniformChunksOp, FinalizeOp>(op))
        ops.push_back(op);
      return WalkResult::advance();
    });

    llvm::DenseMap<Value, StatePair> states;
    IRRewriter rewriter(&getContext());
    for (Operation *op : ops) {
      rewriter.setInsertionPoint(op);
      LocBuilder b(op->getLoc(), rewriter);
      if (failed(lower(b, op, states)))
        return signalPassFailure();
    }

    // Every state must have been consumed by a lowered op.
    for (Operation *op : ops)
      for (Value result : op->getResults())
        if (isa<StateType, ChunkedStateType>(result.getType()))
          for (Operation *user : result.getUsers())
            if (!llvm::is_contained(ops, user)) {
              user->emitOpError("uses an !attn.state, which the CPU lowering "
                                "cannot pass across this op");
              return signalPassFailure();
            }
    for (Operation *op : llvm::reverse(ops)) {
      op->dropAllUses();
      rewriter.eraseOp(op);
    }
    // Views and ragged queries are pure and now unused.
    SmallVector<Operation *> dead;
    getOperation().walk([&](Operation *op) {
      if (isa<PagedKVOp, SharedPagedKVOp, RaggedKVOp, RaggedQOp>(op) &&
          op->use_empty())
        dead.push_back(op);
    });
    for (Operation *op : dead)
      rewriter.eraseOp(op);
    // Every use of a variant has been inlined.
    for (VariantOp variant :
         llvm::make_early_inc_range(getOperation().getOps<VariantOp>()))
      rewriter.eraseOp(variant);
  }

  LogicalResult lower(LocBuilder &b, Operation *op,
                      llvm::DenseMap<Value, StatePair> &states) {
    auto lookupState = [&](Value value) -> FailureOr<StatePair> {
      auto it = states.find(value);
      if (it == states.end())
        return op->emitOpError("the CPU lowering needs this state to be "
                               "produced by an attn op in the same function");
      return it->second;
    };

    if (auto attention = dyn_cast<AttentionOp>(op)) {
      if (int64_t n = attention.getViews().size();
          n > flashir::kMaxLoopLoweringViews)
        return op->emitOpError("attends to ")
               << n << " views; the CPU lowering unrolls views and takes at "
               << "most " << flashir::kMaxLoopLoweringViews;
      VariantOp variant = resolveVariant(op, attention.getVariantAttr());
      FailureOr<RaggedQOp> queries = getQueries(op, attention.getQueries());
      FailureOr<SmallVector<View>> views = getViews(op, attention.getViews());
      if (failed(queries) || failed(views))
        return failure();
      AttentionLowering lowering(attention, variant, *views, *queries);
      if (attention.returnsState() || attention.getChunkIndptr()) {
        states[attention.getResult(0)] =
            lowering.emit(b, /*asState=*/true, b.getF32Type());
        return success();
      }
      auto outType = cast<RankedTensorType>(attention.getResult(0).getType());
      auto [out, lse] =
          lowering.emit(b, /*asState=*/false, outType.getElementType());
      attention.getResult(0).replaceAllUsesWith(castTo(b, out, outType));
      attention.getResult(1).replaceAllUsesWith(
          castTo(b, lse, attention.getResult(1).getType()));
      return success();
    }
    if (auto empty = dyn_cast<EmptyStateOp>(op)) {
      states[empty] = emitEmptyState(b, empty.getType(), empty.getRows());
      return success();
    }
    if (auto make = dyn_cast<MakeStateOp>(op)) {
      auto dynamic = [&](Value v) {
        auto type = cast<RankedTensorType>(v.getType());
        SmallVector<int64_t> shape(type.getShape());
        shape[0] = ShapedType::kDynamic;
        return castTo(b, v,
                      RankedTensorType::get(shape, type.getElementType()));
      };
      states[make] = {dynamic(make.getOutput()), dynamic(make.getLse())};
      return success();
    }
    if (auto chunks = dyn_cast<UniformChunksOp>(op)) {
      FailureOr<SmallVector<View>> views = getViews(op, chunks.getViews());
      if (failed(views))
        return failure();
      if (llvm::all_of(*views, [](const View &v) { return v.shared; }))
        return op->emitOpError("the CPU lowering needs a per-request view to "
                               "know the number of requests");
      SmallVector<Value> arrays =
          emitUniformChunks(b, *views, chunks.getChunkSize());
      for (auto [result, array] : llvm::zip_equal(chunks.getResults(), arrays))
        result.replaceAllUsesWith(array);
      return success();
    }
    if (auto mergeChunks = dyn_cast<MergeChunksOp>(op)) {
      VariantOp variant =
          resolveVariant(op, mergeChunks.getType().getVariant());
      FailureOr<RaggedQOp> queries = getQueries(op, mergeChunks.getQueries());
      if (failed(queries))
        return failure();
      FailureOr<StatePair> parts = lookupState(mergeChunks.getParts());
      if (failed(parts))
        return failure();
      states[mergeChunks] =
          emitMergeChunks(b, mergeChunks.getType(), variant.getReduction(),
                          *parts, queries->getQoIndptr(), queries->getQueries(),
                          mergeChunks.getChunkIndptr());
      return success();
    }
    if (auto merge = dyn_cast<MergeOp>(op)) {
      if (int64_t n = merge.getStates().size();
          n > flashir::kMaxLoopLoweringMergeStates)
        return op->emitOpError("merges ")
               << n << " states; the CPU lowering unrolls merges and takes at "
               << "most " << flashir::kMaxLoopLoweringMergeStates;
      VariantOp variant = resolveVariant(op, merge.getType().getVariant());
      FailureOr<StatePair> acc = lookupState(merge.getStates().front());
      if (failed(acc))
        return failure();
      StatePair merged = *acc;
      for (Value next : merge.getStates().drop_front()) {
        FailureOr<StatePair> rhs = lookupState(next);
        if (failed(rhs))
          return failure();
        merged =
            emitMerge(b, merge.getType(), variant.getReduction(), merged, *rhs);
      }
      states[merge] = merged;
      return success();
    }
    auto finalize = cast<FinalizeOp>(op);
    StateType type = finalize.getState().getType();
    FailureOr<StatePair> state = lookupState(finalize.getState());
    if (failed(state))
      return failure();
    VariantOp variant = resolveVariant(op, type.getVariant());
    Value out =
        emitFinalize(b, variant, type, *state,
                     cast<RankedTensorType>(finalize.getOutput().getType()));
    finalize.getOutput().replaceAllUsesWith(out);
    finalize.getLse().replaceAllUsesWith(
        castTo(b, state->second, finalize.getLse().getType()));
    return success();
  }
};

} // namespace
