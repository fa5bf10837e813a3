//===- SplitMergeFamily.cpp - the split-KV merge kernel -------------------===//
//
// The kernel that merges a split kernel's chunk states and finalizes the
// rows (KernelBuilder::buildMerge): one per split attention, built by the
// split kernel's generator and named by its launch facts (merge_kernel).
//
//===----------------------------------------------------------------------===//

#include "../KernelFamily.h"

#include "flashir/ABI/KernelABI.h"

using namespace mlir;
using namespace flashir::conversion::families;
using namespace flashir::conversion::kernels;
namespace abi = flashir::abi;

namespace {

class SplitMergeFamily final : public KernelFamily {
public:
  StringRef name() const override { return "split-merge"; }
  KernelKind kind() const override { return KernelKind::Merge; }

  /// `plan`: the split kernel's.
  Match match(const KernelOptions &, KernelPlan &plan) const override {
    if (!plan.shape.chunked)
      return Match::skip("not split");
    return Match::serve();
  }

  std::string budget(const KernelOptions &, KernelPlan &plan) const override {
    // A static buffer of its lane groups' states: at most 16 x (256 + 4)
    // f32, far below the 48 KiB of static shared memory.
    plan.dynamicSharedBytes = 0;
    return "";
  }

  gpu::GPUFuncOp build(OpBuilder &moduleBuilder, KernelBuilder &generator,
                       const KernelPlan &plan) const override {
    return generator.buildMerge(moduleBuilder, plan.symbolName(kind()));
  }

  LaunchAttr launch(const KernelPlan &plan, ArrayAttr args,
                    FlatSymbolRefAttr) const override {
    const KernelShape &s = plan.shape;
    AttentionOp op = plan.op;
    int64_t block =
        s.headDim / kVec * mergeGroups(s.headDim, s.prefillRows > 0);
    abi::Grid grid = abi::gridOf(abi::KernelKind::Merge, /*split=*/false,
                                 /*perKvHead=*/false);
    // With a dependent launch it waits for the split kernel itself.
    return LaunchAttr::get(
        op.getContext(), kind(), grid.str(), block, op.getVariantAttr(), args,
        FlatSymbolRefAttr(), /*stages=*/0,
        /*unroll=*/0, /*tensorCores=*/false, /*bulkCopy=*/false,
        DenseI64ArrayAttr(), plan.dynamicSharedBytes, /*qRows=*/0,
        /*qTokens=*/0, /*kvTile=*/0,
        /*programmaticWait=*/dependentSplit(s),
        /*completesAfterPredecessor=*/false, /*persistent=*/false);
  }
};

} // namespace

const KernelFamily &flashir::conversion::families::splitMergeFamily() {
  static const SplitMergeFamily family;
  return family;
}
