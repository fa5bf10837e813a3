// RUN: flashir-opt %s -split-input-file -attn-import-variants -convert-attn-to-gpu=chip=sm_80 -verify-diagnostics

!q    = !attn.ragged_q<heads = 8, head_dim = 128, bf16>
!kv16 = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, bf16>
!kv1  = !attn.paged_kv<page_size = 1, layout = nhd, heads = 2, head_dim = 128, bf16>

// The kernels read every view through one access plan.
func.func @mixed_views(%k16: tensor<?x16x2x128xbf16>, %k1: tensor<?x1x2x128xbf16>,
                       %ip: tensor<?xi32>, %qs: tensor<?x8x128xbf16>)
    -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %kv0 = attn.paged_kv %k16, %k16, %ip, %ip, %ip : tensor<?x16x2x128xbf16>, tensor<?x16x2x128xbf16> -> !kv16
  %kv1 = attn.paged_kv %k1, %k1, %ip, %ip, %ip : tensor<?x1x2x128xbf16>, tensor<?x1x2x128xbf16> -> !kv1
  %q = attn.ragged_q %qs, %ip : tensor<?x8x128xbf16> -> !q
  // expected-error @+1 {{the decode kernel generator needs KV views of one type (page size, layout, heads, head dim, element type)}}
  %o, %l = attn.attention @causal(%q, %kv0, %kv1)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64,
       tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>} : !q, !kv16, !kv1
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>
}

// -----

!q    = !attn.ragged_q<heads = 8, head_dim = 128, bf16>
!kv   = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, bf16>
!pool = tensor<?x16x2x128xbf16>

// Decode tiles (one query row) over two views: the decode kernels walk one
// view; attn-select-tiles gives such attentions 16 or more rows.
func.func @decode_tiles(%k: !pool, %ip: tensor<?xi32>, %qs: tensor<?x8x128xbf16>)
    -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %kv0 = attn.paged_kv %k, %k, %ip, %ip, %ip : !pool, !pool -> !kv
  %kv1 = attn.paged_kv %k, %k, %ip, %ip, %ip : !pool, !pool -> !kv
  %q = attn.ragged_q %qs, %ip : tensor<?x8x128xbf16> -> !q
  // expected-error @+1 {{the decode kernel generator needs one KV view (over several views, tiles of 16 or more query rows: the prefill kernel)}}
  %o, %l = attn.attention @causal(%q, %kv0, %kv1)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64,
       tiles = #attn.tiles<q = 1, kv = 64, warps = 4, stages = 2>} : !q, !kv, !kv
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>
}

// -----

!q    = !attn.ragged_q<heads = 8, head_dim = 128, bf16>
!kv   = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, bf16>
!pool = tensor<?x16x2x128xbf16>

// A view the kernels cannot read (a shared prefix view) is named.
func.func @shared_view(%k: !pool, %ip: tensor<?xi32>, %n: index,
                       %qs: tensor<?x8x128xbf16>)
    -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %kv0 = attn.shared_paged_kv %k, %k, %ip, %n : !pool, !pool -> !kv
  %kv1 = attn.paged_kv %k, %k, %ip, %ip, %ip : !pool, !pool -> !kv
  %q = attn.ragged_q %qs, %ip : tensor<?x8x128xbf16> -> !q
  // expected-error @+1 {{the decode kernel generator needs KV views defined by attn.paged_kv or attn.ragged_kv}}
  %o, %l = attn.attention @causal(%q, %kv0, %kv1)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64,
       tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>} : !q, !kv, !kv
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>
}
