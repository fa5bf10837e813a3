// attn-select-tiles followed by convert-attn-to-gpu: the tiles the selection
// records are ones the prefill kernel generator accepts, with the warps and
// shared memory the budget counted (bf16 d 128, avg-qo-len 512).
// RUN: flashir-opt %s -attn-import-variants "-attn-select-tiles=chip=sm_90a avg-qo-len=512" "-convert-attn-to-gpu=chip=sm_90a design=mma-sync" | FileCheck %s --check-prefix=SM90
// RUN: flashir-opt %s -attn-import-variants "-attn-select-tiles=chip=sm_80 avg-qo-len=512" -convert-attn-to-gpu=chip=sm_80 | FileCheck %s --check-prefix=SM80
// RUN: flashir-opt %s -attn-import-variants "-attn-select-tiles=chip=sm_86 avg-qo-len=512" -convert-attn-to-gpu=chip=sm_86 | FileCheck %s --check-prefix=SM86

// sm_90a: 4 warps of 32 rows, 64-key tiles, Q in shared memory
// (2 * 2 * 64 * 136 * 2 + 128 * 136 * 2), two CTAs per SM.
// SM90-LABEL: gpu.func @p_prefill_0
// SM90-SAME: block = 128,
// SM90-SAME: dynamic_shared_memory = 104448, q_rows = 128, q_tokens = 128, kv_tile = 64>
// sm_80: the same layout with 32-key tiles (two CTAs in 164 KiB).
// SM80-LABEL: gpu.func @p_prefill_0
// SM80-SAME: block = 128,
// SM80-SAME: dynamic_shared_memory = 69632, q_rows = 128, q_tokens = 128, kv_tile = 32>
// sm_86 (99 KiB per CTA: no room for the Q tile next to 64-key tiles):
// 8 warps of 16 rows.
// SM86-LABEL: gpu.func @p_prefill_0
// SM86-SAME: block = 256,
// SM86-SAME: dynamic_shared_memory = 69632, q_rows = 128, q_tokens = 128, kv_tile = 64>
func.func @p(%k: tensor<?x16x8x128xbf16>, %v: tensor<?x16x8x128xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x128xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x128xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x8x128xbf16>, tensor<?x16x8x128xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x128xbf16> -> !attn.ragged_q<heads = 32, head_dim = 128, bf16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64} : !attn.ragged_q<heads = 32, head_dim = 128, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, bf16>
      -> tensor<?x32x128xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x128xbf16>, tensor<?x32xf32>
}
