// RUN: flashir-opt %s -split-input-file -attn-import-variants -convert-attn-to-gpu="chip=sm_80 design=wgmma" -verify-diagnostics

// design=wgmma asks for sm_90a's wgmma prefill kernel: on another chip a
// prefill attention is refused with what it needs (flashir-bundle gives
// such chips of a bundle mma-sync instead).

!q  = !attn.ragged_q<heads = 8, head_dim = 128, bf16>
!kv = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, bf16>
!pool = tensor<?x16x2x128xbf16>

func.func @on_sm80(%k: !pool, %ip: tensor<?xi32>, %qs: tensor<?x8x128xbf16>)
    -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %k, %ip, %ip, %ip : !pool, !pool -> !kv
  %q = attn.ragged_q %qs, %ip : tensor<?x8x128xbf16> -> !q
  // expected-error @+1 {{the prefill kernel generator needs sm_90a (wgmma.mma_async and tensor copies) for design=wgmma; sm_80 has neither}}
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64,
       tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>} : !q, !kv
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>
}

// -----

// Its decode attentions get the mma.sync decode kernel as with
// design=mma-sync.
!q  = !attn.ragged_q<heads = 8, head_dim = 128, bf16>
!kv = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, bf16>
!pool = tensor<?x16x2x128xbf16>

func.func @decode_on_sm80(%k: !pool, %ip: tensor<?xi32>, %qs: tensor<?x8x128xbf16>)
    -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %k, %ip, %ip, %ip : !pool, !pool -> !kv
  %q = attn.ragged_q %qs, %ip : tensor<?x8x128xbf16> -> !q
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64} : !q, !kv
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>
}
