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

    Views of an attention and states of a merge are unrolled, so their number
    is bounded (diagnosed): at most 64 views per attention and 256 states per
    merge (`kMaxLoopLoweringViews`, `kMaxLoopLoweringMergeStates`).
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

    One CTA of `32 * warps` threads per (request, KV head) serves the
    `Hq/Hkv` query heads of that KV head, in one of two designs:
    - tensor cores (`design=mma-sync`, by default on sm_80+): each warp
      walks its own tiles of 16 keys; the query heads are the rows of
      m16n8k16 `mma.sync` products for Q.K^T and P.V (FlashAttention-2
      register layout, online softmax in f32); K/V reach shared memory
      (dynamic, size in `attn.launch`) through 16-byte `cp.async` pieces
      each lane reads back itself (`copy=cp-async`), or on sm_90a through
      the copy engine completing on mbarriers: whole 16-key tiles by TMA
      tensor copies (128-byte swizzle, host-encoded tensor maps) where pages
      hold a multiple of 16 keys, else whole rows by `cp.async.bulk`
      (`copy=tma`, the default there; `copy=bulk`: rows only);
    - CUDA cores (sm_75, `design=simt`, or where the tensor-core ring does
      not fit): 16-byte vector loads of K and V rows gathered through the
      page table, a butterfly `gpu.shuffle` reduction per key, fma chains.
    Both keep per-warp online-softmax states merged through workgroup
    memory at the end and inline the variant's logits and mask hooks. In a
    kernel (the inlined hooks included), an f32 division inside a loop by a
    value defined outside it becomes a multiplication by its reciprocal
    (computed once) and f32 `math.tanh` the hardware's `tanh.approx.f32`
    (relative error about 2^-11).
    Attentions whose `tiles` take 16 or more query rows (sm_80+, or f16 on
    sm_75 with m16n8k8 products and no cp.async; split-KV ones only with
    `split-prefill`) get the tensor-core prefill kernel instead: one CTA of
    `tiles.warps` warps of 32 rows when `tiles.q = 32 * tiles.warps`, else
    `tiles.q / 16` warps of 16 rows, per (request, q tile, query head), K/V
    tiles of `tiles.kv` keys staged CTA-wide by `cp.async` into padded rows,
    K and V fragments by `ldmatrix` / `ldmatrix.trans`, grid (requests, q
    tiles, query heads), or (chunks, q tiles, heads) with the decode
    kernels' chunk arguments and a merge kernel when split;
    `attn.launch` records `q_rows`, `q_tokens` and `kv_tile`.
    Kernel arguments: `q`, `qo_indptr`, `k_pool`, `v_pool`, `indptr`,
    `indices`, `last_page_len`, `out`, `lse`, `kv_maps` (the K and V pools'
    `CUtensorMap`s, [2, 16] i64, read only by kernels with tensor copies),
    then the variant parameters (scalars as values, tensors as 1-D
    memrefs). Grid: (requests, KV heads).

    Supported now: one paged view, f16/bf16, softmax variants with
    logits/mask hooks and non-buffer parameters; the decode kernels take
    head_dim 64/128/256 and at most 8 query heads per KV head, the prefill
    kernel any head_dim that is a multiple of 8 from 16 to 256 (its products
    pad it to 16 in shared memory and registers) and any group. Anything
    else is a diagnostic.
  }];
  let options = [
    Option<"warps", "warps", "int64_t", /*default=*/"-1",
           "warps per decode CTA, each walking its own share of the keys; "
           "-1: 4, or 2 for tensor-core decode kernels whose lanes hold two "
           "row halves (more than 8 query heads per KV head)">,
    Option<"unroll", "unroll", "int64_t", /*default=*/"2",
           "keys per key group and loop iteration (CUDA-core kernel)">,
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_80\"",
           "target chip (decides whether cp.async exists)">,
    Option<"stages", "stages", "int64_t", /*default=*/"-1",
           "cp.async ring stages per warp (2..8, sm_80+); 0: register "
           "double buffering; -1: 3 for the tensor-core kernel, 4 where the "
           "chip has cp.async, else 0">,
    Option<"minBlocks", "min-blocks", "int64_t", /*default=*/"0",
           "resident CTAs per SM the register allocation must allow "
           "(nvvm.minctasm; 0: no bound)">,
    Option<"design", "design", "::flashir::KernelDesign",
           /*default=*/"::flashir::KernelDesign::Auto",
           "kernel design: auto|simt|mma-sync (auto: mma-sync on sm_80+ "
           "where the shape fits, else simt (CUDA cores))",
           [{::flashir::kernelDesignValues()}]>,
    Option<"copy", "copy", "::flashir::KVCopy",
           /*default=*/"::flashir::KVCopy::Auto",
           "K/V staging of the mma-sync decode: auto|cp-async|bulk|tma "
           "(auto: tma on sm_90a, else cp-async; bulk: cp.async.bulk rows; "
           "tma: TMA tiles where pages hold whole tiles, else bulk rows)",
           [{::flashir::kvCopyValues()}]>,
    Option<"headsInnermost", "heads-innermost", "bool", /*default=*/"true",
           "read the (x, y) CTA index in launch order as (KV head fastest, "
           "then request or chunk), so the CTAs that run together read the "
           "same pages (same grid and arguments)">,
    Option<"splitPrefill", "split-prefill", "bool", /*default=*/"false",
           "split-KV attentions whose tiles take 16+ query rows get the "
           "tensor-core prefill kernel (grid chunks x q_tiles x heads; no "
           "runtime runner yet) instead of the split-KV decode kernel">,
    Option<"persistentPrefill", "persistent-prefill",
           "::flashir::PersistentPrefill",
           /*default=*/"::flashir::PersistentPrefill::Auto",
           "sm_90a's wgmma prefill kernel runs persistent CTAs: auto|on|off "
           "(auto: at head dim 64 with tensor copies, but not the kernels "
           "with four consumer warpgroups); one CTA per SM walks "
           "the grid's q tiles, the next q tile's K/V copies overlapping "
           "this one's epilogue (same arguments; the host may launch fewer "
           "heads' planes, the launch's `persistent` fact)",
           [{::flashir::persistentPrefillValues()}]>
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::NVVM::NVVMDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::nvgpu::NVGPUDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def ExternalizeDynamicShared
    : Pass<"flashir-externalize-dynamic-shared", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Declare dynamic shared memory as an external symbol";
  let description = [{
    `convert-gpu-to-nvvm` lowers `gpu.dynamic_shared_memory` to an internal
    zero-length `llvm.mlir.global` in address space 3, which the NVPTX
    backend emits as a one-byte static variable (`.shared .b8 x;`) rather
    than the `.extern .shared .b8 x[];` that names the dynamic shared memory
    of a launch: accesses past the first bytes are then out of bounds. This
    pass gives such globals (zero-length arrays without an initializer in
    address space 3) external linkage. Run it after `convert-gpu-to-nvvm`.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // FLASHIR_CONVERSION_PASSES_TD
