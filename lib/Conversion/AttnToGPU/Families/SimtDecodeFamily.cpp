//===- SimtDecodeFamily.cpp - the CUDA-core decode kernel -----------------===//
//
// The decode kernel on CUDA cores (SimtDecode.cpp): the module's design on
// chips without bf16 mma.sync and cp.async or with design=simt, and the
// fallback of design=auto for what the tensor-core kernel passes on. Last in
// priority: it serves every attention that reaches it, or says why not.
//
//===----------------------------------------------------------------------===//

#include "../KernelFamily.h"

#include "flashir/ABI/KernelABI.h"

using namespace mlir;
using namespace flashir::conversion::families;
using namespace flashir::conversion::kernels;
namespace abi = flashir::abi;

namespace {

/// The kernel's workgroup buffer is static: 48 KiB at most.
constexpr int64_t kStaticSharedLimit = 48 * 1024;

class SimtDecodeFamily final : public KernelFamily {
public:
  StringRef name() const override { return "simt-decode"; }
  KernelKind kind() const override { return KernelKind::Decode; }

  Match match(const KernelOptions &, KernelPlan &plan) const override {
    if (plan.shape.numViews > 1)
      return Match::fail("one KV view (over several views, tiles of 16 or "
                         "more query rows: the prefill kernel)");
    std::string why =
        decodeShapeReason(plan.shape.headDim, plan.shape.group, false);
    return why.empty() ? Match::serve() : Match::fail(why);
  }

  std::string budget(const KernelOptions &options,
                     KernelPlan &plan) const override {
    // With tensor cores as the module's design only design=auto's fallback
    // gets here (on a chip with cp.async): the stages were resolved for the
    // tensor-core kernel, this one takes its own default ring.
    plan.shape.stages = options.tensorCores ? kDefaultStages : options.stages;
    int64_t bytes = sharedMemoryBytes(plan.shape);
    if (bytes > kStaticSharedLimit)
      return sharedMemoryReason(options, kStaticSharedLimit,
                                std::to_string(options.warps) + " warps need " +
                                    std::to_string(bytes) +
                                    " bytes here (use fewer warps, stages "
                                    "or unroll)");
    plan.dynamicSharedBytes = 0;
    return "";
  }

  LaunchAttr launch(const KernelPlan &plan, ArrayAttr args,
                    FlatSymbolRefAttr mergeKernel) const override {
    const KernelShape &s = plan.shape;
    AttentionOp op = plan.op;
    abi::Grid grid = abi::gridOf(abi::KernelKind::Decode, s.chunked,
                                 /*perKvHead=*/true);
    return LaunchAttr::get(
        op.getContext(), kind(), grid.str(), 32 * s.warps, op.getVariantAttr(),
        args, mergeKernel, s.stages, s.unroll,
        /*tensorCores=*/false, /*bulkCopy=*/false, DenseI64ArrayAttr(),
        plan.dynamicSharedBytes, /*qRows=*/0, /*qTokens=*/0, /*kvTile=*/0,
        /*programmaticWait=*/false,
        /*completesAfterPredecessor=*/dependentSplit(s), /*persistent=*/false);
  }
};

} // namespace

const KernelFamily &flashir::conversion::families::simtDecodeFamily() {
  static const SimtDecodeFamily family;
  return family;
}
