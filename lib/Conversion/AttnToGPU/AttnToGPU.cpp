//===- AttnToGPU.cpp - attention to gpu.func kernels ----------------------===//
//
// The pass: checks the options against the chip, then for every
// attn.attention asks the kernel families (KernelFamily.h) in priority order
// which serves it, and adds its kernel (plus the merge kernel of a split one)
// with the launch facts the bundle manifest records. Every attention is
// planned, and every failure reported, before any kernel is built.
//
//===----------------------------------------------------------------------===//

#include "flashir/Conversion/Passes.h"

#include "KernelFamily.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "llvm/Support/Debug.h"

#include <optional>

#define DEBUG_TYPE "convert-attn-to-gpu"

namespace flashir {
#define GEN_PASS_DEF_CONVERTATTNTOGPU
#include "flashir/Conversion/Passes.h.inc"
} // namespace flashir

using namespace mlir;
using namespace flashir::attn;
using namespace flashir::conversion;
using namespace flashir::conversion::families;
using flashir::KernelDesign;
using flashir::KVCopy;

namespace {

/// An attention's kernel and, when it is split, its merge kernel.
struct PlannedKernel {
  const KernelFamily *family;
  KernelPlan plan;
  std::optional<KernelPlan> merge;
};

/// `family`'s match and then budget on `plan`.
Match consult(const KernelFamily &family, const KernelOptions &options,
              KernelPlan &plan) {
  Match match = family.match(options, plan);
  if (!match.serves())
    return match;
  std::string why = family.budget(options, plan);
  return why.empty() ? match : Match::fail(why);
}

/// `op`'s kernels from the first family that does not pass it on, or none
/// (after its diagnostic).
std::optional<PlannedKernel> planKernel(const KernelOptions &options,
                                        AttentionOp op, int64_t index) {
  auto fail = [&](KernelKind kind, StringRef why) {
    op.emitOpError("the ") << stringifyKernelKind(kind)
                           << " kernel generator needs " << why;
    return std::nullopt;
  };
  VariantOp variant = resolveVariant(op, op.getVariantAttr());
  // What no family serves; the decode kernel, the default, names it.
  std::string why = kernels::unsupportedReason(op, variant);
  if (!why.empty())
    return fail(KernelKind::Decode, why);
  KernelPlan base = planAttention(options, op, variant, index);
  // Why the prefill family passed an attention with prefill tiles on: the
  // decode kernel's refusal alone would hide it.
  TileConfigAttr tiles = op.getTilesAttr();
  bool prefillTiles = tiles && tiles.getQ() >= 16;
  std::string prefillPassed;
  for (const KernelFamily *family : attentionFamilies()) {
    KernelPlan plan = base;
    Match match = consult(*family, options, plan);
    if (match.skips()) {
      LLVM_DEBUG(llvm::dbgs()
                 << DEBUG_TYPE ": " << family->name() << " passes on "
                 << plan.symbolName(family->kind()) << ": " << match.reason
                 << "\n");
      if (family->kind() == KernelKind::Prefill && prefillTiles)
        prefillPassed = match.reason;
      continue;
    }
    if (!match.serves()) {
      std::string why = match.reason;
      if (!prefillPassed.empty() && family->kind() != KernelKind::Prefill)
        why += " (the prefill kernel passed it on: " + prefillPassed + ")";
      return fail(family->kind(), why);
    }
    PlannedKernel kernel{family, plan, std::nullopt};
    KernelPlan merge = plan;
    Match mergeMatch = consult(splitMergeFamily(), options, merge);
    if (mergeMatch.serves())
      kernel.merge = merge;
    else if (!mergeMatch.skips())
      return fail(KernelKind::Merge, mergeMatch.reason);
    return kernel;
  }
  llvm_unreachable("the CUDA-core decode family answers every attention");
}

ArrayAttr argNamesOf(OpBuilder &b, const KernelBuilder &generator) {
  return b.getStrArrayAttr(llvm::to_vector_of<StringRef>(generator.argNames));
}

/// The kernels of `kernels` in a new gpu.module @flashir_kernels, each split
/// kernel followed by its merge kernel.
void buildKernels(ModuleOp module, ArrayRef<PlannedKernel> kernels) {
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                  b.getUnitAttr());
  auto gpuModule =
      gpu::GPUModuleOp::create(b, module.getLoc(), "flashir_kernels");
  OpBuilder kb = OpBuilder::atBlockBegin(gpuModule.getBody());
  const KernelFamily &mergeFamily = splitMergeFamily();
  for (const PlannedKernel &kernel : kernels) {
    const KernelPlan &plan = kernel.plan;
    // One generator builds the split kernel and its merge kernel.
    KernelBuilder generator(plan.op, plan.variant, plan.shape);
    gpu::GPUFuncOp func = kernel.family->build(kb, generator, plan);
    kb.setInsertionPointAfter(func);
    ArrayAttr args = argNamesOf(kb, generator);
    gpu::GPUFuncOp merge;
    ArrayAttr mergeArgs;
    FlatSymbolRefAttr mergeRef;
    if (kernel.merge) {
      merge = mergeFamily.build(kb, generator, *kernel.merge);
      kb.setInsertionPointAfter(merge);
      mergeArgs = argNamesOf(kb, generator);
      mergeRef = FlatSymbolRefAttr::get(merge.getNameAttr());
    }
    func->setAttr("attn.launch", kernel.family->launch(plan, args, mergeRef));
    if (merge)
      merge->setAttr("attn.launch",
                     mergeFamily.launch(*kernel.merge, mergeArgs, {}));
  }
}

struct ConvertAttnToGPUPass
    : flashir::impl::ConvertAttnToGPUBase<ConvertAttnToGPUPass> {
  using ConvertAttnToGPUBase::ConvertAttnToGPUBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<KernelOptions> options = resolveOptions(module);
    if (!options)
      return signalPassFailure();
    SmallVector<PlannedKernel, 0> kernels;
    bool failedAny = false;
    module.walk([&](AttentionOp op) {
      std::optional<PlannedKernel> kernel =
          planKernel(*options, op, kernels.size());
      if (kernel)
        kernels.push_back(std::move(*kernel));
      failedAny |= !kernel;
    });
    if (failedAny)
      return signalPassFailure();
    if (!kernels.empty())
      buildKernels(module, kernels);
  }

  /// The options checked against each other and the chip (else a
  /// diagnostic on `module`).
  std::optional<KernelOptions> resolveOptions(ModuleOp module);
  /// The stages option for the module's decode design.
  LogicalResult resolveStages(ModuleOp module, KernelOptions &options);
};

std::optional<KernelOptions>
ConvertAttnToGPUPass::resolveOptions(ModuleOp module) {
  if ((warps != -1 && (warps < 1 || warps > 32)) || unroll < 1 || unroll > 16) {
    module.emitError("convert-attn-to-gpu: warps must be in 1..32 (or -1) "
                     "and unroll in 1..16, got warps = ")
        << static_cast<int64_t>(warps)
        << ", unroll = " << static_cast<int64_t>(unroll);
    return std::nullopt;
  }
  const flashir::target::ChipInfo *info = flashir::target::lookupChip(chip);
  if (!info) {
    module.emitError("convert-attn-to-gpu: unknown chip '")
        << chip << "'; expected one of " << flashir::target::validChipNames();
    return std::nullopt;
  }
  KernelOptions options;
  options.chip = info;
  options.chipName = chip;
  options.design = design;
  options.warpsByShape = warps == -1;
  options.warps = options.warpsByShape ? 4 : static_cast<int64_t>(warps);
  options.unroll = unroll;
  options.minBlocks = minBlocks;
  options.headsInnermost = headsInnermost;
  options.splitPrefill = splitPrefill;
  options.persistentPrefill = persistentPrefill;
  // The tensor-core kernels need bf16 mma.sync m16n8k16 and cp.async.
  bool mmaChip = info->hasCpAsync && info->hasBF16;
  options.tensorCores = options.design == KernelDesign::Auto
                            ? mmaChip
                            : options.design != KernelDesign::Simt;
  if (options.tensorCores && !mmaChip) {
    module.emitError("convert-attn-to-gpu: ")
        << chip << " has no bf16 mma.sync m16n8k16 / cp.async; design="
        << stringify(options.design)
        << " needs sm_80 or newer (use design=simt)";
    return std::nullopt;
  }
  // The copy engine: cp.async.bulk + mbarrier transaction counts (sm_90a).
  KVCopy kvCopy = copy;
  bool engineCopy = kvCopy == KVCopy::Bulk || kvCopy == KVCopy::Tma;
  options.bulkCopy =
      options.tensorCores &&
      (kvCopy == KVCopy::Auto ? info->hasMbarrierTx : engineCopy);
  if (engineCopy && (!options.tensorCores || !info->hasMbarrierTx)) {
    InFlightDiagnostic diag =
        module.emitError("convert-attn-to-gpu: copy=")
        << stringify(kvCopy)
        << " needs the mma-sync design on a chip with cp.async.bulk "
           "(sm_90a); ";
    if (info->hasMbarrierTx)
      diag << "design=simt uses CUDA cores";
    else
      diag << chip << " has none";
    return std::nullopt;
  }
  // Tensor maps for pages of whole tiles, unless only row copies are asked.
  options.tensorMaps = options.bulkCopy && kvCopy != KVCopy::Bulk;
  if (failed(resolveStages(module, options)))
    return std::nullopt;
  return options;
}

LogicalResult ConvertAttnToGPUPass::resolveStages(ModuleOp module,
                                                  KernelOptions &options) {
  const flashir::target::ChipInfo *info = options.chip;
  int64_t numStages = stages;
  options.stagesByChip = numStages == -1;
  if (options.stagesByChip)
    numStages = options.tensorCores ? kernels::kDefaultTensorCoreStages
                : info->hasCpAsync  ? kernels::kDefaultStages
                                    : 0;
  if (options.tensorCores && numStages == 0)
    return module.emitError("convert-attn-to-gpu: the tensor-core kernel "
                            "stages K/V through a cp.async ring; stages must "
                            "be 2..8 (or -1), got 0");
  if (numStages < 0 || numStages == 1 || numStages > 8)
    return module.emitError("convert-attn-to-gpu: stages must be -1 (by "
                            "chip), 0 (register double buffering) or 2..8, "
                            "got ")
           << numStages;
  if (numStages > 0 && !info->hasCpAsync)
    return module.emitError("convert-attn-to-gpu: ")
           << chip << " has no cp.async; stages = " << numStages
           << " needs sm_80 or newer (use stages=0)";
  options.stages = numStages;
  return success();
}

} // namespace
