//===- Passes.td - attn dialect passes ----------------------*- tablegen -*-===//

#ifndef FLASHIR_DIALECT_ATTN_TRANSFORMS_PASSES_TD
#define FLASHIR_DIALECT_ATTN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def AttnImportVariants : Pass<"attn-import-variants", "::mlir::ModuleOp"> {
  let summary = "Copy the standard variants a module uses into it";
  let description = [{
    Every module may name the standard variants (`@plain`, `@causal`,
    `@sliding_window`, `@soft_cap`, `@alibi`, `@custom_mask`, `@sigmoid`)
    without defining them. This pass copies the definition of each standard
    variant that the module references but does not define to the start of
    the module, so that later passes see every variant as ordinary IR. A
    variant the module defines itself is never replaced.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::math::MathDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def AttnFuseHeadGroups : Pass<"attn-fuse-head-groups", "::mlir::ModuleOp"> {
  let summary = "Fold the query heads that share a KV head into rows";
  let description = [{
    Marks every `attn.attention` whose group size `g = Hq/Hkv` is above 1 with
    `fused_head_groups`: its rows are then laid out per KV head as
    `g * Lq` fused rows, row `r` standing for query position `r / g` and query
    head `g * h_kv + r mod g` (seed 000 eq. 3), so one load of a KV tile
    serves all `g * Lq` rows. Any `g >= 1` is supported. What is computed
    does not change; the loop lowering and the GPU kernels follow the layout.
  }];
}

def AttnSplitKV : Pass<"attn-split-kv", "::mlir::ModuleOp"> {
  let summary = "Split the keys of each request into chunks merged in order";
  let description = [{
    Rewrites each `attn.attention` of a mergeable variant into an attention
    over chunks of keys producing `!attn.chunked_state`, then
    `attn.merge_chunks` (the reduction's merge rule, in chunk order), then
    `attn.finalize` where the original returned `(output, lse)`.

    With `chunk-size=N` (static form) the chunks come from
    `attn.uniform_chunks`: N keys each, depending on the request alone, so
    the result is batch-invariant. With `chunk-size=0` (runtime form) the
    chunk arrays become three new trailing `tensor<?xi32>` arguments of the
    enclosing function (`chunk_indptr`, `chunk_starts`, `chunk_ends`) for the
    host planner to fill each step.

    A variant whose reduction has no merge rule (sparsemax) is refused with a
    diagnostic.
  }];
  let options = [
    Option<"chunkSize", "chunk-size", "int64_t", /*default=*/"256",
           "keys per chunk; 0: chunk boundaries are runtime arguments">
  ];
}

def AttnComposePrefix : Pass<"attn-compose-prefix", "::mlir::ModuleOp"> {
  let summary = "Attend a shared prefix once, the suffixes separately, merge";
  let description = [{
    For each `attn.attention` of a mergeable variant whose first view is an
    `attn.shared_paged_kv` (a prefix all requests share) followed by
    per-request suffix views, emits one attention over the prefix for all
    queries and one over the suffixes (`attended_views`, so positions still
    count the prefix and causal masks stay right), each producing a state,
    then `attn.merge` and, where the original returned `(output, lse)`,
    `attn.finalize` (seed 000 sec. 4.3; FlashInfer's cascade).
  }];
}

def AttnSelectTiles : Pass<"attn-select-tiles", "::mlir::ModuleOp"> {
  let summary = "Choose the tile configuration of each attention for a chip";
  let description = [{
    Records `tiles = #attn.tiles<q, kv, warps, stages>` on every
    `attn.attention` from the target chip, head dim, element type, group size
    and the expected average query length, checking the shared-memory and
    register budget of the chip (seed 000 sec. 5), and records the chip on
    the module as `attn.target = "<chip>"` for later passes. A `tiles`
    attribute already present is replaced.

    The heuristic (`flashir::target::selectTile`, include/flashir/Target):
    1. effective rows `R = avg-qo-len * g` when `fused_head_groups` is set
       (`g = num_qo_heads / num_kv_heads`), else `avg-qo-len`; an attention
       over several KV views takes at least 16 (the decode kernels walk one
       view, the prefill kernel each view in turn);
    2. `q` = the smallest of {1, 16, 32, 64, 128} covering `R`, capped at
       128 (`q = 1`, the CUDA-core decode path, only for `R = 1`);
    3. `warps` = the prefill kernel's: 4 for decode (`q = 1`); for
       `q = 128` 4 warps of 32 rows (Q in shared memory) where the chip has
       cp.async, elements are 16-bit, `d <= 128` and 64-key tiles fit the
       shared memory; else `q / 16` warps of 16 rows; `stages` = 2 where
       cp.async exists (sm_80+), 1 on sm_75;
    4. `kv` = the largest of {128, 64, 32} whose budget fits one CTA and
       leaves at least 8 warps resident per SM, else the one that fits with
       the most resident warps;
    5. if no `kv` fits, `q` is halved (not below 16) and 3-4 repeat;
    6. with 16 rows per warp on 8+ warps, `kv >= 64`, `d >= 256` and
       cp.async, `q_shared = true` (Q in shared memory instead of registers
       next to O's) where that still fits one CTA with as many CTAs per SM;
       where it does not, `kv = 32` (Q stays in registers next to a
       32-key tile's scores) if that keeps as many CTAs per SM.
    The budget of a CTA: shared memory within the chip's opt-in per-block
    limit, for `q >= 16` exactly the prefill kernel's (`stages * 2 * kv *
    (d + 8) * bytes`, plus `q * (d + 8) * bytes` with 32 rows per warp or
    `q_shared`),
    for `q = 1` `stages * kv * d * bytes * 2 + d * bytes`; registers per
    thread `ceil(q*d/threads) + ceil(q*kv/threads) + 48` (f32 output
    accumulator, f32 scores, overhead) within 255 and the register file of
    an SM.

    Overrides (`q-tile`, `kv-tile`, `tile-warps`, `tile-stages`) replace the
    chosen values field by field (a new `q` without `tile-warps` takes step
    3's warps for it; step 6 is not applied); the result must still fit the
    chip's budget, and for
    `q >= 16` have `q / 16` or `q / 32` warps (the prefill kernel's
    layouts).

    Errors: an unknown chip, `avg-qo-len < 1` or an override outside its
    set (on the module); bf16 on sm_75 (no bf16 tensor-core instructions)
    and attentions whose smallest tile, or whose overridden tile, exceeds a
    budget (on the attention, naming the budget), or whose overridden warps
    no prefill kernel runs (on the attention, naming the two it can).
  }];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_80\"",
           "target chip: sm_75, sm_80, sm_86, sm_89 or sm_90a">,
    Option<"avgQoLen", "avg-qo-len", "int64_t", /*default=*/"1",
           "expected average query length per request (1 = decode)">,
    Option<"qTile", "q-tile", "int64_t", /*default=*/"0",
           "override: query rows per tile (1, 16, 32, 64, 128; 0 = chosen)">,
    Option<"kvTile", "kv-tile", "int64_t", /*default=*/"0",
           "override: keys per tile (32, 64, 128; 0 = chosen)">,
    Option<"tileWarps", "tile-warps", "int64_t", /*default=*/"0",
           "override: warps per CTA (1, 2, 4, 8, 16; 0 = chosen)">,
    Option<"tileStages", "tile-stages", "int64_t", /*default=*/"0",
           "override: K/V stages (1..4; 0 = chosen)">
  ];
}

def AttnRaiseFromLinalg : Pass<"attn-raise-from-linalg", "::mlir::ModuleOp"> {
  let summary = "Rewrite linalg attention (matmul, softmax, matmul) into attn";
  let description = [{
    Recognises the attention pattern an ML front end emits on tensors and
    rewrites it into `attn.attention @plain` over ragged views:

    ```
    S = linalg.batch_matmul(Q, Kᵀ)   outs: linalg.fill 0
    S = S * c  or  S / c            optional elementwise linalg.generic(s)
    S = select(j > i, -inf, S)      optional causal mask (Lq = Lk), or
    S = S + M  |  select(M, S, -inf) a mask tensor M (additive, or i1)
    P = linalg.softmax(S) dimension(2)   or spelled out: exp(S - max) / sum
    O = linalg.batch_matmul(P, V)   outs: linalg.fill 0
    ```

    `Kᵀ` is a `linalg.transpose` of K with permutation [0, 2, 1] or
    batch_matmul's indexing maps `(b, m, n, k) -> (b, n, k)` for K. Every
    batch index becomes a request with one head (Q, K, V reshaped to
    `[B * L, 1, D]`, generated indptr), the scale constant becomes the op's
    `scale`, the causal mask (key index > query index, scale and mask in
    one generic or two) selects `@causal`. GQA: when K and V are
    `tensor.collapse_shape [[0, 1], [2], [3]]` of a `linalg.broadcast` of
    `[N, Lk, D]` along dimension 1 to `[N, g, Lk, D]`, each of the N KV
    heads becomes a request with g query heads (Q transposed to
    `[N * Lq, g, D]`, `num_qo_heads = g`). Only exact matches are rewritten: static shapes that agree
    (Q [B, Lq, D], K and V [B, Lk, D], even D), one element type (f16, bf16
    or f32), every intermediate used once, softmax over the last dimension.
    A mask tensor becomes a parameter of a variant the pass adds to the
    module (`@raised_additive_mask_<type>`: logits + M[...];
    `@raised_boolean_mask`: mask hook M[...]), indexed through per-request
    row offsets; an additive mask must be added after the scale. The
    spelled-out softmax is four generics over the last dimension: a max
    reduction (fill -inf), exp(S - max), a sum reduction (fill 0) and the
    division.

    Index arrays (indptr, page ids, last-page lengths, mask row offsets)
    are generated (`tensor.generate`), not materialised constants, so any
    batch size rewrites in constant time; an attention whose query or key
    tokens exceed the views' i32 indices is left as it is, with a warning.

    With `paged-kv`, K and V become a paged view of one-token pages
    (identity page table) instead of a ragged view, for runners that plan
    paged batches. The NVIDIA kernels read either view; the ragged one
    needs no page table.
  }];
  let options = [
    Option<"pagedKv", "paged-kv", "bool", /*default=*/"false",
           "raise K/V to a paged view of one-token pages (identity page "
           "table) instead of a ragged view">
  ];
  let dependentDialects = [
    "::flashir::attn::AttnDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

#endif // FLASHIR_DIALECT_ATTN_TRANSFORMS_PASSES_TD
