// Batched decode with grouped-query attention (32 query heads over 8 KV
// heads, head_dim 128, f16) over a paged KV cache (16-token pages, NHD).
//
// The KV of every request is a shared system-prompt prefix (paged) followed
// by the request's own suffix (paged). The two parts are attended separately,
// producing mergeable states, then merged (FlashInfer's cascade, seed 000
// sec. 4.3). In decode every query is its request's last token, so every key
// of both parts is visible to it and the composed form equals the single
// attention over the concatenated views. (For longer query chunks the suffix
// positions must be offset by the prefix length: attn-compose-prefix's job.)
//
// `scripts/demo.sh` runs: attn-import-variants (copies @causal from the
// standard library), canonicalize (drops the empty state, the identity of
// merge) and symbol-dce.

!q    = !attn.ragged_q<heads = 32, head_dim = 128, f16>
!kv   = !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, f16>
!st   = !attn.state<heads = 32, head_dim = 128, @causal>
!pool = tensor<?x16x8x128xf16>

func.func @decode_with_shared_prefix(
    %k_pool: !pool, %v_pool: !pool,
    %prefix_indptr: tensor<?xi32>, %prefix_indices: tensor<?xi32>,
    %prefix_last: tensor<?xi32>,
    %suffix_indptr: tensor<?xi32>, %suffix_indices: tensor<?xi32>,
    %suffix_last: tensor<?xi32>,
    %queries: tensor<?x32x128xf16>, %qo_indptr: tensor<?xi32>, %rows: index)
    -> (tensor<?x32x128xf16>, tensor<?x32xf32>,
        tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %prefix = attn.paged_kv %k_pool, %v_pool, %prefix_indptr, %prefix_indices,
      %prefix_last : !pool, !pool -> !kv
  %suffix = attn.paged_kv %k_pool, %v_pool, %suffix_indptr, %suffix_indices,
      %suffix_last : !pool, !pool -> !kv
  %q = attn.ragged_q %queries, %qo_indptr : tensor<?x32x128xf16> -> !q

  // Reference semantics: one attention over the concatenated views.
  %o_ref, %lse_ref = attn.attention @causal(%q, %prefix, %suffix)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64}
      : !q, !kv, !kv -> tensor<?x32x128xf16>, tensor<?x32xf32>

  // Composed form: states of each part, merged in order.
  %s_prefix = attn.attention @causal(%q, %prefix)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64} : !q, !kv -> !st
  %s_suffix = attn.attention @causal(%q, %suffix)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64} : !q, !kv -> !st
  %none = attn.empty_state @causal %rows : !st
  %s = attn.merge %s_prefix, %none, %s_suffix : !st, !st, !st -> !st
  %o, %lse = attn.finalize %s : !st -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %o_ref, %lse_ref, %o, %lse
      : tensor<?x32x128xf16>, tensor<?x32xf32>,
        tensor<?x32x128xf16>, tensor<?x32xf32>
}
