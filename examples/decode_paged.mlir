// Batched decode over a paged KV cache: 32 query heads over 8 KV heads,
// head_dim 128, bf16, 16-token pages (NHD), causal. scripts/demo.sh compiles
// it into a kernel bundle (PTX per chip, cubins where ptxas is found) and, on
// a machine with a GPU, runs the kernel against a float64 reference.

!q    = !attn.ragged_q<heads = 32, head_dim = 128, bf16>
!kv   = !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, bf16>
!pool = tensor<?x16x8x128xbf16>

func.func @decode(%k_pool: !pool, %v_pool: !pool, %indptr: tensor<?xi32>,
                  %indices: tensor<?xi32>, %last_page_len: tensor<?xi32>,
                  %queries: tensor<?x32x128xbf16>, %qo_indptr: tensor<?xi32>)
    -> (tensor<?x32x128xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k_pool, %v_pool, %indptr, %indices, %last_page_len
      : !pool, !pool -> !kv
  %q = attn.ragged_q %queries, %qo_indptr : tensor<?x32x128xbf16> -> !q
  %o, %lse = attn.attention @causal(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64} : !q, !kv
      -> tensor<?x32x128xbf16>, tensor<?x32xf32>
  return %o, %lse : tensor<?x32x128xbf16>, tensor<?x32xf32>
}
