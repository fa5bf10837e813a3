// Decode kernel configurations for the GPU check and benchmark
// (bench/gpu/gpu_check.py); scripts/gpu-bundle.sh compiles them with
// flashir-bundle. Written by hand in this form; one function per configuration.

func.func @plain_h32_p16(%k: tensor<?x16x8x128xbf16>, %v: tensor<?x16x8x128xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x128xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x128xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x8x128xbf16>, tensor<?x16x8x128xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x128xbf16> -> !attn.ragged_q<heads = 32, head_dim = 128, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64} : !attn.ragged_q<heads = 32, head_dim = 128, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, bf16>
      -> tensor<?x32x128xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x128xbf16>, tensor<?x32xf32>
}

func.func @softcap_h32_p16(%k: tensor<?x16x8x128xbf16>, %v: tensor<?x16x8x128xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x128xbf16>,
    %qo: tensor<?xi32>, %cap: f32) -> (tensor<?x32x128xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x8x128xbf16>, tensor<?x16x8x128xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x128xbf16> -> !attn.ragged_q<heads = 32, head_dim = 128, bf16>
  %o, %l = attn.attention @soft_cap(%q, %kv) params(%cap : f32)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64} : !attn.ragged_q<heads = 32, head_dim = 128, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, bf16>
      -> tensor<?x32x128xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x128xbf16>, tensor<?x32xf32>
}

func.func @window_h32_p16(%k: tensor<?x16x8x128xbf16>, %v: tensor<?x16x8x128xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x128xbf16>,
    %qo: tensor<?xi32>, %window: tensor<?xi32>) -> (tensor<?x32x128xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x8x128xbf16>, tensor<?x16x8x128xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x128xbf16> -> !attn.ragged_q<heads = 32, head_dim = 128, bf16>
  %o, %l = attn.attention @sliding_window(%q, %kv) params(%window : tensor<?xi32>)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64} : !attn.ragged_q<heads = 32, head_dim = 128, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, bf16>
      -> tensor<?x32x128xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x128xbf16>, tensor<?x32xf32>
}

func.func @alibi_h32_p16(%k: tensor<?x16x8x128xbf16>, %v: tensor<?x16x8x128xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x128xbf16>,
    %qo: tensor<?xi32>, %slopes: tensor<32xf32>) -> (tensor<?x32x128xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x8x128xbf16>, tensor<?x16x8x128xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x128xbf16> -> !attn.ragged_q<heads = 32, head_dim = 128, bf16>
  %o, %l = attn.attention @alibi(%q, %kv) params(%slopes : tensor<32xf32>)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64} : !attn.ragged_q<heads = 32, head_dim = 128, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, bf16>
      -> tensor<?x32x128xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x128xbf16>, tensor<?x32xf32>
}

func.func @plain_h64_p16(%k: tensor<?x16x8x128xbf16>, %v: tensor<?x16x8x128xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x64x128xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x64x128xbf16>, tensor<?x64xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x8x128xbf16>, tensor<?x16x8x128xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x64x128xbf16> -> !attn.ragged_q<heads = 64, head_dim = 128, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 64 : i64, num_kv_heads = 8 : i64} : !attn.ragged_q<heads = 64, head_dim = 128, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, bf16>
      -> tensor<?x64x128xbf16>, tensor<?x64xf32>
  return %o, %l : tensor<?x64x128xbf16>, tensor<?x64xf32>
}

func.func @plain_h32_p1(%k: tensor<?x1x8x128xbf16>, %v: tensor<?x1x8x128xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x128xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x128xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x1x8x128xbf16>, tensor<?x1x8x128xbf16> -> !attn.paged_kv<page_size = 1, layout = nhd, heads = 8, head_dim = 128, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x128xbf16> -> !attn.ragged_q<heads = 32, head_dim = 128, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64} : !attn.ragged_q<heads = 32, head_dim = 128, bf16>, !attn.paged_kv<page_size = 1, layout = nhd, heads = 8, head_dim = 128, bf16>
      -> tensor<?x32x128xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x128xbf16>, tensor<?x32xf32>
}

func.func @causal_g1_d64_f16(%k: tensor<?x16x8x64xf16>, %v: tensor<?x16x8x64xf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x8x64xf16>,
    %qo: tensor<?xi32>) -> (tensor<?x8x64xf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x8x64xf16>, tensor<?x16x8x64xf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 64, f16>
  %q = attn.ragged_q %queries, %qo : tensor<?x8x64xf16> -> !attn.ragged_q<heads = 8, head_dim = 64, f16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 8 : i64} : !attn.ragged_q<heads = 8, head_dim = 64, f16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 64, f16>
      -> tensor<?x8x64xf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x64xf16>, tensor<?x8xf32>
}

func.func @causal_g4_d256_p1(%k: tensor<?x1x4x256xbf16>, %v: tensor<?x1x4x256xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x16x256xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x16x256xbf16>, tensor<?x16xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x1x4x256xbf16>, tensor<?x1x4x256xbf16> -> !attn.paged_kv<page_size = 1, layout = nhd, heads = 4, head_dim = 256, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x16x256xbf16> -> !attn.ragged_q<heads = 16, head_dim = 256, bf16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 16 : i64, num_kv_heads = 4 : i64} : !attn.ragged_q<heads = 16, head_dim = 256, bf16>, !attn.paged_kv<page_size = 1, layout = nhd, heads = 4, head_dim = 256, bf16>
      -> tensor<?x16x256xbf16>, tensor<?x16xf32>
  return %o, %l : tensor<?x16x256xbf16>, tensor<?x16xf32>
}

// One KV head (Hq 4): a page's rows are contiguous; the page-layout probe
// compares it with plain_h32_p16 at equal bytes and CTA count.
func.func @plain_g4_kv1_p16(%k: tensor<?x16x1x128xbf16>, %v: tensor<?x16x1x128xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x4x128xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x4x128xbf16>, tensor<?x4xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x1x128xbf16>, tensor<?x16x1x128xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 1, head_dim = 128, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x4x128xbf16> -> !attn.ragged_q<heads = 4, head_dim = 128, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 1 : i64} : !attn.ragged_q<heads = 4, head_dim = 128, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 1, head_dim = 128, bf16>
      -> tensor<?x4x128xbf16>, tensor<?x4xf32>
  return %o, %l : tensor<?x4x128xbf16>, tensor<?x4xf32>
}

// plain_h32_p16 over an HND pool ([pages, heads, page, dim]).
func.func @plain_h32_p16_hnd(%k: tensor<?x8x16x128xbf16>, %v: tensor<?x8x16x128xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x128xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x128xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x8x16x128xbf16>, tensor<?x8x16x128xbf16> -> !attn.paged_kv<page_size = 16, layout = hnd, heads = 8, head_dim = 128, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x128xbf16> -> !attn.ragged_q<heads = 32, head_dim = 128, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64} : !attn.ragged_q<heads = 32, head_dim = 128, bf16>, !attn.paged_kv<page_size = 16, layout = hnd, heads = 8, head_dim = 128, bf16>
      -> tensor<?x32x128xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x128xbf16>, tensor<?x32xf32>
}
