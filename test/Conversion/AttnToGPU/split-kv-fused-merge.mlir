// RUN: flashir-opt %s -attn-import-variants -attn-split-kv=chunk-size=0 -convert-attn-to-gpu="chip=sm_90a fused-merge=true" | FileCheck %s
// RUN: flashir-opt %s -attn-import-variants -attn-split-kv=chunk-size=0 -convert-attn-to-gpu="chip=sm_80 fused-merge=true design=simt" | FileCheck %s --check-prefix=SIMT
// RUN: flashir-opt %s -attn-import-variants -attn-split-kv=chunk-size=0 -convert-attn-to-gpu=chip=sm_90a | FileCheck %s --check-prefix=PLAIN

!q    = !attn.ragged_q<heads = 8, head_dim = 128, bf16>
!kv   = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, bf16>
!pool = tensor<?x16x2x128xbf16>

// fused-merge: the split decode kernel takes merge_tickets (one int32 per
// request and KV head) after its partial states and merges its requests
// itself; the merge kernel is still emitted (runners without tickets).
// CHECK-LABEL: gpu.func @fused_decode_0
// CHECK-SAME: %[[T:[a-z0-9]+]]: memref<?xi32>, %{{[a-z0-9]+}}: memref<?x8x128xbf16>, %{{[a-z0-9]+}}: memref<?x8xf32>, %{{[a-z0-9]+}}: memref<2x16xi64>)
// CHECK-SAME: args = ["q", "qo_indptr", "k_pool", "v_pool", "indptr", "indices", "last_page_len", "chunk_indptr", "chunk_request", "chunk_starts", "chunk_ends", "chunk_order", "partial_o", "partial_lse", "merge_tickets", "out", "lse", "kv_maps"], merge_kernel = @fused_merge_0
// After the rows: the partial states are performed at GPU scope, then
// thread 0 adds the chunk's keys to the (request, KV head)'s ticket
// (request * 2 + head); the CTA whose keys complete the request's resets
// it. A request without keys: the CTA of its last chunk merges.
// CHECK: nvvm.memory.barrier <gpu>
// CHECK-NEXT: gpu.barrier
// CHECK: %[[TID0:.*]] = arith.cmpi eq, %{{.*}}, %c0
// CHECK: scf.if %[[TID0]] {
// CHECK: %[[SLOT:.*]] = arith.addi
// CHECK: scf.if %{{.*}} -> (i1) {
// CHECK: arith.cmpi eq
// CHECK: } else {
// CHECK: %[[OLD:.*]] = memref.atomic_rmw addi %{{.*}}, %[[T]][%[[SLOT]]] : (i32, memref<?xi32>) -> i32
// CHECK: %[[NEW:.*]] = arith.addi %[[OLD]]
// CHECK: %[[DONE:.*]] = arith.cmpi eq, %[[NEW]]
// CHECK: scf.if %[[DONE]] {
// CHECK: memref.atomic_rmw assign %{{.*}}, %[[T]][%[[SLOT]]]
// The decision goes to every thread through shared memory.
// CHECK: memref.store %{{.*}}, %[[FLAGS:[a-z0-9_]+]][%[[Z:[a-z0-9_]+]], %[[Z]], %c130]
// CHECK: gpu.barrier
// CHECK: %[[FLAG:.*]] = memref.load %[[FLAGS]][%[[Z]], %[[Z]], %c130]
// CHECK: %[[LAST:.*]] = arith.cmpf one, %[[FLAG]]
// The merging CTA waits for the grid it was launched behind (a cascade's
// prefix kernel wrote the request's other chunks), acquires the states,
// stages as many chunks' o rows (16-byte copies, L2 only) and lse values as
// the workgroup buffer holds, all in flight together, and merges 8 columns
// of one query head per thread.
// CHECK: gpu.barrier
// CHECK-NEXT: scf.if %[[LAST]] {
// CHECK-NEXT: nvvm.griddepcontrol wait
// CHECK-NEXT: nvvm.memory.barrier <gpu>
// CHECK: memref.view {{.*}} to memref<95x4x128xbf16, #gpu.address_space<workgroup>>
// CHECK: memref.view {{.*}} to memref<95x4xf32, #gpu.address_space<workgroup>>
// CHECK: scf.for {{.*}} step %c95
// CHECK: nvgpu.device_async_copy {{.*}}, 8 {bypassL1} : memref<?x8x128xbf16> to memref<95x4x128xbf16
// CHECK: nvgpu.device_async_copy {{.*}}, 1 : memref<?x8xf32> to memref<95x4xf32
// CHECK: nvgpu.device_async_wait %{{.*}} {numGroups = 0 : i32}
// CHECK-NEXT: gpu.barrier
// CHECK: scf.for
// CHECK: math.exp
// CHECK: math.exp
// CHECK: gpu.barrier
// CHECK: vector.store %{{.*}} : memref<?x8x128xbf16>, vector<8xbf16>
// CHECK: math.log
// CHECK: memref.store %{{.*}} : memref<?x8xf32>
// CHECK-LABEL: gpu.func @fused_merge_0

// Before sm_90 (no programmatic launch) the merging CTA does not wait: the
// runner launches the kernel after whatever wrote the other states.
// SIMT-LABEL: gpu.func @fused_decode_0
// SIMT-SAME: "merge_tickets"
// SIMT: memref.atomic_rmw addi
// SIMT-NOT: griddepcontrol
// SIMT: nvvm.memory.barrier <gpu>
// SIMT-LABEL: gpu.func @fused_merge_0

// Without the option: no tickets.
// PLAIN-LABEL: gpu.func @fused_decode_0
// PLAIN-NOT: merge_tickets
// PLAIN-NOT: atomic_rmw
// PLAIN-LABEL: gpu.func @fused_merge_0
func.func @fused(%k: !pool, %v: !pool, %ip: tensor<?xi32>, %ix: tensor<?xi32>,
                 %lp: tensor<?xi32>, %qs: tensor<?x8x128xbf16>,
                 %qo: tensor<?xi32>) -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %v, %ip, %ix, %lp : !pool, !pool -> !kv
  %q = attn.ragged_q %qs, %qo : tensor<?x8x128xbf16> -> !q
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64} : !q, !kv
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>
}
