//===- KernelFamily.cpp - what the kernel families share ------------------===//
//
// The families in priority order, and the plan every family starts from.
//
//===----------------------------------------------------------------------===//

#include "KernelFamily.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
using namespace flashir::conversion::families;

std::string KernelPlan::symbolName(KernelKind kind) const {
  return prefix + "_" + stringifyKernelKind(kind).str() + "_" +
         std::to_string(index);
}

gpu::GPUFuncOp KernelFamily::build(OpBuilder &moduleBuilder,
                                   KernelBuilder &generator,
                                   const KernelPlan &plan) const {
  gpu::GPUFuncOp func = generator.build(moduleBuilder, plan.symbolName(kind()));
  kernels::relaxHookMath(func);
  return func;
}

ArrayRef<const KernelFamily *>
flashir::conversion::families::attentionFamilies() {
  // Prefill first: sm_90a's wgmma kernel takes the prefill attentions it
  // serves (design=wgmma), the mma.sync one every other attention whose
  // tiles take 16 or more query rows. The tensor-core decode passes on what
  // design=auto lets the CUDA-core one serve, which serves everything else.
  static const KernelFamily *const families[] = {
      &wgmmaPrefillFamily(), &mmaSyncPrefillFamily(), &mmaSyncDecodeFamily(),
      &simtDecodeFamily()};
  return families;
}

KernelPlan
flashir::conversion::families::planAttention(const KernelOptions &options,
                                             AttentionOp op, VariantOp variant,
                                             int64_t index) {
  PagedKVType view = kernels::kvViewType(op);
  auto numQoHeads = static_cast<int64_t>(op.getNumQoHeads());
  auto numKvHeads = static_cast<int64_t>(op.getNumKvHeads());
  bool chunked = static_cast<bool>(op.getChunkIndptr());
  KernelShape shape{view.getHeadDim(),
                    view.getPageSize(),
                    numQoHeads,
                    numKvHeads,
                    numQoHeads / numKvHeads,
                    options.warps,
                    options.unroll,
                    /*stages=*/0,
                    options.minBlocks,
                    chunked,
                    /*tensorCores=*/false,
                    /*bulkCopy=*/false,
                    /*tensorCopy=*/false,
                    options.headsInnermost,
                    view.getElementType(),
                    op.getEffectiveScale()};
  shape.dependentLaunch = chunked && options.chip->computeCapability >= 90;
  shape.numViews = static_cast<int64_t>(op.getViews().size());
  // A ragged view's rows have no page table.
  shape.access =
      isa<RaggedKVType>(op.getViews().front().getType())
          ? parts::PagedKVAccess::raggedRows(view.getNumHeads(),
                                             view.getHeadDim())
          : parts::PagedKVAccess{view.getLayout() == KVLayout::HND,
                                 view.getPageSize(), view.getNumHeads(),
                                 view.getHeadDim()};
  shape.bf16Convert = options.chip->hasBF16;
  auto func = op->getParentOfType<func::FuncOp>();
  std::string prefix = func ? func.getSymName().str() : std::string("attn");
  return {op, variant, view, shape, /*dynamicSharedBytes=*/0, prefix, index};
}

std::string flashir::conversion::families::sharedMemoryReason(
    const KernelOptions &options, int64_t limit, const std::string &need) {
  return "at most " + std::to_string(limit) +
         " bytes of shared memory per CTA on " + options.chipName + "; " + need;
}
