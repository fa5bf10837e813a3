// Prefill attentions (tiles with 16+ query rows) for prefill-ptx.test: head
// dims 64/128/256, f16/bf16, pages of 1/16/64 keys, every standard variant,
// query tiles of 16..128 rows and K/V tiles of 32..128 keys.

func.func @causal_d64_g1_p1_f16(%k: tensor<?x1x8x64xf16>, %v: tensor<?x1x8x64xf16>, %ip: tensor<?xi32>,
    %qs: tensor<?x8x64xf16>) -> (tensor<?x8x64xf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %v, %ip, %ip, %ip : tensor<?x1x8x64xf16>, tensor<?x1x8x64xf16> -> !attn.paged_kv<page_size = 1, layout = nhd, heads = 8, head_dim = 64, f16>
  %q = attn.ragged_q %qs, %ip : tensor<?x8x64xf16> -> !attn.ragged_q<heads = 8, head_dim = 64, f16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 8, head_dim = 64, f16>, !attn.paged_kv<page_size = 1, layout = nhd, heads = 8, head_dim = 64, f16>
      -> tensor<?x8x64xf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x64xf16>, tensor<?x8xf32>
}

func.func @plain_d128_g4_p16_bf16(%k: tensor<?x16x8x128xbf16>, %v: tensor<?x16x8x128xbf16>, %ip: tensor<?xi32>,
    %qs: tensor<?x32x128xbf16>) -> (tensor<?x32x128xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %ip, %ip, %ip : tensor<?x16x8x128xbf16>, tensor<?x16x8x128xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, bf16>
  %q = attn.ragged_q %qs, %ip : tensor<?x32x128xbf16> -> !attn.ragged_q<heads = 32, head_dim = 128, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 32, head_dim = 128, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, bf16>
      -> tensor<?x32x128xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x128xbf16>, tensor<?x32xf32>
}

func.func @soft_cap_d256_g2_p16_bf16(%k: tensor<?x16x2x256xbf16>, %v: tensor<?x16x2x256xbf16>, %ip: tensor<?xi32>,
    %qs: tensor<?x4x256xbf16>, %cap: f32) -> (tensor<?x4x256xbf16>, tensor<?x4xf32>) {
  %kv = attn.paged_kv %k, %v, %ip, %ip, %ip : tensor<?x16x2x256xbf16>, tensor<?x16x2x256xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 256, bf16>
  %q = attn.ragged_q %qs, %ip : tensor<?x4x256xbf16> -> !attn.ragged_q<heads = 4, head_dim = 256, bf16>
  %o, %l = attn.attention @soft_cap(%q, %kv) params(%cap : f32)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64, tiles = #attn.tiles<q = 64, kv = 32, warps = 4, stages = 2>} : !attn.ragged_q<heads = 4, head_dim = 256, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 256, bf16>
      -> tensor<?x4x256xbf16>, tensor<?x4xf32>
  return %o, %l : tensor<?x4x256xbf16>, tensor<?x4xf32>
}

func.func @sliding_window_d128_g8_p64_f16(%k: tensor<?x64x2x128xf16>, %v: tensor<?x64x2x128xf16>, %ip: tensor<?xi32>,
    %qs: tensor<?x16x128xf16>, %window: tensor<?xi32>) -> (tensor<?x16x128xf16>, tensor<?x16xf32>) {
  %kv = attn.paged_kv %k, %v, %ip, %ip, %ip : tensor<?x64x2x128xf16>, tensor<?x64x2x128xf16> -> !attn.paged_kv<page_size = 64, layout = nhd, heads = 2, head_dim = 128, f16>
  %q = attn.ragged_q %qs, %ip : tensor<?x16x128xf16> -> !attn.ragged_q<heads = 16, head_dim = 128, f16>
  %o, %l = attn.attention @sliding_window(%q, %kv) params(%window : tensor<?xi32>)
      {num_qo_heads = 16 : i64, num_kv_heads = 2 : i64, tiles = #attn.tiles<q = 32, kv = 64, warps = 2, stages = 2>} : !attn.ragged_q<heads = 16, head_dim = 128, f16>, !attn.paged_kv<page_size = 64, layout = nhd, heads = 2, head_dim = 128, f16>
      -> tensor<?x16x128xf16>, tensor<?x16xf32>
  return %o, %l : tensor<?x16x128xf16>, tensor<?x16xf32>
}

func.func @alibi_d64_g4_p16_bf16(%k: tensor<?x16x2x64xbf16>, %v: tensor<?x16x2x64xbf16>, %ip: tensor<?xi32>,
    %qs: tensor<?x8x64xbf16>, %slopes: tensor<8xf32>) -> (tensor<?x8x64xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %v, %ip, %ip, %ip : tensor<?x16x2x64xbf16>, tensor<?x16x2x64xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 64, bf16>
  %q = attn.ragged_q %qs, %ip : tensor<?x8x64xbf16> -> !attn.ragged_q<heads = 8, head_dim = 64, bf16>
  %o, %l = attn.attention @alibi(%q, %kv) params(%slopes : tensor<8xf32>)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64, tiles = #attn.tiles<q = 128, kv = 128, warps = 8, stages = 2>} : !attn.ragged_q<heads = 8, head_dim = 64, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 64, bf16>
      -> tensor<?x8x64xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x64xbf16>, tensor<?x8xf32>
}

func.func @causal_d128_g1_p16_f16(%k: tensor<?x16x4x128xf16>, %v: tensor<?x16x4x128xf16>, %ip: tensor<?xi32>,
    %qs: tensor<?x4x128xf16>) -> (tensor<?x4x128xf16>, tensor<?x4xf32>) {
  %kv = attn.paged_kv %k, %v, %ip, %ip, %ip : tensor<?x16x4x128xf16>, tensor<?x16x4x128xf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 4, head_dim = 128, f16>
  %q = attn.ragged_q %qs, %ip : tensor<?x4x128xf16> -> !attn.ragged_q<heads = 4, head_dim = 128, f16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 4 : i64, tiles = #attn.tiles<q = 16, kv = 64, warps = 1, stages = 2>} : !attn.ragged_q<heads = 4, head_dim = 128, f16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 4, head_dim = 128, f16>
      -> tensor<?x4x128xf16>, tensor<?x4xf32>
  return %o, %l : tensor<?x4x128xf16>, tensor<?x4xf32>
}

func.func @plain_d128_g4_p16_bf16_fused(%k: tensor<?x16x8x128xbf16>, %v: tensor<?x16x8x128xbf16>, %ip: tensor<?xi32>,
    %qs: tensor<?x32x128xbf16>) -> (tensor<?x32x128xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %ip, %ip, %ip : tensor<?x16x8x128xbf16>, tensor<?x16x8x128xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, bf16>
  %q = attn.ragged_q %qs, %ip : tensor<?x32x128xbf16> -> !attn.ragged_q<heads = 32, head_dim = 128, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64, fused_head_groups, tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 32, head_dim = 128, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, bf16>
      -> tensor<?x32x128xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x128xbf16>, tensor<?x32xf32>
}
