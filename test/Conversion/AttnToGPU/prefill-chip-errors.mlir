// RUN: flashir-opt %s -split-input-file -attn-import-variants -convert-attn-to-gpu=chip=sm_75 -verify-diagnostics

// Where the prefill kernel passes an attention with prefill tiles on, the
// refusal names why, not only the decode kernel's reason.

!q  = !attn.ragged_q<heads = 8, head_dim = 128, bf16>
!kv = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, bf16>

func.func @bf16_views_on_sm75(%k: tensor<?x16x2x128xbf16>, %ip: tensor<?xi32>,
                              %qs: tensor<?x8x128xbf16>)
    -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %kv0 = attn.paged_kv %k, %k, %ip, %ip, %ip : tensor<?x16x2x128xbf16>, tensor<?x16x2x128xbf16> -> !kv
  %kv1 = attn.paged_kv %k, %k, %ip, %ip, %ip : tensor<?x16x2x128xbf16>, tensor<?x16x2x128xbf16> -> !kv
  %q = attn.ragged_q %qs, %ip : tensor<?x8x128xbf16> -> !q
  // expected-error @+1 {{the decode kernel generator needs one KV view (over several views, tiles of 16 or more query rows: the prefill kernel) (the prefill kernel passed it on: bf16 prefill tiles need sm_80 or newer (sm_75's tensor cores take f16))}}
  %o, %l = attn.attention @causal(%q, %kv0, %kv1)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64,
       tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>} : !q, !kv, !kv
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>
}

// -----

// f16 takes sm_75's tensor-core prefill over several views.
!qh  = !attn.ragged_q<heads = 8, head_dim = 128, f16>
!kvh = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, f16>

func.func @f16_views_on_sm75(%k: tensor<?x16x2x128xf16>, %ip: tensor<?xi32>,
                             %qs: tensor<?x8x128xf16>)
    -> (tensor<?x8x128xf16>, tensor<?x8xf32>) {
  %kv0 = attn.paged_kv %k, %k, %ip, %ip, %ip : tensor<?x16x2x128xf16>, tensor<?x16x2x128xf16> -> !kvh
  %kv1 = attn.paged_kv %k, %k, %ip, %ip, %ip : tensor<?x16x2x128xf16>, tensor<?x16x2x128xf16> -> !kvh
  %q = attn.ragged_q %qs, %ip : tensor<?x8x128xf16> -> !qh
  %o, %l = attn.attention @causal(%q, %kv0, %kv1)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64,
       tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 1>} : !qh, !kvh, !kvh
      -> tensor<?x8x128xf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xf16>, tensor<?x8xf32>
}
