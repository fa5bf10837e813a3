//===- MmaSyncPrefillFamily.cpp - the tensor-core prefill kernel ----------===//
//
// The prefill kernel (Prefill/PrefillKernel.cpp) for attentions whose tiles
// (attn-select-tiles) take 16 or more query rows: tiles.q rows per CTA (32
// per warp where tiles.warps asks exactly that, else 16), K/V tiles of
// tiles.kv keys. On sm_80+ with tensor cores; on sm_75 (no cp.async, no bf16
// products) for f16, with m16n8k8 products and one synchronously filled K/V
// slot. Split-KV attentions only with split-prefill: fused decode head
// groups have 16-row tiles too, and the runtime's split runner launches
// decode grids only. First in priority; it claims every attention it
// matches.
//
//===----------------------------------------------------------------------===//

#include "../KernelFamily.h"
#include "../Parts/PackedBitMask.h"

#include "flashir/ABI/KernelABI.h"

using namespace mlir;
using namespace flashir::conversion::families;
using namespace flashir::conversion::kernels;
namespace abi = flashir::abi;
using flashir::KernelDesign;

namespace {

class MmaSyncPrefillFamily final : public KernelFamily {
public:
  StringRef name() const override { return "mma-sync-prefill"; }
  KernelKind kind() const override { return KernelKind::Prefill; }

  Match match(const KernelOptions &options, KernelPlan &plan) const override {
    KernelShape &s = plan.shape;
    bool turing = !options.chip->hasCpAsync &&
                  options.design != KernelDesign::Simt && s.element.isF16();
    TileConfigAttr tiles = plan.op.getTilesAttr();
    if (!tiles || tiles.getQ() < 16)
      return Match::skip("tiles of fewer than 16 query rows");
    if (!options.chip->hasBF16 && s.element.isBF16())
      return Match::skip("bf16 prefill tiles need sm_80 or newer (sm_75's "
                         "tensor cores take f16)");
    if (!options.tensorCores && !turing)
      return Match::skip("no tensor-core prefill on this chip and design");
    if (s.chunked && !options.splitPrefill)
      return Match::skip("split-KV without split-prefill");
    s.tensorCores = true;
    s.turing = turing;
    s.prefillRows = tiles.getQ();
    s.kvTile = tiles.getKv();
    s.warps = tiles.getWarps() * 32 == s.prefillRows ? tiles.getWarps()
                                                     : s.prefillRows / 16;
    // Head groups fuse where a tile holds whole tokens' groups.
    s.fusedHeadGroups =
        plan.op.getFusedHeadGroups() && s.prefillRows % s.group == 0;
    s.prefillQShared = tiles.getQShared();
    std::string why = prefillShapeReason(s.headDim, s.group);
    return why.empty() ? Match::serve() : Match::fail(why);
  }

  std::string budget(const KernelOptions &options,
                     KernelPlan &plan) const override {
    KernelShape &s = plan.shape;
    // One stage on sm_80+: one K and one V slot, staggered.
    s.stages = s.turing ? 1 : plan.op.getTilesAttr().getStages();
    int64_t bytes = prefillSharedMemoryBytes(
        s.kvTile, s.headDim, s.stages, s.element.getIntOrFloatBitWidth() / 8,
        s.prefillRows, s.warps, s.prefillQShared);
    // A packed-bit mask's tile classes sit in static shared memory.
    int64_t classBytes =
        s.numViews == 1 && flashir::conversion::parts::matchPackedBitMask(
                               plan.variant.getMask())
            ? flashir::conversion::parts::kTileClassBytes
            : 0;
    int64_t limit = options.chip->maxSharedMemoryPerBlock;
    if (bytes + classBytes > limit)
      return sharedMemoryReason(options, limit,
                                "the prefill tiles need " +
                                    std::to_string(bytes + classBytes) +
                                    " (select smaller kv tiles or fewer "
                                    "stages)");
    plan.dynamicSharedBytes = bytes;
    return "";
  }

  LaunchAttr launch(const KernelPlan &plan, ArrayAttr args,
                    FlatSymbolRefAttr mergeKernel) const override {
    const KernelShape &s = plan.shape;
    AttentionOp op = plan.op;
    abi::Grid grid =
        abi::gridOf(abi::KernelKind::Prefill, s.chunked, s.fusedHeadGroups);
    int64_t qTokens =
        s.fusedHeadGroups ? s.prefillRows / s.group : s.prefillRows;
    // A split prefill kernel waits in every CTA before its first access.
    bool dependent = dependentSplit(s);
    return LaunchAttr::get(
        op.getContext(), kind(), grid.str(), 32 * s.warps, op.getVariantAttr(),
        args, mergeKernel, s.stages, s.unroll,
        /*tensorCores=*/true, /*bulkCopy=*/false, DenseI64ArrayAttr(),
        plan.dynamicSharedBytes, s.prefillRows, qTokens, s.kvTile,
        /*programmaticWait=*/dependent,
        /*completesAfterPredecessor=*/dependent, /*persistent=*/false);
  }
};

} // namespace

const KernelFamily &flashir::conversion::families::mmaSyncPrefillFamily() {
  static const MmaSyncPrefillFamily family;
  return family;
}
