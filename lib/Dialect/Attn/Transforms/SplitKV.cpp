//===- SplitKV.cpp - split keys into chunks merged in order ---------------===//

#include "flashir/Dialect/Attn/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace flashir::attn {
#define GEN_PASS_DEF_ATTNSPLITKV
#include "flashir/Dialect/Attn/Transforms/Passes.h.inc"
} // namespace flashir::attn

using namespace mlir;
using namespace flashir::attn;

namespace {
struct SplitKVPass : flashir::attn::impl::AttnSplitKVBase<SplitKVPass> {
  using AttnSplitKVBase::AttnSplitKVBase;

  void runOnOperation() override {
    if (chunkSize < 0) {
      getOperation().emitError("attn-split-kv: chunk-size must be >= 0 (0: "
                               "runtime chunks), got ")
          << static_cast<int64_t>(chunkSize);
      return signalPassFailure();
    }
    SmallVector<AttentionOp> ops;
    getOperation().walk([&](AttentionOp op) {
      if (!op.getChunkIndptr())
        ops.push_back(op);
    });
    for (AttentionOp op : ops)
      if (failed(split(op)))
        return signalPassFailure();
  }

  LogicalResult split(AttentionOp op) {
    // The verifier resolved the variant already.
    VariantOp variant = resolveVariant(op, op.getVariantAttr());
    if (!variant.isMergeable())
      return op.emitOpError("cannot split the keys of variant '")
             << op.getVariant() << "': reduction '"
             << stringifyReductionKind(variant.getReduction())
             << "' has no merge rule";
    OpBuilder b(op);
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    auto indexArray =
        RankedTensorType::get({ShapedType::kDynamic}, b.getI32Type());

    // The chunk arrays: computed from the views, or supplied at run time.
    Value indptr, starts, ends;
    if (chunkSize > 0) {
      auto chunks = UniformChunksOp::create(
          b, loc, indexArray, indexArray, indexArray, op.getViews(),
          b.getI64IntegerAttr(static_cast<int64_t>(chunkSize)));
      indptr = chunks.getChunkIndptr();
      starts = chunks.getChunkStarts();
      ends = chunks.getChunkEnds();
    } else {
      auto func = op->getParentOfType<func::FuncOp>();
      if (!func || op->getParentOp() != func.getOperation())
        return op.emitOpError("runtime chunks need the attention directly in "
                              "a func.func, whose arguments carry them");
      Block &entry = func.getBody().front();
      // One chunk plan per function: every split attention in it reads the
      // same planner arguments (chunk bounds are key positions, so they
      // apply to any subset of the views).
      static const char *const kNames[] = {"chunk_indptr", "chunk_starts",
                                           "chunk_ends"};
      Value existing[3];
      for (unsigned i = 0; i < func.getNumArguments(); ++i)
        if (auto name = func.getArgAttrOfType<StringAttr>(i, "attn.planner"))
          for (unsigned k = 0; k < 3; ++k)
            if (name.getValue() == kNames[k])
              existing[k] = entry.getArgument(i);
      if (existing[0] && existing[1] && existing[2]) {
        indptr = existing[0];
        starts = existing[1];
        ends = existing[2];
        return rewrite(op, indptr, starts, ends);
      }
      unsigned first = func.getNumArguments();
      SmallVector<Type> argTypes(3, indexArray);
      SmallVector<DictionaryAttr> argAttrs(3, DictionaryAttr::get(ctx));
      SmallVector<Location> locs(3, loc);
      if (failed(func.insertArguments({first, first, first}, argTypes, argAttrs,
                                      locs)))
        return failure();
      indptr = entry.getArgument(first);
      starts = entry.getArgument(first + 1);
      ends = entry.getArgument(first + 2);
      // Name the arguments for the host side (the planner fills them).
      for (unsigned i = 0; i < 3; ++i)
        func.setArgAttr(first + i, "attn.planner",
                        StringAttr::get(ctx, kNames[i]));
    }

    return rewrite(op, indptr, starts, ends);
  }

  /// Replaces `op` by its chunked form over the given chunk arrays.
  LogicalResult rewrite(AttentionOp op, Value indptr, Value starts,
                        Value ends) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    RaggedQType q = op.getQueries().getType();
    auto partsType = ChunkedStateType::get(ctx, q.getNumHeads(), q.getHeadDim(),
                                           op.getVariantAttr());
    auto chunked = AttentionOp::create(
        b, loc, TypeRange{partsType}, op.getQueries(), op.getViews(),
        op.getParams(), indptr, starts, ends, op.getVariantAttr(),
        op.getScaleAttr(), op.getNumQoHeadsAttr(), op.getNumKvHeadsAttr(),
        op.getAttendedViewsAttr(), op.getFusedHeadGroupsAttr(),
        op.getTilesAttr());

    auto stateType = StateType::get(ctx, q.getNumHeads(), q.getHeadDim(),
                                    op.getVariantAttr());
    Value merged = MergeChunksOp::create(
        b, loc, stateType, chunked.getResult(0), op.getQueries(), indptr);
    replaceAttentionWithState(b, op, merged);
    return success();
  }
};
} // namespace
