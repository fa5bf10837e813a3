// Decode kernels over the CI matrix: head dims 64/128/256, groups 1/4/8,
// page sizes 1/16, f16/bf16, variants plain/soft-cap/sliding-window/ALiBi
// (every value of each dimension appears with every variant's neighbours).

func.func @plain_d64_g1_p1_f16(%k: tensor<?x1x2x64xf16>, %v: tensor<?x1x2x64xf16>, %ip: tensor<?xi32>,
    %ix: tensor<?xi32>, %lp: tensor<?xi32>, %qs: tensor<?x2x64xf16>, %qo: tensor<?xi32>)
    -> (tensor<?x2x64xf16>, tensor<?x2xf32>) {
  %kv = attn.paged_kv %k, %v, %ip, %ix, %lp : tensor<?x1x2x64xf16>, tensor<?x1x2x64xf16> -> !attn.paged_kv<page_size = 1, layout = nhd, heads = 2, head_dim = 64, f16>
  %q = attn.ragged_q %qs, %qo : tensor<?x2x64xf16> -> !attn.ragged_q<heads = 2, head_dim = 64, f16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 2 : i64, num_kv_heads = 2 : i64} : !attn.ragged_q<heads = 2, head_dim = 64, f16>, !attn.paged_kv<page_size = 1, layout = nhd, heads = 2, head_dim = 64, f16>
      -> tensor<?x2x64xf16>, tensor<?x2xf32>
  return %o, %l : tensor<?x2x64xf16>, tensor<?x2xf32>
}

func.func @plain_d128_g4_p16_bf16(%k: tensor<?x16x2x128xbf16>, %v: tensor<?x16x2x128xbf16>, %ip: tensor<?xi32>,
    %ix: tensor<?xi32>, %lp: tensor<?xi32>, %qs: tensor<?x8x128xbf16>, %qo: tensor<?xi32>)
    -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %v, %ip, %ix, %lp : tensor<?x16x2x128xbf16>, tensor<?x16x2x128xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, bf16>
  %q = attn.ragged_q %qs, %qo : tensor<?x8x128xbf16> -> !attn.ragged_q<heads = 8, head_dim = 128, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64} : !attn.ragged_q<heads = 8, head_dim = 128, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, bf16>
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>
}

func.func @plain_d256_g8_p1_f16(%k: tensor<?x1x2x256xf16>, %v: tensor<?x1x2x256xf16>, %ip: tensor<?xi32>,
    %ix: tensor<?xi32>, %lp: tensor<?xi32>, %qs: tensor<?x16x256xf16>, %qo: tensor<?xi32>)
    -> (tensor<?x16x256xf16>, tensor<?x16xf32>) {
  %kv = attn.paged_kv %k, %v, %ip, %ix, %lp : tensor<?x1x2x256xf16>, tensor<?x1x2x256xf16> -> !attn.paged_kv<page_size = 1, layout = nhd, heads = 2, head_dim = 256, f16>
  %q = attn.ragged_q %qs, %qo : tensor<?x16x256xf16> -> !attn.ragged_q<heads = 16, head_dim = 256, f16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 16 : i64, num_kv_heads = 2 : i64} : !attn.ragged_q<heads = 16, head_dim = 256, f16>, !attn.paged_kv<page_size = 1, layout = nhd, heads = 2, head_dim = 256, f16>
      -> tensor<?x16x256xf16>, tensor<?x16xf32>
  return %o, %l : tensor<?x16x256xf16>, tensor<?x16xf32>
}

func.func @soft_cap_d64_g4_p16_bf16(%k: tensor<?x16x2x64xbf16>, %v: tensor<?x16x2x64xbf16>, %ip: tensor<?xi32>,
    %ix: tensor<?xi32>, %lp: tensor<?xi32>, %qs: tensor<?x8x64xbf16>, %qo: tensor<?xi32>, %cap: f32)
    -> (tensor<?x8x64xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %v, %ip, %ix, %lp : tensor<?x16x2x64xbf16>, tensor<?x16x2x64xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 64, bf16>
  %q = attn.ragged_q %qs, %qo : tensor<?x8x64xbf16> -> !attn.ragged_q<heads = 8, head_dim = 64, bf16>
  %o, %l = attn.attention @soft_cap(%q, %kv) params(%cap : f32)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64} : !attn.ragged_q<heads = 8, head_dim = 64, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 64, bf16>
      -> tensor<?x8x64xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x64xbf16>, tensor<?x8xf32>
}

func.func @soft_cap_d128_g8_p1_f16(%k: tensor<?x1x2x128xf16>, %v: tensor<?x1x2x128xf16>, %ip: tensor<?xi32>,
    %ix: tensor<?xi32>, %lp: tensor<?xi32>, %qs: tensor<?x16x128xf16>, %qo: tensor<?xi32>, %cap: f32)
    -> (tensor<?x16x128xf16>, tensor<?x16xf32>) {
  %kv = attn.paged_kv %k, %v, %ip, %ix, %lp : tensor<?x1x2x128xf16>, tensor<?x1x2x128xf16> -> !attn.paged_kv<page_size = 1, layout = nhd, heads = 2, head_dim = 128, f16>
  %q = attn.ragged_q %qs, %qo : tensor<?x16x128xf16> -> !attn.ragged_q<heads = 16, head_dim = 128, f16>
  %o, %l = attn.attention @soft_cap(%q, %kv) params(%cap : f32)
      {num_qo_heads = 16 : i64, num_kv_heads = 2 : i64} : !attn.ragged_q<heads = 16, head_dim = 128, f16>, !attn.paged_kv<page_size = 1, layout = nhd, heads = 2, head_dim = 128, f16>
      -> tensor<?x16x128xf16>, tensor<?x16xf32>
  return %o, %l : tensor<?x16x128xf16>, tensor<?x16xf32>
}

func.func @soft_cap_d256_g1_p16_bf16(%k: tensor<?x16x2x256xbf16>, %v: tensor<?x16x2x256xbf16>, %ip: tensor<?xi32>,
    %ix: tensor<?xi32>, %lp: tensor<?xi32>, %qs: tensor<?x2x256xbf16>, %qo: tensor<?xi32>, %cap: f32)
    -> (tensor<?x2x256xbf16>, tensor<?x2xf32>) {
  %kv = attn.paged_kv %k, %v, %ip, %ix, %lp : tensor<?x16x2x256xbf16>, tensor<?x16x2x256xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 256, bf16>
  %q = attn.ragged_q %qs, %qo : tensor<?x2x256xbf16> -> !attn.ragged_q<heads = 2, head_dim = 256, bf16>
  %o, %l = attn.attention @soft_cap(%q, %kv) params(%cap : f32)
      {num_qo_heads = 2 : i64, num_kv_heads = 2 : i64} : !attn.ragged_q<heads = 2, head_dim = 256, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 256, bf16>
      -> tensor<?x2x256xbf16>, tensor<?x2xf32>
  return %o, %l : tensor<?x2x256xbf16>, tensor<?x2xf32>
}

func.func @sliding_window_d64_g8_p1_f16(%k: tensor<?x1x2x64xf16>, %v: tensor<?x1x2x64xf16>, %ip: tensor<?xi32>,
    %ix: tensor<?xi32>, %lp: tensor<?xi32>, %qs: tensor<?x16x64xf16>, %qo: tensor<?xi32>, %window: tensor<?xi32>)
    -> (tensor<?x16x64xf16>, tensor<?x16xf32>) {
  %kv = attn.paged_kv %k, %v, %ip, %ix, %lp : tensor<?x1x2x64xf16>, tensor<?x1x2x64xf16> -> !attn.paged_kv<page_size = 1, layout = nhd, heads = 2, head_dim = 64, f16>
  %q = attn.ragged_q %qs, %qo : tensor<?x16x64xf16> -> !attn.ragged_q<heads = 16, head_dim = 64, f16>
  %o, %l = attn.attention @sliding_window(%q, %kv) params(%window : tensor<?xi32>)
      {num_qo_heads = 16 : i64, num_kv_heads = 2 : i64} : !attn.ragged_q<heads = 16, head_dim = 64, f16>, !attn.paged_kv<page_size = 1, layout = nhd, heads = 2, head_dim = 64, f16>
      -> tensor<?x16x64xf16>, tensor<?x16xf32>
  return %o, %l : tensor<?x16x64xf16>, tensor<?x16xf32>
}

func.func @sliding_window_d128_g1_p16_bf16(%k: tensor<?x16x2x128xbf16>, %v: tensor<?x16x2x128xbf16>, %ip: tensor<?xi32>,
    %ix: tensor<?xi32>, %lp: tensor<?xi32>, %qs: tensor<?x2x128xbf16>, %qo: tensor<?xi32>, %window: tensor<?xi32>)
    -> (tensor<?x2x128xbf16>, tensor<?x2xf32>) {
  %kv = attn.paged_kv %k, %v, %ip, %ix, %lp : tensor<?x16x2x128xbf16>, tensor<?x16x2x128xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, bf16>
  %q = attn.ragged_q %qs, %qo : tensor<?x2x128xbf16> -> !attn.ragged_q<heads = 2, head_dim = 128, bf16>
  %o, %l = attn.attention @sliding_window(%q, %kv) params(%window : tensor<?xi32>)
      {num_qo_heads = 2 : i64, num_kv_heads = 2 : i64} : !attn.ragged_q<heads = 2, head_dim = 128, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, bf16>
      -> tensor<?x2x128xbf16>, tensor<?x2xf32>
  return %o, %l : tensor<?x2x128xbf16>, tensor<?x2xf32>
}

func.func @sliding_window_d256_g4_p1_f16(%k: tensor<?x1x2x256xf16>, %v: tensor<?x1x2x256xf16>, %ip: tensor<?xi32>,
    %ix: tensor<?xi32>, %lp: tensor<?xi32>, %qs: tensor<?x8x256xf16>, %qo: tensor<?xi32>, %window: tensor<?xi32>)
    -> (tensor<?x8x256xf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %v, %ip, %ix, %lp : tensor<?x1x2x256xf16>, tensor<?x1x2x256xf16> -> !attn.paged_kv<page_size = 1, layout = nhd, heads = 2, head_dim = 256, f16>
  %q = attn.ragged_q %qs, %qo : tensor<?x8x256xf16> -> !attn.ragged_q<heads = 8, head_dim = 256, f16>
  %o, %l = attn.attention @sliding_window(%q, %kv) params(%window : tensor<?xi32>)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64} : !attn.ragged_q<heads = 8, head_dim = 256, f16>, !attn.paged_kv<page_size = 1, layout = nhd, heads = 2, head_dim = 256, f16>
      -> tensor<?x8x256xf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x256xf16>, tensor<?x8xf32>
}

func.func @alibi_d64_g1_p16_bf16(%k: tensor<?x16x2x64xbf16>, %v: tensor<?x16x2x64xbf16>, %ip: tensor<?xi32>,
    %ix: tensor<?xi32>, %lp: tensor<?xi32>, %qs: tensor<?x2x64xbf16>, %qo: tensor<?xi32>, %slopes: tensor<?xf32>)
    -> (tensor<?x2x64xbf16>, tensor<?x2xf32>) {
  %kv = attn.paged_kv %k, %v, %ip, %ix, %lp : tensor<?x16x2x64xbf16>, tensor<?x16x2x64xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 64, bf16>
  %q = attn.ragged_q %qs, %qo : tensor<?x2x64xbf16> -> !attn.ragged_q<heads = 2, head_dim = 64, bf16>
  %o, %l = attn.attention @alibi(%q, %kv) params(%slopes : tensor<?xf32>)
      {num_qo_heads = 2 : i64, num_kv_heads = 2 : i64} : !attn.ragged_q<heads = 2, head_dim = 64, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 64, bf16>
      -> tensor<?x2x64xbf16>, tensor<?x2xf32>
  return %o, %l : tensor<?x2x64xbf16>, tensor<?x2xf32>
}

func.func @alibi_d128_g4_p1_f16(%k: tensor<?x1x2x128xf16>, %v: tensor<?x1x2x128xf16>, %ip: tensor<?xi32>,
    %ix: tensor<?xi32>, %lp: tensor<?xi32>, %qs: tensor<?x8x128xf16>, %qo: tensor<?xi32>, %slopes: tensor<?xf32>)
    -> (tensor<?x8x128xf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %v, %ip, %ix, %lp : tensor<?x1x2x128xf16>, tensor<?x1x2x128xf16> -> !attn.paged_kv<page_size = 1, layout = nhd, heads = 2, head_dim = 128, f16>
  %q = attn.ragged_q %qs, %qo : tensor<?x8x128xf16> -> !attn.ragged_q<heads = 8, head_dim = 128, f16>
  %o, %l = attn.attention @alibi(%q, %kv) params(%slopes : tensor<?xf32>)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64} : !attn.ragged_q<heads = 8, head_dim = 128, f16>, !attn.paged_kv<page_size = 1, layout = nhd, heads = 2, head_dim = 128, f16>
      -> tensor<?x8x128xf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xf16>, tensor<?x8xf32>
}

func.func @alibi_d256_g8_p16_bf16(%k: tensor<?x16x2x256xbf16>, %v: tensor<?x16x2x256xbf16>, %ip: tensor<?xi32>,
    %ix: tensor<?xi32>, %lp: tensor<?xi32>, %qs: tensor<?x16x256xbf16>, %qo: tensor<?xi32>, %slopes: tensor<?xf32>)
    -> (tensor<?x16x256xbf16>, tensor<?x16xf32>) {
  %kv = attn.paged_kv %k, %v, %ip, %ix, %lp : tensor<?x16x2x256xbf16>, tensor<?x16x2x256xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 256, bf16>
  %q = attn.ragged_q %qs, %qo : tensor<?x16x256xbf16> -> !attn.ragged_q<heads = 16, head_dim = 256, bf16>
  %o, %l = attn.attention @alibi(%q, %kv) params(%slopes : tensor<?xf32>)
      {num_qo_heads = 16 : i64, num_kv_heads = 2 : i64} : !attn.ragged_q<heads = 16, head_dim = 256, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 256, bf16>
      -> tensor<?x16x256xbf16>, tensor<?x16xf32>
  return %o, %l : tensor<?x16x256xbf16>, tensor<?x16xf32>
}
