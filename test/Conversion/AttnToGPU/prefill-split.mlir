// RUN: flashir-opt %s -attn-import-variants -attn-split-kv=chunk-size=0 "-convert-attn-to-gpu=chip=sm_80 split-prefill=true" | FileCheck %s
// RUN: flashir-opt %s -attn-import-variants -attn-split-kv=chunk-size=0 -convert-attn-to-gpu=chip=sm_80 | FileCheck %s --check-prefix=DEFAULT

// By default split-KV attentions keep the split-KV decode kernel (the
// runtime's SplitDecodeRunner launches its grid), even with 16+ row tiles
// (fused decode head groups have them too).
// DEFAULT-LABEL: gpu.func @split_decode_0
// DEFAULT-SAME: grid = "chunks x num_kv_heads"
// DEFAULT-LABEL: gpu.func @split_merge_0

// With split-prefill, split-KV prefill: a CTA per (chunk, q tile, query
// head); grid position x
// serves chunk chunk_order[x] of request chunk_request[chunk], keys
// [chunk_starts, chunk_ends) clamped to the request's; query positions
// still count every key of the request. A request's only chunk writes out /
// lse; other chunks write partial states to row chunk + C * i for the
// merge kernel (C = chunks).
// CHECK-LABEL: gpu.func @split_prefill_0
// CHECK-SAME: #attn.launch<kind = prefill, grid = "chunks x q_tiles x num_qo_heads"
// CHECK-SAME: merge_kernel = @split_merge_0
// CHECK-SAME: q_rows = 64,
// CHECK: %[[POS:.*]] = gpu.block_id x
// CHECK: %[[CHUNK:.*]] = memref.load %arg11[%[[POS]]] : memref<?xi32>
// CHECK: %[[CI:.*]] = arith.index_cast %[[CHUNK]]
// CHECK: memref.load %arg8[%[[CI]]] : memref<?xi32>
// CHECK: memref.load %arg9[%[[CI]]] : memref<?xi32>
// CHECK: arith.maxsi
// CHECK: memref.load %arg10[%[[CI]]] : memref<?xi32>
// C, the chunks of the partial rows: chunk_indptr's last entry (the
// arrays may be padded past it).
// CHECK: %[[DIM:.*]] = memref.dim %arg7
// CHECK: %[[LAST:.*]] = arith.subi %[[DIM]]
// CHECK: %[[CV:.*]] = memref.load %arg7[%[[LAST]]] : memref<?xi32>
// CHECK: %[[C:.*]] = arith.index_cast %[[CV]]
// The chunk's tiles start at its first key rounded down to a page (16
// keys: a copy pass of 16 rows then stays in one page); keys before it are
// masked like those past its end, and a tile is mask-free only if it
// starts at or after it.
// CHECK: %[[OFF:.*]] = arith.remui %[[BEGIN:.*]], %c16
// CHECK: %[[TILES:.*]] = arith.subi %[[BEGIN]], %[[OFF]]
// CHECK: arith.subi %{{.*}}, %[[TILES]]
// CHECK: scf.for
// CHECK: arith.cmpi uge, %{{.*}}, %[[BEGIN]] : index
// CHECK: arith.cmpi sge, %{{.*}}, %[[BEGIN]] : index
// CHECK: nvvm.mma.sync
// Final rows (a single chunk) or partial states at chunk + C * row, O in
// bf16 either way: the lane's pairs go to a shared-memory tile of the CTA's
// rows, the lse straight out; then each lane stores 16-byte pieces of its
// warp's rows.
// CHECK: gpu.barrier
// CHECK: vector.store {{.*}} : memref<64x72xbf16, #gpu.address_space<workgroup>>, vector<2xbf16>
// CHECK: scf.if
// CHECK: memref.store {{.*}} : memref<?x8xf32>
// CHECK: } else {
// CHECK: arith.muli %[[C]]
// CHECK: memref.store {{.*}} : memref<?x8xf32>
// CHECK: nvvm.bar.warp.sync
// CHECK: %[[PIECE:.*]] = vector.load {{.*}} : memref<64x72xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// CHECK: scf.if
// CHECK: vector.store %[[PIECE]], %{{.*}} : memref<?x8x64xbf16>, vector<8xbf16>
// CHECK: } else {
// CHECK: arith.muli %[[C]]
// CHECK: vector.store %[[PIECE]], %{{.*}} : memref<?x8x64xbf16>, vector<8xbf16>
// Its merge kernel, named after it.
// CHECK-LABEL: gpu.func @split_merge_0
// CHECK-SAME: #attn.launch<kind = merge, grid = "requests x num_qo_heads"
!q    = !attn.ragged_q<heads = 8, head_dim = 64, bf16>
!kv   = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 64, bf16>
!pool = tensor<?x16x2x64xbf16>

func.func @split(%k: !pool, %v: !pool, %ip: tensor<?xi32>, %qs: tensor<?x8x64xbf16>)
    -> (tensor<?x8x64xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %v, %ip, %ip, %ip : !pool, !pool -> !kv
  %q = attn.ragged_q %qs, %ip : tensor<?x8x64xbf16> -> !q
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64,
       tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>} : !q, !kv
      -> tensor<?x8x64xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x64xbf16>, tensor<?x8xf32>
}
