// RUN: flashir-opt %s -split-input-file -attn-import-variants -attn-split-kv=chunk-size=0 -convert-attn-to-gpu=heads-innermost=false -verify-diagnostics | FileCheck %s
// RUN: flashir-opt %s -split-input-file -attn-import-variants -attn-split-kv=chunk-size=0 -convert-attn-to-gpu -verify-diagnostics | FileCheck %s --check-prefix=INNER
// RUN: flashir-opt %s -split-input-file -attn-import-variants -attn-split-kv=chunk-size=0 -convert-attn-to-gpu=chip=sm_90a -verify-diagnostics | FileCheck %s --check-prefix=SM90
// sm_90: the split kernel lets its dependents launch at once, and its grid's
// last CTA waits for the grid it was launched behind before leaving (a
// cascade chains suffix -> merge behind the prefix kernel: the merge's wait
// then covers both); the merge lets the grid after it launch at once and
// waits for the split kernel.
// SM90-LABEL: gpu.func @split_decode_0
// SM90-NEXT: nvvm.griddepcontrol launch_dependents
// SM90: gpu.grid_dim y
// SM90: gpu.grid_dim z
// SM90-NEXT: arith.constant 1
// SM90-NEXT: arith.subi
// SM90-NEXT: arith.cmpi eq
// SM90-NEXT: arith.andi
// SM90-NEXT: scf.if
// SM90-NEXT: nvvm.griddepcontrol wait
// SM90-NEXT: }
// SM90-NEXT: gpu.return
// SM90-LABEL: gpu.func @split_merge_0
// SM90-SAME: programmatic_wait = true
// SM90-NEXT: nvvm.griddepcontrol launch_dependents
// SM90: nvvm.griddepcontrol wait

!q    = !attn.ragged_q<heads = 8, head_dim = 128, bf16>
!kv   = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, bf16>
!pool = tensor<?x16x2x128xbf16>

// Split-KV: the chunked attention becomes a decode kernel over
// (chunk, KV head) writing partial states (or, for a request's only
// chunk, the final out / lse rows), and merge_chunks + finalize become a
// merge kernel over (request, query head) that skips single-chunk requests.
// CHECK-LABEL: gpu.module @flashir_kernels
// CHECK: gpu.func @split_decode_0(%{{.*}}: memref<?x8x128xbf16>, %{{.*}}: memref<?xi32>, %{{.*}}: memref<?x16x2x128xbf16>, %{{.*}}: memref<?x16x2x128xbf16>, %{{.*}}: memref<?xi32>, %{{.*}}: memref<?xi32>, %{{.*}}: memref<?xi32>, %{{.*}}: memref<?xi32>, %{{.*}}: memref<?xi32>, %{{.*}}: memref<?xi32>, %{{.*}}: memref<?xi32>, %{{.*}}: memref<?xi32>, %{{.*}}: memref<?x8x128xbf16>, %{{.*}}: memref<?x8xf32>, %{{.*}}: memref<?x8x128xbf16>, %{{.*}}: memref<?x8xf32>, %{{.*}}: memref<2x16xi64>)
// CHECK-SAME: #attn.launch<kind = decode, grid = "chunks x num_kv_heads"
// CHECK-SAME: args = ["q", "qo_indptr", "k_pool", "v_pool", "indptr", "indices", "last_page_len", "chunk_indptr", "chunk_request", "chunk_starts", "chunk_ends", "chunk_order", "partial_o", "partial_lse", "out", "lse", "kv_maps"], merge_kernel = @split_merge_0
// The chunk at this grid position (chunk_order), its request and its key
// range, clamped to the request's keys.
// CHECK: %[[P:.*]] = gpu.block_id x
// CHECK: %[[CO:.*]] = memref.load %{{.*}}[%[[P]]] : memref<?xi32>
// CHECK: %[[C:.*]] = arith.index_cast %[[CO]] : i32 to index
// CHECK: memref.load %{{.*}}[%[[C]]] : memref<?xi32>
// By default (heads-innermost): the same grid read in launch order with the KV head
// fastest, chunk = (x + X * y) / Hkv and head = (x + X * y) % Hkv.
// INNER-LABEL: gpu.func @split_decode_0
// INNER: %[[X:.*]] = gpu.block_id x
// INNER: %[[Y:.*]] = gpu.block_id y
// INNER: %[[GX:.*]] = gpu.grid_dim x
// INNER: %[[XY:.*]] = arith.muli %[[GX]], %[[Y]] : index
// INNER: %[[L:.*]] = arith.addi %[[X]], %[[XY]] : index
// INNER: %[[POS:.*]] = arith.divui %[[L]], %[[HKV:.*]] : index
// INNER: arith.remui %[[L]], %[[HKV]] : index
// INNER: memref.load %{{.*}}[%[[POS]]] : memref<?xi32>
// CHECK: arith.maxsi
// CHECK: arith.minsi
// One chunk for the request: chunk_indptr[r + 1] - chunk_indptr[r] == 1.
// CHECK: %[[N:.*]] = arith.subi
// CHECK: %[[DIRECT:.*]] = arith.cmpi eq, %[[N]], %c1
// The only chunk writes the final row and its lse, any other chunk its
// partial state: O in bf16 there too (half the bytes the merge reads), lse
// in f32.
// CHECK: scf.if %[[DIRECT]] {
// CHECK: vector.store %{{.*}} : memref<?x8x128xbf16>, vector<8xbf16>
// CHECK: } else {
// CHECK: vector.store %{{.*}} : memref<?x8x128xbf16>, vector<8xbf16>
// The merge kernel: one warp per (request, query head), 2 groups of 16
// lanes (8 columns each) sharing a [group, D + 4] f32 state buffer.
// CHECK: gpu.func @split_merge_0(%{{.*}}: memref<?xi32>, %{{.*}}: memref<?xi32>, %{{.*}}: memref<?x8x128xbf16>, %{{.*}}: memref<?x8xf32>, %{{.*}}: memref<?x8x128xbf16>, %{{.*}}: memref<?x8xf32>) workgroup(%[[STATES:.*]] : memref<2x132xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}) kernel
// CHECK-SAME: #attn.launch<kind = merge, grid = "requests x num_qo_heads", block = 32, variant = @plain, args = ["qo_indptr", "chunk_indptr", "partial_o", "partial_lse", "out", "lse"]>
// 16 one-warp CTAs per SM (128 registers a thread): a 64 x 32 grid in one wave.
// CHECK-SAME: nvvm.minctasm = 16 : i32
// CHECK: %[[GROUP:.*]] = arith.divui %{{.*}}, %c16
// Requests with one chunk have no rows to merge.
// CHECK: %[[ONE:.*]] = arith.cmpi eq, %{{.*}}, %c1
// CHECK: %[[ROWS:.*]] = arith.select %[[ONE]], %c0, %{{.*}} : index
// One row: group g merges chunks g, g + 2, ..., 16 per step (up to 32
// states in one round trip): their loads first, each only where the chunk
// exists (a missing one is lse -inf, o 0), then one rescale and the guarded
// fmas; group 0 merges the groups.
// CHECK: %[[ONEROW:.*]] = arith.cmpi eq, %[[ROWS]], %c1
// CHECK: scf.if %[[ONEROW]] {
// CHECK: %[[FIRST:.*]] = arith.addi %{{.*}}, %[[GROUP]] : index
// CHECK: scf.for %[[C:.*]] = %[[FIRST]] to %[[END:.*]] step
// CHECK: %[[V:.*]] = arith.cmpi ult, %{{.*}}, %[[END]]
// CHECK: scf.if %[[V]] -> (f32, vector<8xbf16>) {
// CHECK: memref.load %{{.*}}[%{{.*}}, %{{.*}}] : memref<?x8xf32>
// CHECK: vector.load {{.*}} : memref<?x8x128xbf16>, vector<8xbf16>
// CHECK: } else {
// CHECK: arith.constant dense<0.000000e+00> : vector<8xbf16>
// CHECK-COUNT-15: scf.if %{{.*}} -> (f32, vector<8xbf16>)
// CHECK-NOT: math.exp
// CHECK: arith.maxnumf
// CHECK: math.exp
// CHECK: scf.if %[[V]] -> (f32, vector<8xf32>)
// CHECK: math.fma {{.*}} : vector<8xf32>
// CHECK: vector.store %{{.*}}, %[[STATES]][%[[GROUP]], %{{.*}}]
// CHECK: gpu.barrier
// CHECK: scf.if
// CHECK-COUNT-2: arith.maxnumf
// CHECK: math.exp
// CHECK: math.fma {{.*}} : vector<8xf32>
// CHECK: vector.store %{{.*}} : memref<?x8x128xbf16>, vector<8xbf16>
// CHECK: math.log
// Several rows: one row per group, every chunk.
// CHECK: } else {
// CHECK: scf.for %{{.*}} = %[[GROUP]] to %[[ROWS]] step %c2
// CHECK: scf.for
// CHECK: math.exp
// CHECK: vector.store %{{.*}} : memref<?x8x128xbf16>, vector<8xbf16>
// CHECK: math.log
func.func @split(%k: !pool, %v: !pool, %ip: tensor<?xi32>, %ix: tensor<?xi32>,
                 %lp: tensor<?xi32>, %qs: tensor<?x8x128xbf16>,
                 %qo: tensor<?xi32>) -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %v, %ip, %ix, %lp : !pool, !pool -> !kv
  %q = attn.ragged_q %qs, %qo : tensor<?x8x128xbf16> -> !q
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64} : !q, !kv
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>
}

// -----

!q    = !attn.ragged_q<heads = 8, head_dim = 128, bf16>
!kv   = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, bf16>
!pool = tensor<?x16x2x128xbf16>
!st   = !attn.state<heads = 8, head_dim = 128, @plain>

// Merged chunk states that are not finalized right away (here: returned as
// a state) have no GPU kernel yet.
func.func @state_result(%k: !pool, %ip: tensor<?xi32>, %qs: tensor<?x8x128xbf16>) -> !st {
  %kv = attn.paged_kv %k, %k, %ip, %ip, %ip : !pool, !pool -> !kv
  %q = attn.ragged_q %qs, %ip : tensor<?x8x128xbf16> -> !q
  // expected-error @+1 {{the decode kernel generator needs split-KV chunk states that go to one attn.merge_chunks (same queries and chunk_indptr) and then one attn.finalize}}
  %s = attn.attention @plain(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64} : !q, !kv -> !st
  return %s : !st
}

// -----

!q    = !attn.ragged_q<heads = 8, head_dim = 128, bf16>
!kv   = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, bf16>
!pool = tensor<?x16x2x128xbf16>

// Split-KV chunks over several views have no GPU kernel (the prefill kernel
// walks the views one after the other, a chunk's keys would span them).
func.func @two_views(%k: !pool, %ip: tensor<?xi32>, %qs: tensor<?x8x128xbf16>)
    -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %kv0 = attn.paged_kv %k, %k, %ip, %ip, %ip : !pool, !pool -> !kv
  %kv1 = attn.paged_kv %k, %k, %ip, %ip, %ip : !pool, !pool -> !kv
  %q = attn.ragged_q %qs, %ip : tensor<?x8x128xbf16> -> !q
  // expected-error @+1 {{the decode kernel generator needs one KV view for split-KV chunks}}
  %o, %l = attn.attention @plain(%q, %kv0, %kv1)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64,
       tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>} : !q, !kv, !kv
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>
}
