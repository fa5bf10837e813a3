//===- Passes.td - FlashIR conversion passes ----------------*- tablegen -*-===//

#ifndef FLASHIR_CONVERSION_PASSES_TD
#define FLASHIR_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertAttnToLoops : Pass<"convert-attn-to-loops", "::mlir::ModuleOp"> {
  let summary = "Lower attn ops to scf loops over tensors and memrefs";
  let description = [{
    Gives the attn dialect its executable meaning: every `attn.attention`,
    `attn.empty_state`, `attn.make_state`, `attn.merge` and `attn.finalize`
    becomes a loop nest (scf/arith/math/tensor/memref/bufferization), with the
    variant's hooks inlined. Inputs are read with `tensor.extract`; results are
    written to fresh buffers and re-entered as tensors with
    `bufferization.to_tensor restrict`, so One-Shot Bufferize finishes the job.

    Softmax uses an online (running max, running denominator, rescaled
    accumulator) reduction over the keys of each query row and head — no score
    matrix is materialised; masked keys are skipped, never given a large
    negative score, so fully masked rows give output 0 and `lse = -inf`.
    Sigmoid accumulates `σ(s) v`. Sparsemax keeps one row of scores, finds
    its threshold by bisection, then accumulates.

    States become (output, lse) tensor pairs; a state may not cross a
    function boundary or region (diagnosed). Views must be defined by view ops
    in the same function as the attention that reads them.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

#endif // FLASHIR_CONVERSION_PASSES_TD
