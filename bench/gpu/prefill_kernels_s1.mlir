// One-stage prefill kernels (tiles' stages = 1 on sm_80+: one K and one V
// slot, V's copies before Q.K^T and the next K's before the softmax, as
// FlashAttention-2 schedules them) for the GPU check and benchmark
// (scripts/gpu-bundle.sh -> build-gpu/bundle-prefill-s1, sm_80 and sm_90a).
// *_d256_*_s1: FlashAttention-2's d256 layout on the H200 (64 rows on 4
// warps, Q in shared memory, 64-key tiles: 101 KB, two CTAs per SM; one on
// sm_80); *_q128s1 the same with 128 rows on 8 warps (135 KB, fits sm_80);
// page sizes 1, 16 and 64, causal and a sliding window.

func.func @plain_d256_g4_p16_bf16_s1(%k: tensor<?x16x8x256xbf16>, %v: tensor<?x16x8x256xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x256xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x256xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x8x256xbf16>, tensor<?x16x8x256xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 256, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x256xbf16> -> !attn.ragged_q<heads = 32, head_dim = 256, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 1, q_shared = true>} : !attn.ragged_q<heads = 32, head_dim = 256, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 256, bf16>
      -> tensor<?x32x256xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x256xbf16>, tensor<?x32xf32>
}

func.func @causal_d256_g4_p16_bf16_s1(%k: tensor<?x16x8x256xbf16>, %v: tensor<?x16x8x256xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x256xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x256xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x8x256xbf16>, tensor<?x16x8x256xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 256, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x256xbf16> -> !attn.ragged_q<heads = 32, head_dim = 256, bf16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 1, q_shared = true>} : !attn.ragged_q<heads = 32, head_dim = 256, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 256, bf16>
      -> tensor<?x32x256xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x256xbf16>, tensor<?x32xf32>
}

func.func @plain_d256_g4_p16_bf16_q128s1(%k: tensor<?x16x8x256xbf16>, %v: tensor<?x16x8x256xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x256xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x256xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x8x256xbf16>, tensor<?x16x8x256xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 256, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x256xbf16> -> !attn.ragged_q<heads = 32, head_dim = 256, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 8, stages = 1, q_shared = true>} : !attn.ragged_q<heads = 32, head_dim = 256, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 256, bf16>
      -> tensor<?x32x256xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x256xbf16>, tensor<?x32xf32>
}

func.func @plain_d128_g4_p16_bf16_s1(%k: tensor<?x16x8x128xbf16>, %v: tensor<?x16x8x128xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x128xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x128xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x8x128xbf16>, tensor<?x16x8x128xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x128xbf16> -> !attn.ragged_q<heads = 32, head_dim = 128, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 1>} : !attn.ragged_q<heads = 32, head_dim = 128, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, bf16>
      -> tensor<?x32x128xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x128xbf16>, tensor<?x32xf32>
}

func.func @causal_d128_g4_p16_bf16_s1(%k: tensor<?x16x8x128xbf16>, %v: tensor<?x16x8x128xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x128xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x128xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x8x128xbf16>, tensor<?x16x8x128xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x128xbf16> -> !attn.ragged_q<heads = 32, head_dim = 128, bf16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 1>} : !attn.ragged_q<heads = 32, head_dim = 128, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, bf16>
      -> tensor<?x32x128xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x128xbf16>, tensor<?x32xf32>
}

func.func @plain_d64_g1_p1_bf16_s1(%k: tensor<?x1x8x64xbf16>, %v: tensor<?x1x8x64xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x8x64xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x8x64xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x1x8x64xbf16>, tensor<?x1x8x64xbf16> -> !attn.paged_kv<page_size = 1, layout = nhd, heads = 8, head_dim = 64, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x8x64xbf16> -> !attn.ragged_q<heads = 8, head_dim = 64, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 1>} : !attn.ragged_q<heads = 8, head_dim = 64, bf16>, !attn.paged_kv<page_size = 1, layout = nhd, heads = 8, head_dim = 64, bf16>
      -> tensor<?x8x64xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x64xbf16>, tensor<?x8xf32>
}

func.func @window_d128_g4_p64_bf16_s1(%k: tensor<?x64x2x128xbf16>, %v: tensor<?x64x2x128xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x8x128xbf16>,
    %qo: tensor<?xi32>, %window: tensor<?xi32>) -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x64x2x128xbf16>, tensor<?x64x2x128xbf16> -> !attn.paged_kv<page_size = 64, layout = nhd, heads = 2, head_dim = 128, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x8x128xbf16> -> !attn.ragged_q<heads = 8, head_dim = 128, bf16>
  %o, %l = attn.attention @sliding_window(%q, %kv) params(%window : tensor<?xi32>)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64, tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 1>} : !attn.ragged_q<heads = 8, head_dim = 128, bf16>, !attn.paged_kv<page_size = 64, layout = nhd, heads = 2, head_dim = 128, bf16>
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>
}
