//===- AttnToLoops.cpp - attn ops to scf loop nests -----------------------===//
//
// The executable meaning of the attn dialect: each op becomes a plain loop
// nest with the variant's hooks inlined. This is the reference lowering the
// CPU path runs and later transforms are checked against; it favours being
// obviously right over being fast. This file is the pass: it lowers the attn
// ops of a function in order, threading states between them.
//
//===----------------------------------------------------------------------===//

#include "LoopLowering.h"

#include "../VariantHooks.h"
#include "flashir/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

namespace flashir {
#define GEN_PASS_DEF_CONVERTATTNTOLOOPS
#include "flashir/Conversion/Passes.h.inc"
} // namespace flashir

using namespace mlir;
using namespace flashir::attn;
using namespace flashir::conversion;
using namespace flashir::conversion::loops;

namespace {

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
