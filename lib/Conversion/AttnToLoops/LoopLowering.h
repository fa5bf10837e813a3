//===- LoopLowering.h - shared parts of convert-attn-to-loops ---*- C++ -*-===//
//
// What the files of the CPU loop lowering share: the KV views and the walk
// over their keys (KeyValueAccess.cpp), the attn.attention loop nest
// (AttentionLowering.cpp), the state ops (StateLowering.cpp) and the pass
// that drives them (AttnToLoops.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef FLASHIR_LIB_CONVERSION_ATTNTOLOOPS_LOOPLOWERING_H
#define FLASHIR_LIB_CONVERSION_ATTNTOLOOPS_LOOPLOWERING_H

#include "../BuilderUtils.h"
#include "flashir/Dialect/Attn/IR/Attn.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <utility>

namespace flashir::conversion::loops {
using namespace flashir::attn;

//===----------------------------------------------------------------------===//
// Element access
//===----------------------------------------------------------------------===//

inline Value extract(LocBuilder &b, Value tensor, ValueRange indices) {
  return tensor::ExtractOp::create(b, tensor, indices);
}

/// Reads an i32 metadata entry as an index.
inline Value extractIndex(LocBuilder &b, Value tensor, Value i) {
  return arith::IndexCastOp::create(b, b.getIndexType(),
                                    extract(b, tensor, {i}));
}

/// Reads a float element and widens it to f32 (the accumulation type).
inline Value extractF32(LocBuilder &b, Value tensor, ValueRange indices) {
  Value v = extract(b, tensor, indices);
  if (v.getType().isF32())
    return v;
  if (v.getType().getIntOrFloatBitWidth() < 32)
    return arith::ExtFOp::create(b, b.getF32Type(), v);
  return arith::TruncFOp::create(b, b.getF32Type(), v);
}

/// Converts an f32 to the element type of a result.
inline Value castFromF32(LocBuilder &b, Value v, Type type) {
  if (type.isF32())
    return v;
  if (type.getIntOrFloatBitWidth() < 32)
    return arith::TruncFOp::create(b, type, v);
  return arith::ExtFOp::create(b, type, v);
}

/// A tensor view of `buffer`.
inline Value toTensor(LocBuilder &b, Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  auto tensorType =
      RankedTensorType::get(type.getShape(), type.getElementType());
  return bufferization::ToTensorOp::create(b, tensorType, buffer,
                                           /*restrict=*/true,
                                           /*writable=*/true);
}

//===----------------------------------------------------------------------===//
// KV views (KeyValueAccess.cpp)
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
  Value length(LocBuilder &b, Value req) const;

  /// Number of requests the view describes, or null for a shared view.
  Value numRequests(LocBuilder &b) const;

  /// Indices of key `j` of request `req`, KV head `head`, without the dim:
  /// computed once per key, the dim appended per element.
  SmallVector<Value> keyPrefix(LocBuilder &b, Value req, Value j,
                               Value head) const;
};

/// The views defining `values`; reports on `user` when one is not a view op
/// of the same function.
FailureOr<SmallVector<View>> getViews(Operation *user, ValueRange values);

/// The attn.ragged_q defining `value`; reports on `user` otherwise.
FailureOr<RaggedQOp> getQueries(Operation *user, Value value);

/// A half-open range of key positions [lo, hi) a chunk attends; null bounds
/// mean every key.
struct KeyRange {
  Value lo, hi;
};

/// body(b, view, j, kpos, carried): one key.
using KeyBody = function_ref<SmallVector<Value>(LocBuilder &, const View &,
                                                Value, Value, ValueRange)>;
/// body(b, view, lo, hi, viewBase, carried): a range of a view's keys.
using ViewBody = function_ref<SmallVector<Value>(
    LocBuilder &, const View &, Value, Value, Value, ValueRange)>;

//===----------------------------------------------------------------------===//
// attn.attention (AttentionLowering.cpp, key access in KeyValueAccess.cpp)
//===----------------------------------------------------------------------===//

class AttentionLowering {
public:
  AttentionLowering(AttentionOp op, VariantOp variant, ArrayRef<View> views,
                    RaggedQOp queries);

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

  /// One (query row, head) as its reduction sees it.
  struct Row {
    const Request &request;
    KeyRange range;
    Value head, qpos, kvHead;
    SmallVector<Value> params;
    Value c0, dim, zeroF, oneF; // built once per row, shared by its phases
  };

  /// A reduced row: its max logit (softmax, sparsemax) and the sum of its
  /// weights.
  struct Reduced {
    Value rowMax, denom;
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
  /// `r` within `range`, in order across the views.
  SmallVector<Value> forEachKey(LocBuilder &b, const Request &r, KeyRange range,
                                ValueRange inits, KeyBody body);
  /// Runs `viewBody(b, view, lo, hi, viewBase, carried)` for each attended
  /// view with its key range [lo, hi) (view-local) clipped to `range`.
  SmallVector<Value> forEachView(LocBuilder &b, const Request &r,
                                 KeyRange range, ValueRange inits,
                                 ViewBody viewBody);
  /// Runs `tileBody(b, view, j0, j1, viewBase, carried)` per tile of
  /// `kvTile` keys [j0, j1) of each attended view.
  SmallVector<Value> forEachTile(LocBuilder &b, const Request &r,
                                 KeyRange range, ValueRange inits,
                                 ViewBody tileBody);
  /// The loop under forEachKey and forEachTile: runs
  /// `body(b, view, j, stride, hi, viewBase, carried)` for every `step`-th
  /// key j of each attended view's range [lo, hi); `stride` is `step` as a
  /// value.
  SmallVector<Value> forEachStride(
      LocBuilder &b, const Request &r, KeyRange range, ValueRange inits,
      int64_t step,
      function_ref<SmallVector<Value>(LocBuilder &, const View &, Value, Value,
                                      Value, Value, ValueRange)>
          body);

  /// Whether key `kpos` is visible to (qpos, head); null if no mask hook.
  Value visible(LocBuilder &b, Value qpos, Value kpos, Value head,
                ArrayRef<Value> params);

  /// scale * <q', key(k)>.
  Value score(LocBuilder &b, const View &view, Value req, Value j, Value kpos,
              Value kvHead, ArrayRef<Value> params, Value qBuf);

  /// acc[d] = acc[d] * keepScale + weight * v[d].
  void accumulate(LocBuilder &b, const View &view, Value req, Value j,
                  Value kvHead, Value acc, Value keepScale, Value weight);

  /// The logit of key `kpos` of `row` (score + hook).
  Value logits(LocBuilder &b, const Row &row, const View &view, Value j,
               Value kpos);
  /// Runs `update` only for visible keys; masked keys leave the carried
  /// values `args` untouched (they are excluded, not down-weighted).
  SmallVector<Value>
  ifVisible(LocBuilder &b, const Row &row, Value kpos, ValueRange args,
            function_ref<SmallVector<Value>(LocBuilder &)> update);
  /// The logit of a key, -inf when masked.
  Value maskedLogits(LocBuilder &b, const Row &row, const View &view, Value j,
                     Value kpos);

  /// The reductions of one row over its keys, accumulating the weighted
  /// values into `acc`.
  Reduced reduceSoftmaxTiled(LocBuilder &b, const Row &row);
  Reduced reduceSoftmax(LocBuilder &b, const Row &row);
  Reduced reduceSigmoid(LocBuilder &b, const Row &row);
  Reduced reduceSparsemax(LocBuilder &b, const Row &row);

  /// Normalises `acc` and writes the row's output and lse at `outRow`.
  void storeRow(LocBuilder &b, const Row &row, Value outRow, Reduced reduced,
                bool asState, Type outputElement);

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

//===----------------------------------------------------------------------===//
// States (StateLowering.cpp)
//===----------------------------------------------------------------------===//

using StatePair = std::pair<Value, Value>; // (output f32 tensor, lse tensor)

/// `rows` rows of output 0 and lse -inf (attn.empty_state).
StatePair emitEmptyState(LocBuilder &b, StateType type, Value rows);

/// Merges two states row by row (one step of attn.merge).
StatePair emitMerge(LocBuilder &b, StateType type, ReductionKind reduction,
                    StatePair lhs, StatePair rhs);

/// Merges each row's chunk states in chunk order (attn.merge_chunks).
StatePair emitMergeChunks(LocBuilder &b, StateType type,
                          ReductionKind reduction, StatePair parts,
                          Value qoIndptr, Value rowsTensor, Value chunkIndptr);

/// Chunks of `chunkSize` keys per request (attn.uniform_chunks).
SmallVector<Value> emitUniformChunks(LocBuilder &b, ArrayRef<View> views,
                                     int64_t chunkSize);

/// Applies the output hook and converts to `outputType`'s element type.
Value emitFinalize(LocBuilder &b, VariantOp variant, StateType type,
                   StatePair state, RankedTensorType outputType);

} // namespace flashir::conversion::loops

#endif // FLASHIR_LIB_CONVERSION_ATTNTOLOOPS_LOOPLOWERING_H
