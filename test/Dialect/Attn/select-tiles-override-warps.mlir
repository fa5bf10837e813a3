// RUN: flashir-opt %s -attn-select-tiles="chip=sm_80 avg-qo-len=512 tile-warps=2" -split-input-file -verify-diagnostics

// An overridden warp count the prefill kernel does not build (it runs 16 or
// 32 query rows per warp) is refused on the attention.
func.func @prefill(%q: !attn.ragged_q<heads = 32, head_dim = 128, f16>,
                   %kv: !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, f16>)
    -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  // expected-error @+1 {{'attn.attention' op the overridden tile <q = 128, warps = 2> has no prefill kernel: it runs q / 16 = 8 warps of 16 rows or q / 32 = 4 warps of 32 rows}}
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64}
      : !attn.ragged_q<heads = 32, head_dim = 128, f16>,
        !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, f16>
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x128xf16>, tensor<?x32xf32>
}
