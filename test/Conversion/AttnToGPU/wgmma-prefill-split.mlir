// RUN: flashir-opt %s -attn-import-variants -attn-split-kv=chunk-size=0 "-convert-attn-to-gpu=chip=sm_90a design=wgmma split-prefill=true" | FileCheck %s
// RUN: flashir-opt %s -attn-import-variants -attn-split-kv=chunk-size=0 "-convert-attn-to-gpu=chip=sm_90a design=wgmma" | FileCheck %s --check-prefix=DECODE
// RUN: flashir-opt %s -attn-import-variants -convert-attn-to-gpu=chip=sm_90a | FileCheck %s --check-prefix=UNSPLIT
// RUN: flashir-opt %s -attn-import-variants -convert-attn-to-gpu=chip=sm_80 | FileCheck %s --check-prefix=SM80
// RUN: flashir-opt %s -attn-import-variants "-convert-attn-to-gpu=chip=sm_90a design=mma-sync" | FileCheck %s --check-prefix=SM80

// Split-KV and fused head groups in the wgmma prefill kernel: a CTA per
// (chunk, q tile, KV head) whose 128 rows are 32 tokens x the 4 query heads
// of the KV head's group. Like the mma.sync kernel, it waits for the grid
// launched before it in every CTA (sm_90 split kernels), serves chunk
// chunk_order[x] of request chunk_request[chunk] and writes partial states
// for the merge kernel.
// CHECK-LABEL: gpu.func @split_fused_prefill_0
// CHECK-SAME: grid = "chunks x q_tiles x num_kv_heads", block = 384
// CHECK-SAME: merge_kernel = @split_fused_merge_0
// CHECK-SAME: q_rows = 128, q_tokens = 32, kv_tile = 128, programmatic_wait = true, completes_after_predecessor = true>
// CHECK: nvvm.griddepcontrol  wait
// CHECK: nvvm.griddepcontrol  launch_dependents
// CHECK: %[[CHUNK:.*]] = memref.load %arg11[%block_id_x] : memref<?xi32>
// CHECK: %[[CI:.*]] = arith.index_cast %[[CHUNK]]
// CHECK: memref.load %arg8[%[[CI]]] : memref<?xi32>
// CHECK: %[[START:.*]] = memref.load %arg9[%[[CI]]] : memref<?xi32>
// CHECK: %[[BEGIN_I:.*]] = arith.index_cast %[[START]]
// CHECK: %[[BEGIN:.*]] = arith.minsi %{{.*}}, %{{.*}} : index
// The chunk's tiles start at its first key rounded down to a page (a box
// never crosses one); the producer's boxes and the masks count from there.
// CHECK: gpu.barrier
// CHECK: %[[OFF:.*]] = arith.remui %[[BEGIN]], %c16
// CHECK: %[[TILES:.*]] = arith.subi %[[BEGIN]], %[[OFF]]
// The producer also holds the chunk's bounds: 40 registers (at 24 ptxas
// spilled that frame), the consumers 232 below head dim 256.
// CHECK: nvvm.setmaxregister  decrease 40
// CHECK: nvvm.setmaxregister  increase 232
// Row r of the tile is token r / 4 of the q tile, query head 4 z + r % 4.
// CHECK: %[[ROWTOKEN:.*]] = arith.divui %[[ROW:.*]], %c4
// CHECK: %[[HEADBASE:.*]] = arith.muli %block_id_z, %c4
// CHECK: %[[INGROUP:.*]] = arith.remui %[[ROW]], %c4
// CHECK: %[[HEAD:.*]] = arith.addi %[[HEADBASE]], %[[INGROUP]]
// CHECK: vector.load %arg0[%{{.*}}, %[[HEAD]], %{{.*}}] {alignment = 16 : i64} : memref<?x8x128xbf16>, vector<8xbf16>
// Tiles starting before the chunk's first key mask; a key is visible where
// key - begin < max(end - begin, 0) (unsigned: keys before the chunk wrap
// around), each row's bound computed once before the key loop.
// CHECK: %[[SPAN_RAW:.*]] = arith.subi %{{.*}}, %[[BEGIN]] : index
// CHECK: %[[SPAN:.*]] = arith.maxsi %[[SPAN_RAW]], %c0
// CHECK: arith.cmpi ult, %{{.*}}, %[[BEGIN]] : index
// CHECK: %[[REL:.*]] = arith.subi %{{.*}}, %[[BEGIN]] : index
// CHECK: arith.cmpi ult, %[[REL]], %[[SPAN]] : index
// Final rows where the chunk is its request's only one, else partial
// states at chunk + C * row.
// CHECK: scf.if
// CHECK: memref.store {{.*}} : memref<?x8xf32>
// CHECK: } else {
// CHECK: memref.store {{.*}} : memref<?x8xf32>
// CHECK-LABEL: gpu.func @split_fused_merge_0
// CHECK-SAME: kind = merge

// Without split-prefill the split runner launches decode grids: the
// family passes split attentions on (to the decode kernels).
// DECODE-LABEL: gpu.func @split_fused_decode_0
// DECODE-SAME: grid = "chunks x num_kv_heads"
// DECODE-NOT: nvvm.setmaxregister

// design=auto on sm_90a picks the family too. Unsplit with fused head
// groups: grid over KV heads, 32 tokens per CTA.
// UNSPLIT-LABEL: gpu.func @split_fused_prefill_0
// UNSPLIT-SAME: grid = "requests x q_tiles x num_kv_heads", block = 384
// UNSPLIT-SAME: q_rows = 128, q_tokens = 32, kv_tile = 128>
// UNSPLIT-NOT: nvvm.griddepcontrol
// UNSPLIT: nvvm.setmaxregister  decrease 24

// sm_80 (design=auto), or design=mma-sync on sm_90a: the mma.sync prefill
// kernel (4 warps, the tiles' 128 rows).
// SM80-LABEL: gpu.func @split_fused_prefill_0
// SM80-SAME: grid = "requests x q_tiles x num_kv_heads", block = 128
// SM80-NOT: nvvm.setmaxregister

!q  = !attn.ragged_q<heads = 8, head_dim = 128, bf16>
!kv = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, bf16>
!pool = tensor<?x16x2x128xbf16>

func.func @split_fused(%k: !pool, %ip: tensor<?xi32>, %qs: tensor<?x8x128xbf16>)
    -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %k, %ip, %ip, %ip : !pool, !pool -> !kv
  %q = attn.ragged_q %qs, %ip : tensor<?x8x128xbf16> -> !q
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64, fused_head_groups,
       tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !q, !kv
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>
}

// Tiles for short queries (attn-select-tiles gives decode attentions with
// fused head groups 16 rows): design=auto keeps the mma.sync kernel's
// small CTAs; design=wgmma asks for the family anyway.
// UNSPLIT-LABEL: gpu.func @short_rows_prefill_1
// UNSPLIT-SAME: block = 32
// UNSPLIT-NOT: nvvm.setmaxregister
// CHECK-LABEL: gpu.func @short_rows_prefill_1
// CHECK-SAME: block = 384
func.func @short_rows(%k: !pool, %ip: tensor<?xi32>, %qs: tensor<?x8x128xbf16>)
    -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %k, %ip, %ip, %ip : !pool, !pool -> !kv
  %q = attn.ragged_q %qs, %ip : tensor<?x8x128xbf16> -> !q
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64, fused_head_groups,
       tiles = #attn.tiles<q = 16, kv = 32, warps = 1, stages = 2>} : !q, !kv
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>
}
