//===- AttnToGPU.cpp - decode attention to gpu.func kernels ---------------===//
//
// The pass: checks the options against the chip, picks the decode design
// (tensor cores where the chip has bf16/f16 mma.sync and cp.async, else CUDA
// cores) and adds one kernel per attn.attention (plus the merge kernel of a
// split one) with the launch facts the bundle manifest records.
//
//===----------------------------------------------------------------------===//

#include "flashir/ABI/KernelABI.h"
#include "flashir/Conversion/Passes.h"
#include "flashir/Target/Chip.h"

#include "DecodeKernel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

namespace flashir {
#define GEN_PASS_DEF_CONVERTATTNTOGPU
#include "flashir/Conversion/Passes.h.inc"
} // namespace flashir

using namespace mlir;
using namespace flashir::attn;
using namespace flashir::conversion;
using namespace flashir::conversion::decode;
namespace abi = flashir::abi;
using flashir::KernelDesign;
using flashir::KVCopy;

namespace {

/// The address arithmetic of `view`'s pools.
parts::PagedKVAccess accessOf(PagedKVType view) {
  return {view.getLayout() == KVLayout::HND, view.getPageSize(),
          view.getNumHeads(), view.getHeadDim()};
}

/// The address arithmetic of `op`'s view: a ragged view's rows have no page
/// table.
parts::PagedKVAccess accessOf(AttentionOp op) {
  PagedKVType view = kvViewType(op);
  if (isa<RaggedKVType>(op.getViews().front().getType()))
    return parts::PagedKVAccess::raggedRows(view.getNumHeads(),
                                            view.getHeadDim());
  return accessOf(view);
}

/// Whether the tensor-core decode can stage `view`'s tiles with tensor
/// copies: tiles within pages, and a key hook's partners in the same box
/// (the kernel reads other columns of a staged tile unswizzled).
bool tensorCopies(PagedKVType view, VariantOp variant) {
  return accessOf(view).tensorMapTiles(kTileKeys) &&
         (variant.getKey().empty() || view.getHeadDim() % kBoxElements == 0);
}

struct ConvertAttnToGPUPass
    : flashir::impl::ConvertAttnToGPUBase<ConvertAttnToGPUPass> {
  using ConvertAttnToGPUBase::ConvertAttnToGPUBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (warps < 1 || warps > 32 || unroll < 1 || unroll > 16) {
      module.emitError("convert-attn-to-gpu: warps must be in 1..32 and "
                       "unroll in 1..16, got warps = ")
          << static_cast<int64_t>(warps)
          << ", unroll = " << static_cast<int64_t>(unroll);
      return signalPassFailure();
    }
    const flashir::target::ChipInfo *info = flashir::target::lookupChip(chip);
    if (!info) {
      module.emitError("convert-attn-to-gpu: unknown chip '")
          << chip << "'; expected one of " << flashir::target::validChipNames();
      return signalPassFailure();
    }
    KernelDesign kernelDesign = design;
    KVCopy kvCopy = copy;
    // The tensor-core kernel needs bf16 mma.sync m16n8k16 and cp.async.
    bool mmaChip = info->hasCpAsync && info->hasBF16;
    bool useTensorCores = kernelDesign == KernelDesign::Auto
                              ? mmaChip
                              : kernelDesign == KernelDesign::MmaSync;
    if (useTensorCores && !mmaChip) {
      module.emitError("convert-attn-to-gpu: ")
          << chip
          << " has no bf16 mma.sync m16n8k16 / cp.async; design=mma-sync "
             "needs sm_80 or newer (use design=simt)";
      return signalPassFailure();
    }
    // The copy engine: cp.async.bulk + mbarrier transaction counts (sm_90a).
    bool engineCopy = kvCopy == KVCopy::Bulk || kvCopy == KVCopy::Tma;
    bool useBulk = useTensorCores &&
                   (kvCopy == KVCopy::Auto ? info->hasMbarrierTx : engineCopy);
    if (engineCopy && (!useTensorCores || !info->hasMbarrierTx)) {
      InFlightDiagnostic diag =
          module.emitError("convert-attn-to-gpu: copy=")
          << stringify(kvCopy)
          << " needs the mma-sync design on a chip with cp.async.bulk "
             "(sm_90a); ";
      if (info->hasMbarrierTx)
        diag << "design=simt uses CUDA cores";
      else
        diag << chip << " has none";
      return signalPassFailure();
    }
    // Tensor maps for pages of whole tiles, unless only row copies are asked.
    bool useTensorMaps = useBulk && kvCopy != KVCopy::Bulk;
    int64_t numStages = stages;
    if (numStages == -1)
      numStages = useTensorCores     ? kDefaultTensorCoreStages
                  : info->hasCpAsync ? kDefaultStages
                                     : 0;
    if (useTensorCores && numStages == 0) {
      module.emitError("convert-attn-to-gpu: the tensor-core kernel stages "
                       "K/V through a cp.async ring; stages must be 2..8 "
                       "(or -1), got 0");
      return signalPassFailure();
    }
    if (numStages < 0 || numStages == 1 || numStages > 8) {
      module.emitError("convert-attn-to-gpu: stages must be -1 (by chip), 0 "
                       "(register double buffering) or 2..8, got ")
          << numStages;
      return signalPassFailure();
    }
    if (numStages > 0 && !info->hasCpAsync) {
      module.emitError("convert-attn-to-gpu: ")
          << chip << " has no cp.async; stages = " << numStages
          << " needs sm_80 or newer (use stages=0)";
      return signalPassFailure();
    }
    struct Kernel {
      AttentionOp op;
      std::string name;
      int64_t stages;
      bool tensorCores;
      /// Prefill: query rows per CTA (0: decode), keys per K/V tile, warps.
      int64_t prefillRows = 0, kvTile = 0, prefillWarps = 0;
      /// Prefill: Q in shared memory with 16 rows per warp too.
      bool prefillQShared = false;
    };
    SmallVector<Kernel> kernels;
    bool failedAny = false;
    module.walk([&](AttentionOp op) {
      VariantOp variant = resolveVariant(op, op.getVariantAttr());
      std::string reason = unsupportedReason(op, variant);
      int64_t opStages = numStages;
      bool opTensorCores = useTensorCores;
      // Attentions whose tiles (attn-select-tiles) take 16 or more query
      // rows get the tensor-core prefill kernel: tiles.q rows per CTA (32
      // per warp where tiles.warps asks exactly that, else 16), K/V tiles of
      // tiles.kv keys, its own shared-memory budget.
      // Split-KV ones too with split-prefill: a CTA per (chunk, q tile,
      // head) writes the chunk's partial states for the merge kernel. Off by
      // default: fused decode head groups also have 16-row tiles, and the
      // runtime's split runner launches decode grids only.
      // sm_75 (no cp.async, no bf16 products): f16 prefill with m16n8k8
      // products and one synchronously filled K/V slot.
      int64_t prefillRows = 0, kvTile = 0, prefillWarps = 0;
      TileConfigAttr tiles = op.getTilesAttr();
      bool turing = !info->hasCpAsync && kernelDesign != KernelDesign::Simt &&
                    reason.empty() && kvViewType(op).getElementType().isF16();
      if (reason.empty() && (useTensorCores || turing) && tiles &&
          tiles.getQ() >= 16 && (!op.getChunkIndptr() || splitPrefill)) {
        auto view = kvViewType(op);
        reason = prefillShapeReason(view.getHeadDim(),
                                    op.getNumQoHeads() / op.getNumKvHeads());
        prefillRows = tiles.getQ();
        kvTile = tiles.getKv();
        prefillWarps = tiles.getWarps() * 32 == prefillRows ? tiles.getWarps()
                                                            : prefillRows / 16;
        // One stage on sm_80+: one K and one V slot, staggered.
        opStages = turing ? 1 : tiles.getStages();
        int64_t bytes = prefillSharedMemoryBytes(
            kvTile, view.getHeadDim(), opStages,
            view.getElementType().getIntOrFloatBitWidth() / 8, prefillRows,
            prefillWarps, tiles.getQShared());
        if (reason.empty() && bytes > info->maxSharedMemoryPerBlock)
          reason = "at most " + std::to_string(info->maxSharedMemoryPerBlock) +
                   " bytes of shared memory per CTA on " + chip +
                   "; the prefill tiles need " + std::to_string(bytes) +
                   " (select smaller kv tiles or fewer stages)";
      } else if (reason.empty()) {
        auto view = kvViewType(op);
        int64_t g =
            static_cast<int64_t>(op.getNumQoHeads() / op.getNumKvHeads());
        auto bytesFor = [&](bool tc, int64_t st) {
          return sharedMemoryBytes(
              tc, tc && useBulk,
              tc && useTensorMaps && tensorCopies(view, variant), warps, g,
              view.getHeadDim(), unroll, st,
              view.getElementType().getIntOrFloatBitWidth() / 8);
        };
        // The CUDA-core kernel uses static shared memory (48 KiB at most),
        // the tensor-core one dynamic shared memory up to the chip's limit.
        auto limitFor = [&](bool tc) {
          return tc ? info->maxSharedMemoryPerBlock : int64_t(48 * 1024);
        };
        // By default, fewer tensor-core stages where the tiles are large,
        // and the CUDA-core kernel where even two stages do not fit.
        if (stages == -1 && opTensorCores) {
          while (opStages > 2 && bytesFor(true, opStages) > limitFor(true))
            --opStages;
          if (kernelDesign == KernelDesign::Auto &&
              bytesFor(true, opStages) > limitFor(true)) {
            opTensorCores = false;
            opStages = kDefaultStages;
          }
        }
        // By default, the other design where one cannot serve the shape.
        reason = decodeShapeReason(view.getHeadDim(), g, opTensorCores);
        if (!reason.empty() && kernelDesign == KernelDesign::Auto &&
            opTensorCores &&
            decodeShapeReason(view.getHeadDim(), g, false).empty()) {
          opTensorCores = false;
          opStages = info->hasCpAsync ? kDefaultStages : 0;
          reason.clear();
        }
        int64_t bytes = bytesFor(opTensorCores, opStages),
                limit = limitFor(opTensorCores);
        if (reason.empty() && bytes > limit)
          reason = "at most " + std::to_string(limit) +
                   " bytes of shared memory per CTA on " + chip + "; " +
                   std::to_string(static_cast<int64_t>(warps)) +
                   " warps need " + std::to_string(bytes) +
                   " bytes here (use fewer warps, stages or unroll)";
      }
      if (!reason.empty()) {
        op.emitOpError("the ") << (prefillRows ? "prefill" : "decode")
                               << " kernel generator needs " << reason;
        failedAny = true;
        return;
      }
      auto func = op->getParentOfType<func::FuncOp>();
      std::string name =
          (func ? func.getSymName().str() : std::string("attn")) +
          (prefillRows ? "_prefill_" : "_decode_") +
          std::to_string(kernels.size());
      kernels.push_back({op, name, opStages, opTensorCores || prefillRows > 0,
                         prefillRows, kvTile, prefillWarps,
                         prefillRows > 0 && tiles.getQShared()});
    });
    if (failedAny)
      return signalPassFailure();
    if (kernels.empty())
      return;

    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    b.getUnitAttr());
    auto gpuModule =
        gpu::GPUModuleOp::create(b, module.getLoc(), "flashir_kernels");
    OpBuilder kb = OpBuilder::atBlockBegin(gpuModule.getBody());
    for (Kernel &entry : kernels) {
      AttentionOp op = entry.op;
      const std::string &name = entry.name;
      VariantOp variant = resolveVariant(op, op.getVariantAttr());
      PagedKVType view = kvViewType(op);
      auto numQoHeads = static_cast<int64_t>(op.getNumQoHeads());
      auto numKvHeads = static_cast<int64_t>(op.getNumKvHeads());
      bool chunked = static_cast<bool>(op.getChunkIndptr());
      parts::PagedKVAccess access = accessOf(op);
      DecodeShape shape{view.getHeadDim(),
                        view.getPageSize(),
                        numQoHeads,
                        numKvHeads,
                        numQoHeads / numKvHeads,
                        static_cast<int64_t>(warps),
                        static_cast<int64_t>(unroll),
                        entry.stages,
                        static_cast<int64_t>(minBlocks),
                        chunked,
                        entry.tensorCores,
                        entry.tensorCores && useBulk,
                        entry.tensorCores && useTensorMaps &&
                            tensorCopies(view, variant),
                        headsInnermost,
                        view.getElementType(),
                        op.getEffectiveScale(),
                        entry.prefillRows,
                        entry.kvTile};
      shape.dependentLaunch = chunked && info->computeCapability >= 90;
      shape.access = access;
      shape.bf16Convert = info->hasBF16;
      if (entry.prefillRows) {
        shape.warps = entry.prefillWarps;
        shape.bulkCopy = shape.tensorCopy = false;
        shape.turing = !info->hasCpAsync;
        // Head groups fuse where a tile holds whole tokens' groups.
        shape.fusedHeadGroups =
            op.getFusedHeadGroups() && entry.prefillRows % shape.group == 0;
        shape.prefillQShared = entry.prefillQShared;
      }
      DecodeKernel generator(op, variant, shape);
      gpu::GPUFuncOp func = generator.build(kb, name);
      relaxHookMath(func);
      kb.setInsertionPointAfter(func);
      KernelKind kind =
          entry.prefillRows ? KernelKind::Prefill : KernelKind::Decode;
      abi::Grid grid = abi::gridOf(toABIKind(kind), chunked,
                                   !entry.prefillRows || shape.fusedHeadGroups);
      auto argNames = [&] {
        return kb.getStrArrayAttr(
            llvm::to_vector_of<StringRef>(generator.argNames));
      };
      ArrayAttr args = argNames();
      // Dynamic shared memory the launch must pass (tensor cores).
      int64_t dynamicBytes =
          entry.prefillRows
              ? prefillSharedMemoryBytes(
                    entry.kvTile, shape.headDim, shape.stages,
                    shape.element.getIntOrFloatBitWidth() / 8,
                    entry.prefillRows, entry.prefillWarps, entry.prefillQShared)
          : entry.tensorCores ? sharedMemoryBytes(shape)
                              : 0;
      // The box of the host's tensor maps over the K and V pools
      // (abi::kvTensorMap's dimensions).
      DenseI64ArrayAttr box =
          shape.tensorCopy ? kb.getDenseI64ArrayAttr(
                                 access.tensorMapBox(kTileKeys, kBoxElements))
                           : DenseI64ArrayAttr();
      FlatSymbolRefAttr mergeRef;
      gpu::GPUFuncOp merge;
      if (chunked) {
        // <func>_decode_<i> / <func>_prefill_<i> -> <func>_merge_<i>.
        StringRef kindName = entry.prefillRows ? "_prefill_" : "_decode_";
        std::string mergeName = name;
        mergeName.replace(mergeName.rfind(kindName.str()), kindName.size(),
                          "_merge_");
        merge = generator.buildMerge(kb, mergeName);
        kb.setInsertionPointAfter(merge);
        mergeRef = FlatSymbolRefAttr::get(merge.getNameAttr());
      }
      // With dependentLaunch the merge waits for the split kernel itself
      // (griddepcontrol.wait): the host may launch it early. The split
      // kernel completes after the grid launched before it (a decode
      // kernel's last CTA waits for it, waitInLastCta; every CTA of a
      // prefill kernel does, first): the host may launch it early behind a
      // kernel that writes nothing it reads, and a prefill kernel behind any
      // kernel.
      bool dependent = chunked && shape.dependentLaunch;
      int64_t qTokens = 0;
      if (entry.prefillRows)
        qTokens = shape.fusedHeadGroups ? entry.prefillRows / shape.group
                                        : entry.prefillRows;
      func->setAttr("attn.launch",
                    LaunchAttr::get(
                        kb.getContext(), kind, grid.str(), 32 * shape.warps,
                        op.getVariantAttr(), args, mergeRef, entry.stages,
                        unroll, entry.tensorCores, shape.bulkCopy, box,
                        dynamicBytes, entry.prefillRows, qTokens,
                        entry.prefillRows ? entry.kvTile : 0,
                        /*programmaticWait=*/dependent && entry.prefillRows > 0,
                        /*completesAfterPredecessor=*/dependent));
      if (merge) {
        int64_t block = view.getHeadDim() / kVec *
                        mergeGroups(view.getHeadDim(), entry.prefillRows > 0);
        merge->setAttr(
            "attn.launch",
            LaunchAttr::get(
                kb.getContext(), KernelKind::Merge,
                abi::gridOf(abi::KernelKind::Merge, false, false).str(), block,
                op.getVariantAttr(), argNames(), FlatSymbolRefAttr(), 0, 0,
                false, false, DenseI64ArrayAttr(), 0, 0, 0, 0,
                /*programmaticWait=*/dependent, false));
      }
    }
  }
};

} // namespace
