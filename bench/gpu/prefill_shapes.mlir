// Prefill kernel configurations beyond head dims 64/128/256 and GQA groups
// of at most 8, for the GPU float64 check (bench/gpu/gpu_check.py --bundle
// on a flashir-bundle of this file for sm_80 and sm_90a, and of its *_f16*
// functions for sm_75). Each function name starts with its variant
// (causal_, plain_, softcap_; the manifest's `variant` picks the
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
