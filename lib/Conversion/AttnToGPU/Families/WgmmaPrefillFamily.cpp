//===- WgmmaPrefillFamily.cpp - the sm_90a wgmma prefill kernel -----------===//
//
// The warp-specialized prefill kernel (Hopper/HopperPrefillKernel.cpp) for
// design=wgmma, and design=auto where the tiles take 128 query rows, on
// sm_90a: CTAs of 128 query rows (two consumer warpgroups and a producer),
// K/V tiles of 128 keys (64 at head dim 256), or for softmax without hooks
// but the causal mask at head dim 64 256 rows (four consumers) and 64-key
// tiles (fourConsumerShape),
// by tensor copies in a ring of as many stages (2-4) as shared memory
// holds. It serves what its milestones cover (docs/HopperPrefillPlan.md, M1-M4,
// M7): f16 and bf16, head dims 64, 128 and 256, one view, split-KV (with
// split-prefill, as the mma.sync family), fused head groups of a size
// dividing the CTA's rows, every hook and the softmax and sigmoid reductions,
// ragged keys and pages of any size (tensor-copy boxes where pages of a
// multiple of 8 keys hold or divide the tiles, else the producer's cp.async
// gather). It passes every other attention on to the mma.sync prefill
// family, never failing one it could serve. design=auto leaves query and
// key hooks, and gathers (no tensor maps, or pages the boxes cannot tile
// of a size not a power of two) to that family, where it measured as fast
// or faster; gathered power-of-two pages (page 1 included) take this one.
//
//===----------------------------------------------------------------------===//

#include "../Hopper/HopperPrefillBuilder.h"
#include "../KernelFamily.h"
#include "../Parts/CausalMask.h"

#include "flashir/ABI/KernelABI.h"

#include <optional>

using namespace mlir;
using namespace flashir::conversion::families;
using namespace flashir::conversion::kernels;
namespace abi = flashir::abi;
namespace hopper = flashir::conversion::hopper;
namespace parts = flashir::conversion::parts;
using flashir::KernelDesign;

namespace {

/// Query rows of the two-consumer CTA (the four-consumer one takes twice).
constexpr int64_t kQRows = 2 * hopper::kRowsPerConsumer;
/// The deepest K/V ring the family builds; budget() takes the deepest that
/// fits (or the stages option where it is given).
constexpr int64_t kMaxStages = 4;

/// Keys per K/V tile of the two-consumer kernel: 128, or 64 at head dim 256
/// (two stages of 128-key tiles would not fit beside the 64 KB Q tile).
/// The four-consumer kernel takes 64 (fourConsumerShape).
int64_t kvTileFor(int64_t headDim) { return headDim > 128 ? 64 : 128; }

/// Keys per tensor-copy box over the shape's pools (see HopperPrefillBuilder).
int64_t boxRows(const KernelShape &s) {
  return s.access.ragged ? s.kvTile : std::min(s.pageSize, s.kvTile);
}

/// Tag the skip reasons design=auto gives where the mma.sync kernel measured
/// as fast or faster (bench/results/README.md, 2026-12-05).
constexpr const char *kMmaSyncFaster = " (the mma.sync kernel is as fast or "
                                       "faster there)";

/// Whether the kernel runs persistent CTAs: persistent-prefill=auto picks
/// them at head dim 64 with tensor copies, where they measured 9-11% faster
/// causal and within 3% plain, unless the kernel takes four consumers
/// instead (`wide`); at 128 and 256 one CTA per q tile measured 3-8% faster
/// (bench/results/README.md, 2026-12-05), at 128 within 3% either way since
/// the per-row key bounds (2026-12-06). The gather's producer computes
/// addresses and would spill its per-tile frame.
bool usesPersistentCtas(flashir::PersistentPrefill option, int64_t headDim,
                        bool gather, bool wide) {
  if (option == flashir::PersistentPrefill::Auto)
    return headDim <= 64 && !gather && !wide;
  return option == flashir::PersistentPrefill::On;
}

class WgmmaPrefillFamily final : public KernelFamily {
public:
  StringRef name() const override { return "wgmma-prefill"; }
  KernelKind kind() const override { return KernelKind::Prefill; }

  Match match(const KernelOptions &options, KernelPlan &plan) const override {
    KernelShape &s = plan.shape;
    TileConfigAttr tiles = plan.op.getTilesAttr();
    if (!tiles || tiles.getQ() < 16)
      return Match::skip("not a prefill attention");
    // design=auto picks the kernel by chip: this one where wgmma exists.
    bool autoHere =
        options.design == KernelDesign::Auto && options.chip->hasWgmma;
    if (options.design != KernelDesign::Wgmma && !autoHere)
      return Match::skip("design is neither wgmma nor auto on sm_90a");
    // Tiles chosen for fewer rows (attn-select-tiles sizes q for the
    // expected query rows: decode attentions with fused head groups get
    // 16) would leave most of the 128-row CTA idle; auto keeps them on the
    // mma.sync kernel's smaller CTAs.
    if (autoHere && tiles.getQ() < kQRows)
      return Match::skip("design=auto and tiles of fewer than 128 query "
                         "rows");
    if (!options.chip->hasWgmma)
      return Match::fail("sm_90a (wgmma.mma_async and tensor copies) for "
                         "design=wgmma; " +
                         options.chipName + " has neither");
    if (std::string why = unservedReason(plan); !why.empty())
      return Match::skip(why);
    if (autoHere && hasRowHooks(plan.variant))
      return Match::skip(std::string("design=auto and query or key hooks") +
                         kMmaSyncFaster);
    // The runtime's split runner launches decode grids unless asked for
    // split prefill kernels.
    if (s.chunked && !options.splitPrefill)
      return Match::skip("split-KV without split-prefill");
    s.tensorCores = true;
    s.wgmma = true;
    s.prefillRows = kQRows;
    s.kvTile = kvTileFor(s.headDim);
    // Tensor-copy boxes, or the producer's cp.async gather.
    bool gather = hopper::gathersKeys(s, options.tensorMaps);
    // The gather of power-of-two pages keeps several rows in flight
    // (gatherPasses); other sizes issue one row at a time.
    if (autoHere && gather &&
        (!options.tensorMaps || hopper::gatherPasses(s.pageSize) == 1))
      return Match::skip(std::string("design=auto and a gather (no tensor "
                                     "maps, or pages tensor-copy boxes "
                                     "cannot tile of a size not a power "
                                     "of two)") +
                         kMmaSyncFaster);
    std::optional<KernelShape> wide =
        fourConsumerShape(s, plan.variant, gather);
    s.persistent = usesPersistentCtas(options.persistentPrefill, s.headDim,
                                      gather, wide.has_value());
    if (wide && !s.persistent)
      s = *wide;
    s.bulkCopy = !gather;
    s.tensorCopy = !gather;
    s.groupedRing = !gather && s.access.tensorMapGroups(s.kvTile);
    s.warps = (1 + s.consumers) * 4;
    // Head groups fuse where a tile holds whole tokens' groups.
    s.fusedHeadGroups =
        plan.op.getFusedHeadGroups() && s.prefillRows % s.group == 0;
    return Match::serve();
  }

  std::string budget(const KernelOptions &options,
                     KernelPlan &plan) const override {
    KernelShape &s = plan.shape;
    int64_t limit = options.chip->maxSharedMemoryPerBlock;
    auto bytesFor = [&](int64_t stages) {
      return hopper::hopperPrefillSharedBytes(
          s.prefillRows, s.kvTile, s.headDim, stages,
          s.element.getIntOrFloatBitWidth() / 8);
    };
    s.stages = options.stagesByChip ? kMaxStages : options.stages;
    if (options.stagesByChip)
      while (s.stages > 2 && bytesFor(s.stages) > limit)
        --s.stages;
    int64_t bytes = bytesFor(s.stages);
    if (bytes > limit)
      return sharedMemoryReason(options, limit,
                                "the wgmma prefill tiles need " +
                                    std::to_string(bytes) + " with " +
                                    std::to_string(s.stages) + " stages");
    plan.dynamicSharedBytes = bytes;
    return "";
  }

  LaunchAttr launch(const KernelPlan &plan, ArrayAttr args,
                    FlatSymbolRefAttr mergeKernel) const override {
    const KernelShape &s = plan.shape;
    AttentionOp op = plan.op;
    MLIRContext *ctx = op.getContext();
    abi::Grid grid =
        abi::gridOf(abi::KernelKind::Prefill, s.chunked, s.fusedHeadGroups);
    int64_t qTokens =
        s.fusedHeadGroups ? s.prefillRows / s.group : s.prefillRows;
    // A split kernel waits in every CTA before its first access.
    bool dependent = dependentSplit(s);
    // The gather reads no tensor maps.
    DenseI64ArrayAttr box;
    if (s.groupedRing)
      box = DenseI64ArrayAttr::get(ctx, s.access.tensorMapGroupBox(s.kvTile));
    else if (s.tensorCopy)
      box = DenseI64ArrayAttr::get(
          ctx,
          s.access.tensorMapBox(boxRows(s), tensorCopyBoxColumns(s.headDim)));
    return LaunchAttr::get(
        ctx, kind(), grid.str(), 32 * s.warps, op.getVariantAttr(), args,
        mergeKernel, s.stages, s.unroll, /*tensorCores=*/true, s.bulkCopy, box,
        plan.dynamicSharedBytes, s.prefillRows, qTokens, s.kvTile,
        /*programmaticWait=*/dependent,
        /*completesAfterPredecessor=*/dependent, s.persistent);
  }

private:
  /// Whether the variant transforms Q or K rows: its key hook runs on every
  /// K tile in shared memory between the copy and Q.K^T, where the mma.sync
  /// kernel (RoPE d128: 2.2x) is faster; design=auto leaves those to it,
  /// explicit design=wgmma builds them here.
  static bool hasRowHooks(VariantOp v) {
    return !v.getQuery().empty() || !v.getKey().empty();
  }
  /// The shape with four consumer warpgroups (256 query rows, 64-key tiles
  /// whose S accumulators fit their 112 registers) where it serves: at head
  /// dim 64 the softmax's dependent chains leave the schedulers idle (Nsight
  /// Compute: 0.68 eligible warps each) and twice the warps measured
  /// 3.6-5.2% faster (bench/results/README.md, 2026-12-06; B4 S4096: with
  /// design=auto a short request's 256-row tile idles more than a 128-row
  /// one). Softmax without hooks (they would hold more registers) but
  /// the exact causal mask: with each warpgroup masking from its own first
  /// row the causal kernel measured 3.5% faster than the persistent
  /// two-consumer one (2026-12-07; +0.8% with CTA-wide masks); nor split or
  /// gathering kernels, whose producers need registers for addresses (a
  /// page that boxes tile at 128 keys tiles at 64 too).
  static std::optional<KernelShape>
  fourConsumerShape(const KernelShape &s, VariantOp v, bool gather) {
    bool noMaskOrCausal =
        v.getMask().empty() ||
        parts::classifyMask(v.getMask()) == parts::CausalMask::Exact;
    bool hooklessSoftmax = v.getReduction() == ReductionKind::Softmax &&
                           !hasRowHooks(v) && v.getLogits().empty() &&
                           noMaskOrCausal && v.getOutput().empty();
    if (s.headDim != 64 || s.chunked || gather || !hooklessSoftmax)
      return std::nullopt;
    KernelShape wide = s;
    wide.consumers = 4;
    wide.prefillRows = 4 * hopper::kRowsPerConsumer;
    wide.kvTile = 64;
    return wide;
  }
  /// Why the kernel does not serve the plan yet (its milestone's limits),
  /// or an empty string.
  static std::string unservedReason(const KernelPlan &plan) {
    const KernelShape &s = plan.shape;
    if (s.numViews != 1)
      return "several KV views";
    if (s.headDim != 64 && s.headDim != 128 && s.headDim != 256)
      return "head_dim other than 64, 128 and 256";
    if (!s.element.isBF16() && !s.element.isF16())
      return "elements other than f16 and bf16";
    return "";
  }
};

} // namespace

const KernelFamily &flashir::conversion::families::wgmmaPrefillFamily() {
  static const WgmmaPrefillFamily family;
  return family;
}
