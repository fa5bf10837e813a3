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

def ConvertAttnToGPU : Pass<"convert-attn-to-gpu", "::mlir::ModuleOp"> {
  let summary = "Generate decode kernels (gpu.func) for attn.attention ops";
  let description = [{
    For every `attn.attention` of the module, adds a `gpu.func` kernel to a
    `gpu.module @flashir_kernels` (the module becomes a
    `gpu.container_module`); the attn program itself is left as it is (it
    remains the CPU reference).

    The kernel is the CUDA-core decode design: one CTA of `32 * warps`
    threads per (request, KV head), serving the `Hq/Hkv` query heads of that
    KV head; 16-byte vector loads of K and V rows gathered through the page
    table; a butterfly `gpu.shuffle` reduction per key; online softmax in
    f32; key groups merged by shuffles and warps through workgroup memory;
    the variant's logits and mask hooks inlined. Kernel arguments: `q`,
    `qo_indptr`, `k_pool`, `v_pool`, `indptr`, `indices`, `last_page_len`,
    `out`, `lse`, then the variant parameters (scalars as values, tensors as
    1-D memrefs). Grid: (requests, KV heads).

    Supported now: one paged NHD view, f16/bf16, head_dim 64/128/256, at
    most 8 query heads per KV head, softmax variants with logits/mask hooks
    and non-buffer parameters. Anything else is a diagnostic.
  }];
  let options = [
    Option<"warps", "warps", "int64_t", /*default=*/"4",
           "warps per CTA, each walking its own share of the keys">,
    Option<"unroll", "unroll", "int64_t", /*default=*/"2",
           "keys per key group and loop iteration">,
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_80\"",
           "target chip (decides whether cp.async exists)">,
    Option<"stages", "stages", "int64_t", /*default=*/"-1",
           "cp.async ring stages per warp (2..8, sm_80+); 0: register "
           "double buffering; -1: 4 where the chip has cp.async, else 0">,
    Option<"minBlocks", "min-blocks", "int64_t", /*default=*/"0",
           "resident CTAs per SM the register allocation must allow "
           "(nvvm.minctasm; 0: no bound)">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::nvgpu::NVGPUDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect"
  ];
}

#endif // FLASHIR_CONVERSION_PASSES_TD
