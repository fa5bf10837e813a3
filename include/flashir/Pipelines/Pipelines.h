//===- Pipelines.h - FlashIR pass pipelines ---------------------*- C++ -*-===//

#ifndef FLASHIR_PIPELINES_PIPELINES_H
#define FLASHIR_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"

namespace flashir {

/// attn (on tensors) → scf/memref loops, bufferized, still above LLVM:
/// attn-import-variants, convert-attn-to-loops, one-shot-bufferize (identity
/// layouts at function boundaries), buffer deallocation.
void buildAttnToLoopsPipeline(mlir::OpPassManager &pm);

/// The CPU path: buildAttnToLoopsPipeline, then down to the LLVM dialect,
/// ready for the ExecutionEngine. math ops without an LLVM intrinsic (tanh,
/// …) become libm calls.
void buildAttnToCPUPipeline(mlir::OpPassManager &pm);

/// Registers `attn-to-loops` and `attn-to-cpu` as named pipelines.
void registerAttnPipelines();

} // namespace flashir

#endif // FLASHIR_PIPELINES_PIPELINES_H
