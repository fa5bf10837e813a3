// RUN: flashir-opt %s -split-input-file -convert-attn-to-loops -verify-diagnostics | FileCheck %s

!q  = !attn.ragged_q<heads = 4, head_dim = 8, f16>
!kv = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 8, f16>

// Softmax: requests x rows x heads, then an online reduction over the keys
// (running max, rescale by exp(m - m'), accumulate), hooks inlined, masked
// keys skipped by an scf.if; results written to fresh buffers. No attn op
// and no variant remain.
// CHECK-LABEL: func.func @causal_paged
// CHECK-NOT: attn.
// CHECK: %[[O:.*]] = memref.alloc(%{{.*}}) : memref<?x4x8xf16>
// CHECK: %[[L:.*]] = memref.alloc(%{{.*}}) : memref<?x4xf32>
// CHECK: scf.for %[[B:.*]] =
// CHECK: scf.for %[[I:.*]] =
// CHECK: scf.for %[[H:.*]] =
// CHECK: arith.divui %[[H]]
// The inlined causal mask guards each key.
// CHECK: scf.for {{.*}} iter_args(%[[M:.*]] = %{{.*}}, %[[S:.*]] = %{{.*}}) -> (f32, f32)
// CHECK: %[[KEEP:.*]] = arith.cmpi sle
// CHECK: scf.if %[[KEEP]] -> (f32, f32)
// Page table lookup: indices[indptr[b] + j / 16], slot j % 16.
// CHECK: arith.remui %{{.*}}, %c16
// CHECK: arith.divui %{{.*}}, %c16
// CHECK: tensor.extract %{{.*}} : tensor<?xi32>
// CHECK: arith.extf %{{.*}} : f16 to f32
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: math.exp
// CHECK: math.log
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: bufferization.to_tensor %[[O]] restrict writable
// CHECK: bufferization.to_tensor %[[L]] restrict writable
// CHECK-NOT: attn.
func.func @causal_paged(%k: tensor<?x16x2x8xf16>, %v: tensor<?x16x2x8xf16>,
                        %indptr: tensor<?xi32>, %indices: tensor<?xi32>,
                        %last: tensor<?xi32>, %queries: tensor<?x4x8xf16>,
                        %qo: tensor<?xi32>) -> (tensor<?x4x8xf16>, tensor<?x4xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last
      : tensor<?x16x2x8xf16>, tensor<?x16x2x8xf16> -> !kv
  %q = attn.ragged_q %queries, %qo : tensor<?x4x8xf16> -> !q
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64} : !q, !kv
      -> tensor<?x4x8xf16>, tensor<?x4xf32>
  return %o, %l : tensor<?x4x8xf16>, tensor<?x4xf32>
}

// -----

!q  = !attn.ragged_q<heads = 2, head_dim = 4, f32>
!kv = !attn.ragged_kv<heads = 1, head_dim = 4, f32>
!st = !attn.state<heads = 2, head_dim = 4, @sigmoid>

// Sigmoid states: no running max, sigmoid weights; merge sums outputs and
// log-add-exps lse; finalize converts. Empty states are real buffers with
// lse = -inf.
// CHECK-LABEL: func.func @sigmoid_states
// CHECK-NOT: attn.
// CHECK: arith.negf
// CHECK: math.exp
// CHECK: arith.divf
// CHECK: arith.constant 0xFF800000 : f32
// CHECK: arith.addf
// CHECK: math.log
// CHECK: arith.truncf %{{.*}} : f32 to bf16
func.func @sigmoid_states(%k: tensor<?x1x4xf32>, %v: tensor<?x1x4xf32>,
                          %kvi: tensor<?xi32>, %queries: tensor<?x2x4xf32>,
                          %qo: tensor<?xi32>, %bias: f32, %rows: index)
    -> (tensor<?x2x4xbf16>, tensor<?x2xf32>) {
  %kv = attn.ragged_kv %k, %v, %kvi : tensor<?x1x4xf32>, tensor<?x1x4xf32> -> !kv
  %q = attn.ragged_q %queries, %qo : tensor<?x2x4xf32> -> !q
  %s = attn.attention @sigmoid(%q, %kv) params(%bias : f32)
      {num_qo_heads = 2 : i64, num_kv_heads = 1 : i64} : !q, !kv -> !st
  %e = attn.empty_state @sigmoid %rows : !st
  %m = attn.merge %e, %s : !st, !st -> !st
  %o, %l = attn.finalize %m : !st -> tensor<?x2x4xbf16>, tensor<?x2xf32>
  return %o, %l : tensor<?x2x4xbf16>, tensor<?x2xf32>
}

// -----

!q  = !attn.ragged_q<heads = 1, head_dim = 4, f32>
!kv = !attn.ragged_kv<heads = 1, head_dim = 4, f32>

// A view that is not built by a view op in the function cannot be lowered.
func.func @view_argument(%queries: tensor<?x1x4xf32>, %qo: tensor<?xi32>, %kv: !kv)
    -> (tensor<?x1x4xf32>, tensor<?x1xf32>) {
  %q = attn.ragged_q %queries, %qo : tensor<?x1x4xf32> -> !q
  // expected-error @+1 {{the CPU lowering needs every KV view to be defined by attn.paged_kv, attn.shared_paged_kv or attn.ragged_kv in the same function}}
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 1 : i64, num_kv_heads = 1 : i64} : !q, !kv
      -> tensor<?x1x4xf32>, tensor<?x1xf32>
  return %o, %l : tensor<?x1x4xf32>, tensor<?x1xf32>
}

// -----

!q  = !attn.ragged_q<heads = 1, head_dim = 4, f32>
!kv = !attn.ragged_kv<heads = 1, head_dim = 4, f32>

// Likewise for the queries.
func.func @queries_argument(%q: !q, %k: tensor<?x1x4xf32>, %kvi: tensor<?xi32>)
    -> (tensor<?x1x4xf32>, tensor<?x1xf32>) {
  %kv = attn.ragged_kv %k, %k, %kvi : tensor<?x1x4xf32>, tensor<?x1x4xf32> -> !kv
  // expected-error @+1 {{the CPU lowering needs the queries to be defined by attn.ragged_q in the same function}}
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 1 : i64, num_kv_heads = 1 : i64} : !q, !kv
      -> tensor<?x1x4xf32>, tensor<?x1xf32>
  return %o, %l : tensor<?x1x4xf32>, tensor<?x1xf32>
}

// -----

!st = !attn.state<heads = 1, head_dim = 4, @plain>

// States cannot cross a function boundary on the CPU path.
func.func @state_argument(%a: !st, %rows: index) -> !st {
  %e = attn.empty_state @plain %rows : !st
  // expected-error @+1 {{the CPU lowering needs this state to be produced by an attn op in the same function}}
  %m = attn.merge %a, %e : !st, !st -> !st
  return %m : !st
}

// -----

!st = !attn.state<heads = 1, head_dim = 4, @plain>

// ... nor leave one.
func.func @state_returned(%rows: index) -> !st {
  %e = attn.empty_state @plain %rows : !st
  // expected-error @+1 {{'func.return' op uses an !attn.state, which the CPU lowering cannot pass across this op}}
  return %e : !st
}

// -----

!q  = !attn.ragged_q<heads = 2, head_dim = 4, f32>
!kv = !attn.ragged_kv<heads = 1, head_dim = 4, f32>

// A tiled, chunked, head-group-fused attention: chunks loop per request,
// fused rows per KV head (row f: position f / 2, head 2 hkv + f mod 2), keys
// visited in tiles of 32 with the tile's logits kept in a 32-entry buffer;
// chunk states merged per row in chunk order.
// CHECK-LABEL: func.func @scheduled
// CHECK: memref.alloca() : memref<32xf32>
// CHECK: scf.for %{{.*}} iter_args
// CHECK: scf.for %[[C:.*]] = %{{.*}} to %{{.*}} step
// CHECK: scf.for %[[HKV:.*]] = %{{.*}} to %{{.*}} step
// CHECK: scf.for %[[F:.*]] = %{{.*}} to %{{.*}} step
// CHECK: arith.divui %[[F]], %c2
// CHECK: arith.remui %[[F]], %c2
// CHECK: scf.for %[[T:.*]] = %{{.*}} to %[[END:.*]] step %c32 iter_args
// CHECK: arith.minsi %{{.*}}, %[[END]]
func.func @scheduled(%k: tensor<?x1x4xf32>, %kvi: tensor<?xi32>,
                     %queries: tensor<?x2x4xf32>, %qo: tensor<?xi32>,
                     %ci: tensor<?xi32>, %cs: tensor<?xi32>, %ce: tensor<?xi32>)
    -> (tensor<?x2x4xf32>, tensor<?x2xf32>) {
  %kv = attn.ragged_kv %k, %k, %kvi : tensor<?x1x4xf32>, tensor<?x1x4xf32> -> !kv
  %q = attn.ragged_q %queries, %qo : tensor<?x2x4xf32> -> !q
  %p = attn.attention @causal(%q, %kv) chunks(%ci, %cs, %ce)
      {num_qo_heads = 2 : i64, num_kv_heads = 1 : i64, fused_head_groups,
       tiles = #attn.tiles<q = 16, kv = 32, warps = 4, stages = 2>} : !q, !kv
      -> !attn.chunked_state<heads = 2, head_dim = 4, @causal>
  %s = attn.merge_chunks %p, %q, %ci
      : !attn.chunked_state<heads = 2, head_dim = 4, @causal>, !q
      -> !attn.state<heads = 2, head_dim = 4, @causal>
  %o, %l = attn.finalize %s : !attn.state<heads = 2, head_dim = 4, @causal>
      -> tensor<?x2x4xf32>, tensor<?x2xf32>
  return %o, %l : tensor<?x2x4xf32>, tensor<?x2xf32>
}

// -----

!kv = !attn.paged_kv<page_size = 4, layout = nhd, heads = 1, head_dim = 4, f32>

// Uniform chunks need a per-request view to know how many requests there are.
func.func @chunks_of_shared_only(%k: tensor<?x4x1x4xf32>, %ix: tensor<?xi32>, %n: index) {
  %p = attn.shared_paged_kv %k, %k, %ix, %n : tensor<?x4x1x4xf32>, tensor<?x4x1x4xf32> -> !kv
  // expected-error @+1 {{the CPU lowering needs a per-request view to know the number of requests}}
  %a, %b, %c = attn.uniform_chunks(%p) {chunk_size = 8 : i64} : !kv
      -> tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  return
}
