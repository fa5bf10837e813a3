//===- MmaSyncDecodeFamily.cpp - the tensor-core decode kernel ------------===//
//
// The decode kernel on tensor cores (TensorCoreDecode.cpp): the module's
// design when the chip has bf16 mma.sync and cp.async. Under design=auto it
// passes on to the CUDA-core kernel the attentions it cannot serve but that
// one can: rings that do not fit even with two stages, and shapes past its
// register budget.
//
//===----------------------------------------------------------------------===//

#include "../KernelFamily.h"

#include "flashir/ABI/KernelABI.h"

using namespace mlir;
using namespace flashir::conversion::families;
using namespace flashir::conversion::kernels;
namespace abi = flashir::abi;
using flashir::KernelDesign;

namespace {

class MmaSyncDecodeFamily final : public KernelFamily {
public:
  StringRef name() const override { return "mma-sync-decode"; }
  KernelKind kind() const override { return KernelKind::Decode; }

  Match match(const KernelOptions &options, KernelPlan &plan) const override {
    if (!options.tensorCores)
      return Match::skip("the module's decode design is CUDA cores");
    if (plan.shape.numViews > 1)
      return Match::skip("several KV views");
    KernelShape &s = plan.shape;
    s.tensorCores = true;
    // warps=-1: lanes holding two row halves (g > 8) keep twice the
    // accumulators and score fragments; two warps per CTA serve such groups
    // faster than four (bench/results, 2026-12-03 sixteenth session).
    if (options.warpsByShape &&
        TensorCoreDecodeLayout(s.headDim, s.group).rowHalves > 1)
      s.warps = 2;
    s.bulkCopy = options.bulkCopy;
    s.tensorCopy = options.tensorMaps && tensorCopies(plan.variant, s);
    bool autoDesign = options.design == KernelDesign::Auto;
    // design=auto: the CUDA-core kernel where not even two stages fit.
    // Before the shape check: where neither kernel serves the shape, the
    // CUDA-core kernel's reason is the one reported.
    KernelShape ring = s;
    ring.stages = ringStages(options, s);
    if (autoDesign && options.stagesByChip &&
        sharedMemoryBytes(ring) > options.chip->maxSharedMemoryPerBlock)
      return Match::skip("not even a two-stage ring fits");
    std::string why = decodeShapeReason(s.headDim, s.group, true);
    if (why.empty())
      return Match::serve();
    if (autoDesign && decodeShapeReason(s.headDim, s.group, false).empty())
      return Match::skip(why);
    return Match::fail(why);
  }

  std::string budget(const KernelOptions &options,
                     KernelPlan &plan) const override {
    plan.shape.stages = ringStages(options, plan.shape);
    int64_t bytes = sharedMemoryBytes(plan.shape),
            limit = options.chip->maxSharedMemoryPerBlock;
    if (bytes > limit)
      return sharedMemoryReason(options, limit,
                                std::to_string(plan.shape.warps) +
                                    " warps need " + std::to_string(bytes) +
                                    " bytes here (use fewer warps, stages "
                                    "or unroll)");
    // Dynamic shared memory, up to the chip's limit.
    plan.dynamicSharedBytes = bytes;
    return "";
  }

  LaunchAttr launch(const KernelPlan &plan, ArrayAttr args,
                    FlatSymbolRefAttr mergeKernel) const override {
    const KernelShape &s = plan.shape;
    AttentionOp op = plan.op;
    MLIRContext *ctx = op.getContext();
    // The box of the host's tensor maps over the K and V pools
    // (abi::kvTensorMap's dimensions).
    DenseI64ArrayAttr box;
    if (s.tensorCopy)
      box = DenseI64ArrayAttr::get(
          ctx,
          s.access.tensorMapBox(kTileKeys, tensorCopyBoxColumns(s.headDim)));
    abi::Grid grid = abi::gridOf(abi::KernelKind::Decode, s.chunked,
                                 /*perKvHead=*/true);
    return LaunchAttr::get(
        ctx, kind(), grid.str(), 32 * s.warps, op.getVariantAttr(), args,
        mergeKernel, s.stages, s.unroll, /*tensorCores=*/true, s.bulkCopy, box,
        plan.dynamicSharedBytes, /*qRows=*/0, /*qTokens=*/0, /*kvTile=*/0,
        /*programmaticWait=*/false,
        /*completesAfterPredecessor=*/dependentSplit(s), /*persistent=*/false);
  }

private:
  /// Whether the kernel can stage the view's tiles with tensor copies:
  /// tiles within pages, and a key hook's partners in the lane's own pieces
  /// (the kernel reads other columns of a staged tile unswizzled).
  static bool tensorCopies(VariantOp variant, const KernelShape &s) {
    return s.access.tensorMapTiles(kTileKeys) &&
           (variant.getKey().empty() || s.headDim % 64 == 0);
  }

  /// The ring's stages: the option's, or with stages=-1 the deepest from
  /// the default down to two that fits the chip (large tiles get fewer).
  static int64_t ringStages(const KernelOptions &options, KernelShape s) {
    s.stages = options.stages;
    if (!options.stagesByChip)
      return s.stages;
    while (s.stages > 2 &&
           sharedMemoryBytes(s) > options.chip->maxSharedMemoryPerBlock)
      --s.stages;
    return s.stages;
  }
};

} // namespace

const KernelFamily &flashir::conversion::families::mmaSyncDecodeFamily() {
  static const MmaSyncDecodeFamily family;
  return family;
}
