// RUN: flashir-opt %s -split-input-file -attn-compose-prefix -verify-diagnostics | FileCheck %s

!q    = !attn.ragged_q<heads = 4, head_dim = 8, f16>
!kv   = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 8, f16>
!pool = tensor<?x16x2x8xf16>

// A shared prefix followed by a suffix: one attention attends the prefix,
// one the suffix, both counting every view for positions; states merged in
// order and finalized.
// CHECK-LABEL: func.func @compose
// CHECK: %[[P:.*]] = attn.shared_paged_kv
// CHECK: %[[S:.*]] = attn.paged_kv
// CHECK: %[[A:.*]] = attn.attention @causal(%[[Q:.*]], %[[P]], %[[S]]) {attended_views = array<i1: true, false>, {{.*}}} {{.*}} -> !attn.state<heads = 4, head_dim = 8, @causal>
// CHECK: %[[B:.*]] = attn.attention @causal(%[[Q]], %[[P]], %[[S]]) {attended_views = array<i1: false, true>, {{.*}}} {{.*}} -> !attn.state<heads = 4, head_dim = 8, @causal>
// CHECK: %[[M:.*]] = attn.merge %[[A]], %[[B]]
// CHECK: attn.finalize %[[M]]
func.func @compose(%k: !pool, %v: !pool, %pidx: tensor<?xi32>, %plen: index,
                   %indptr: tensor<?xi32>, %indices: tensor<?xi32>,
                   %last: tensor<?xi32>, %q: !q)
    -> (tensor<?x4x8xf16>, tensor<?x4xf32>) {
  %prefix = attn.shared_paged_kv %k, %v, %pidx, %plen : !pool, !pool -> !kv
  %suffix = attn.paged_kv %k, %v, %indptr, %indices, %last : !pool, !pool -> !kv
  %o, %l = attn.attention @causal(%q, %prefix, %suffix)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64} : !q, !kv, !kv
      -> tensor<?x4x8xf16>, tensor<?x4xf32>
  return %o, %l : tensor<?x4x8xf16>, tensor<?x4xf32>
}

// -----

!q    = !attn.ragged_q<heads = 4, head_dim = 8, f16>
!kv   = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 8, f16>
!pool = tensor<?x16x2x8xf16>

// Without a shared first view there is nothing to compose.
// CHECK-LABEL: func.func @no_prefix
// CHECK: attn.attention @causal(%{{.*}}, %{{.*}}, %{{.*}}) {num_kv_heads
// CHECK-NOT: attn.merge
func.func @no_prefix(%k: !pool, %v: !pool, %indptr: tensor<?xi32>,
                     %indices: tensor<?xi32>, %last: tensor<?xi32>, %q: !q)
    -> (tensor<?x4x8xf16>, tensor<?x4xf32>) {
  %a = attn.paged_kv %k, %v, %indptr, %indices, %last : !pool, !pool -> !kv
  %b = attn.paged_kv %k, %v, %indptr, %indices, %last : !pool, !pool -> !kv
  %o, %l = attn.attention @causal(%q, %a, %b)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64} : !q, !kv, !kv
      -> tensor<?x4x8xf16>, tensor<?x4xf32>
  return %o, %l : tensor<?x4x8xf16>, tensor<?x4xf32>
}

// -----

attn.variant @sparse reduction sparsemax {}

!q    = !attn.ragged_q<heads = 4, head_dim = 8, f16>
!kv   = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 8, f16>
!pool = tensor<?x16x2x8xf16>

// No merge rule, no composition.
func.func @sparse_compose(%k: !pool, %v: !pool, %pidx: tensor<?xi32>, %plen: index,
                  %indptr: tensor<?xi32>, %indices: tensor<?xi32>,
                  %last: tensor<?xi32>, %q: !q)
    -> (tensor<?x4x8xf16>, tensor<?x4xf32>) {
  %prefix = attn.shared_paged_kv %k, %v, %pidx, %plen : !pool, !pool -> !kv
  %suffix = attn.paged_kv %k, %v, %indptr, %indices, %last : !pool, !pool -> !kv
  // expected-error @+1 {{cannot compose a shared prefix: variant 'sparse' has reduction 'sparsemax', which has no merge rule}}
  %o, %l = attn.attention @sparse(%q, %prefix, %suffix)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64} : !q, !kv, !kv
      -> tensor<?x4x8xf16>, tensor<?x4xf32>
  return %o, %l : tensor<?x4x8xf16>, tensor<?x4xf32>
}
