//===- Pipelines.h - FlashIR pass pipelines ---------------------*- C++ -*-===//

#ifndef FLASHIR_PIPELINES_PIPELINES_H
#define FLASHIR_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace flashir {

/// attn (on tensors) → scf/memref loops, bufferized, still above LLVM:
/// attn-import-variants, convert-attn-to-loops, one-shot-bufferize (identity
/// layouts at function boundaries), buffer deallocation.
void buildAttnToLoopsPipeline(mlir::OpPassManager &pm);

/// The CPU path: buildAttnToLoopsPipeline, then down to the LLVM dialect,
/// ready for the ExecutionEngine. math ops without an LLVM intrinsic (tanh,
/// …) become libm calls.
void buildAttnToCPUPipeline(mlir::OpPassManager &pm);

/// Options of the scheduling pipeline.
struct AttnScheduleOptions
    : public mlir::PassPipelineOptions<AttnScheduleOptions> {
  Option<std::string> chip{*this, "chip",
                           llvm::cl::desc("target chip for tile selection"),
                           llvm::cl::init("sm_80")};
  Option<int64_t> chunkSize{
      *this, "chunk-size",
      llvm::cl::desc("keys per split-KV chunk; 0: runtime chunks; -1: no "
                     "split"),
      llvm::cl::init(-1)};
  Option<int64_t> avgQoLen{
      *this, "avg-qo-len",
      llvm::cl::desc("expected average query length (1 = decode)"),
      llvm::cl::init(1)};
};

/// How attention executes, without changing what it computes:
/// attn-import-variants, attn-compose-prefix, attn-fuse-head-groups,
/// attn-split-kv (if chunk-size >= 0), attn-select-tiles.
void buildAttnSchedulePipeline(mlir::OpPassManager &pm,
                               const AttnScheduleOptions &options);

/// Registers `attn-schedule`, `attn-to-loops` and `attn-to-cpu`.
void registerAttnPipelines();

} // namespace flashir

#endif // FLASHIR_PIPELINES_PIPELINES_H
