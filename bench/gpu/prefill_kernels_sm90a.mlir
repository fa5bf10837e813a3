// sm_90a-only prefill kernels for the GPU check (scripts/gpu-bundle.sh ->
// build-gpu/bundle-prefill-sm90a; bench/gpu/prefill_check.sh checks them with
// the others): tiles whose shared memory exceeds sm_80's 163 KB.
// *_d256_*_sm90 is attn-select-tiles' sm_90a d256 tile (Q in shared memory,
// 128 rows on 8 warps, 64-key tiles: 202752 bytes); *_s3 / *_s4 run the
// raw-copy ring with 3 and 4 stages (every other bundle kernel has 2),
// including page size 1 (page ids from the page table per piece) and 64;
// *_p4096_*_sm90 the d256 tile over one 4096-key page per request
// (contiguous KV).

func.func @plain_d256_g4_p16_bf16_sm90(%k: tensor<?x16x8x256xbf16>, %v: tensor<?x16x8x256xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x256xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x256xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x8x256xbf16>, tensor<?x16x8x256xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 256, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x256xbf16> -> !attn.ragged_q<heads = 32, head_dim = 256, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 8, stages = 2, q_shared = true>} : !attn.ragged_q<heads = 32, head_dim = 256, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 256, bf16>
      -> tensor<?x32x256xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x256xbf16>, tensor<?x32xf32>
}

func.func @causal_d256_g4_p16_bf16_sm90(%k: tensor<?x16x8x256xbf16>, %v: tensor<?x16x8x256xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x256xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x256xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x8x256xbf16>, tensor<?x16x8x256xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 256, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x256xbf16> -> !attn.ragged_q<heads = 32, head_dim = 256, bf16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 8, stages = 2, q_shared = true>} : !attn.ragged_q<heads = 32, head_dim = 256, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 256, bf16>
      -> tensor<?x32x256xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x256xbf16>, tensor<?x32xf32>
}

func.func @causal_d128_g4_p16_bf16_s3(%k: tensor<?x16x8x128xbf16>, %v: tensor<?x16x8x128xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x128xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x128xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x8x128xbf16>, tensor<?x16x8x128xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x128xbf16> -> !attn.ragged_q<heads = 32, head_dim = 128, bf16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 3>} : !attn.ragged_q<heads = 32, head_dim = 128, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, bf16>
      -> tensor<?x32x128xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x128xbf16>, tensor<?x32xf32>
}

func.func @plain_d64_g4_p16_bf16_s4(%k: tensor<?x16x8x64xbf16>, %v: tensor<?x16x8x64xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x64xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x64xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x8x64xbf16>, tensor<?x16x8x64xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 64, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x64xbf16> -> !attn.ragged_q<heads = 32, head_dim = 64, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 128, kv = 128, warps = 4, stages = 4>} : !attn.ragged_q<heads = 32, head_dim = 64, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 64, bf16>
      -> tensor<?x32x64xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x64xbf16>, tensor<?x32xf32>
}

func.func @plain_d64_g1_p1_bf16_s3(%k: tensor<?x1x8x64xbf16>, %v: tensor<?x1x8x64xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x8x64xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x8x64xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x1x8x64xbf16>, tensor<?x1x8x64xbf16> -> !attn.paged_kv<page_size = 1, layout = nhd, heads = 8, head_dim = 64, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x8x64xbf16> -> !attn.ragged_q<heads = 8, head_dim = 64, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 3>} : !attn.ragged_q<heads = 8, head_dim = 64, bf16>, !attn.paged_kv<page_size = 1, layout = nhd, heads = 8, head_dim = 64, bf16>
      -> tensor<?x8x64xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x64xbf16>, tensor<?x8xf32>
}

func.func @window_d128_g4_p64_bf16_s3(%k: tensor<?x64x2x128xbf16>, %v: tensor<?x64x2x128xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x8x128xbf16>,
    %qo: tensor<?xi32>, %window: tensor<?xi32>) -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x64x2x128xbf16>, tensor<?x64x2x128xbf16> -> !attn.paged_kv<page_size = 64, layout = nhd, heads = 2, head_dim = 128, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x8x128xbf16> -> !attn.ragged_q<heads = 8, head_dim = 128, bf16>
  %o, %l = attn.attention @sliding_window(%q, %kv) params(%window : tensor<?xi32>)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64, tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 3>} : !attn.ragged_q<heads = 8, head_dim = 128, bf16>, !attn.paged_kv<page_size = 64, layout = nhd, heads = 2, head_dim = 128, bf16>
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>
}

func.func @plain_d256_g4_p4096_bf16_sm90(%k: tensor<?x4096x8x256xbf16>, %v: tensor<?x4096x8x256xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x256xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x256xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x4096x8x256xbf16>, tensor<?x4096x8x256xbf16> -> !attn.paged_kv<page_size = 4096, layout = nhd, heads = 8, head_dim = 256, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x256xbf16> -> !attn.ragged_q<heads = 32, head_dim = 256, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 8, stages = 2, q_shared = true>} : !attn.ragged_q<heads = 32, head_dim = 256, bf16>, !attn.paged_kv<page_size = 4096, layout = nhd, heads = 8, head_dim = 256, bf16>
      -> tensor<?x32x256xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x256xbf16>, tensor<?x32xf32>
}

func.func @causal_d256_g4_p4096_bf16_sm90(%k: tensor<?x4096x8x256xbf16>, %v: tensor<?x4096x8x256xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x256xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x256xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x4096x8x256xbf16>, tensor<?x4096x8x256xbf16> -> !attn.paged_kv<page_size = 4096, layout = nhd, heads = 8, head_dim = 256, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x256xbf16> -> !attn.ragged_q<heads = 32, head_dim = 256, bf16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 8, stages = 2, q_shared = true>} : !attn.ragged_q<heads = 32, head_dim = 256, bf16>, !attn.paged_kv<page_size = 4096, layout = nhd, heads = 8, head_dim = 256, bf16>
      -> tensor<?x32x256xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x256xbf16>, tensor<?x32xf32>
}
