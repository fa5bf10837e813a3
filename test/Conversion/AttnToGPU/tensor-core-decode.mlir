// RUN: flashir-opt %s -split-input-file -attn-import-variants -convert-attn-to-gpu=chip=sm_80 | FileCheck %s --check-prefix=AMPERE
// RUN: flashir-opt %s -split-input-file -attn-import-variants -convert-attn-to-gpu=chip=sm_90a | FileCheck %s --check-prefix=HOPPER
// RUN: flashir-opt %s -split-input-file -attn-import-variants -convert-attn-to-gpu="chip=sm_90a copy=tma" | FileCheck %s --check-prefix=HOPPER
// RUN: flashir-opt %s -split-input-file -attn-import-variants -convert-attn-to-gpu="chip=sm_90a copy=bulk" | FileCheck %s --check-prefix=ROWS
// RUN: flashir-opt %s -split-input-file -attn-import-variants -convert-attn-to-gpu=chip=sm_86 | FileCheck %s --check-prefix=FALLBACK

!q    = !attn.ragged_q<heads = 8, head_dim = 128, bf16>
!kv   = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, bf16>
!pool = tensor<?x16x2x128xbf16>

// The tensor-core kernel (sm_80+ by default): dynamic shared memory (the
// launch passes its size, recorded in attn.launch), a ring of 3 stages per
// warp; per 16-key tile 16 m16n8k16 products for Q.K^T and 16 for P.V (head
// dim 128); the soft-cap hook inlined on the scores.
// AMPERE-LABEL: gpu.func @decode_decode_0
// AMPERE-SAME: kernel
// AMPERE-SAME: stages = 3, unroll = 2, tensor_cores = true, dynamic_shared_memory = 98304>
// AMPERE: gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// AMPERE: memref.view {{.*}} to memref<4x4x132xf32, #gpu.address_space<workgroup>>
// 16-byte cp.async pieces laid out [warp][stage][piece][lane].
// AMPERE: memref.view {{.*}} to memref<4x3x16x32x8xbf16, #gpu.address_space<workgroup>>
// AMPERE: nvgpu.device_async_copy {{.*}} 8 {bypassL1}
// AMPERE: scf.for
// AMPERE: nvgpu.device_async_wait %{{.*}} {numGroups = 2 : i32}
// AMPERE-COUNT-16: nvvm.mma.sync {{.*}} multiplicandAPtxType = #nvvm.mma_type<bf16>{{.*}}shape = #nvvm.shape<m = 16, n = 8, k = 16>
// AMPERE: llvm.inline_asm asm_dialect = att "tanh.approx.f32 $0, $1;"
// AMPERE: gpu.shuffle  xor
// AMPERE: math.exp2
// AMPERE-COUNT-16: nvvm.mma.sync
// AMPERE-NOT: nvvm.mma.sync
// AMPERE: gpu.barrier

// sm_90a, pages of 16 keys: each 16-key tile is one tensor copy per K/V
// and 64 columns (cp.async.bulk.tensor through the host's tensor maps,
// kv_maps) into 128-byte rows the copy engine swizzles, in a ring aligned to
// 1024 bytes inside the buffer (its offset computed at run time); one
// mbarrier per warp and stage after the ring.
// HOPPER-LABEL: gpu.func @decode_decode_0
// HOPPER-SAME: memref<2x16xi64>
// HOPPER-SAME: bulk_copy = true, tensor_map_box = [64, 1, 16], dynamic_shared_memory = 99408>
// HOPPER: %[[BASE:.*]] = memref.extract_aligned_pointer_as_index
// HOPPER: arith.remui %[[BASE]], %c1024
// HOPPER: memref.view {{.*}} to memref<4x3x2x2x16x64xbf16, #gpu.address_space<workgroup>>
// HOPPER: nvvm.mbarrier.init
// HOPPER: nvvm.fence.proxy
// HOPPER: nvvm.bar.warp.sync
// HOPPER: nvvm.mbarrier.arrive.expect_tx
// HOPPER-COUNT-4: nvvm.cp.async.bulk.tensor.shared.cluster.global {{.*}} box[
// HOPPER: scf.for
// HOPPER: nvvm.mbarrier.try_wait.parity
// Tiles with keys outside the CTA's range zero those V rows (a last page's
// unwritten rows must not meet P = 0 as NaN).
// HOPPER: scf.if
// HOPPER: vector.store %{{.*}} : memref<4x3x2x2x16x64xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// HOPPER: nvvm.bar.warp.sync
// Fragment reads at the swizzled chunk (chunk ^ key % 8).
// HOPPER: arith.xori
// HOPPER: vector.load %{{.*}} : memref<4x3x2x2x16x64xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// HOPPER-NOT: nvgpu.device_async_copy
// HOPPER-COUNT-32: nvvm.mma.sync
// copy=bulk: the same pages by whole rows (cp.async.bulk, one per lane)
// into rows padded to D + 8 elements, no tensor maps.
// ROWS-LABEL: gpu.func @decode_decode_0
// ROWS-SAME: tensor_cores = true, bulk_copy = true, dynamic_shared_memory = 104544>
// ROWS: memref.view {{.*}} to memref<4x3x2x16x136xbf16, #gpu.address_space<workgroup>>
// ROWS-NOT: nvvm.cp.async.bulk.tensor
// ROWS: nvvm.cp.async.bulk.shared.cluster.global {{.*}}, %c256_i32
// ROWS-NOT: nvvm.cp.async.bulk.tensor
func.func @decode(%k: !pool, %v: !pool, %ip: tensor<?xi32>, %qs: tensor<?x8x128xbf16>, %cap: f32)
    -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %v, %ip, %ip, %ip : !pool, !pool -> !kv
  %q = attn.ragged_q %qs, %ip : tensor<?x8x128xbf16> -> !q
  %o, %l = attn.attention @soft_cap(%q, %kv) params(%cap : f32)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64} : !q, !kv
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>
}

// -----

!q    = !attn.ragged_q<heads = 16, head_dim = 256, bf16>
!kv   = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 256, bf16>
!pool = tensor<?x16x2x256xbf16>

// Head dim 256 with 4 warps: sm_80 drops to 2 stages (sm_90a has room for
// 3), sm_86
// (99 KiB per CTA) keeps the CUDA-core kernel.
// AMPERE-LABEL: gpu.func @large_decode_0
// AMPERE-SAME: stages = 2, unroll = 2, tensor_cores = true, dynamic_shared_memory = 131072>
// HOPPER-LABEL: gpu.func @large_decode_0
// HOPPER-SAME: stages = 3, unroll = 2, tensor_cores = true, bulk_copy = true
// HOPPER-SAME: dynamic_shared_memory = 197712>
// FALLBACK-LABEL: gpu.func @large_decode_0
// FALLBACK-SAME: workgroup(
// FALLBACK-SAME: #attn.launch<kind = decode,
// FALLBACK-SAME: "kv_maps"], stages = 4, unroll = 2>
func.func @large(%k: !pool, %ip: tensor<?xi32>, %qs: tensor<?x16x256xbf16>)
    -> (tensor<?x16x256xbf16>, tensor<?x16xf32>) {
  %kv = attn.paged_kv %k, %k, %ip, %ip, %ip : !pool, !pool -> !kv
  %q = attn.ragged_q %qs, %ip : tensor<?x16x256xbf16> -> !q
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 16 : i64, num_kv_heads = 2 : i64} : !q, !kv
      -> tensor<?x16x256xbf16>, tensor<?x16xf32>
  return %o, %l : tensor<?x16x256xbf16>, tensor<?x16xf32>
}

// -----

!q    = !attn.ragged_q<heads = 8, head_dim = 96, bf16>
!kv   = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 96, bf16>
!pool = tensor<?x16x2x96xbf16>

// Head dim 96: boxes of 32 columns (64-byte rows, the 64-byte swizzle), three
// per K or V row, so that the ring holds no zero columns; fragment reads put
// the chunk at chunk ^ (key / 2) % 4, and the V pieces of columns 96..127
// (no box) are zeros.
// HOPPER-LABEL: gpu.func @d96_decode_0
// HOPPER-SAME: tensor_map_box = [32, 1, 16], dynamic_shared_memory = 74832>
// HOPPER: memref.view {{.*}} to memref<4x3x2x3x16x32xbf16, #gpu.address_space<workgroup>>
// HOPPER: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c6144_i32
// HOPPER-COUNT-6: nvvm.cp.async.bulk.tensor.shared.cluster.global {{.*}} box[
// HOPPER: scf.for
// HOPPER: arith.divui %{{.*}}, %c2{{(_[0-9]+)?}} : index
// HOPPER: arith.remui %{{.*}}, %c4{{(_[0-9]+)?}} : index
// HOPPER: arith.xori
// HOPPER: vector.load %{{.*}} : memref<4x3x2x3x16x32xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
func.func @d96(%k: !pool, %ip: tensor<?xi32>, %qs: tensor<?x8x96xbf16>)
    -> (tensor<?x8x96xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %k, %ip, %ip, %ip : !pool, !pool -> !kv
  %q = attn.ragged_q %qs, %ip : tensor<?x8x96xbf16> -> !q
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64} : !q, !kv
      -> tensor<?x8x96xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x96xbf16>, tensor<?x8xf32>
}

// -----

!q    = !attn.ragged_q<heads = 4, head_dim = 72, f16>
!kv   = !attn.paged_kv<page_size = 32, layout = hnd, heads = 4, head_dim = 72, f16>
!pool = tensor<?x4x32x72xf16>

// Head dim 72 (HND): boxes of 16 columns (32-byte rows), five per row.
// HOPPER-LABEL: gpu.func @d72_decode_0
// HOPPER-SAME: tensor_map_box = [16, 16, 1]
// HOPPER: memref.view {{.*}} to memref<4x3x2x5x16x16xf16, #gpu.address_space<workgroup>>
// HOPPER-COUNT-10: nvvm.cp.async.bulk.tensor.shared.cluster.global {{.*}} box[
func.func @d72(%k: !pool, %ip: tensor<?xi32>, %qs: tensor<?x4x72xf16>)
    -> (tensor<?x4x72xf16>, tensor<?x4xf32>) {
  %kv = attn.paged_kv %k, %k, %ip, %ip, %ip : !pool, !pool -> !kv
  %q = attn.ragged_q %qs, %ip : tensor<?x4x72xf16> -> !q
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 4 : i64} : !q, !kv
      -> tensor<?x4x72xf16>, tensor<?x4xf32>
  return %o, %l : tensor<?x4x72xf16>, tensor<?x4xf32>
}
