// RUN: flashir-opt %s -split-input-file -attn-import-variants -convert-attn-to-gpu="chip=sm_80" -verify-diagnostics

// The tensor-core decode kernel keeps each lane's accumulators in registers
// (two per 8-column n-tile and 8-row half): 32 query heads at head dim 256
// would need 256; the CUDA-core kernel serves at most 16 heads.

!q    = !attn.ragged_q<heads = 32, head_dim = 256, bf16>
!kv   = !attn.paged_kv<page_size = 16, layout = nhd, heads = 1, head_dim = 256, bf16>
!pool = tensor<?x16x1x256xbf16>

func.func @group32_d256(%k: !pool, %ip: tensor<?xi32>, %qs: tensor<?x32x256xbf16>) {
  %kv = attn.paged_kv %k, %k, %ip, %ip, %ip : !pool, !pool -> !kv
  %q = attn.ragged_q %qs, %ip : tensor<?x32x256xbf16> -> !q
  // expected-error @+1 {{the decode kernel generator needs at most 128 f32 accumulators per lane in the tensor-core kernel; 32 query heads per KV head at head_dim 256 need 256}}
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 1 : i64} : !q, !kv
      -> tensor<?x32x256xbf16>, tensor<?x32xf32>
  return
}
