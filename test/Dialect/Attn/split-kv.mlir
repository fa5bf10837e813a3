// RUN: flashir-opt %s -split-input-file -attn-split-kv=chunk-size=64 -verify-diagnostics | FileCheck %s --check-prefix=STATIC
// RUN: flashir-opt %s -split-input-file -attn-split-kv=chunk-size=0 -verify-diagnostics | FileCheck %s --check-prefix=RUNTIME

!q  = !attn.ragged_q<heads = 4, head_dim = 8, f16>
!kv = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 8, f16>

// Static chunks come from attn.uniform_chunks over the same views; the
// chunked attention's states are merged in chunk order, then finalized.
// STATIC-LABEL: func.func @split
// STATIC-SAME: (%[[Q:.*]]: !attn.ragged_q<{{.*}}>, %[[KV:.*]]: !attn.paged_kv<{{.*}}>)
// STATIC: %[[CI:.*]], %[[CS:.*]], %[[CE:.*]] = attn.uniform_chunks(%[[KV]]) {chunk_size = 64 : i64}
// STATIC: %[[P:.*]] = attn.attention @causal(%[[Q]], %[[KV]]) chunks(%[[CI]], %[[CS]], %[[CE]]) {num_kv_heads = 2 : i64, num_qo_heads = 4 : i64} {{.*}} -> !attn.chunked_state<heads = 4, head_dim = 8, @causal>
// STATIC: %[[S:.*]] = attn.merge_chunks %[[P]], %[[Q]], %[[CI]]
// STATIC: %[[O:.*]], %[[L:.*]] = attn.finalize %[[S]] {{.*}} -> tensor<?x4x8xf16>, tensor<?x4xf32>
// STATIC: return %[[O]], %[[L]]

// Runtime chunks are three new function arguments for the planner.
// RUNTIME-LABEL: func.func @split
// RUNTIME-SAME: %{{.*}}: tensor<?xi32> {attn.planner = "chunk_indptr"}, %{{.*}}: tensor<?xi32> {attn.planner = "chunk_starts"}, %{{.*}}: tensor<?xi32> {attn.planner = "chunk_ends"})
// RUNTIME-NOT: attn.uniform_chunks
// RUNTIME: attn.attention @causal(%{{.*}}, %{{.*}}) chunks(%arg2, %arg3, %arg4)
// RUNTIME: attn.merge_chunks %{{.*}}, %{{.*}}, %arg2
func.func @split(%q: !q, %kv: !kv) -> (tensor<?x4x8xf16>, tensor<?x4xf32>) {
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64} : !q, !kv
      -> tensor<?x4x8xf16>, tensor<?x4xf32>
  return %o, %l : tensor<?x4x8xf16>, tensor<?x4xf32>
}

// -----

!q  = !attn.ragged_q<heads = 4, head_dim = 8, f16>
!kv = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 8, f16>
!st = !attn.state<heads = 4, head_dim = 8, @sigmoid>

// A state result is replaced by the merged chunks (sigmoid: sum rule).
// STATIC-LABEL: func.func @state
// STATIC: attn.attention @sigmoid{{.*}}chunks(
// STATIC: %[[M:.*]] = attn.merge_chunks
// STATIC-NOT: attn.finalize
// STATIC: return %[[M]]
// RUNTIME-LABEL: func.func @state
func.func @state(%q: !q, %kv: !kv, %bias: f32) -> !st {
  %s = attn.attention @sigmoid(%q, %kv) params(%bias : f32)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64} : !q, !kv -> !st
  return %s : !st
}

// -----

attn.variant @sparse reduction sparsemax {}

!q  = !attn.ragged_q<heads = 4, head_dim = 8, f16>
!kv = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 8, f16>

// No merge rule, no split.
func.func @sparse_split(%q: !q, %kv: !kv) -> (tensor<?x4x8xf16>, tensor<?x4xf32>) {
  // expected-error @+1 {{cannot split the keys of variant 'sparse': reduction 'sparsemax' has no merge rule}}
  %o, %l = attn.attention @sparse(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64} : !q, !kv
      -> tensor<?x4x8xf16>, tensor<?x4xf32>
  return %o, %l : tensor<?x4x8xf16>, tensor<?x4xf32>
}
