// RUN: flashir-opt %s -attn-import-variants -convert-attn-to-gpu="chip=sm_90a design=mma-sync" | FileCheck %s
// RUN: flashir-opt %s -attn-import-variants -convert-attn-to-gpu="chip=sm_80 design=simt" | FileCheck %s --check-prefix=SIMT
// RUN: flashir-bundle %s -o %t --chips=sm_80,sm_90a --design=mma-sync --ptxas=%{ptxas} > /dev/null
// RUN: FileCheck %s --input-file=%t/manifest.json --check-prefix=MANIFEST
// RUN: flashir-bundle %s -o %t-split --chips=sm_90a --design=mma-sync --ptxas=%{ptxas} \
// RUN:   --schedule='attn-import-variants,attn-split-kv{chunk-size=0}' --split-prefill > /dev/null
// RUN: FileCheck %s --input-file=%t-split/manifest.json --check-prefix=SPLIT

// Ragged views (attn.ragged_kv) on the GPU: the keys' contiguous
// [tokens, heads, dim] rows are read as one-token NHD pages in token order
// (PagedKVAccess::raggedRows), so every kernel family serves them; the
// kernels take no page table (no indices, no last_page_len), a request's
// keys are rows indptr[r] .. indptr[r + 1] and its key count their
// difference.

!kv = !attn.ragged_kv<heads = 2, head_dim = 128, bf16>
!q = !attn.ragged_q<heads = 8, head_dim = 128, bf16>

// CHECK-LABEL: gpu.func @decode_decode_0
// CHECK-SAME: (%{{.*}}: memref<?x8x128xbf16>, %{{.*}}: memref<?xi32>, %{{.*}}: memref<?x1x2x128xbf16>, %{{.*}}: memref<?x1x2x128xbf16>, %{{.*}}: memref<?xi32>, %{{.*}}: memref<?x8x128xbf16>, %{{.*}}: memref<?x8xf32>, %{{.*}}: memref<2x16xi64>)
// CHECK-SAME: #attn.launch<kind = decode, grid = "requests x num_kv_heads"
// CHECK-SAME: args = ["q", "qo_indptr", "k_pool", "v_pool", "indptr", "out", "lse", "kv_maps"]
// CHECK-SAME: tensor_cores = true, bulk_copy = true, dynamic_shared_memory
// CHECK-NOT: tensor_map_box
// Each key's row is its token: no page-table load between indptr and the
// bulk copies.
// CHECK: nvvm.cp.async.bulk.shared.cluster.global
// SIMT-LABEL: gpu.func @decode_decode_0
// SIMT-SAME: args = ["q", "qo_indptr", "k_pool", "v_pool", "indptr", "out", "lse", "kv_maps"]
// SIMT: nvgpu.device_async_copy {{.*}} : memref<?x1x2x128xbf16> to
// MANIFEST: "kv_layout": "ragged"
// MANIFEST: "name": "decode_decode_0"
func.func @decode(%k: tensor<?x2x128xbf16>, %v: tensor<?x2x128xbf16>, %ip: tensor<?xi32>,
    %qs: tensor<?x8x128xbf16>, %qo: tensor<?xi32>)
    -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %kv = attn.ragged_kv %k, %v, %ip : tensor<?x2x128xbf16>, tensor<?x2x128xbf16> -> !kv
  %q = attn.ragged_q %qs, %qo : tensor<?x8x128xbf16> -> !q
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64} : !q, !kv
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>
}

// Prefill over a ragged view (causal: bottom-right aligned by the key
// count indptr[r + 1] - indptr[r]).
// CHECK-LABEL: gpu.func @prefill_prefill_1
// CHECK-SAME: #attn.launch<kind = prefill
// CHECK-SAME: args = ["q", "qo_indptr", "k_pool", "v_pool", "indptr", "out", "lse", "kv_maps"]
// MANIFEST: "kv_layout": "ragged"
// MANIFEST: "name": "prefill_prefill_1"
// SPLIT: "merge_kernel": "decode_merge_0"
// SPLIT: "name": "chunk_indptr"
// SPLIT: "kv_layout": "ragged"
// SPLIT-NEXT: "kv_tile": 64
// SPLIT-NEXT: "memref_abi"
// SPLIT-NEXT: "merge_kernel": "prefill_merge_1"
// SPLIT-NEXT: "name": "prefill_prefill_1"
func.func @prefill(%k: tensor<?x2x128xbf16>, %v: tensor<?x2x128xbf16>, %ip: tensor<?xi32>,
    %qs: tensor<?x8x128xbf16>, %qo: tensor<?xi32>)
    -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %kv = attn.ragged_kv %k, %v, %ip : tensor<?x2x128xbf16>, tensor<?x2x128xbf16> -> !kv
  %q = attn.ragged_q %qs, %qo : tensor<?x8x128xbf16> -> !q
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64,
       tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !q, !kv
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>
}
