// RUN: flashir-opt %s -attn-import-variants -convert-attn-to-gpu="chip=sm_90a" | FileCheck %s
// RUN: flashir-opt %s -attn-import-variants -convert-attn-to-gpu="chip=sm_80 tensor-cores=0" | FileCheck %s --check-prefix=SIMT
// RUN: flashir-bundle %s -o %t --chips=sm_80,sm_90a --ptxas=%{ptxas} > /dev/null
// RUN: FileCheck %s --input-file=%t/manifest.json --check-prefix=MANIFEST

// HND pools ([pages, heads, page, dim]) on the GPU: every kernel family
// indexes pools as (page, slot, head, column), so an HND pool is the same
// memref with strides (PagedKVAccess): 4 heads x 16 keys x 128 columns per
// page, a head's keys one row apart. The Hopper decode kernel copies rows
// with cp.async.bulk at HND row addresses; no tensor maps (their box
// assumes NHD token rows).

!kv = !attn.paged_kv<page_size = 16, layout = hnd, heads = 4, head_dim = 128, bf16>

// CHECK-LABEL: gpu.func @decode_decode_0
// CHECK-SAME: %{{.*}}: memref<?x16x4x128xbf16, strided<[8192, 128, 2048, 1]>>, %{{.*}}: memref<?x16x4x128xbf16, strided<[8192, 128, 2048, 1]>>
// CHECK-SAME: #attn.launch<kind = decode
// CHECK-SAME: tensor_cores = true, bulk_copy = true, dynamic_shared_memory
// CHECK-NOT: tensor_map_box
// The row of key slot s of page p, head h: p * 64 + h * 16 + s.
// CHECK: %[[PAGE_ROW:.*]] = arith.muli %{{.*}}, %c64
// CHECK: arith.addi %[[PAGE_ROW]]
// SIMT-LABEL: gpu.func @decode_decode_0
// SIMT: nvgpu.device_async_copy {{.*}} : memref<?x16x4x128xbf16, strided<[8192, 128, 2048, 1]>> to
// MANIFEST: "name": "decode_decode_0"
// MANIFEST: "kv_layout": "hnd"
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

// Prefill over an HND pool: the same strided pools; copies through memref
// indexing (the raw-address copies need NHD token rows).
// CHECK-LABEL: gpu.func @prefill_prefill_1
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
