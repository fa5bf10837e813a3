// RUN: flashir-opt %s -attn-import-variants -convert-attn-to-gpu="chip=sm_90a design=mma-sync" | FileCheck %s
// RUN: flashir-opt %s -attn-import-variants -convert-attn-to-gpu="chip=sm_80 design=simt" | FileCheck %s --check-prefix=SIMT
// RUN: flashir-bundle %s -o %t --chips=sm_80,sm_90a --design=mma-sync --ptxas=%{ptxas} > /dev/null
// RUN: FileCheck %s --input-file=%t/manifest.json --check-prefix=MANIFEST

// HND pools ([pages, heads, page, dim]) on the GPU: every kernel family
// indexes pools as (page, slot, head, column), so an HND pool is the same
// memref with strides (PagedKVAccess): 4 heads x 16 keys x 128 columns per
// page, a head's keys one row apart. The Hopper decode kernel copies whole
// 16-key tiles through tensor maps over (column, slot, page * Hkv + head)
// (abi::kvTensorMap) where pages hold whole tiles, else rows with
// cp.async.bulk at HND row addresses.

!kv = !attn.paged_kv<page_size = 16, layout = hnd, heads = 4, head_dim = 128, bf16>
!kv8 = !attn.paged_kv<page_size = 8, layout = hnd, heads = 4, head_dim = 128, bf16>

// CHECK-LABEL: gpu.func @decode_decode_0
// CHECK-SAME: %{{.*}}: memref<?x16x4x128xbf16, strided<[8192, 128, 2048, 1]>>, %{{.*}}: memref<?x16x4x128xbf16, strided<[8192, 128, 2048, 1]>>
// CHECK-SAME: #attn.launch<kind = decode
// CHECK-SAME: tensor_cores = true, bulk_copy = true, tensor_map_box = [64, 16, 1], dynamic_shared_memory
// The tile's box at (column, slot in the page, page * 4 + KV head).
// CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c8192_i32
// CHECK: %[[SLOT:.*]] = arith.remui %{{.*}}, %c16
// CHECK-NEXT: %[[X:.*]] = arith.index_cast %[[SLOT]] : index to i32
// CHECK-NEXT: %[[C4:.*]] = arith.constant 4 : index
// CHECK-NEXT: %[[PH:.*]] = arith.muli %{{.*}}, %[[C4]] : index
// CHECK-NEXT: %[[PHH:.*]] = arith.addi %[[PH]], %{{.*}} : index
// CHECK-NEXT: %[[Y:.*]] = arith.index_cast %[[PHH]] : index to i32
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, box[%{{.*}}, %[[X]], %[[Y]]]
// SIMT-LABEL: gpu.func @decode_decode_0
// SIMT: nvgpu.device_async_copy {{.*}} : memref<?x16x4x128xbf16, strided<[8192, 128, 2048, 1]>> to
// MANIFEST: "name": "decode_decode_0"
// MANIFEST: "kv_layout": "hnd"
// MANIFEST: "tensor_map_box": [
// MANIFEST-NEXT: 64,
// MANIFEST-NEXT: 16,
// MANIFEST-NEXT: 1
func.func @decode(%k: tensor<?x4x16x128xbf16>, %v: tensor<?x4x16x128xbf16>, %ip: tensor<?xi32>,
    %ix: tensor<?xi32>, %lp: tensor<?xi32>, %qs: tensor<?x16x128xbf16>, %qo: tensor<?xi32>)
    -> (tensor<?x16x128xbf16>, tensor<?x16xf32>) {
  %kv = attn.paged_kv %k, %v, %ip, %ix, %lp : tensor<?x4x16x128xbf16>, tensor<?x4x16x128xbf16> -> !kv
  %q = attn.ragged_q %qs, %qo : tensor<?x16x128xbf16> -> !attn.ragged_q<heads = 16, head_dim = 128, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 16 : i64, num_kv_heads = 4 : i64} : !attn.ragged_q<heads = 16, head_dim = 128, bf16>, !kv
      -> tensor<?x16x128xbf16>, tensor<?x16xf32>
  return %o, %l : tensor<?x16x128xbf16>, tensor<?x16xf32>
}

// Pages of 8 keys: row copies. The row of key slot s of page p, head h:
// p * 32 + h * 8 + s.
// CHECK-LABEL: gpu.func @decode8_decode_1
// CHECK-SAME: tensor_cores = true, bulk_copy = true, dynamic_shared_memory
// CHECK-NOT: tensor_map_box
// CHECK: %[[PAGE_ROW:.*]] = arith.muli %{{.*}}, %c32
// CHECK: arith.addi %[[PAGE_ROW]]
// CHECK: nvvm.cp.async.bulk.shared.cluster.global
func.func @decode8(%k: tensor<?x4x8x128xbf16>, %v: tensor<?x4x8x128xbf16>, %ip: tensor<?xi32>,
    %ix: tensor<?xi32>, %lp: tensor<?xi32>, %qs: tensor<?x16x128xbf16>, %qo: tensor<?xi32>)
    -> (tensor<?x16x128xbf16>, tensor<?x16xf32>) {
  %kv = attn.paged_kv %k, %v, %ip, %ix, %lp : tensor<?x4x8x128xbf16>, tensor<?x4x8x128xbf16> -> !kv8
  %q = attn.ragged_q %qs, %qo : tensor<?x16x128xbf16> -> !attn.ragged_q<heads = 16, head_dim = 128, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 16 : i64, num_kv_heads = 4 : i64} : !attn.ragged_q<heads = 16, head_dim = 128, bf16>, !kv8
      -> tensor<?x16x128xbf16>, tensor<?x16xf32>
  return %o, %l : tensor<?x16x128xbf16>, tensor<?x16xf32>
}

// Prefill over an HND pool: the same strided pools; copies through memref
// indexing (the raw-address copies need NHD token rows).
// CHECK-LABEL: gpu.func @prefill_prefill_2
// CHECK-SAME: memref<?x16x4x128xbf16, strided<[8192, 128, 2048, 1]>>
// CHECK-SAME: #attn.launch<kind = prefill
// CHECK: nvgpu.device_async_copy {{.*}} : memref<?x16x4x128xbf16, strided<[8192, 128, 2048, 1]>> to
func.func @prefill(%k: tensor<?x4x16x128xbf16>, %v: tensor<?x4x16x128xbf16>, %ip: tensor<?xi32>,
    %ix: tensor<?xi32>, %lp: tensor<?xi32>, %qs: tensor<?x16x128xbf16>, %qo: tensor<?xi32>)
    -> (tensor<?x16x128xbf16>, tensor<?x16xf32>) {
  %kv = attn.paged_kv %k, %v, %ip, %ix, %lp : tensor<?x4x16x128xbf16>, tensor<?x4x16x128xbf16> -> !kv
  %q = attn.ragged_q %qs, %qo : tensor<?x16x128xbf16> -> !attn.ragged_q<heads = 16, head_dim = 128, bf16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 16 : i64, num_kv_heads = 4 : i64,
       tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 16, head_dim = 128, bf16>, !kv
      -> tensor<?x16x128xbf16>, tensor<?x16xf32>
  return %o, %l : tensor<?x16x128xbf16>, tensor<?x16xf32>
}
