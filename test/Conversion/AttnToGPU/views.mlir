// RUN: flashir-opt %s -split-input-file -attn-import-variants -convert-attn-to-gpu=chip=sm_80 | FileCheck %s
// RUN: flashir-opt %s -split-input-file -attn-import-variants "-attn-select-tiles=chip=sm_90a avg-qo-len=1" -convert-attn-to-gpu=chip=sm_90a | FileCheck %s --check-prefix=SELECT

!q    = !attn.ragged_q<heads = 8, head_dim = 128, bf16>
!kv   = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, bf16>
!pool = tensor<?x16x2x128xbf16>

// Two views (keys concatenated): the prefill kernel takes one group of view
// arguments per view (ABI: k_pool_1 ... last_page_len_1 after view 0's) and
// walks the views in turn, carrying the softmax state from one key loop to
// the next. Query positions count the keys of both views.
// CHECK-LABEL: gpu.func @views_prefill_0
// CHECK-SAME: %[[K1:arg7]]: memref<?x16x2x128xbf16>, %[[V1:arg8]]: memref<?x16x2x128xbf16>, %[[IP1:arg9]]: memref<?xi32>, %[[IX1:arg10]]: memref<?xi32>, %[[LAST1:arg11]]: memref<?xi32>
// CHECK-SAME: args = ["q", "qo_indptr", "k_pool", "v_pool", "indptr", "indices", "last_page_len", "k_pool_1", "v_pool_1", "indptr_1", "indices_1", "last_page_len_1", "out", "lse", "kv_maps"]
// The request's keys in view 0, then in view 1, and their sum.
// CHECK: memref.load %arg4
// CHECK: memref.load %arg6
// CHECK: %[[N0:.*]] = arith.select
// CHECK: memref.load %[[IP1]]
// CHECK: memref.load %[[LAST1]]
// CHECK: %[[N1:.*]] = arith.select
// CHECK: %[[TOTAL:.*]] = arith.addi %[[N0]], %[[N1]] : index
// View 0's key loop over its own pools and page table.
// CHECK: memref.extract_aligned_pointer_as_index %arg2
// CHECK: memref.load %arg5
// CHECK: %[[STATE:.*]]:69 = scf.for
// CHECK: nvvm.cp.async.wait.group 0
// Every warp is done with the ring before view 1's first copies. The causal
// bound of view 1: the last visible position (over both views' keys) less
// view 0's keys, clamped to view 1's.
// CHECK: gpu.barrier
// CHECK: %[[LASTPOS:.*]] = arith.addi %{{.*}}, %[[TOTAL]] : index
// CHECK: %[[VISIBLE:.*]] = arith.subi %[[LASTPOS]]
// CHECK: %[[LOCAL:.*]] = arith.subi %[[VISIBLE]], %[[N0]] : index
// CHECK: %[[ATLEAST0:.*]] = arith.maxsi %[[LOCAL]]
// CHECK: arith.minsi %[[ATLEAST0]], %[[N1]] : index
// CHECK: memref.extract_aligned_pointer_as_index %[[K1]]
// CHECK: memref.extract_aligned_pointer_as_index %[[V1]]
// CHECK: memref.load %[[IX1]]
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[STATE]]#0, %{{.*}} = %[[STATE]]#1,
// Tiles skip the causal mask when their last key position (view 0's keys
// on) precedes the CTA's first query.
// CHECK: %[[TEND:.*]] = arith.addi %{{.*}}, %c64
// CHECK: %[[TENDPOS:.*]] = arith.addi %[[TEND]], %[[N0]] : index
// CHECK: arith.cmpi sle, %[[TENDPOS]]
// CHECK: gpu.return

// Decode rows (avg-qo-len 1) over two views get the prefill kernel's tiles
// of 16 rows: the decode kernels walk one view.
// SELECT-LABEL: gpu.func @views_prefill_0
// SELECT-SAME: q_rows = 16
func.func @views(%k0: !pool, %v0: !pool, %ip0: tensor<?xi32>, %ix0: tensor<?xi32>,
                 %last0: tensor<?xi32>, %k1: !pool, %v1: !pool,
                 %ip1: tensor<?xi32>, %ix1: tensor<?xi32>, %last1: tensor<?xi32>,
                 %qs: tensor<?x8x128xbf16>, %qo: tensor<?xi32>)
    -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %kv0 = attn.paged_kv %k0, %v0, %ip0, %ix0, %last0 : !pool, !pool -> !kv
  %kv1 = attn.paged_kv %k1, %v1, %ip1, %ix1, %last1 : !pool, !pool -> !kv
  %q = attn.ragged_q %qs, %qo : tensor<?x8x128xbf16> -> !q
  %o, %l = attn.attention @causal(%q, %kv0, %kv1)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64,
       tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>} : !q, !kv, !kv
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>
}

// -----

!q    = !attn.ragged_q<heads = 4, head_dim = 64, f16>
!kv   = !attn.ragged_kv<heads = 4, head_dim = 64, f16>
!rows = tensor<?x4x64xf16>

// Hooks see positions across the views: view 1's key position is its key
// index plus view 0's keys (here the ALiBi logits hook's kpos).
// CHECK-LABEL: gpu.func @ragged_views_prefill_0
// CHECK-SAME: args = ["q", "qo_indptr", "k_pool", "v_pool", "indptr", "k_pool_1", "v_pool_1", "indptr_1", "out", "lse", "kv_maps", "slope"]
// CHECK: memref.load %arg4
// CHECK: %[[R0:.*]] = arith.subi
// CHECK: memref.load %arg7
// CHECK: scf.for
// CHECK: scf.for
// CHECK: %[[KPOS:.*]] = arith.addi %{{.*}}, %[[R0]] : index
// CHECK-NEXT: arith.index_cast %[[KPOS]] : index to i64
// CHECK: gpu.return
func.func @ragged_views(%k0: !rows, %v0: !rows, %ip0: tensor<?xi32>,
                        %k1: !rows, %v1: !rows, %ip1: tensor<?xi32>,
                        %qs: tensor<?x4x64xf16>, %qo: tensor<?xi32>,
                        %slopes: tensor<?xf32>)
    -> (tensor<?x4x64xf16>, tensor<?x4xf32>) {
  %kv0 = attn.ragged_kv %k0, %v0, %ip0 : !rows, !rows -> !kv
  %kv1 = attn.ragged_kv %k1, %v1, %ip1 : !rows, !rows -> !kv
  %q = attn.ragged_q %qs, %qo : tensor<?x4x64xf16> -> !q
  %o, %l = attn.attention @alibi(%q, %kv0, %kv1) params(%slopes : tensor<?xf32>)
      {num_qo_heads = 4 : i64, num_kv_heads = 4 : i64,
       tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>} : !q, !kv, !kv
      -> tensor<?x4x64xf16>, tensor<?x4xf32>
  return %o, %l : tensor<?x4x64xf16>, tensor<?x4xf32>
}
