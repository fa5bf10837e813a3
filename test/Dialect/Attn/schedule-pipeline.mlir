// The composed scheduling pipeline: prefix composition, head-group fusion,
// split-KV and tile selection, in that order, with their defaults.
// RUN: flashir-opt %s --attn-schedule='chip=sm_90a chunk-size=64' | FileCheck %s
// RUN: flashir-opt %s --attn-schedule | FileCheck %s --check-prefix=DEFAULT

!q    = !attn.ragged_q<heads = 8, head_dim = 128, bf16>
!kv   = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, bf16>
!pool = tensor<?x16x2x128xbf16>

// CHECK-LABEL: func.func @decode
// CHECK: attn.uniform_chunks
// CHECK: %[[A:.*]] = attn.attention @causal({{.*}}) chunks({{.*}}) {attended_views = array<i1: true, false>, fused_head_groups, {{.*}}, tiles = #attn.tiles<
// CHECK: %[[MA:.*]] = attn.merge_chunks %[[A]]
// CHECK: attn.uniform_chunks
// CHECK: %[[B:.*]] = attn.attention @causal({{.*}}) chunks({{.*}}) {attended_views = array<i1: false, true>, fused_head_groups, {{.*}}, tiles = #attn.tiles<
// CHECK: %[[MB:.*]] = attn.merge_chunks %[[B]]
// CHECK: %[[M:.*]] = attn.merge %[[MA]], %[[MB]]
// CHECK: attn.finalize %[[M]]

// Without chunk-size the keys are not split; tiles are chosen for sm_80.
// DEFAULT-LABEL: func.func @decode
// DEFAULT-NOT: chunks(
// DEFAULT: attn.merge
// DEFAULT-SAME: !attn.state
func.func @decode(%k: !pool, %v: !pool, %pidx: tensor<?xi32>, %plen: index,
                  %indptr: tensor<?xi32>, %indices: tensor<?xi32>,
                  %last: tensor<?xi32>, %q: !q)
    -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %prefix = attn.shared_paged_kv %k, %v, %pidx, %plen : !pool, !pool -> !kv
  %suffix = attn.paged_kv %k, %v, %indptr, %indices, %last : !pool, !pool -> !kv
  %o, %l = attn.attention @causal(%q, %prefix, %suffix)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64} : !q, !kv, !kv
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>
}
