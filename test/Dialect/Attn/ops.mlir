// RUN: flashir-opt %s | flashir-opt | FileCheck %s
// RUN: flashir-opt %s --mlir-print-op-generic | flashir-opt | FileCheck %s
// RUN: flashir-opt %s > %t.1.mlir && flashir-opt %t.1.mlir > %t.2.mlir && diff %t.1.mlir %t.2.mlir
// RUN: flashir-opt %s --mlir-print-op-generic > %t.g1.mlir && flashir-opt %t.g1.mlir --mlir-print-op-generic > %t.g2.mlir && diff %t.g1.mlir %t.g2.mlir

// A variant with every hook and every parameter kind.
// CHECK-LABEL: attn.variant @everything reduction softmax
// CHECK-SAME: params(window : i32 per_request, slope : f32 per_head, temp : f32 scalar, bits : tensor<?xi8> buffer)
// CHECK-SAME: attributes {note = "all hooks"}
// CHECK: query(%{{.*}}: f32, %{{.*}}: f32, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: i32, %{{.*}}: f32, %{{.*}}: f32, %{{.*}}: tensor<?xi8>) {
// CHECK: attn.yield %{{.*}} : f32
// CHECK: key(
// CHECK: logits(
// CHECK: mask(
// CHECK: attn.yield %{{.*}} : i1
// CHECK: output(%{{.*}}: f32, %{{.*}}: index, %{{.*}}: index) {
attn.variant @everything reduction softmax
    params(window : i32 per_request, slope : f32 per_head, temp : f32 scalar,
           bits : tensor<?xi8> buffer) attributes {note = "all hooks"} {
  query(%x: f32, %xr: f32, %d: index, %q: index, %h: index,
        %w: i32, %s: f32, %t: f32, %b: tensor<?xi8>) {
    %r = arith.mulf %x, %t : f32
    attn.yield %r : f32
  }
  key(%x: f32, %xr: f32, %d: index, %k: index, %h: index,
      %w: i32, %s: f32, %t: f32, %b: tensor<?xi8>) {
    attn.yield %xr : f32
  }
  logits(%l: f32, %q: index, %k: index, %h: index,
         %w: i32, %s: f32, %t: f32, %b: tensor<?xi8>) {
    %r = arith.addf %l, %s : f32
    attn.yield %r : f32
  }
  mask(%q: index, %k: index, %h: index,
       %w: i32, %s: f32, %t: f32, %b: tensor<?xi8>) {
    %keep = arith.cmpi ule, %k, %q : index
    attn.yield %keep : i1
  }
  output(%o: f32, %d: index, %h: index) {
    %c = arith.constant 2.0 : f32
    %r = arith.mulf %o, %c : f32
    attn.yield %r : f32
  }
}

// CHECK-LABEL: attn.variant @empty_sigmoid reduction sigmoid {}
attn.variant @empty_sigmoid reduction sigmoid {}

// CHECK-LABEL: attn.variant @sparse reduction sparsemax {}
attn.variant @sparse reduction sparsemax {}

// Hooks may be written in any order and are printed in canonical order.
// CHECK-LABEL: attn.variant @reordered reduction softmax
// CHECK: logits(
// CHECK: mask(
attn.variant @reordered reduction softmax {
  mask(%q: index, %k: index, %h: index) {
    %t = arith.constant true
    attn.yield %t : i1
  }
  logits(%l: f32, %q: index, %k: index, %h: index) {
    attn.yield %l : f32
  }
}

// CHECK-LABEL: func.func @paged_nhd
// CHECK: %[[KV:.*]] = attn.paged_kv %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, f16>
// CHECK: %[[Q:.*]] = attn.ragged_q %{{.*}}, %{{.*}} : tensor<?x32x128xf16> -> !attn.ragged_q<heads = 32, head_dim = 128, f16>
// CHECK: attn.attention @causal(%[[Q]], %[[KV]]) {num_kv_heads = 8 : i64, num_qo_heads = 32 : i64, scale = 0.0883883461 : f32}
// CHECK-SAME: -> tensor<?x32x128xf16>, tensor<?x32xf32>
func.func @paged_nhd(%k: tensor<?x16x8x128xf16>, %v: tensor<?x16x8x128xf16>,
                     %indptr: tensor<?xi32>, %indices: tensor<?xi32>,
                     %last: tensor<?xi32>, %queries: tensor<?x32x128xf16>,
                     %qo_indptr: tensor<?xi32>)
    -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last
      : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>
      -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, f16>
  %q = attn.ragged_q %queries, %qo_indptr : tensor<?x32x128xf16>
      -> !attn.ragged_q<heads = 32, head_dim = 128, f16>
  %o, %lse = attn.attention @causal(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64, scale = 0.0883883461 : f32}
      : !attn.ragged_q<heads = 32, head_dim = 128, f16>,
        !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, f16>
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>
}

// An HND pool, page size 1, bf16, and a variant with parameters.
// CHECK-LABEL: func.func @paged_hnd_params
// CHECK: attn.paged_kv {{.*}} : tensor<?x4x1x64xbf16>, tensor<?x4x1x64xbf16> -> !attn.paged_kv<page_size = 1, layout = hnd, heads = 4, head_dim = 64, bf16>
// CHECK: attn.attention @sliding_window(%{{.*}}, %{{.*}}) params(%{{.*}} : tensor<?xi32>)
// CHECK-SAME: -> tensor<?x4x64xf32>, tensor<?x4xf32>
func.func @paged_hnd_params(%k: tensor<?x4x1x64xbf16>, %v: tensor<?x4x1x64xbf16>,
                            %indptr: tensor<?xi32>, %indices: tensor<?xi32>,
                            %last: tensor<?xi32>, %queries: tensor<?x4x64xbf16>,
                            %qo_indptr: tensor<?xi32>, %window: tensor<?xi32>)
    -> (tensor<?x4x64xf32>, tensor<?x4xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last
      : tensor<?x4x1x64xbf16>, tensor<?x4x1x64xbf16>
      -> !attn.paged_kv<page_size = 1, layout = hnd, heads = 4, head_dim = 64, bf16>
  %q = attn.ragged_q %queries, %qo_indptr : tensor<?x4x64xbf16>
      -> !attn.ragged_q<heads = 4, head_dim = 64, bf16>
  %o, %lse = attn.attention @sliding_window(%q, %kv) params(%window : tensor<?xi32>)
      {num_qo_heads = 4 : i64, num_kv_heads = 4 : i64}
      : !attn.ragged_q<heads = 4, head_dim = 64, bf16>,
        !attn.paged_kv<page_size = 1, layout = hnd, heads = 4, head_dim = 64, bf16>
      -> tensor<?x4x64xf32>, tensor<?x4xf32>
  return %o, %lse : tensor<?x4x64xf32>, tensor<?x4xf32>
}

// A shared prefix (paged) followed by per-request suffixes (ragged), producing
// a state; states merged, made, emptied and finalized.
// CHECK-LABEL: func.func @states
// CHECK: %[[RKV:.*]] = attn.ragged_kv %{{.*}}, %{{.*}}, %{{.*}} : tensor<?x2x80xf32>, tensor<?x2x80xf32> -> !attn.ragged_kv<heads = 2, head_dim = 80, f32>
// CHECK: %[[S0:.*]] = attn.attention @everything(%{{.*}}, %{{.*}}, %[[RKV]]) params(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<?xi32>, tensor<14xf32>, f32, tensor<?xi8>)
// CHECK-SAME: -> !attn.state<heads = 14, head_dim = 80, @everything>
// CHECK: %[[E:.*]] = attn.empty_state @everything %{{.*}} : !attn.state<heads = 14, head_dim = 80, @everything>
// CHECK: %[[M:.*]] = attn.make_state @everything %{{.*}}, %{{.*}} : tensor<?x14x80xf32>, tensor<?x14xf32> -> !attn.state<heads = 14, head_dim = 80, @everything>
// CHECK: %[[S:.*]] = attn.merge %[[S0]], %[[E]], %[[M]] : !attn.state<heads = 14, head_dim = 80, @everything>, !attn.state<heads = 14, head_dim = 80, @everything>, !attn.state<heads = 14, head_dim = 80, @everything> -> !attn.state<heads = 14, head_dim = 80, @everything>
// CHECK: attn.finalize %[[S]] : !attn.state<heads = 14, head_dim = 80, @everything> -> tensor<?x14x80xf16>, tensor<?x14xf32>
func.func @states(%pk: tensor<?x3x2x80xf32>, %pv: tensor<?x3x2x80xf32>,
                  %indptr: tensor<?xi32>, %indices: tensor<?xi32>,
                  %last: tensor<?xi32>, %sk: tensor<?x2x80xf32>,
                  %sv: tensor<?x2x80xf32>, %kv_indptr: tensor<?xi32>,
                  %queries: tensor<?x14x80xf32>, %qo_indptr: tensor<?xi32>,
                  %window: tensor<?xi32>, %slopes: tensor<14xf32>, %temp: f32,
                  %bits: tensor<?xi8>, %rows: index,
                  %o_in: tensor<?x14x80xf32>, %lse_in: tensor<?x14xf32>)
    -> (tensor<?x14x80xf16>, tensor<?x14xf32>) {
  %prefix = attn.paged_kv %pk, %pv, %indptr, %indices, %last
      : tensor<?x3x2x80xf32>, tensor<?x3x2x80xf32>
      -> !attn.paged_kv<page_size = 3, layout = nhd, heads = 2, head_dim = 80, f32>
  %suffix = attn.ragged_kv %sk, %sv, %kv_indptr
      : tensor<?x2x80xf32>, tensor<?x2x80xf32>
      -> !attn.ragged_kv<heads = 2, head_dim = 80, f32>
  %q = attn.ragged_q %queries, %qo_indptr : tensor<?x14x80xf32>
      -> !attn.ragged_q<heads = 14, head_dim = 80, f32>
  %s0 = attn.attention @everything(%q, %prefix, %suffix)
      params(%window, %slopes, %temp, %bits
             : tensor<?xi32>, tensor<14xf32>, f32, tensor<?xi8>)
      {num_qo_heads = 14 : i64, num_kv_heads = 2 : i64}
      : !attn.ragged_q<heads = 14, head_dim = 80, f32>,
        !attn.paged_kv<page_size = 3, layout = nhd, heads = 2, head_dim = 80, f32>,
        !attn.ragged_kv<heads = 2, head_dim = 80, f32>
      -> !attn.state<heads = 14, head_dim = 80, @everything>
  %e = attn.empty_state @everything %rows
      : !attn.state<heads = 14, head_dim = 80, @everything>
  %m = attn.make_state @everything %o_in, %lse_in
      : tensor<?x14x80xf32>, tensor<?x14xf32>
      -> !attn.state<heads = 14, head_dim = 80, @everything>
  %s = attn.merge %s0, %e, %m
      : !attn.state<heads = 14, head_dim = 80, @everything>,
        !attn.state<heads = 14, head_dim = 80, @everything>,
        !attn.state<heads = 14, head_dim = 80, @everything>
      -> !attn.state<heads = 14, head_dim = 80, @everything>
  %o, %lse = attn.finalize %s : !attn.state<heads = 14, head_dim = 80, @everything>
      -> tensor<?x14x80xf16>, tensor<?x14xf32>
  return %o, %lse : tensor<?x14x80xf16>, tensor<?x14xf32>
}

// The non-mergeable reduction still computes a finalized attention.
// CHECK-LABEL: func.func @sparsemax_direct
// CHECK: attn.attention @sparse
func.func @sparsemax_direct(%q: !attn.ragged_q<heads = 2, head_dim = 8, f32>,
                            %kv: !attn.ragged_kv<heads = 1, head_dim = 8, f32>)
    -> (tensor<?x2x8xf32>, tensor<?x2xf32>) {
  %o, %lse = attn.attention @sparse(%q, %kv)
      {num_qo_heads = 2 : i64, num_kv_heads = 1 : i64}
      : !attn.ragged_q<heads = 2, head_dim = 8, f32>,
        !attn.ragged_kv<heads = 1, head_dim = 8, f32>
      -> tensor<?x2x8xf32>, tensor<?x2xf32>
  return %o, %lse : tensor<?x2x8xf32>, tensor<?x2xf32>
}

// Attributes on their own.
// CHECK-LABEL: func.func @attributes
// CHECK-SAME: layouts = [#attn.layout<nhd>, #attn.layout<hnd>]
// CHECK-SAME: params = [#attn.param<"w", i32, per_request>, #attn.param<"b", tensor<?xi8>, buffer>]
// CHECK-SAME: reductions = [#attn.reduction<softmax>, #attn.reduction<sigmoid>, #attn.reduction<sparsemax>]
func.func @attributes() attributes {
    layouts = [#attn.layout<nhd>, #attn.layout<hnd>],
    reductions = [#attn.reduction<softmax>, #attn.reduction<sigmoid>, #attn.reduction<sparsemax>],
    params = [#attn.param<"w", i32, per_request>, #attn.param<"b", tensor<?xi8>, buffer>]} {
  return
}

// Scheduling forms: a shared prefix view, chunks, attended views, fused head
// groups, a tile configuration, chunked states and their merge.
// CHECK-LABEL: func.func @schedule_forms
// CHECK: %[[P:.*]] = attn.shared_paged_kv %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<?x16x2x8xf16>, tensor<?x16x2x8xf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 8, f16>
// CHECK: %[[CI:.*]], %[[CS:.*]], %[[CE:.*]] = attn.uniform_chunks(%[[P]], %{{.*}}) {chunk_size = 37 : i64} : !attn.paged_kv<{{.*}}>, !attn.paged_kv<{{.*}}> -> tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
// CHECK: %[[C:.*]] = attn.attention @causal(%{{.*}}, %[[P]], %{{.*}}) chunks(%[[CI]], %[[CS]], %[[CE]]) {attended_views = array<i1: false, true>, fused_head_groups, num_kv_heads = 2 : i64, num_qo_heads = 4 : i64, tiles = #attn.tiles<q = 16, kv = 64, warps = 4, stages = 2>}
// CHECK-SAME: -> !attn.chunked_state<heads = 4, head_dim = 8, @causal>
// CHECK: attn.merge_chunks %[[C]], %{{.*}}, %[[CI]] : !attn.chunked_state<heads = 4, head_dim = 8, @causal>, !attn.ragged_q<heads = 4, head_dim = 8, f16> -> !attn.state<heads = 4, head_dim = 8, @causal>
func.func @schedule_forms(%k: tensor<?x16x2x8xf16>, %v: tensor<?x16x2x8xf16>,
                          %pidx: tensor<?xi32>, %plen: index,
                          %indptr: tensor<?xi32>, %indices: tensor<?xi32>,
                          %last: tensor<?xi32>,
                          %q: !attn.ragged_q<heads = 4, head_dim = 8, f16>)
    -> !attn.state<heads = 4, head_dim = 8, @causal> {
  %prefix = attn.shared_paged_kv %k, %v, %pidx, %plen
      : tensor<?x16x2x8xf16>, tensor<?x16x2x8xf16>
      -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 8, f16>
  %suffix = attn.paged_kv %k, %v, %indptr, %indices, %last
      : tensor<?x16x2x8xf16>, tensor<?x16x2x8xf16>
      -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 8, f16>
  %ci, %cs, %ce = attn.uniform_chunks(%prefix, %suffix) {chunk_size = 37 : i64}
      : !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 8, f16>,
        !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 8, f16>
      -> tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  %parts = attn.attention @causal(%q, %prefix, %suffix) chunks(%ci, %cs, %ce)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64,
       attended_views = array<i1: false, true>, fused_head_groups,
       tiles = #attn.tiles<q = 16, kv = 64, warps = 4, stages = 2>}
      : !attn.ragged_q<heads = 4, head_dim = 8, f16>,
        !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 8, f16>,
        !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 8, f16>
      -> !attn.chunked_state<heads = 4, head_dim = 8, @causal>
  %s = attn.merge_chunks %parts, %q, %ci
      : !attn.chunked_state<heads = 4, head_dim = 8, @causal>,
        !attn.ragged_q<heads = 4, head_dim = 8, f16>
      -> !attn.state<heads = 4, head_dim = 8, @causal>
  return %s : !attn.state<heads = 4, head_dim = 8, @causal>
}

// Tile configurations round-trip; q_shared prints only when set.
// CHECK-LABEL: func.func @tile_attrs
// CHECK-SAME: a = #attn.tiles<q = 64, kv = 32, warps = 4, stages = 2, q_shared = true>
// CHECK-SAME: b = #attn.tiles<q = 16, kv = 64, warps = 4, stages = 2>
func.func @tile_attrs() attributes {
    a = #attn.tiles<q = 64, kv = 32, warps = 4, stages = 2, q_shared = true>,
    b = #attn.tiles<q = 16, kv = 64, warps = 4, stages = 2, q_shared = false>} {
  return
}
