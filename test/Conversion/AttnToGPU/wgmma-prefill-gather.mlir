// RUN: flashir-opt %s -attn-import-variants "-convert-attn-to-gpu=chip=sm_90a design=wgmma" | FileCheck %s
// RUN: flashir-opt %s -attn-import-variants "-convert-attn-to-gpu=chip=sm_90a design=wgmma copy=cp-async" | FileCheck %s --check-prefix=CPASYNC
// RUN: flashir-opt %s -attn-import-variants -convert-attn-to-gpu=chip=sm_90a | FileCheck %s --check-prefix=AUTO
// RUN: flashir-opt %s -attn-import-variants "-convert-attn-to-gpu=chip=sm_90a copy=cp-async" | FileCheck %s --check-prefix=AUTOCP

// Pages tensor-copy boxes cannot tile (page 1 here) fill the wgmma prefill
// kernel's ring by the producer's cp.async gather: no tensor maps (no
// tensor_map_box), full barriers expecting one arrival per producer
// thread, every producer thread copying 16-byte chunks of its warp's rows
// (the row's page id by shuffle from the lane that loaded it a tile ahead;
// keys past the end zero-filled) and arriving when they land; the
// consumers fence the async proxy after each wait.
!q  = !attn.ragged_q<heads = 8, head_dim = 128, bf16>
!kv1 = !attn.paged_kv<page_size = 1, layout = nhd, heads = 2, head_dim = 128, bf16>
!q256 = !attn.ragged_q<heads = 8, head_dim = 256, bf16>
!kv1d256 = !attn.paged_kv<page_size = 1, layout = nhd, heads = 2, head_dim = 256, bf16>
!kv3 = !attn.paged_kv<page_size = 3, layout = nhd, heads = 2, head_dim = 128, bf16>
!kv16 = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, bf16>

// CHECK-LABEL: gpu.func @page1_prefill_0
// CHECK-SAME: block = 384
// CHECK-NOT: tensor_map_box
// CHECK-SAME: kv_tile = 128>
// CHECK: nvvm.mbarrier.init %{{.*}}, %c128_i32
// A page size that is a power of two: eight passes of the warp's rows per
// loop iteration (32 rows in passes of 2: step 16), the producer at 64
// registers.
// CHECK: nvvm.setmaxregister  decrease 64
// CHECK: memref.load %arg5
// CHECK: scf.for
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: scf.for %[[ROW:.*]] = %{{.*}} to %c32{{.*}} step %c16
// CHECK-COUNT-7: nvgpu.device_async_copy %arg2[{{.*}}], %view[{{.*}}], 8, %{{.*}} {bypassL1}
// CHECK: arith.addi %[[ROW]], %c14{{(_[0-9]+)?}} : index
// CHECK: nvgpu.device_async_copy %arg2[{{.*}}], %view[{{.*}}], 8, %{{.*}} {bypassL1}
// CHECK-NOT: nvgpu.device_async_copy
// CHECK: nvvm.cp.async.mbarrier.arrive %{{.*}} {noinc = true}
// CHECK: gpu.shuffle  idx
// CHECK: %[[ELEMENTS:.*]] = arith.select %{{.*}}, %c8{{.*}}, %c0{{.*}} : index
// CHECK: nvgpu.device_async_copy %arg3[{{.*}}], %view[{{.*}}], 8, %[[ELEMENTS]] {bypassL1}
// CHECK: nvvm.cp.async.mbarrier.arrive %{{.*}} {noinc = true}
// CHECK: nvvm.setmaxregister  increase 216
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>
// CHECK: nvvm.wgmma.mma_async
func.func @page1(%k: tensor<?x1x2x128xbf16>, %ip: tensor<?xi32>,
    %qs: tensor<?x8x128xbf16>) -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %k, %ip, %ip, %ip : tensor<?x1x2x128xbf16>, tensor<?x1x2x128xbf16> -> !kv1
  %q = attn.ragged_q %qs, %ip : tensor<?x8x128xbf16> -> !q
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64,
       tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !q, !kv1
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>
}

// Pages of 16 keys take tensor-copy boxes, unless copy=cp-async asks for
// no tensor maps: then the gather too.
// CHECK-LABEL: gpu.func @page16_prefill_1
// CHECK-SAME: tensor_map_box = [64, 8, 2, 1, 2]
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global
// CPASYNC-LABEL: gpu.func @page16_prefill_1
// CPASYNC-SAME: block = 384
// CPASYNC-NOT: tensor_map_box
// CPASYNC-NOT: nvvm.cp.async.bulk.tensor
// CPASYNC: nvvm.setmaxregister  decrease 64
// CPASYNC: scf.for %{{.*}} = %{{.*}} to %c32{{.*}} step %c16
// CPASYNC: nvvm.cp.async.mbarrier.arrive
func.func @page16(%k: tensor<?x16x2x128xbf16>, %ip: tensor<?xi32>,
    %qs: tensor<?x8x128xbf16>) -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %k, %ip, %ip, %ip : tensor<?x16x2x128xbf16>, tensor<?x16x2x128xbf16> -> !kv16
  %q = attn.ragged_q %qs, %ip : tensor<?x8x128xbf16> -> !q
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64,
       tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !q, !kv16
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>
}

// Other page sizes take a remainder per row: one pass per iteration, the
// producer at 40 registers.
// CHECK-LABEL: gpu.func @page3_prefill_2
// CHECK-NOT: tensor_map_box
// CHECK: nvvm.setmaxregister  decrease 40
// CHECK: scf.for %{{.*}} = %{{.*}} to %c32{{.*}} step %c2
// CHECK: gpu.shuffle  idx
// CHECK: arith.remui %{{.*}}, %c3{{(_[0-9]+)?}} : index
// CHECK: nvgpu.device_async_copy %arg2
// CHECK-NEXT: {{^ +[}]$}}
// CHECK: nvvm.setmaxregister  increase 232
func.func @page3(%k: tensor<?x3x2x128xbf16>, %ip: tensor<?xi32>,
    %qs: tensor<?x8x128xbf16>) -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %k, %ip, %ip, %ip : tensor<?x3x2x128xbf16>, tensor<?x3x2x128xbf16> -> !kv3
  %q = attn.ragged_q %qs, %ip : tensor<?x8x128xbf16> -> !q
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64,
       tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !q, !kv3
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>
}

// At head dim 256 the consumers keep 232 registers (O's accumulators):
// eight passes of one row each (step 8 over the warp's 16 rows), the
// producer at 40.
// CHECK-LABEL: gpu.func @page1d256_prefill_3
// CHECK: nvvm.setmaxregister  decrease 40
// CHECK: scf.for %{{.*}} = %{{.*}} to %c16{{.*}} step %c8
// CHECK-COUNT-8: nvgpu.device_async_copy %arg2
// CHECK: nvvm.setmaxregister  increase 232
func.func @page1d256(%k: tensor<?x1x2x256xbf16>, %ip: tensor<?xi32>,
    %qs: tensor<?x8x256xbf16>) -> (tensor<?x8x256xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %k, %ip, %ip, %ip : tensor<?x1x2x256xbf16>, tensor<?x1x2x256xbf16> -> !kv1d256
  %q = attn.ragged_q %qs, %ip : tensor<?x8x256xbf16> -> !q256
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64,
       tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !q256, !kv1d256
      -> tensor<?x8x256xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x256xbf16>, tensor<?x8xf32>
}

// design=auto takes the wgmma kernel for pages of 16 keys and for gathered
// pages of a power-of-two size (page 1: 541 vs 384 TFLOP/s on the H100,
// 2026-12-07), and keeps other gathered sizes on the mma.sync kernel
// (24-key pages 381 vs 282, 2026-12-05).
// AUTO-LABEL: gpu.func @page1_prefill_0
// AUTO-SAME: block = 384
// AUTO: nvvm.setmaxregister  decrease 64
// AUTO-LABEL: gpu.func @page16_prefill_1
// AUTO-SAME: block = 384
// AUTO-LABEL: gpu.func @page3_prefill_2
// AUTO-SAME: block = 128
// AUTO-NOT: nvvm.setmaxregister
// AUTO-LABEL: gpu.func @page1d256_prefill_3
// AUTO-SAME: block = 384
// Without tensor maps design=auto keeps every gather on the mma.sync
// kernel (not measured against it), page 1 and page 16 alike.
// AUTOCP-LABEL: gpu.func @page1_prefill_0
// AUTOCP-SAME: block = 128
// AUTOCP-LABEL: gpu.func @page16_prefill_1
// AUTOCP-SAME: block = 128
