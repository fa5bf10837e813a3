// RUN: flashir-opt %s -split-input-file -attn-import-variants "-convert-attn-to-gpu=chip=sm_90a design=wgmma persistent-prefill=on" | FileCheck %s
// RUN: flashir-opt %s -split-input-file -attn-import-variants -attn-split-kv=chunk-size=0 "-convert-attn-to-gpu=chip=sm_90a design=wgmma split-prefill=true persistent-prefill=on" | FileCheck %s --check-prefix=SPLIT

// persistent-prefill: the wgmma prefill kernel's CTAs persist. The
// arguments are unchanged and the launch is marked `persistent`: the host
// may launch fewer heads' planes (grid z), as the runtime does (just enough
// CTAs to fill the device). The workers walk the launched x and y with
// every head: the first min(%nsmid, launched CTAs), one per SM; the others
// leave before any barrier.

!q  = !attn.ragged_q<heads = 8, head_dim = 128, bf16>
!kv = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, bf16>
!pool = tensor<?x16x2x128xbf16>

// CHECK-LABEL: gpu.func @causal_paged_prefill_0
// CHECK-SAME: grid = "requests x q_tiles x num_qo_heads", block = 384
// CHECK-SAME: persistent = true
// CHECK: %[[PLANE:.*]] = arith.muli %grid_dim_x, %grid_dim_y : index
// CHECK: %[[LAUNCHED:.*]] = arith.muli %[[PLANE]], %grid_dim_z : index
// CHECK: %[[SMS:.*]] = nvvm.read.ptx.sreg.nsmid : i32
// CHECK: %[[SM_COUNT:.*]] = arith.index_castui %[[SMS]] : i32 to index
// CHECK: %[[COUNT:.*]] = arith.minui %[[SM_COUNT]], %[[LAUNCHED]] : index
// CHECK: %[[IS_WORKER:.*]] = arith.cmpi ult, %[[WORKER:.*]], %[[COUNT]] : index
// CHECK: scf.if %[[IS_WORKER]]
// CHECK: gpu.barrier
// Both roles walk the grid in rounds of min(%nsmid, launched) positions
// (the worker count); the ring's
// uses carry across q tiles, so the producer fills the next q tile's slots
// while the consumers finish this one. The producer (it computes each q
// tile's frame) keeps 40 registers, the consumers 232.
// CHECK: nvvm.setmaxregister  decrease 40
// The walked grid has all 8 query heads, whatever the launch's z.
// CHECK: %[[WALKED_PLANE:.*]] = arith.muli %grid_dim_x, %grid_dim_y : index
// CHECK: %[[WALKED:.*]] = arith.muli %[[WALKED_PLANE]], %c8 : index
// Causal: rounds of worker-count positions, the odd ones walked from the
// other end (worker -> count - 1 - worker), so that the workers' sums of
// keys even out; positions past the walked grid are skipped.
// CHECK: %[[COUNT_LESS_1:.*]] = arith.subi %[[COUNT]], %c1{{.*}} : index
// CHECK: %[[MIRRORED:.*]] = arith.subi %[[COUNT_LESS_1]], %[[WORKER]] : index
// CHECK: scf.for %[[BASE:.*]] = %c0 to %[[WALKED]] step %[[COUNT]] iter_args(%[[USES:.*]] = %c0) -> (index)
// CHECK: %[[ROUND:.*]] = arith.divui %[[BASE]], %[[COUNT]] : index
// CHECK: %[[ROUND64:.*]] = arith.index_castui %[[ROUND]] : index to i64
// CHECK: %[[ODD:.*]] = arith.trunci %[[ROUND64]] : i64 to i1
// CHECK: %[[OFFSET:.*]] = arith.select %[[ODD]], %[[MIRRORED]], %[[WORKER]] : index
// CHECK: %[[LINEAR:.*]] = arith.addi %[[BASE]], %[[OFFSET]] : index
// CHECK: %[[IN_GRID:.*]] = arith.cmpi ult, %[[LINEAR]], %[[WALKED]] : index
// CHECK: scf.if %[[IN_GRID]]
// The linear index read as one band of all 8 query heads, the q tiles
// reversed (the longest first) and slowest: a round's tiles are about
// equally long.
// CHECK: %[[REST:.*]] = arith.divui %[[LINEAR]], %grid_dim_x : index
// CHECK-NOT: arith.{{divui|remui}} %[[REST]], %{{[0-9]+}}
// CHECK: %[[FROM_LAST:.*]] = arith.divui %[[REST]], %c8{{.*}} : index
// CHECK: arith.remui %[[REST]], %c8{{.*}} : index
// CHECK: %[[LAST:.*]] = arith.subi %grid_dim_y, %c1{{.*}} : index
// CHECK: arith.subi %[[LAST]], %[[FROM_LAST]] : index
// CHECK: scf.if
// An opaque thread index per q tile keeps addresses derived from it out of
// the walk's registers.
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "", "=r,0"
// CHECK: nvvm.elect.sync -> i1
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global
// A position the guards skip carries the ring's use count through.
// CHECK: } else {
// CHECK-NEXT: scf.yield %[[USES]] : index
// CHECK-NEXT: }
// CHECK-NEXT: scf.yield %{{.*}} : index
// CHECK-NEXT: } else {
// CHECK-NEXT: scf.yield %[[USES]] : index
// The consumers walk the same tiles.
// CHECK: nvvm.setmaxregister  increase 232
// CHECK: %[[C_MIRRORED:.*]] = arith.subi %{{.*}}, %[[WORKER]] : index
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %[[COUNT]] iter_args(%{{.*}} = %c0) -> (index)
// CHECK: arith.select %{{.*}}, %[[C_MIRRORED]], %[[WORKER]] : index
// CHECK: %[[C_REST:.*]] = arith.divui %{{.*}}, %grid_dim_x : index
// CHECK: arith.divui %[[C_REST]], %c8{{.*}} : index
// CHECK: nvvm.wgmma.mma_async
// The epilogue's last read of the warpgroup's staged O rows comes before
// the next q tile's Q rows overwrite them.
// CHECK: vector.store %{{.*}}, %arg7
// CHECK: nvvm.barrier id = %{{.*}} number_of_threads = %c128_i32
// CHECK: scf.yield
func.func @causal_paged(%k: !pool, %v: !pool, %ip: tensor<?xi32>, %ix: tensor<?xi32>,
    %last: tensor<?xi32>, %qs: tensor<?x8x128xbf16>, %qo: tensor<?xi32>)
    -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %v, %ip, %ix, %last : !pool, !pool -> !kv
  %q = attn.ragged_q %qs, %qo : tensor<?x8x128xbf16> -> !q
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64,
       tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>} : !q, !kv
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>
}

// -----

!q  = !attn.ragged_q<heads = 8, head_dim = 128, bf16>
!kv = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, bf16>
!pool = tensor<?x16x2x128xbf16>

// Split-KV with fused head groups: grid positions (chunk x, q tile, KV
// head), x fastest; the chunk is chunk_order[x], as in the one-CTA kernel.
// SPLIT-LABEL: gpu.func @split_fused_prefill_0
// SPLIT-SAME: grid = "chunks x q_tiles x num_kv_heads", block = 384
// SPLIT-SAME: persistent = true
// SPLIT: nvvm.griddepcontrol  wait
// SPLIT: nvvm.read.ptx.sreg.nsmid
// SPLIT: nvvm.setmaxregister  increase 232
// SPLIT: scf.for %[[LINEAR:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// SPLIT: %[[X:.*]] = arith.remui %[[LINEAR]], %grid_dim_x : index
// SPLIT: %[[REST:.*]] = arith.divui %[[LINEAR]], %grid_dim_x : index
// SPLIT: %[[Z:.*]] = arith.divui %[[REST]], %grid_dim_y : index
// SPLIT: memref.load %arg11[%[[X]]] : memref<?xi32>
// SPLIT: arith.muli %[[Z]], %c4
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
