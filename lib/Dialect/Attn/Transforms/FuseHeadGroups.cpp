//===- FuseHeadGroups.cpp - fold GQA head groups into rows ----------------===//

#include "flashir/Dialect/Attn/Transforms/Passes.h"

namespace flashir::attn {
#define GEN_PASS_DEF_ATTNFUSEHEADGROUPS
#include "flashir/Dialect/Attn/Transforms/Passes.h.inc"
} // namespace flashir::attn

using namespace mlir;
using namespace flashir::attn;

namespace {
struct FuseHeadGroupsPass
    : flashir::attn::impl::AttnFuseHeadGroupsBase<FuseHeadGroupsPass> {
  void runOnOperation() override {
    getOperation().walk([](AttentionOp op) {
      // With g = 1 every row already has a KV head of its own.
      if (op.getNumQoHeads() > op.getNumKvHeads())
        op.setFusedHeadGroups(true);
    });
  }
};
} // namespace
