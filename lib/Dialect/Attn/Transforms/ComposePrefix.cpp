//===- ComposePrefix.cpp - shared prefix + suffixes, merged ---------------===//

#include "flashir/Dialect/Attn/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace flashir::attn {
#define GEN_PASS_DEF_ATTNCOMPOSEPREFIX
#include "flashir/Dialect/Attn/Transforms/Passes.h.inc"
} // namespace flashir::attn

using namespace mlir;
using namespace flashir::attn;

namespace {

/// Whether `op` reads a shared prefix followed by suffix views and has not
/// been split already.
bool isComposable(AttentionOp op) {
  return op.getViews().size() >= 2 &&
         op.getViews().front().getDefiningOp<SharedPagedKVOp>() &&
         !op.getAttendedViews() && !op.getChunkIndptr() &&
         (op.returnsState() || op.getNumResults() == 2);
}

struct ComposePrefixPass
    : flashir::attn::impl::AttnComposePrefixBase<ComposePrefixPass> {
  void runOnOperation() override {
    SmallVector<AttentionOp> candidates;
    getOperation().walk([&](AttentionOp op) {
      if (isComposable(op))
        candidates.push_back(op);
    });
    for (AttentionOp op : candidates)
      if (failed(compose(op)))
        return signalPassFailure();
  }

  LogicalResult compose(AttentionOp op) {
    // The verifier resolved the variant already.
    VariantOp variant = resolveVariant(op, op.getVariantAttr());
    if (!variant.isMergeable())
      return op.emitOpError("cannot compose a shared prefix: variant '")
             << op.getVariant() << "' has reduction '"
             << stringifyReductionKind(variant.getReduction())
             << "', which has no merge rule";
    OpBuilder b(op);
    MLIRContext *ctx = op.getContext();
    RaggedQType q = op.getQueries().getType();
    auto stateType = StateType::get(ctx, q.getNumHeads(), q.getHeadDim(),
                                    op.getVariantAttr());
    size_t numViews = op.getViews().size();
    // Part 0 attends the prefix, part 1 the suffixes; both count every view
    // for positions, so causal masks and position hooks see the true
    // positions.
    SmallVector<Value> parts;
    for (int part = 0; part < 2; ++part) {
      SmallVector<bool> attended(numViews, part == 1);
      attended[0] = part == 0;
      // Same operands and attributes, one state result.
      OperationState state(op.getLoc(), AttentionOp::getOperationName());
      state.addOperands(op->getOperands());
      state.addAttributes(op->getAttrs());
      state.addTypes(stateType);
      auto partOp = cast<AttentionOp>(b.create(state));
      partOp.setAttendedViews(attended);
      parts.push_back(partOp.getResult(0));
    }
    Value merged = MergeOp::create(b, op.getLoc(), stateType, parts);
    replaceAttentionWithState(b, op, merged);
    return success();
  }
};
} // namespace
