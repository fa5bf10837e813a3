// Prefill kernel configurations beyond head dims 64/128/256 and GQA groups
// of at most 8, for the GPU float64 check (bench/gpu/gpu_check.py --bundle
// on a flashir-bundle of this file for sm_80 and sm_90a, and of its *_f16*
// functions for sm_75). Each function name starts with its variant
// (causal_, plain_, softcap_, rope_, sigmoid_, custom_mask_; the manifest's `variant` picks the
// reference), then head dim, group (query heads per KV head), page size and
// element type. Head dims that are an odd multiple of 8 (72, 200) run their
// products over the head dim rounded up to 16, with zeroed padding columns
// in shared memory. Tiles are attn-select-tiles' sm_80 picks (avg-qo-len
// 512) except where a row asks for another code path:
//  - causal_d72_g1_p16_bf16: 16 rows per warp, Q in registers (zero A
//    fragments for columns 72..79), raw copies by 126 of 128 threads (9
//    pieces per row), O read back in 4.5 rounds per warp;
//  - plain_d80_g3_p5_bf16: 5-key pages, copies by 120 of 128 threads;
//  - causal_d96_g16_p16_bf16_fused: 16 query heads fused into 128-row tiles
//    (8 tokens per tile);
//  - plain_d160_g7_p1_f16, causal_d192_g4_p16_bf16: 8 warps of 16 rows,
//    copies by 240 of 256 threads;
//  - plain_d16_g32_p3_bf16_fused: 32 query heads fused (4 tokens per tile);
//  - causal_d192_g2_p16_bf16_hnd: an HND pool (memref-indexed copies);
//  - softcap_d96_g8_p64_f16: 64-key tiles inside 64-key pages (one page id
//    per tile, passes of 10 keys);
//  - causal_d72_g4_p16_f16: 32 rows per warp, Q in shared memory with zeroed
//    padding columns; on sm_75 too (m16n8k8, one slot);
//  - plain_d200_g2_p16_bf16_s1: one K and one V slot (the staggered
//    one-stage schedule), 16 rows per warp, copies by 125 of 128 threads.
// Variant hooks (the variant's parameters after the usual arguments):
//  - rope_d128_g4_p16_bf16: RoPE as query and key hooks (the @rope variant
//    below: rotate-half, log2_theta and half_dim scalars, a per-request
//    position offset), 32 rows per warp (each Q piece hooked into the
//    shared Q tile), the key hook on each landed K tile in shared memory;
//  - rope_d64_g1_p16_f16: the same with Q in registers (hooked A fragment
//    pairs) and one stage; on sm_75 too (the variant is extracted with the
//    f16 functions);
//  - sigmoid_d128_g4_p16_bf16: the sigmoid reduction (bias scalar),
//    unnormalised output, lse = log sum sigmoid;
//  - custom_mask_d128_g4_p16_bf16: a buffer parameter (bits, i8) read by
//    the mask hook, row0 and stride per request: packed-bit tile classes
//    (tiles with no visible key skipped, fully visible ones unmasked);
//  - custom_mask_d64_g2_p16_f16_hnd: the same on an HND pool, f16; on sm_75
//    too (the staged one-slot loop).
// Several KV views (views<N>_...): one key loop per view carrying the state,
// key positions counted across the views (causal tile skipping per view;
// RoPE positions of the concatenation; the custom mask through its hook,
// as the packed-bit tile classes assume one view): two paged views, three
// 5-key-page views with RoPE (on sm_75 too), two HND views with a custom
// mask at d96, two ragged views with fused head groups.

// Rotary position embedding (rotate-half, as in Llama) written as a
// variant: q and k rotated by (position + offset) * theta^(-2i/D) for column
// pair (i, i + D/2); log2(theta), D/2 and the per-request position offset
// are parameters.
attn.variant @rope reduction softmax
    params(log2_theta : f32 scalar, half_dim : i32 scalar, offset : i32 per_request) {
  query(%x: f32, %xr: f32, %d: index, %pos: index, %head: index,
        %lt: f32, %half: i32, %off: i32) {
    %di = arith.index_cast %d : index to i32
    %i = arith.remui %di, %half : i32
    %if = arith.uitofp %i : i32 to f32
    %hf = arith.uitofp %half : i32 to f32
    %frac = arith.divf %if, %hf : f32
    %e = arith.mulf %frac, %lt : f32
    %ne = arith.negf %e : f32
    %freq = math.exp2 %ne : f32
    %p = arith.index_cast %pos : index to i32
    %pp = arith.addi %p, %off : i32
    %pf = arith.sitofp %pp : i32 to f32
    %a = arith.mulf %pf, %freq : f32
    %c = math.cos %a : f32
    %s = math.sin %a : f32
    %first = arith.cmpi ult, %di, %half : i32
    %nxr = arith.negf %xr : f32
    %rot = arith.select %first, %nxr, %xr : f32
    %xc = arith.mulf %x, %c : f32
    %rs = arith.mulf %rot, %s : f32
    %y = arith.addf %xc, %rs : f32
    attn.yield %y : f32
  }
  key(%x: f32, %xr: f32, %d: index, %pos: index, %head: index,
      %lt: f32, %half: i32, %off: i32) {
    %di = arith.index_cast %d : index to i32
    %i = arith.remui %di, %half : i32
    %if = arith.uitofp %i : i32 to f32
    %hf = arith.uitofp %half : i32 to f32
    %frac = arith.divf %if, %hf : f32
    %e = arith.mulf %frac, %lt : f32
    %ne = arith.negf %e : f32
    %freq = math.exp2 %ne : f32
    %p = arith.index_cast %pos : index to i32
    %pp = arith.addi %p, %off : i32
    %pf = arith.sitofp %pp : i32 to f32
    %a = arith.mulf %pf, %freq : f32
    %c = math.cos %a : f32
    %s = math.sin %a : f32
    %first = arith.cmpi ult, %di, %half : i32
    %nxr = arith.negf %xr : f32
    %rot = arith.select %first, %nxr, %xr : f32
    %xc = arith.mulf %x, %c : f32
    %rs = arith.mulf %rot, %s : f32
    %y = arith.addf %xc, %rs : f32
    attn.yield %y : f32
  }
}

func.func @causal_d72_g1_p16_bf16(%k: tensor<?x16x8x72xbf16>, %v: tensor<?x16x8x72xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x8x72xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x8x72xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x8x72xbf16>, tensor<?x16x8x72xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 72, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x8x72xbf16> -> !attn.ragged_q<heads = 8, head_dim = 72, bf16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 8, head_dim = 72, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 72, bf16>
      -> tensor<?x8x72xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x72xbf16>, tensor<?x8xf32>
}

func.func @plain_d80_g3_p5_bf16(%k: tensor<?x5x4x80xbf16>, %v: tensor<?x5x4x80xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x12x80xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x12x80xbf16>, tensor<?x12xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x5x4x80xbf16>, tensor<?x5x4x80xbf16> -> !attn.paged_kv<page_size = 5, layout = nhd, heads = 4, head_dim = 80, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x12x80xbf16> -> !attn.ragged_q<heads = 12, head_dim = 80, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 12 : i64, num_kv_heads = 4 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 12, head_dim = 80, bf16>, !attn.paged_kv<page_size = 5, layout = nhd, heads = 4, head_dim = 80, bf16>
      -> tensor<?x12x80xbf16>, tensor<?x12xf32>
  return %o, %l : tensor<?x12x80xbf16>, tensor<?x12xf32>
}

func.func @causal_d96_g16_p16_bf16_fused(%k: tensor<?x16x2x96xbf16>, %v: tensor<?x16x2x96xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x96xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x96xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x2x96xbf16>, tensor<?x16x2x96xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 96, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x96xbf16> -> !attn.ragged_q<heads = 32, head_dim = 96, bf16>
  %o, %l = attn.attention @causal(%q, %kv)
      {fused_head_groups, num_qo_heads = 32 : i64, num_kv_heads = 2 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 32, head_dim = 96, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 96, bf16>
      -> tensor<?x32x96xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x96xbf16>, tensor<?x32xf32>
}

func.func @plain_d160_g7_p1_f16(%k: tensor<?x1x2x160xf16>, %v: tensor<?x1x2x160xf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x14x160xf16>,
    %qo: tensor<?xi32>) -> (tensor<?x14x160xf16>, tensor<?x14xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x1x2x160xf16>, tensor<?x1x2x160xf16> -> !attn.paged_kv<page_size = 1, layout = nhd, heads = 2, head_dim = 160, f16>
  %q = attn.ragged_q %queries, %qo : tensor<?x14x160xf16> -> !attn.ragged_q<heads = 14, head_dim = 160, f16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 14 : i64, num_kv_heads = 2 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 8, stages = 2>} : !attn.ragged_q<heads = 14, head_dim = 160, f16>, !attn.paged_kv<page_size = 1, layout = nhd, heads = 2, head_dim = 160, f16>
      -> tensor<?x14x160xf16>, tensor<?x14xf32>
  return %o, %l : tensor<?x14x160xf16>, tensor<?x14xf32>
}

func.func @causal_d192_g4_p16_bf16(%k: tensor<?x16x4x192xbf16>, %v: tensor<?x16x4x192xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x16x192xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x16x192xbf16>, tensor<?x16xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x4x192xbf16>, tensor<?x16x4x192xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 4, head_dim = 192, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x16x192xbf16> -> !attn.ragged_q<heads = 16, head_dim = 192, bf16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 16 : i64, num_kv_heads = 4 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 8, stages = 2>} : !attn.ragged_q<heads = 16, head_dim = 192, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 4, head_dim = 192, bf16>
      -> tensor<?x16x192xbf16>, tensor<?x16xf32>
  return %o, %l : tensor<?x16x192xbf16>, tensor<?x16xf32>
}

func.func @plain_d16_g32_p3_bf16_fused(%k: tensor<?x3x1x16xbf16>, %v: tensor<?x3x1x16xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x16xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x16xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x3x1x16xbf16>, tensor<?x3x1x16xbf16> -> !attn.paged_kv<page_size = 3, layout = nhd, heads = 1, head_dim = 16, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x16xbf16> -> !attn.ragged_q<heads = 32, head_dim = 16, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {fused_head_groups, num_qo_heads = 32 : i64, num_kv_heads = 1 : i64, tiles = #attn.tiles<q = 128, kv = 128, warps = 4, stages = 2>} : !attn.ragged_q<heads = 32, head_dim = 16, bf16>, !attn.paged_kv<page_size = 3, layout = nhd, heads = 1, head_dim = 16, bf16>
      -> tensor<?x32x16xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x16xbf16>, tensor<?x32xf32>
}

func.func @causal_d192_g2_p16_bf16_hnd(%k: tensor<?x4x16x192xbf16>, %v: tensor<?x4x16x192xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x8x192xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x8x192xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x4x16x192xbf16>, tensor<?x4x16x192xbf16> -> !attn.paged_kv<page_size = 16, layout = hnd, heads = 4, head_dim = 192, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x8x192xbf16> -> !attn.ragged_q<heads = 8, head_dim = 192, bf16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 4 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 8, stages = 2>} : !attn.ragged_q<heads = 8, head_dim = 192, bf16>, !attn.paged_kv<page_size = 16, layout = hnd, heads = 4, head_dim = 192, bf16>
      -> tensor<?x8x192xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x192xbf16>, tensor<?x8xf32>
}

func.func @softcap_d96_g8_p64_f16(%k: tensor<?x64x2x96xf16>, %v: tensor<?x64x2x96xf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x16x96xf16>,
    %qo: tensor<?xi32>, %cap: f32) -> (tensor<?x16x96xf16>, tensor<?x16xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x64x2x96xf16>, tensor<?x64x2x96xf16> -> !attn.paged_kv<page_size = 64, layout = nhd, heads = 2, head_dim = 96, f16>
  %q = attn.ragged_q %queries, %qo : tensor<?x16x96xf16> -> !attn.ragged_q<heads = 16, head_dim = 96, f16>
  %o, %l = attn.attention @soft_cap(%q, %kv) params(%cap : f32)
      {num_qo_heads = 16 : i64, num_kv_heads = 2 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 16, head_dim = 96, f16>, !attn.paged_kv<page_size = 64, layout = nhd, heads = 2, head_dim = 96, f16>
      -> tensor<?x16x96xf16>, tensor<?x16xf32>
  return %o, %l : tensor<?x16x96xf16>, tensor<?x16xf32>
}

func.func @causal_d72_g4_p16_f16(%k: tensor<?x16x4x72xf16>, %v: tensor<?x16x4x72xf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x16x72xf16>,
    %qo: tensor<?xi32>) -> (tensor<?x16x72xf16>, tensor<?x16xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x4x72xf16>, tensor<?x16x4x72xf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 4, head_dim = 72, f16>
  %q = attn.ragged_q %queries, %qo : tensor<?x16x72xf16> -> !attn.ragged_q<heads = 16, head_dim = 72, f16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 16 : i64, num_kv_heads = 4 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 16, head_dim = 72, f16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 4, head_dim = 72, f16>
      -> tensor<?x16x72xf16>, tensor<?x16xf32>
  return %o, %l : tensor<?x16x72xf16>, tensor<?x16xf32>
}

func.func @plain_d200_g2_p16_bf16_s1(%k: tensor<?x16x4x200xbf16>, %v: tensor<?x16x4x200xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x8x200xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x8x200xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x4x200xbf16>, tensor<?x16x4x200xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 4, head_dim = 200, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x8x200xbf16> -> !attn.ragged_q<heads = 8, head_dim = 200, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 4 : i64, tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 1>} : !attn.ragged_q<heads = 8, head_dim = 200, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 4, head_dim = 200, bf16>
      -> tensor<?x8x200xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x200xbf16>, tensor<?x8xf32>
}

func.func @rope_d128_g4_p16_bf16(%k: tensor<?x16x8x128xbf16>, %v: tensor<?x16x8x128xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x128xbf16>,
    %qo: tensor<?xi32>, %log2_theta: f32, %half_dim: i32, %offset: tensor<?xi32>) -> (tensor<?x32x128xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x8x128xbf16>, tensor<?x16x8x128xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x128xbf16> -> !attn.ragged_q<heads = 32, head_dim = 128, bf16>
  %o, %l = attn.attention @rope(%q, %kv) params(%log2_theta, %half_dim, %offset : f32, i32, tensor<?xi32>)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 32, head_dim = 128, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, bf16>
      -> tensor<?x32x128xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x128xbf16>, tensor<?x32xf32>
}

func.func @rope_d64_g1_p16_f16(%k: tensor<?x16x8x64xf16>, %v: tensor<?x16x8x64xf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x8x64xf16>,
    %qo: tensor<?xi32>, %log2_theta: f32, %half_dim: i32, %offset: tensor<?xi32>) -> (tensor<?x8x64xf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x8x64xf16>, tensor<?x16x8x64xf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 64, f16>
  %q = attn.ragged_q %queries, %qo : tensor<?x8x64xf16> -> !attn.ragged_q<heads = 8, head_dim = 64, f16>
  %o, %l = attn.attention @rope(%q, %kv) params(%log2_theta, %half_dim, %offset : f32, i32, tensor<?xi32>)
      {num_qo_heads = 8 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 1>} : !attn.ragged_q<heads = 8, head_dim = 64, f16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 64, f16>
      -> tensor<?x8x64xf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x64xf16>, tensor<?x8xf32>
}

func.func @sigmoid_d128_g4_p16_bf16(%k: tensor<?x16x8x128xbf16>, %v: tensor<?x16x8x128xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x128xbf16>,
    %qo: tensor<?xi32>, %bias: f32) -> (tensor<?x32x128xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x8x128xbf16>, tensor<?x16x8x128xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x128xbf16> -> !attn.ragged_q<heads = 32, head_dim = 128, bf16>
  %o, %l = attn.attention @sigmoid(%q, %kv) params(%bias : f32)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 32, head_dim = 128, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, bf16>
      -> tensor<?x32x128xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x128xbf16>, tensor<?x32xf32>
}

func.func @custom_mask_d128_g4_p16_bf16(%k: tensor<?x16x8x128xbf16>, %v: tensor<?x16x8x128xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x128xbf16>,
    %qo: tensor<?xi32>, %bits: tensor<?xi8>, %row0: tensor<?xi64>, %stride: tensor<?xi64>) -> (tensor<?x32x128xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x8x128xbf16>, tensor<?x16x8x128xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x128xbf16> -> !attn.ragged_q<heads = 32, head_dim = 128, bf16>
  %o, %l = attn.attention @custom_mask(%q, %kv) params(%bits, %row0, %stride : tensor<?xi8>, tensor<?xi64>, tensor<?xi64>)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 32, head_dim = 128, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, bf16>
      -> tensor<?x32x128xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x128xbf16>, tensor<?x32xf32>
}

func.func @custom_mask_d64_g2_p16_f16_hnd(%k: tensor<?x4x16x64xf16>, %v: tensor<?x4x16x64xf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x8x64xf16>,
    %qo: tensor<?xi32>, %bits: tensor<?xi8>, %row0: tensor<?xi64>, %stride: tensor<?xi64>) -> (tensor<?x8x64xf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x4x16x64xf16>, tensor<?x4x16x64xf16> -> !attn.paged_kv<page_size = 16, layout = hnd, heads = 4, head_dim = 64, f16>
  %q = attn.ragged_q %queries, %qo : tensor<?x8x64xf16> -> !attn.ragged_q<heads = 8, head_dim = 64, f16>
  %o, %l = attn.attention @custom_mask(%q, %kv) params(%bits, %row0, %stride : tensor<?xi8>, tensor<?xi64>, tensor<?xi64>)
      {num_qo_heads = 8 : i64, num_kv_heads = 4 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 8, head_dim = 64, f16>, !attn.paged_kv<page_size = 16, layout = hnd, heads = 4, head_dim = 64, f16>
      -> tensor<?x8x64xf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x64xf16>, tensor<?x8xf32>
}

// Ragged views (attn.ragged_kv): the keys' contiguous rows, no page table.
func.func @causal_d128_g4_ragged_bf16(%k: tensor<?x2x128xbf16>, %v: tensor<?x2x128xbf16>, %indptr: tensor<?xi32>,
    %queries: tensor<?x8x128xbf16>, %qo: tensor<?xi32>) -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %kv = attn.ragged_kv %k, %v, %indptr : tensor<?x2x128xbf16>, tensor<?x2x128xbf16> -> !attn.ragged_kv<heads = 2, head_dim = 128, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x8x128xbf16> -> !attn.ragged_q<heads = 8, head_dim = 128, bf16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 8, head_dim = 128, bf16>, !attn.ragged_kv<heads = 2, head_dim = 128, bf16>
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>
}

func.func @plain_d80_g2_ragged_f16(%k: tensor<?x2x80xf16>, %v: tensor<?x2x80xf16>, %indptr: tensor<?xi32>,
    %queries: tensor<?x4x80xf16>, %qo: tensor<?xi32>) -> (tensor<?x4x80xf16>, tensor<?x4xf32>) {
  %kv = attn.ragged_kv %k, %v, %indptr : tensor<?x2x80xf16>, tensor<?x2x80xf16> -> !attn.ragged_kv<heads = 2, head_dim = 80, f16>
  %q = attn.ragged_q %queries, %qo : tensor<?x4x80xf16> -> !attn.ragged_q<heads = 4, head_dim = 80, f16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64, tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 4, head_dim = 80, f16>, !attn.ragged_kv<heads = 2, head_dim = 80, f16>
      -> tensor<?x4x80xf16>, tensor<?x4xf32>
  return %o, %l : tensor<?x4x80xf16>, tensor<?x4xf32>
}

func.func @causal_d64_g8_ragged_bf16_fused(%k: tensor<?x2x64xbf16>, %v: tensor<?x2x64xbf16>, %indptr: tensor<?xi32>,
    %queries: tensor<?x16x64xbf16>, %qo: tensor<?xi32>) -> (tensor<?x16x64xbf16>, tensor<?x16xf32>) {
  %kv = attn.ragged_kv %k, %v, %indptr : tensor<?x2x64xbf16>, tensor<?x2x64xbf16> -> !attn.ragged_kv<heads = 2, head_dim = 64, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x16x64xbf16> -> !attn.ragged_q<heads = 16, head_dim = 64, bf16>
  %o, %l = attn.attention @causal(%q, %kv)
      {fused_head_groups, num_qo_heads = 16 : i64, num_kv_heads = 2 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 16, head_dim = 64, bf16>, !attn.ragged_kv<heads = 2, head_dim = 64, bf16>
      -> tensor<?x16x64xbf16>, tensor<?x16xf32>
  return %o, %l : tensor<?x16x64xbf16>, tensor<?x16xf32>
}

// Attentions over several KV views (keys concatenated in view order; the
// check cuts each request's keys at random points, some views empty, and
// re-pages each run into its view's own pool): one key loop per view,
// positions counted across the views.
func.func @views2_causal_d128_g4_p16_bf16(%k0: tensor<?x16x2x128xbf16>, %v0: tensor<?x16x2x128xbf16>,
    %indptr0: tensor<?xi32>, %indices0: tensor<?xi32>, %last0: tensor<?xi32>,
    %k1: tensor<?x16x2x128xbf16>, %v1: tensor<?x16x2x128xbf16>,
    %indptr1: tensor<?xi32>, %indices1: tensor<?xi32>, %last1: tensor<?xi32>,
    %queries: tensor<?x8x128xbf16>, %qo: tensor<?xi32>) -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %kv0 = attn.paged_kv %k0, %v0, %indptr0, %indices0, %last0 : tensor<?x16x2x128xbf16>, tensor<?x16x2x128xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, bf16>
  %kv1 = attn.paged_kv %k1, %v1, %indptr1, %indices1, %last1 : tensor<?x16x2x128xbf16>, tensor<?x16x2x128xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x8x128xbf16> -> !attn.ragged_q<heads = 8, head_dim = 128, bf16>
  %o, %l = attn.attention @causal(%q, %kv0, %kv1)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64, tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 8, head_dim = 128, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, bf16>
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>
}

func.func @views3_rope_d64_g1_p5_f16(%k0: tensor<?x5x4x64xf16>, %v0: tensor<?x5x4x64xf16>,
    %indptr0: tensor<?xi32>, %indices0: tensor<?xi32>, %last0: tensor<?xi32>,
    %k1: tensor<?x5x4x64xf16>, %v1: tensor<?x5x4x64xf16>,
    %indptr1: tensor<?xi32>, %indices1: tensor<?xi32>, %last1: tensor<?xi32>,
    %k2: tensor<?x5x4x64xf16>, %v2: tensor<?x5x4x64xf16>,
    %indptr2: tensor<?xi32>, %indices2: tensor<?xi32>, %last2: tensor<?xi32>,
    %queries: tensor<?x4x64xf16>, %qo: tensor<?xi32>,
    %log2_theta: f32, %half_dim: i32, %offset: tensor<?xi32>) -> (tensor<?x4x64xf16>, tensor<?x4xf32>) {
  %kv0 = attn.paged_kv %k0, %v0, %indptr0, %indices0, %last0 : tensor<?x5x4x64xf16>, tensor<?x5x4x64xf16> -> !attn.paged_kv<page_size = 5, layout = nhd, heads = 4, head_dim = 64, f16>
  %kv1 = attn.paged_kv %k1, %v1, %indptr1, %indices1, %last1 : tensor<?x5x4x64xf16>, tensor<?x5x4x64xf16> -> !attn.paged_kv<page_size = 5, layout = nhd, heads = 4, head_dim = 64, f16>
  %kv2 = attn.paged_kv %k2, %v2, %indptr2, %indices2, %last2 : tensor<?x5x4x64xf16>, tensor<?x5x4x64xf16> -> !attn.paged_kv<page_size = 5, layout = nhd, heads = 4, head_dim = 64, f16>
  %q = attn.ragged_q %queries, %qo : tensor<?x4x64xf16> -> !attn.ragged_q<heads = 4, head_dim = 64, f16>
  %o, %l = attn.attention @rope(%q, %kv0, %kv1, %kv2) params(%log2_theta, %half_dim, %offset : f32, i32, tensor<?xi32>)
      {num_qo_heads = 4 : i64, num_kv_heads = 4 : i64, tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 1>} : !attn.ragged_q<heads = 4, head_dim = 64, f16>, !attn.paged_kv<page_size = 5, layout = nhd, heads = 4, head_dim = 64, f16>, !attn.paged_kv<page_size = 5, layout = nhd, heads = 4, head_dim = 64, f16>, !attn.paged_kv<page_size = 5, layout = nhd, heads = 4, head_dim = 64, f16>
      -> tensor<?x4x64xf16>, tensor<?x4xf32>
  return %o, %l : tensor<?x4x64xf16>, tensor<?x4xf32>
}

func.func @views2_custom_mask_d96_g2_p16_bf16_hnd(%k0: tensor<?x4x16x96xbf16>, %v0: tensor<?x4x16x96xbf16>,
    %indptr0: tensor<?xi32>, %indices0: tensor<?xi32>, %last0: tensor<?xi32>,
    %k1: tensor<?x4x16x96xbf16>, %v1: tensor<?x4x16x96xbf16>,
    %indptr1: tensor<?xi32>, %indices1: tensor<?xi32>, %last1: tensor<?xi32>,
    %queries: tensor<?x8x96xbf16>, %qo: tensor<?xi32>,
    %bits: tensor<?xi8>, %row0: tensor<?xi64>, %stride: tensor<?xi64>) -> (tensor<?x8x96xbf16>, tensor<?x8xf32>) {
  %kv0 = attn.paged_kv %k0, %v0, %indptr0, %indices0, %last0 : tensor<?x4x16x96xbf16>, tensor<?x4x16x96xbf16> -> !attn.paged_kv<page_size = 16, layout = hnd, heads = 4, head_dim = 96, bf16>
  %kv1 = attn.paged_kv %k1, %v1, %indptr1, %indices1, %last1 : tensor<?x4x16x96xbf16>, tensor<?x4x16x96xbf16> -> !attn.paged_kv<page_size = 16, layout = hnd, heads = 4, head_dim = 96, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x8x96xbf16> -> !attn.ragged_q<heads = 8, head_dim = 96, bf16>
  %o, %l = attn.attention @custom_mask(%q, %kv0, %kv1) params(%bits, %row0, %stride : tensor<?xi8>, tensor<?xi64>, tensor<?xi64>)
      {num_qo_heads = 8 : i64, num_kv_heads = 4 : i64, tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 8, head_dim = 96, bf16>, !attn.paged_kv<page_size = 16, layout = hnd, heads = 4, head_dim = 96, bf16>, !attn.paged_kv<page_size = 16, layout = hnd, heads = 4, head_dim = 96, bf16>
      -> tensor<?x8x96xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x96xbf16>, tensor<?x8xf32>
}

func.func @views2_causal_d64_g8_ragged_bf16_fused(%k0: tensor<?x2x64xbf16>, %v0: tensor<?x2x64xbf16>, %indptr0: tensor<?xi32>,
    %k1: tensor<?x2x64xbf16>, %v1: tensor<?x2x64xbf16>, %indptr1: tensor<?xi32>,
    %queries: tensor<?x16x64xbf16>, %qo: tensor<?xi32>) -> (tensor<?x16x64xbf16>, tensor<?x16xf32>) {
  %kv0 = attn.ragged_kv %k0, %v0, %indptr0 : tensor<?x2x64xbf16>, tensor<?x2x64xbf16> -> !attn.ragged_kv<heads = 2, head_dim = 64, bf16>
  %kv1 = attn.ragged_kv %k1, %v1, %indptr1 : tensor<?x2x64xbf16>, tensor<?x2x64xbf16> -> !attn.ragged_kv<heads = 2, head_dim = 64, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x16x64xbf16> -> !attn.ragged_q<heads = 16, head_dim = 64, bf16>
  %o, %l = attn.attention @causal(%q, %kv0, %kv1)
      {fused_head_groups, num_qo_heads = 16 : i64, num_kv_heads = 2 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 16, head_dim = 64, bf16>, !attn.ragged_kv<heads = 2, head_dim = 64, bf16>, !attn.ragged_kv<heads = 2, head_dim = 64, bf16>
      -> tensor<?x16x64xbf16>, tensor<?x16xf32>
  return %o, %l : tensor<?x16x64xbf16>, tensor<?x16xf32>
}
