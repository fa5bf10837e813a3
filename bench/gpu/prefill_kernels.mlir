// Prefill kernel configurations for the GPU check (bench/gpu/gpu_check.py
// --bundle build-gpu/bundle-prefill); scripts/gpu-bundle.sh compiles them
// with flashir-bundle. Each attention carries the tiles attn-select-tiles
// would record (q >= 16 rows: the tensor-core prefill kernel); the bf16 d64 /
// d128 benchmark shapes take 128 rows on 4 warps (32 rows per warp, Q in
// shared memory) and, at d 64, 128-key tiles (attn-select-tiles' sm_90a
// choice); plain_d128_g4_p16_bf16_q64 is the 16-rows-per-warp layout,
// plain_d64_g4_p16_bf16_kv64 64-key tiles (A/B rows);
// plain_d128_g4_p16_bf16_fused is the shared-prefix benchmark's prefix part
// (32 tokens x 4 heads per CTA). At d 256 the plain / causal rows take
// attn-select-tiles' sm_80 pick, 128 rows on 8 warps with Q in registers
// and 32-key tiles (its sm_90a pick adds q_shared and 64-key tiles: 203
// KB, more than sm_80 holds, so in prefill_kernels_sm90a.mlir);
// plain_d256_g4_p16_bf16_q128 is its previous sm_80 pick (64-key tiles,
// Q in registers), plain_d256_g4_p16_bf16_qsmem 128 rows on 8 warps with Q
// in shared memory and 32-key tiles, plain_d256_g4_p16_bf16_qsmem64 64
// rows on 4 warps with Q in shared memory and plain_d256_g4_p16_bf16_q64
// with Q in registers (A/B rows). *_p4096_* hold a request's 4096
// keys in one page: the contiguous-KV figures next to the paged ones.

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

func.func @plain_d64_g1_p1_bf16(%k: tensor<?x1x8x64xbf16>, %v: tensor<?x1x8x64xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x8x64xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x8x64xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x1x8x64xbf16>, tensor<?x1x8x64xbf16> -> !attn.paged_kv<page_size = 1, layout = nhd, heads = 8, head_dim = 64, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x8x64xbf16> -> !attn.ragged_q<heads = 8, head_dim = 64, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 8, head_dim = 64, bf16>, !attn.paged_kv<page_size = 1, layout = nhd, heads = 8, head_dim = 64, bf16>
      -> tensor<?x8x64xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x64xbf16>, tensor<?x8xf32>
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

func.func @causal_d128_g4_p16_f16_q128(%k: tensor<?x16x8x128xf16>, %v: tensor<?x16x8x128xf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x128xf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, f16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x128xf16> -> !attn.ragged_q<heads = 32, head_dim = 128, f16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 8, stages = 2>} : !attn.ragged_q<heads = 32, head_dim = 128, f16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, f16>
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x128xf16>, tensor<?x32xf32>
}

func.func @plain_d128_g4_p16_bf16_q64(%k: tensor<?x16x8x128xbf16>, %v: tensor<?x16x8x128xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x128xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x128xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x8x128xbf16>, tensor<?x16x8x128xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x128xbf16> -> !attn.ragged_q<heads = 32, head_dim = 128, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 32, head_dim = 128, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, bf16>
      -> tensor<?x32x128xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x128xbf16>, tensor<?x32xf32>
}

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

func.func @plain_d64_g4_p16_bf16(%k: tensor<?x16x8x64xbf16>, %v: tensor<?x16x8x64xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x64xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x64xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x8x64xbf16>, tensor<?x16x8x64xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 64, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x64xbf16> -> !attn.ragged_q<heads = 32, head_dim = 64, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 128, kv = 128, warps = 4, stages = 2>} : !attn.ragged_q<heads = 32, head_dim = 64, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 64, bf16>
      -> tensor<?x32x64xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x64xbf16>, tensor<?x32xf32>
}

func.func @causal_d64_g4_p16_bf16(%k: tensor<?x16x8x64xbf16>, %v: tensor<?x16x8x64xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x64xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x64xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x8x64xbf16>, tensor<?x16x8x64xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 64, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x64xbf16> -> !attn.ragged_q<heads = 32, head_dim = 64, bf16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 128, kv = 128, warps = 4, stages = 2>} : !attn.ragged_q<heads = 32, head_dim = 64, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 64, bf16>
      -> tensor<?x32x64xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x64xbf16>, tensor<?x32xf32>
}

func.func @plain_d256_g4_p16_bf16(%k: tensor<?x16x8x256xbf16>, %v: tensor<?x16x8x256xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x256xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x256xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x8x256xbf16>, tensor<?x16x8x256xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 256, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x256xbf16> -> !attn.ragged_q<heads = 32, head_dim = 256, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 128, kv = 32, warps = 8, stages = 2>} : !attn.ragged_q<heads = 32, head_dim = 256, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 256, bf16>
      -> tensor<?x32x256xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x256xbf16>, tensor<?x32xf32>
}

func.func @causal_d256_g4_p16_bf16(%k: tensor<?x16x8x256xbf16>, %v: tensor<?x16x8x256xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x256xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x256xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x8x256xbf16>, tensor<?x16x8x256xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 256, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x256xbf16> -> !attn.ragged_q<heads = 32, head_dim = 256, bf16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 128, kv = 32, warps = 8, stages = 2>} : !attn.ragged_q<heads = 32, head_dim = 256, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 256, bf16>
      -> tensor<?x32x256xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x256xbf16>, tensor<?x32xf32>
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

func.func @causal_d128_g4_p16_bf16_fused(%k: tensor<?x16x8x128xbf16>, %v: tensor<?x16x8x128xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x128xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x128xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x8x128xbf16>, tensor<?x16x8x128xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x128xbf16> -> !attn.ragged_q<heads = 32, head_dim = 128, bf16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64, fused_head_groups, tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 32, head_dim = 128, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, bf16>
      -> tensor<?x32x128xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x128xbf16>, tensor<?x32xf32>
}

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

func.func @plain_d256_g4_p16_bf16_q128(%k: tensor<?x16x8x256xbf16>, %v: tensor<?x16x8x256xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x256xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x256xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x8x256xbf16>, tensor<?x16x8x256xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 256, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x256xbf16> -> !attn.ragged_q<heads = 32, head_dim = 256, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 8, stages = 2>} : !attn.ragged_q<heads = 32, head_dim = 256, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 256, bf16>
      -> tensor<?x32x256xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x256xbf16>, tensor<?x32xf32>
}

func.func @plain_d64_g4_p16_bf16_kv64(%k: tensor<?x16x8x64xbf16>, %v: tensor<?x16x8x64xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x64xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x64xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x8x64xbf16>, tensor<?x16x8x64xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 64, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x64xbf16> -> !attn.ragged_q<heads = 32, head_dim = 64, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 32, head_dim = 64, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 64, bf16>
      -> tensor<?x32x64xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x64xbf16>, tensor<?x32xf32>
}

func.func @plain_d256_g4_p16_bf16_qsmem(%k: tensor<?x16x8x256xbf16>, %v: tensor<?x16x8x256xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x256xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x256xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x8x256xbf16>, tensor<?x16x8x256xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 256, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x256xbf16> -> !attn.ragged_q<heads = 32, head_dim = 256, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 128, kv = 32, warps = 8, stages = 2, q_shared = true>} : !attn.ragged_q<heads = 32, head_dim = 256, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 256, bf16>
      -> tensor<?x32x256xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x256xbf16>, tensor<?x32xf32>
}

func.func @plain_d256_g4_p16_bf16_qsmem64(%k: tensor<?x16x8x256xbf16>, %v: tensor<?x16x8x256xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x256xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x256xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x8x256xbf16>, tensor<?x16x8x256xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 256, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x256xbf16> -> !attn.ragged_q<heads = 32, head_dim = 256, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 64, kv = 32, warps = 4, stages = 2, q_shared = true>} : !attn.ragged_q<heads = 32, head_dim = 256, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 256, bf16>
      -> tensor<?x32x256xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x256xbf16>, tensor<?x32xf32>
}

func.func @plain_d256_g4_p16_bf16_q64(%k: tensor<?x16x8x256xbf16>, %v: tensor<?x16x8x256xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x256xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x256xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x8x256xbf16>, tensor<?x16x8x256xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 256, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x256xbf16> -> !attn.ragged_q<heads = 32, head_dim = 256, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 64, kv = 32, warps = 4, stages = 2>} : !attn.ragged_q<heads = 32, head_dim = 256, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 256, bf16>
      -> tensor<?x32x256xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x256xbf16>, tensor<?x32xf32>
}

func.func @plain_d256_g4_p4096_bf16(%k: tensor<?x4096x8x256xbf16>, %v: tensor<?x4096x8x256xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x256xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x256xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x4096x8x256xbf16>, tensor<?x4096x8x256xbf16> -> !attn.paged_kv<page_size = 4096, layout = nhd, heads = 8, head_dim = 256, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x256xbf16> -> !attn.ragged_q<heads = 32, head_dim = 256, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 128, kv = 32, warps = 8, stages = 2>} : !attn.ragged_q<heads = 32, head_dim = 256, bf16>, !attn.paged_kv<page_size = 4096, layout = nhd, heads = 8, head_dim = 256, bf16>
      -> tensor<?x32x256xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x256xbf16>, tensor<?x32xf32>
}

func.func @causal_d256_g4_p4096_bf16(%k: tensor<?x4096x8x256xbf16>, %v: tensor<?x4096x8x256xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x256xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x256xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x4096x8x256xbf16>, tensor<?x4096x8x256xbf16> -> !attn.paged_kv<page_size = 4096, layout = nhd, heads = 8, head_dim = 256, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x256xbf16> -> !attn.ragged_q<heads = 32, head_dim = 256, bf16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 128, kv = 32, warps = 8, stages = 2>} : !attn.ragged_q<heads = 32, head_dim = 256, bf16>, !attn.paged_kv<page_size = 4096, layout = nhd, heads = 8, head_dim = 256, bf16>
      -> tensor<?x32x256xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x256xbf16>, tensor<?x32xf32>
}

// causal_d128_g4_p16_bf16 over an HND pool ([pages, heads, page, dim]).
func.func @causal_d128_g4_p16_bf16_hnd(%k: tensor<?x8x16x128xbf16>, %v: tensor<?x8x16x128xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x128xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x128xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x8x16x128xbf16>, tensor<?x8x16x128xbf16> -> !attn.paged_kv<page_size = 16, layout = hnd, heads = 8, head_dim = 128, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x128xbf16> -> !attn.ragged_q<heads = 32, head_dim = 128, bf16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 32, head_dim = 128, bf16>, !attn.paged_kv<page_size = 16, layout = hnd, heads = 8, head_dim = 128, bf16>
      -> tensor<?x32x128xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x128xbf16>, tensor<?x32xf32>
}
