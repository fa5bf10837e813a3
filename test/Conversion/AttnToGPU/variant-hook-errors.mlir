// RUN: flashir-opt %s -split-input-file -convert-attn-to-gpu="chip=sm_80" -verify-diagnostics

// What the GPU kernels cannot do with a variant's hooks is a diagnostic.

// A KV head's keys serve every query head of its group: a key hook cannot
// depend on the query head.
attn.variant @per_head_key reduction softmax params(s : f32 per_head) {
  key(%x: f32, %xr: f32, %d: index, %pos: index, %head: index, %s: f32) {
    %r = arith.mulf %x, %s : f32
    attn.yield %r : f32
  }
}

!q    = !attn.ragged_q<heads = 4, head_dim = 64, f16>
!kv   = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 64, f16>
!pool = tensor<?x16x2x64xf16>

func.func @per_head_key_case(%k: !pool, %ip: tensor<?xi32>, %qs: tensor<?x4x64xf16>, %s: tensor<4xf32>) {
  %kv = attn.paged_kv %k, %k, %ip, %ip, %ip : !pool, !pool -> !kv
  %q = attn.ragged_q %qs, %ip : tensor<?x4x64xf16> -> !q
  // expected-error @+1 {{the decode kernel generator needs a key hook without per-head parameters (a KV head's keys serve every query head of its group)}}
  %o, %l = attn.attention @per_head_key(%q, %kv) params(%s : tensor<4xf32>)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64} : !q, !kv
      -> tensor<?x4x64xf16>, tensor<?x4xf32>
  return
}

// -----

// A buffer parameter is a memref on the GPU: read by tensor.extract or
// tensor.dim only.
attn.variant @sliced reduction softmax params(b : tensor<?xf32> buffer) {
  logits(%s: f32, %qpos: index, %kpos: index, %head: index, %b: tensor<?xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %t = tensor.extract_slice %b[%c0] [%c1] [%c1] : tensor<?xf32> to tensor<?xf32>
    %v = tensor.extract %t[%c0] : tensor<?xf32>
    %r = arith.addf %s, %v : f32
    attn.yield %r : f32
  }
}

!q    = !attn.ragged_q<heads = 2, head_dim = 64, f16>
!kv   = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 64, f16>
!pool = tensor<?x16x2x64xf16>

func.func @sliced_case(%k: !pool, %ip: tensor<?xi32>, %qs: tensor<?x2x64xf16>, %b: tensor<?xf32>) {
  %kv = attn.paged_kv %k, %k, %ip, %ip, %ip : !pool, !pool -> !kv
  %q = attn.ragged_q %qs, %ip : tensor<?x2x64xf16> -> !q
  // expected-error @+1 {{the decode kernel generator needs buffer parameters read by tensor.extract or tensor.dim only (a hook applies tensor.extract_slice to one)}}
  %o, %l = attn.attention @sliced(%q, %kv) params(%b : tensor<?xf32>)
      {num_qo_heads = 2 : i64, num_kv_heads = 2 : i64} : !q, !kv
      -> tensor<?x2x64xf16>, tensor<?x2xf32>
  return
}

