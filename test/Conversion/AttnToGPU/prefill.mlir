// RUN: flashir-opt %s -split-input-file -attn-import-variants -convert-attn-to-gpu=chip=sm_80 -verify-diagnostics | FileCheck %s
// RUN: flashir-opt %s -split-input-file -attn-import-variants -convert-attn-to-gpu=chip=sm_75 | FileCheck %s --check-prefix=TURING

!q    = !attn.ragged_q<heads = 8, head_dim = 128, bf16>
!kv   = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, bf16>
!pool = tensor<?x16x2x128xbf16>

// Tiles of 64 query rows: the tensor-core prefill kernel, one CTA per
// (request, q tile, query head), 4 warps of 16 rows; a CTA-wide ring of 2
// K/V tiles of 64 keys in rows padded to D + 8 (2 * 2 * 64 * 136 * 2 bytes).
// CHECK-LABEL: gpu.func @prefill_prefill_0
// CHECK-SAME: memref<2x16xi64>
// CHECK-SAME: #attn.launch<kind = prefill, grid = "requests x q_tiles x num_qo_heads", block = 128
// CHECK-SAME: dynamic_shared_memory = 69632, q_rows = 64, q_tokens = 64, kv_tile = 64>
// CHECK: gpu.block_id x
// CHECK: gpu.block_id y
// CHECK: gpu.block_id z
// A CTA past its request's rows leaves at once.
// CHECK: scf.if
// CHECK: memref.view {{.*}} to memref<2x2x64x136xbf16, #gpu.address_space<workgroup>>
// The causal mask hides keys past the CTA's last query position: the key
// loop ends at min(max(last qpos + 1, 0), keys).
// CHECK: %[[VISIBLE:.*]] = arith.maxsi
// CHECK: arith.minsi %[[VISIBLE]]
// K/V copies: each thread's global base (pool + KV head + its 16-byte
// column) is loop invariant. Tiles start at page boundaries and a copy pass
// (128 pieces: 8 rows) stays in one page, so per page one shuffle of its id
// (lane g holds the id of the tile's g-th page, loaded a tile ahead and
// carried by the loop) and one wide multiply (row = page * 16 + key % 16,
// 512-byte rows); the page's second pass adds a constant (8 rows, 4096
// bytes). Each copy has a source size: zero bytes past the last key.
// CHECK: memref.extract_aligned_pointer_as_index %arg2 : memref<?x16x2x128xbf16>
// CHECK: memref.extract_aligned_pointer_as_index %arg3 : memref<?x16x2x128xbf16>
// CHECK: %[[PAGE:.*]], %{{.*}} = gpu.shuffle  idx %{{.*}}, %c0_i32{{.*}}, %c32_i32
// CHECK: %[[SCALED:.*]] = arith.muli %[[PAGE]], %c16_i32
// CHECK: %[[IN:.*]] = arith.remui %{{.*}}, %c16_i32
// CHECK: %[[ROW:.*]] = arith.addi %[[SCALED]], %[[IN]] : i32
// CHECK: %[[WIDE:.*]] = arith.extui %[[ROW]] : i32 to i64
// CHECK: %[[BASE:.*]] = arith.muli %[[WIDE]], %c512_i64
// CHECK: %[[FIRST:.*]] = arith.cmpi sle
// CHECK: %[[BYTES:.*]] = arith.select %[[FIRST]], %c16_i32{{.*}}, %c0_i32
// CHECK: arith.addi %{{.*}}, %[[BASE]] : i64
// CHECK: nvvm.cp.async.shared.global {{.*}}, 16, cache =  cg, %[[BYTES]]
// CHECK: nvvm.cp.async.shared.global {{.*}}, 16, cache =  cg, %[[BYTES]]
// CHECK-NOT: gpu.shuffle
// CHECK: %[[C4096:.*]] = arith.constant 4096 : i64
// CHECK: arith.addi %{{.*}}, %[[C4096]] : i64
// CHECK: nvvm.cp.async.shared.global
// CHECK: gpu.shuffle  idx %{{.*}}, %c1_i32
// CHECK: nvvm.cp.async.commit.group
// CHECK: %[[NEXT:.*]] = scf.if
// CHECK: arith.minui
// CHECK: memref.load %arg5
// CHECK: scf.for {{.*}} %[[IDS:.*]] = %[[NEXT]]) -> ({{.*}}, i32)
// The wait and the barrier open an iteration (none closes it); the next
// tile's copies (zero bytes past the last key or tile) follow the k-steps
// of this tile's Q.K^T, one pass of 128 pieces each.
// CHECK-NEXT: nvvm.cp.async.wait.group 0
// CHECK-NEXT: gpu.barrier
// S = Q.K^T: K's B fragments by ldmatrix (8 n-tiles of 8 keys, 8 k-steps).
// CHECK-COUNT-4: nvvm.ldmatrix {{.*}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<row>, num = 4 : i32, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>}
// CHECK: gpu.shuffle  idx %[[IDS]], %c0_i32
// CHECK: %[[INRANGE:.*]] = arith.cmpi sle
// CHECK: %[[VALID:.*]] = arith.andi %[[INRANGE]]
// CHECK: %[[SIZE:.*]] = arith.select %[[VALID]], %c16_i32{{.*}}, %c0_i32
// CHECK: nvvm.cp.async.shared.global {{.*}}, 16, cache =  cg, %[[SIZE]]
// CHECK: nvvm.cp.async.shared.global {{.*}}, 16, cache =  cg, %[[SIZE]]
// CHECK-COUNT-28: nvvm.ldmatrix {{.*}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<row>, num = 4 : i32, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>}
// Tiles whose keys all precede the CTA's first query position skip the
// mask; the others apply the causal mask hook, inlined per score.
// CHECK: scf.if
// CHECK: } else {
// CHECK: arith.cmpi sle
// Lazy rescaling: the warp rescales O and l (and moves its maxima) only
// when a row's tile maximum exceeds its reference by more than 8 (base 2).
// CHECK: arith.cmpf ogt
// CHECK: %[[ANY:.*]] = nvvm.vote.sync  any %{{.*}}, %{{.*}} -> i1
// CHECK: scf.if %[[ANY]] -> (f32
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK: arith.mulf
// CHECK: } else {
// CHECK-NEXT: scf.yield %arg
// Probabilities by ex2.approx.ftz (one MUFU.EX2 each).
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// P.V: V's B fragments by ldmatrix.trans.
// CHECK-COUNT-32: nvvm.ldmatrix {{.*}} layout = #nvvm.mma_layout<col>
// CHECK-NOT: gpu.barrier
// CHECK: nvvm.cp.async.commit.group
// bf16 on sm_75 (no bf16 products): the decode kernel.
// TURING-LABEL: gpu.func @prefill_decode_0
// TURING-SAME: grid = "requests x num_kv_heads"
func.func @prefill(%k: !pool, %v: !pool, %ip: tensor<?xi32>, %qs: tensor<?x8x128xbf16>)
    -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %v, %ip, %ip, %ip : !pool, !pool -> !kv
  %q = attn.ragged_q %qs, %ip : tensor<?x8x128xbf16> -> !q
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64,
       tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>} : !q, !kv
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>
}

// -----

!q    = !attn.ragged_q<heads = 8, head_dim = 64, f16>
!kv   = !attn.paged_kv<page_size = 1, layout = nhd, heads = 8, head_dim = 64, f16>
!pool = tensor<?x1x8x64xf16>

// Without a causal mask every key tile is visited; f16 products. sm_75:
// one K/V slot filled by plain loads and stores, m16n8k8 products.
// TURING-LABEL: gpu.func @noncausal_prefill_0
// TURING-SAME: grid = "requests x q_tiles x num_qo_heads"
// TURING-SAME: stages = 1, unroll = 2, tensor_cores = true, dynamic_shared_memory = 18432,
// TURING-NOT: nvgpu.device_async_copy
// TURING: vector.store {{.*}} : memref<1x2x64x72xf16, #gpu.address_space<workgroup>>, vector<8xf16>
// TURING: nvvm.mma.sync {{.*}} shape = #nvvm.shape<m = 16, n = 8, k = 8>
// CHECK-LABEL: gpu.func @noncausal_prefill_0
// CHECK-SAME: dynamic_shared_memory = 36864,
// CHECK-NOT: arith.maxsi
// CHECK: scf.for
// CHECK: nvvm.mma.sync {{.*}} : (vector<2xf16>, vector<2xf16>, f32)
func.func @noncausal(%k: !pool, %ip: tensor<?xi32>, %qs: tensor<?x8x64xf16>)
    -> (tensor<?x8x64xf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %k, %ip, %ip, %ip : !pool, !pool -> !kv
  %q = attn.ragged_q %qs, %ip : tensor<?x8x64xf16> -> !q
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 8 : i64,
       tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>} : !q, !kv
      -> tensor<?x8x64xf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x64xf16>, tensor<?x8xf32>
}

// -----

!q    = !attn.ragged_q<heads = 8, head_dim = 64, bf16>
!kv   = !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 64, bf16>
!pool = tensor<?x16x8x64xbf16>

// A sliding window's mask is causal AND near: the key loop also ends at the
// CTA's last query position.
// CHECK-LABEL: gpu.func @window_prefill_0
// CHECK: %[[VISIBLE:.*]] = arith.maxsi
// CHECK: arith.minsi %[[VISIBLE]]
// CHECK: scf.for
func.func @window(%k: !pool, %ip: tensor<?xi32>, %qs: tensor<?x8x64xbf16>,
    %w: tensor<?xi32>) -> (tensor<?x8x64xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %k, %ip, %ip, %ip : !pool, !pool -> !kv
  %q = attn.ragged_q %qs, %ip : tensor<?x8x64xbf16> -> !q
  %o, %l = attn.attention @sliding_window(%q, %kv) params(%w : tensor<?xi32>)
      {num_qo_heads = 8 : i64, num_kv_heads = 8 : i64,
       tiles = #attn.tiles<q = 32, kv = 64, warps = 2, stages = 2>} : !q, !kv
      -> tensor<?x8x64xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x64xbf16>, tensor<?x8xf32>
}

// -----

!q    = !attn.ragged_q<heads = 8, head_dim = 128, bf16>
!kv   = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, bf16>
!pool = tensor<?x16x2x128xbf16>

// Fused head groups: one CTA per KV head, its 64 rows are 16 tokens x the
// group's 4 query heads (row r: token r / 4, head 4 * kv head + r % 4), so
// each K/V tile serves the whole group.
// CHECK-LABEL: gpu.func @fused_prefill_0
// CHECK-SAME: grid = "requests x q_tiles x num_kv_heads"
// CHECK-SAME: q_rows = 64, q_tokens = 16, kv_tile = 64>
// Causal: the linear block index read head-band-slowest (here a band is
// one KV head), then the q tiles reversed, so each band's q tiles with the
// most keys start first and the CTAs in flight share a few heads' keys.
// CHECK: %[[GX:.*]] = gpu.grid_dim x
// CHECK: %[[GY:.*]] = gpu.grid_dim y
// CHECK: %[[REST:.*]] = arith.divui %{{.*}}, %[[GX]]
// CHECK: %[[Z:.*]] = arith.divui %[[REST]], %[[GY]]
// CHECK: %[[IN_BAND:.*]] = arith.remui %[[REST]], %[[GY]]
// CHECK: %[[LAST:.*]] = arith.subi %[[GY]], %c1
// CHECK: arith.subi %[[LAST]], %[[IN_BAND]]
// CHECK: arith.muli %[[Z]], %c4
// CHECK: arith.remui %{{.*}}, %c4
// CHECK: scf.for
func.func @fused(%k: !pool, %ip: tensor<?xi32>, %qs: tensor<?x8x128xbf16>)
    -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %k, %ip, %ip, %ip : !pool, !pool -> !kv
  %q = attn.ragged_q %qs, %ip : tensor<?x8x128xbf16> -> !q
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64, fused_head_groups,
       tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>} : !q, !kv
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>
}

// -----

!q    = !attn.ragged_q<heads = 8, head_dim = 256, bf16>
!kv   = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 256, bf16>
!pool = tensor<?x16x2x256xbf16>

// A ring the chip cannot hold is a diagnostic (2 * 2 * 128 * 264 * 2 bytes).
func.func @too_large(%k: !pool, %ip: tensor<?xi32>, %qs: tensor<?x8x256xbf16>)
    -> (tensor<?x8x256xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %k, %ip, %ip, %ip : !pool, !pool -> !kv
  %q = attn.ragged_q %qs, %ip : tensor<?x8x256xbf16> -> !q
  // expected-error @+1 {{the prefill kernel generator needs at most 166912 bytes of shared memory per CTA on sm_80; the prefill tiles need 270336 (select smaller kv tiles or fewer stages)}}
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64,
       tiles = #attn.tiles<q = 64, kv = 128, warps = 4, stages = 2>} : !q, !kv
      -> tensor<?x8x256xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x256xbf16>, tensor<?x8xf32>
}

// -----

!q    = !attn.ragged_q<heads = 8, head_dim = 128, bf16>
!kv   = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, bf16>
!pool = tensor<?x16x2x128xbf16>

// 128 rows on 4 warps: 32 rows (two m16 blocks) per warp. Q waits in shared
// memory after the K/V ring (69632 + 128 * 136 * 2 bytes), copied by
// cp.async as its own group, and each k-step reloads its A fragments by
// ldmatrix (K's B fragments then feed two mma each).
// CHECK-LABEL: gpu.func @rows32_prefill_0
// CHECK-SAME: block = 128,
// CHECK-SAME: dynamic_shared_memory = 104448, q_rows = 128,
// CHECK: memref.view {{.*}} to memref<128x136xbf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_copy {{.*}} : memref<?x8x128xbf16> to memref<128x136xbf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_create_group
// CHECK: scf.for
// CHECK: nvvm.ldmatrix
// CHECK: nvvm.mma.sync
// CHECK: nvvm.mma.sync
// CHECK: nvvm.mma.sync
// CHECK: nvvm.mma.sync
// No mask on a plain attention: keys past the end are masked on the last
// tile only.
// CHECK: scf.if
// CHECK: } else {
// CHECK: arith.cmpi slt
// CHECK: arith.select
// No copy (the Q tile's, the zero-byte ones) is in flight when the CTA exits.
// CHECK: nvvm.cp.async.wait.group 0
func.func @rows32(%k: !pool, %v: !pool, %ip: tensor<?xi32>, %qs: tensor<?x8x128xbf16>)
    -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %v, %ip, %ip, %ip : !pool, !pool -> !kv
  %q = attn.ragged_q %qs, %ip : tensor<?x8x128xbf16> -> !q
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64,
       tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !q, !kv
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>
}

// -----

!q    = !attn.ragged_q<heads = 8, head_dim = 256, bf16>
!kv   = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 256, bf16>
!pool = tensor<?x16x2x256xbf16>

// q_shared: 16 rows per warp (64 rows on 4 warps) with Q in shared memory
// after the K/V ring (2 * 2 * 32 * 264 * 2 + 64 * 264 * 2 bytes), read by
// ldmatrix per k-step instead of held in registers next to the d256 O.
// CHECK-LABEL: gpu.func @qshared_prefill_0
// CHECK-SAME: block = 128,
// CHECK-SAME: dynamic_shared_memory = 101376, q_rows = 64,
// CHECK: memref.view {{.*}} to memref<64x264xbf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_copy {{.*}} : memref<?x8x256xbf16> to memref<64x264xbf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_create_group
// CHECK: scf.for
// CHECK: nvvm.ldmatrix
// CHECK: nvvm.mma.sync
// CHECK: nvvm.cp.async.wait.group 0
func.func @qshared(%k: !pool, %v: !pool, %ip: tensor<?xi32>, %qs: tensor<?x8x256xbf16>)
    -> (tensor<?x8x256xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %v, %ip, %ip, %ip : !pool, !pool -> !kv
  %q = attn.ragged_q %qs, %ip : tensor<?x8x256xbf16> -> !q
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64,
       tiles = #attn.tiles<q = 64, kv = 32, warps = 4, stages = 2, q_shared = true>} : !q, !kv
      -> tensor<?x8x256xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x256xbf16>, tensor<?x8xf32>
}
