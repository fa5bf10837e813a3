// The f16 prefill attentions of prefill-matrix.mlir, for sm_75 (no bf16
// tensor-core products there): prefill-ptx.test.

func.func @causal_d64_g1_p1_f16(%k: tensor<?x1x8x64xf16>, %v: tensor<?x1x8x64xf16>, %ip: tensor<?xi32>,
    %qs: tensor<?x8x64xf16>) -> (tensor<?x8x64xf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %v, %ip, %ip, %ip : tensor<?x1x8x64xf16>, tensor<?x1x8x64xf16> -> !attn.paged_kv<page_size = 1, layout = nhd, heads = 8, head_dim = 64, f16>
  %q = attn.ragged_q %qs, %ip : tensor<?x8x64xf16> -> !attn.ragged_q<heads = 8, head_dim = 64, f16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 8 : i64, tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 8, head_dim = 64, f16>, !attn.paged_kv<page_size = 1, layout = nhd, heads = 8, head_dim = 64, f16>
      -> tensor<?x8x64xf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x64xf16>, tensor<?x8xf32>
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

func.func @causal_d128_g1_p16_f16(%k: tensor<?x16x4x128xf16>, %v: tensor<?x16x4x128xf16>, %ip: tensor<?xi32>,
    %qs: tensor<?x4x128xf16>) -> (tensor<?x4x128xf16>, tensor<?x4xf32>) {
  %kv = attn.paged_kv %k, %v, %ip, %ip, %ip : tensor<?x16x4x128xf16>, tensor<?x16x4x128xf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 4, head_dim = 128, f16>
  %q = attn.ragged_q %qs, %ip : tensor<?x4x128xf16> -> !attn.ragged_q<heads = 4, head_dim = 128, f16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 4 : i64, tiles = #attn.tiles<q = 16, kv = 64, warps = 1, stages = 2>} : !attn.ragged_q<heads = 4, head_dim = 128, f16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 4, head_dim = 128, f16>
      -> tensor<?x4x128xf16>, tensor<?x4xf32>
  return %o, %l : tensor<?x4x128xf16>, tensor<?x4xf32>
}
