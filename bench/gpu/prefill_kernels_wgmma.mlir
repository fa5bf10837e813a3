// sm_90a wgmma prefill kernels (design=wgmma; issue 25,
// docs/HopperPrefillPlan.md) for the GPU check: scripts/gpu-bundle.sh ->
// build-gpu/bundle-prefill-wgmma, checked and timed by
// bench/gpu/wgmma_check.sh. The family serves f16/bf16 attentions of head
// dims 64, 128 and 256 with every hook (plain, causal, soft-cap, sliding
// window, ALiBi, RoPE, sigmoid, an output hook below): K/V tiles (128 keys, 64
// at d256) from pages of 16 keys (several boxes per 64 columns), 64, 256 and
// 4096 keys (one box), HND pages and ragged (contiguous) keys. The tiles
// below are the mma.sync kernel's; the family replaces them with its own
// (128 rows, 2 stages).

func.func @plain_d128_g4_p16_bf16(%k: tensor<?x16x8x128xbf16>, %v: tensor<?x16x8x128xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x128xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x128xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x8x128xbf16>, tensor<?x16x8x128xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x128xbf16> -> !attn.ragged_q<heads = 32, head_dim = 128, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 32, head_dim = 128, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, bf16>
      -> tensor<?x32x128xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x128xbf16>, tensor<?x32xf32>
}

func.func @plain_d128_g4_p4096_bf16(%k: tensor<?x4096x8x128xbf16>, %v: tensor<?x4096x8x128xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x128xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x128xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x4096x8x128xbf16>, tensor<?x4096x8x128xbf16> -> !attn.paged_kv<page_size = 4096, layout = nhd, heads = 8, head_dim = 128, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x128xbf16> -> !attn.ragged_q<heads = 32, head_dim = 128, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 32, head_dim = 128, bf16>, !attn.paged_kv<page_size = 4096, layout = nhd, heads = 8, head_dim = 128, bf16>
      -> tensor<?x32x128xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x128xbf16>, tensor<?x32xf32>
}

func.func @plain_d128_g4_p16_f16(%k: tensor<?x16x8x128xf16>, %v: tensor<?x16x8x128xf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x128xf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, f16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x128xf16> -> !attn.ragged_q<heads = 32, head_dim = 128, f16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 32, head_dim = 128, f16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, f16>
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x128xf16>, tensor<?x32xf32>
}

func.func @plain_d128_g2_p64_bf16_hnd(%k: tensor<?x4x64x128xbf16>, %v: tensor<?x4x64x128xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x8x128xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x4x64x128xbf16>, tensor<?x4x64x128xbf16> -> !attn.paged_kv<page_size = 64, layout = hnd, heads = 4, head_dim = 128, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x8x128xbf16> -> !attn.ragged_q<heads = 8, head_dim = 128, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 4 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 8, head_dim = 128, bf16>, !attn.paged_kv<page_size = 64, layout = hnd, heads = 4, head_dim = 128, bf16>
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>
}

func.func @plain_d128_g1_p256_bf16(%k: tensor<?x256x4x128xbf16>, %v: tensor<?x256x4x128xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x4x128xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x4x128xbf16>, tensor<?x4xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x256x4x128xbf16>, tensor<?x256x4x128xbf16> -> !attn.paged_kv<page_size = 256, layout = nhd, heads = 4, head_dim = 128, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x4x128xbf16> -> !attn.ragged_q<heads = 4, head_dim = 128, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 4 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 4, head_dim = 128, bf16>, !attn.paged_kv<page_size = 256, layout = nhd, heads = 4, head_dim = 128, bf16>
      -> tensor<?x4x128xbf16>, tensor<?x4xf32>
  return %o, %l : tensor<?x4x128xbf16>, tensor<?x4xf32>
}

func.func @plain_d128_g4_ragged_bf16(%k: tensor<?x8x128xbf16>, %v: tensor<?x8x128xbf16>, %indptr: tensor<?xi32>,
    %queries: tensor<?x32x128xbf16>, %qo: tensor<?xi32>) -> (tensor<?x32x128xbf16>, tensor<?x32xf32>) {
  %kv = attn.ragged_kv %k, %v, %indptr : tensor<?x8x128xbf16>, tensor<?x8x128xbf16> -> !attn.ragged_kv<heads = 8, head_dim = 128, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x128xbf16> -> !attn.ragged_q<heads = 32, head_dim = 128, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 32, head_dim = 128, bf16>, !attn.ragged_kv<heads = 8, head_dim = 128, bf16>
      -> tensor<?x32x128xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x128xbf16>, tensor<?x32xf32>
}

func.func @causal_d128_g4_p16_bf16(%k: tensor<?x16x8x128xbf16>, %v: tensor<?x16x8x128xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x128xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x128xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x8x128xbf16>, tensor<?x16x8x128xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x128xbf16> -> !attn.ragged_q<heads = 32, head_dim = 128, bf16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 32, head_dim = 128, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, bf16>
      -> tensor<?x32x128xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x128xbf16>, tensor<?x32xf32>
}

func.func @causal_d128_g4_p4096_bf16(%k: tensor<?x4096x8x128xbf16>, %v: tensor<?x4096x8x128xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x128xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x128xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x4096x8x128xbf16>, tensor<?x4096x8x128xbf16> -> !attn.paged_kv<page_size = 4096, layout = nhd, heads = 8, head_dim = 128, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x128xbf16> -> !attn.ragged_q<heads = 32, head_dim = 128, bf16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 32, head_dim = 128, bf16>, !attn.paged_kv<page_size = 4096, layout = nhd, heads = 8, head_dim = 128, bf16>
      -> tensor<?x32x128xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x128xbf16>, tensor<?x32xf32>
}

func.func @causal_d128_g4_ragged_f16(%k: tensor<?x8x128xf16>, %v: tensor<?x8x128xf16>, %indptr: tensor<?xi32>,
    %queries: tensor<?x32x128xf16>, %qo: tensor<?xi32>) -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %kv = attn.ragged_kv %k, %v, %indptr : tensor<?x8x128xf16>, tensor<?x8x128xf16> -> !attn.ragged_kv<heads = 8, head_dim = 128, f16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x128xf16> -> !attn.ragged_q<heads = 32, head_dim = 128, f16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 32, head_dim = 128, f16>, !attn.ragged_kv<heads = 8, head_dim = 128, f16>
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x128xf16>, tensor<?x32xf32>
}

func.func @plain_d64_g4_p16_bf16(%k: tensor<?x16x8x64xbf16>, %v: tensor<?x16x8x64xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x64xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x64xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x8x64xbf16>, tensor<?x16x8x64xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 64, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x64xbf16> -> !attn.ragged_q<heads = 32, head_dim = 64, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 32, head_dim = 64, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 64, bf16>
      -> tensor<?x32x64xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x64xbf16>, tensor<?x32xf32>
}

func.func @causal_d64_g4_p16_bf16(%k: tensor<?x16x8x64xbf16>, %v: tensor<?x16x8x64xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x64xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x64xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x8x64xbf16>, tensor<?x16x8x64xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 64, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x64xbf16> -> !attn.ragged_q<heads = 32, head_dim = 64, bf16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 32, head_dim = 64, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 64, bf16>
      -> tensor<?x32x64xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x64xbf16>, tensor<?x32xf32>
}

func.func @plain_d256_g4_p16_bf16(%k: tensor<?x16x8x256xbf16>, %v: tensor<?x16x8x256xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x256xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x256xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x8x256xbf16>, tensor<?x16x8x256xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 256, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x256xbf16> -> !attn.ragged_q<heads = 32, head_dim = 256, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 32, head_dim = 256, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 256, bf16>
      -> tensor<?x32x256xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x256xbf16>, tensor<?x32xf32>
}

func.func @causal_d256_g4_p16_bf16(%k: tensor<?x16x8x256xbf16>, %v: tensor<?x16x8x256xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x256xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x256xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x8x256xbf16>, tensor<?x16x8x256xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 256, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x256xbf16> -> !attn.ragged_q<heads = 32, head_dim = 256, bf16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 32, head_dim = 256, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 256, bf16>
      -> tensor<?x32x256xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x256xbf16>, tensor<?x32xf32>
}

func.func @plain_d256_g4_p4096_bf16(%k: tensor<?x4096x8x256xbf16>, %v: tensor<?x4096x8x256xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x256xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x256xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x4096x8x256xbf16>, tensor<?x4096x8x256xbf16> -> !attn.paged_kv<page_size = 4096, layout = nhd, heads = 8, head_dim = 256, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x256xbf16> -> !attn.ragged_q<heads = 32, head_dim = 256, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 32, head_dim = 256, bf16>, !attn.paged_kv<page_size = 4096, layout = nhd, heads = 8, head_dim = 256, bf16>
      -> tensor<?x32x256xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x256xbf16>, tensor<?x32xf32>
}

func.func @softcap_d128_g8_p16_f16(%k: tensor<?x16x2x128xf16>, %v: tensor<?x16x2x128xf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x16x128xf16>,
    %qo: tensor<?xi32>, %cap: f32) -> (tensor<?x16x128xf16>, tensor<?x16xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x2x128xf16>, tensor<?x16x2x128xf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, f16>
  %q = attn.ragged_q %queries, %qo : tensor<?x16x128xf16> -> !attn.ragged_q<heads = 16, head_dim = 128, f16>
  %o, %l = attn.attention @soft_cap(%q, %kv) params(%cap : f32)
      {num_qo_heads = 16 : i64, num_kv_heads = 2 : i64, tiles = #attn.tiles<q = 32, kv = 64, warps = 2, stages = 2>} : !attn.ragged_q<heads = 16, head_dim = 128, f16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, f16>
      -> tensor<?x16x128xf16>, tensor<?x16xf32>
  return %o, %l : tensor<?x16x128xf16>, tensor<?x16xf32>
}

func.func @window_d128_g4_p64_bf16(%k: tensor<?x64x2x128xbf16>, %v: tensor<?x64x2x128xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x8x128xbf16>,
    %qo: tensor<?xi32>, %window: tensor<?xi32>) -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x64x2x128xbf16>, tensor<?x64x2x128xbf16> -> !attn.paged_kv<page_size = 64, layout = nhd, heads = 2, head_dim = 128, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x8x128xbf16> -> !attn.ragged_q<heads = 8, head_dim = 128, bf16>
  %o, %l = attn.attention @sliding_window(%q, %kv) params(%window : tensor<?xi32>)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64, tiles = #attn.tiles<q = 64, kv = 32, warps = 4, stages = 2>} : !attn.ragged_q<heads = 8, head_dim = 128, bf16>, !attn.paged_kv<page_size = 64, layout = nhd, heads = 2, head_dim = 128, bf16>
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>
}

func.func @alibi_d256_g2_p16_bf16(%k: tensor<?x16x2x256xbf16>, %v: tensor<?x16x2x256xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x4x256xbf16>,
    %qo: tensor<?xi32>, %slopes: tensor<4xf32>) -> (tensor<?x4x256xbf16>, tensor<?x4xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x2x256xbf16>, tensor<?x16x2x256xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 256, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x4x256xbf16> -> !attn.ragged_q<heads = 4, head_dim = 256, bf16>
  %o, %l = attn.attention @alibi(%q, %kv) params(%slopes : tensor<4xf32>)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64, tiles = #attn.tiles<q = 64, kv = 32, warps = 4, stages = 2>} : !attn.ragged_q<heads = 4, head_dim = 256, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 256, bf16>
      -> tensor<?x4x256xbf16>, tensor<?x4xf32>
  return %o, %l : tensor<?x4x256xbf16>, tensor<?x4xf32>
}

// Fused head groups (rows are (token, query head of the group) pairs, 32
// tokens x 4 heads per CTA): the shared-prefix benchmark's prefix kernel
// (split-KV in build-gpu/bundle-prefill-wgmma-split), causal, and ALiBi
// (per-row head parameters).
func.func @plain_d128_g4_p16_bf16_fused(%k: tensor<?x16x8x128xbf16>, %v: tensor<?x16x8x128xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x128xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x128xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x8x128xbf16>, tensor<?x16x8x128xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x128xbf16> -> !attn.ragged_q<heads = 32, head_dim = 128, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64, fused_head_groups, tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 32, head_dim = 128, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, bf16>
      -> tensor<?x32x128xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x128xbf16>, tensor<?x32xf32>
}

func.func @causal_d128_g4_p16_bf16_fused(%k: tensor<?x16x8x128xbf16>, %v: tensor<?x16x8x128xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x128xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x128xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x8x128xbf16>, tensor<?x16x8x128xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x128xbf16> -> !attn.ragged_q<heads = 32, head_dim = 128, bf16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64, fused_head_groups, tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 32, head_dim = 128, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, bf16>
      -> tensor<?x32x128xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x128xbf16>, tensor<?x32xf32>
}

func.func @alibi_d128_g4_p16_bf16_fused(%k: tensor<?x16x2x128xbf16>, %v: tensor<?x16x2x128xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x8x128xbf16>,
    %qo: tensor<?xi32>, %slopes: tensor<8xf32>) -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x2x128xbf16>, tensor<?x16x2x128xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x8x128xbf16> -> !attn.ragged_q<heads = 8, head_dim = 128, bf16>
  %o, %l = attn.attention @alibi(%q, %kv) params(%slopes : tensor<8xf32>)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64, fused_head_groups, tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 8, head_dim = 128, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, bf16>
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>
}

// Query, key and output hooks and the sigmoid reduction (design=auto
// leaves query and key hooks to the mma.sync kernel, faster there): RoPE as query
// and key hooks (each landed K tile hooked in place by the consumers) at
// head dims 128, 256 and 64 with fused head groups (per-row heads in the
// query hook); sigmoid (unnormalised rows, lse = log sum sigmoid); an
// output hook (o * 0.5) on an HND pool.
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

// An output hook: o * 0.5.
attn.variant @scaled_out reduction softmax {
  output(%o: f32, %d: index, %head: index) {
    %half = arith.constant 0.5 : f32
    %r = arith.mulf %o, %half : f32
    attn.yield %r : f32
  }
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

func.func @rope_d256_g4_p16_bf16(%k: tensor<?x16x4x256xbf16>, %v: tensor<?x16x4x256xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x16x256xbf16>,
    %qo: tensor<?xi32>, %log2_theta: f32, %half_dim: i32, %offset: tensor<?xi32>) -> (tensor<?x16x256xbf16>, tensor<?x16xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x4x256xbf16>, tensor<?x16x4x256xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 4, head_dim = 256, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x16x256xbf16> -> !attn.ragged_q<heads = 16, head_dim = 256, bf16>
  %o, %l = attn.attention @rope(%q, %kv) params(%log2_theta, %half_dim, %offset : f32, i32, tensor<?xi32>)
      {num_qo_heads = 16 : i64, num_kv_heads = 4 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 16, head_dim = 256, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 4, head_dim = 256, bf16>
      -> tensor<?x16x256xbf16>, tensor<?x16xf32>
  return %o, %l : tensor<?x16x256xbf16>, tensor<?x16xf32>
}

func.func @rope_d64_g4_p16_f16_fused(%k: tensor<?x16x4x64xf16>, %v: tensor<?x16x4x64xf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x16x64xf16>,
    %qo: tensor<?xi32>, %log2_theta: f32, %half_dim: i32, %offset: tensor<?xi32>) -> (tensor<?x16x64xf16>, tensor<?x16xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x4x64xf16>, tensor<?x16x4x64xf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 4, head_dim = 64, f16>
  %q = attn.ragged_q %queries, %qo : tensor<?x16x64xf16> -> !attn.ragged_q<heads = 16, head_dim = 64, f16>
  %o, %l = attn.attention @rope(%q, %kv) params(%log2_theta, %half_dim, %offset : f32, i32, tensor<?xi32>)
      {num_qo_heads = 16 : i64, num_kv_heads = 4 : i64, fused_head_groups, tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 16, head_dim = 64, f16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 4, head_dim = 64, f16>
      -> tensor<?x16x64xf16>, tensor<?x16xf32>
  return %o, %l : tensor<?x16x64xf16>, tensor<?x16xf32>
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

func.func @scaled_out_d128_g4_p64_bf16_hnd(%k: tensor<?x4x64x128xbf16>, %v: tensor<?x4x64x128xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x16x128xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x16x128xbf16>, tensor<?x16xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x4x64x128xbf16>, tensor<?x4x64x128xbf16> -> !attn.paged_kv<page_size = 64, layout = hnd, heads = 4, head_dim = 128, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x16x128xbf16> -> !attn.ragged_q<heads = 16, head_dim = 128, bf16>
  %o, %l = attn.attention @scaled_out(%q, %kv)
      {num_qo_heads = 16 : i64, num_kv_heads = 4 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 16, head_dim = 128, bf16>, !attn.paged_kv<page_size = 64, layout = hnd, heads = 4, head_dim = 128, bf16>
      -> tensor<?x16x128xbf16>, tensor<?x16xf32>
  return %o, %l : tensor<?x16x128xbf16>, tensor<?x16xf32>
}

// Pages tensor-copy boxes cannot tile, filled by the producer's cp.async
// gather (design=auto takes this kernel for the power-of-two sizes and
// leaves the others to the mma.sync kernel, as fast or faster there): page
// 1 (the benchmark's page-1 rows), 5-key HND pages at d64, 3-key pages at
// d256, 24-key pages with fused head groups.
func.func @plain_d128_g4_p1_bf16(%k: tensor<?x1x8x128xbf16>, %v: tensor<?x1x8x128xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x128xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x128xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x1x8x128xbf16>, tensor<?x1x8x128xbf16> -> !attn.paged_kv<page_size = 1, layout = nhd, heads = 8, head_dim = 128, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x128xbf16> -> !attn.ragged_q<heads = 32, head_dim = 128, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 32, head_dim = 128, bf16>, !attn.paged_kv<page_size = 1, layout = nhd, heads = 8, head_dim = 128, bf16>
      -> tensor<?x32x128xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x128xbf16>, tensor<?x32xf32>
}

func.func @causal_d128_g4_p1_bf16(%k: tensor<?x1x8x128xbf16>, %v: tensor<?x1x8x128xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x128xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x128xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x1x8x128xbf16>, tensor<?x1x8x128xbf16> -> !attn.paged_kv<page_size = 1, layout = nhd, heads = 8, head_dim = 128, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x128xbf16> -> !attn.ragged_q<heads = 32, head_dim = 128, bf16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 32, head_dim = 128, bf16>, !attn.paged_kv<page_size = 1, layout = nhd, heads = 8, head_dim = 128, bf16>
      -> tensor<?x32x128xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x128xbf16>, tensor<?x32xf32>
}

func.func @causal_d64_g4_p5_f16_hnd(%k: tensor<?x4x5x64xf16>, %v: tensor<?x4x5x64xf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x16x64xf16>,
    %qo: tensor<?xi32>) -> (tensor<?x16x64xf16>, tensor<?x16xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x4x5x64xf16>, tensor<?x4x5x64xf16> -> !attn.paged_kv<page_size = 5, layout = hnd, heads = 4, head_dim = 64, f16>
  %q = attn.ragged_q %queries, %qo : tensor<?x16x64xf16> -> !attn.ragged_q<heads = 16, head_dim = 64, f16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 16 : i64, num_kv_heads = 4 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 16, head_dim = 64, f16>, !attn.paged_kv<page_size = 5, layout = hnd, heads = 4, head_dim = 64, f16>
      -> tensor<?x16x64xf16>, tensor<?x16xf32>
  return %o, %l : tensor<?x16x64xf16>, tensor<?x16xf32>
}

func.func @plain_d256_g2_p3_bf16(%k: tensor<?x3x4x256xbf16>, %v: tensor<?x3x4x256xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x8x256xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x8x256xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x3x4x256xbf16>, tensor<?x3x4x256xbf16> -> !attn.paged_kv<page_size = 3, layout = nhd, heads = 4, head_dim = 256, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x8x256xbf16> -> !attn.ragged_q<heads = 8, head_dim = 256, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 4 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 8, head_dim = 256, bf16>, !attn.paged_kv<page_size = 3, layout = nhd, heads = 4, head_dim = 256, bf16>
      -> tensor<?x8x256xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x256xbf16>, tensor<?x8xf32>
}

func.func @plain_d128_g4_p24_bf16_fused(%k: tensor<?x24x8x128xbf16>, %v: tensor<?x24x8x128xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x128xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x128xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x24x8x128xbf16>, tensor<?x24x8x128xbf16> -> !attn.paged_kv<page_size = 24, layout = nhd, heads = 8, head_dim = 128, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x128xbf16> -> !attn.ragged_q<heads = 32, head_dim = 128, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64, fused_head_groups, tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 32, head_dim = 128, bf16>, !attn.paged_kv<page_size = 24, layout = nhd, heads = 8, head_dim = 128, bf16>
      -> tensor<?x32x128xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x128xbf16>, tensor<?x32xf32>
}

// HND pages holding two tiles (256 keys): grouped boxes that start inside a
// page (slot / 8 of the tile's first key), causal.
func.func @causal_d128_g2_p256_bf16_hnd(%k: tensor<?x4x256x128xbf16>, %v: tensor<?x4x256x128xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x8x128xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x4x256x128xbf16>, tensor<?x4x256x128xbf16> -> !attn.paged_kv<page_size = 256, layout = hnd, heads = 4, head_dim = 128, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x8x128xbf16> -> !attn.ragged_q<heads = 8, head_dim = 128, bf16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 4 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 8, head_dim = 128, bf16>, !attn.paged_kv<page_size = 256, layout = hnd, heads = 4, head_dim = 128, bf16>
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>
}

// Gathered pages of a power-of-two size at the other head dims and an HND
// pool: eight passes of the warp's rows per gather loop iteration (one row
// per pass at d256, four at d64; page 4 takes its slot by a mask).
func.func @plain_d64_g4_p1_bf16(%k: tensor<?x1x8x64xbf16>, %v: tensor<?x1x8x64xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x64xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x64xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x1x8x64xbf16>, tensor<?x1x8x64xbf16> -> !attn.paged_kv<page_size = 1, layout = nhd, heads = 8, head_dim = 64, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x64xbf16> -> !attn.ragged_q<heads = 32, head_dim = 64, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 32, head_dim = 64, bf16>, !attn.paged_kv<page_size = 1, layout = nhd, heads = 8, head_dim = 64, bf16>
      -> tensor<?x32x64xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x64xbf16>, tensor<?x32xf32>
}

func.func @causal_d256_g2_p1_bf16(%k: tensor<?x1x4x256xbf16>, %v: tensor<?x1x4x256xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x8x256xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x8x256xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x1x4x256xbf16>, tensor<?x1x4x256xbf16> -> !attn.paged_kv<page_size = 1, layout = nhd, heads = 4, head_dim = 256, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x8x256xbf16> -> !attn.ragged_q<heads = 8, head_dim = 256, bf16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 4 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 8, head_dim = 256, bf16>, !attn.paged_kv<page_size = 1, layout = nhd, heads = 4, head_dim = 256, bf16>
      -> tensor<?x8x256xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x256xbf16>, tensor<?x8xf32>
}

func.func @causal_d128_g4_p4_f16_hnd(%k: tensor<?x4x4x128xf16>, %v: tensor<?x4x4x128xf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x16x128xf16>,
    %qo: tensor<?xi32>) -> (tensor<?x16x128xf16>, tensor<?x16xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x4x4x128xf16>, tensor<?x4x4x128xf16> -> !attn.paged_kv<page_size = 4, layout = hnd, heads = 4, head_dim = 128, f16>
  %q = attn.ragged_q %queries, %qo : tensor<?x16x128xf16> -> !attn.ragged_q<heads = 16, head_dim = 128, f16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 16 : i64, num_kv_heads = 4 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 16, head_dim = 128, f16>, !attn.paged_kv<page_size = 4, layout = hnd, heads = 4, head_dim = 128, f16>
      -> tensor<?x16x128xf16>, tensor<?x16xf32>
  return %o, %l : tensor<?x16x128xf16>, tensor<?x16xf32>
}
