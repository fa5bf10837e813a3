// RUN: flashir-opt %s -attn-import-variants -convert-attn-to-gpu="warps=8 design=simt" -verify-diagnostics
// RUN: not flashir-opt %s -attn-import-variants -convert-attn-to-gpu="warps=32 stages=8 chip=sm_86" 2>&1 | FileCheck %s --check-prefix=TC

!q    = !attn.ragged_q<heads = 16, head_dim = 256, bf16>
!kv   = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 256, bf16>
!pool = tensor<?x16x2x256xbf16>

// The CUDA-core kernel's warp states must fit in 48 KiB of static shared
// memory (here 8 warps x 8 rows x 260 floats); the tensor-core kernel's ring
// in the chip's dynamic shared memory (sm_86: 99 KiB; here 32 warps x 8
// stages x 16 keys x 2 x 512 bytes).
// TC: error: 'attn.attention' op the decode kernel generator needs at most 101376 bytes of shared memory per CTA on sm_86; 32 warps need 4194304 bytes here (use fewer warps, stages or unroll)
func.func @too_much_shared(%k: !pool, %ip: tensor<?xi32>, %qs: tensor<?x16x256xbf16>) {
  %kv = attn.paged_kv %k, %k, %ip, %ip, %ip : !pool, !pool -> !kv
  %q = attn.ragged_q %qs, %ip : tensor<?x16x256xbf16> -> !q
  // expected-error @+1 {{the decode kernel generator needs at most 49152 bytes of shared memory per CTA on sm_80; 8 warps need 66560 bytes here (use fewer warps, stages or unroll)}}
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 16 : i64, num_kv_heads = 2 : i64} : !q, !kv
      -> tensor<?x16x256xbf16>, tensor<?x16xf32>
  return
}
