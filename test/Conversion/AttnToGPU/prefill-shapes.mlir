// RUN: rm -rf %t && split-file %s %t
// RUN: flashir-opt %t/bf16.mlir -attn-import-variants -convert-attn-to-gpu=chip=sm_80 | FileCheck %s
// RUN: flashir-opt %t/f16.mlir -attn-import-variants -convert-attn-to-gpu=chip=sm_75 | FileCheck %s --check-prefix=TURING
// RUN: flashir-bundle %t/bf16.mlir -o %t/bf16 --chips=sm_80,sm_86,sm_89,sm_90a --ptxas=%{ptxas} > /dev/null
// RUN: FileCheck %s --input-file=%t/bf16/manifest.json --check-prefix=MANIFEST
// RUN: flashir-bundle %t/f16.mlir -o %t/f16 --chips=sm_75,sm_80,sm_86,sm_89,sm_90a --ptxas=%{ptxas} > /dev/null
// RUN: FileCheck %s --input-file=%t/f16/manifest.json --check-prefix=MANIFEST16
// RUN: flashir-opt %t/invalid.mlir -split-input-file -attn-import-variants -convert-attn-to-gpu=chip=sm_80 -verify-diagnostics

// The prefill kernel at head dims other than 64/128/256 and at GQA groups
// past 8. A head dim that is an odd multiple of 8 (72 here) runs its
// products over the head dim rounded up to 16 (80): staged K/V (and Q) rows
// hold 80 columns, of which 72..79 are zeros written once per CTA, plus the
// 8-element row pad (88 elements, an odd number of 16-byte units, so
// ldmatrix phases stay conflict-free). Global rows keep exactly D columns:
// copies move D / 8 16-byte pieces and only O's first D columns are stored.
// Every kernel assembles with ptxas for sm_80, sm_86, sm_89 and sm_90a, the
// f16 ones for sm_75 too.

// d72, 3 query heads per KV head (not fused: 64 % 3 != 0), Q in registers.
// CHECK-LABEL: gpu.func @causal_d72_g3_prefill_0
// CHECK-SAME: memref<?x16x2x72xbf16>
// CHECK-SAME: grid = "requests x q_tiles x num_qo_heads", block = 128
// CHECK-SAME: dynamic_shared_memory = 45056, q_rows = 64, q_tokens = 64, kv_tile = 64>
// CHECK: memref.view {{.*}} to memref<2x2x64x88xbf16, #gpu.address_space<workgroup>>
// The padding columns of the ring's 2 x 2 x 64 rows are zeroed before any
// copy lands (a NaN left there would poison Q.K^T even times a zero).
// CHECK: memref.view {{.*}} to memref<256x88xbf16, #gpu.address_space<workgroup>>
// CHECK: scf.for %[[ROW:.*]] = %thread_id_x to %c256 step %c128 {
// CHECK-NEXT: vector.store %{{.*}}, %{{.*}}[%[[ROW]], %c72] {alignment = 16 : i64} : memref<256x88xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// Q's A fragments: 4 pairs per k-step, but the fifth k-step loads only
// columns 64..71 and takes zeros for 72..79 (no load past column 71 of the
// [tokens, 6, 72] queries).
// CHECK-COUNT-18: vector.load %arg0[%{{.*}}, %{{.*}}, %{{.*}}] : memref<?x6x72xbf16>, vector<2xbf16>
// CHECK-NOT: vector.load %arg0
// Raw cp.async copies of 9 pieces per row: 126 of the 128 threads copy (14
// keys per pass), 5 passes per tile, the last one 72 pieces (8 keys).
// CHECK: arith.cmpi ult, %{{.*}}, %c126 : index
// CHECK: nvvm.cp.async.shared.global
// CHECK: %[[END:.*]] = arith.constant 576 : index
// CHECK: arith.cmpi ult, %{{.*}}, %[[END]] : index
// Q.K^T: 5 k-steps x 4 ldmatrix.x4 (2 n-tiles each); P.V: 4 x 5 (O's 10
// n-tiles of 8 columns: 72..79 are computed, never stored).
// CHECK: scf.for
// CHECK-COUNT-40: nvvm.mma.sync
// CHECK: nvvm.ldmatrix {{.*}}layout = #nvvm.mma_layout<col>
// CHECK-COUNT-40: nvvm.mma.sync
// CHECK-NOT: nvvm.mma.sync
// CHECK: scf.yield
// O leaves through the staging rows: 9 pairs for each of the lane's 2 rows,
// read back in 16-byte pieces (9 per row; the warp's 144 pieces take 4
// rounds of 32 lanes and one of 16).
// CHECK: memref.view {{.*}} to memref<64x88xbf16, #gpu.address_space<workgroup>>
// CHECK-COUNT-18: vector.store %{{.*}} : memref<64x88xbf16, #gpu.address_space<workgroup>>, vector<2xbf16>
// CHECK-NOT: vector.store %{{.*}} : memref<64x88xbf16, #gpu.address_space<workgroup>>, vector<2xbf16>
// CHECK: nvvm.bar.warp.sync
// CHECK: %[[ACTIVE:.*]] = arith.cmpi ult, %{{.*}}, %c16{{.*}} : index
// CHECK-NEXT: scf.if %[[ACTIVE]] {
// CHECK: vector.store %{{.*}}, %arg7[%{{.*}}, %{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x6x72xbf16>, vector<8xbf16>
// CHECK: gpu.return

// d96 (a multiple of 16: no padding columns), 16 query heads per KV head
// fused into 128-row tiles of 8 tokens, 32 rows per warp (Q in shared
// memory): 2 x 2 x 64 x 104 x 2 + 128 x 104 x 2 bytes.
// CHECK-LABEL: gpu.func @plain_d96_g16_prefill_1
// CHECK-SAME: grid = "requests x q_tiles x num_kv_heads", block = 128
// CHECK-SAME: dynamic_shared_memory = 79872, q_rows = 128, q_tokens = 8, kv_tile = 64>
// CHECK: memref.view {{.*}} to memref<2x2x64x104xbf16, #gpu.address_space<workgroup>>
// CHECK-NOT: vector.store {{.*}}, %c96]
// CHECK: memref.view {{.*}} to memref<128x104xbf16, #gpu.address_space<workgroup>>

// d192 over an HND pool, 32 query heads per KV head (not fused), 8 warps.
// CHECK-LABEL: gpu.func @causal_d192_g32_hnd_prefill_2
// CHECK-SAME: memref<?x16x2x192xbf16, strided<[6144, 192, 3072, 1]>>
// CHECK-SAME: block = 256
// CHECK-SAME: dynamic_shared_memory = 51200, q_rows = 128, q_tokens = 128, kv_tile = 32>
// CHECK: memref.view {{.*}} to memref<2x2x32x200xbf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_copy {{.*}} : memref<?x16x2x192xbf16, strided<[6144, 192, 3072, 1]>> to memref<2x2x32x200xbf16, #gpu.address_space<workgroup>>

// d192, one K and one V slot, Q in shared memory.
// CHECK-LABEL: gpu.func @soft_cap_d192_g2_s1_prefill_3
// CHECK-SAME: dynamic_shared_memory = 51200, q_rows = 64, q_tokens = 64, kv_tile = 32>

// sm_75: f16 products as two m16n8k8 each, one slot filled by plain loads
// and stores; the padding columns of the ring and the Q tile are zeroed the
// same way.
// TURING-LABEL: gpu.func @causal_d16_g3_prefill_0
// TURING-SAME: dynamic_shared_memory = 6144
// TURING: memref.view {{.*}} to memref<1x2x64x24xf16, #gpu.address_space<workgroup>>
// TURING-LABEL: gpu.func @plain_d80_g16_prefill_1
// TURING-SAME: grid = "requests x q_tiles x num_kv_heads"
// TURING-SAME: dynamic_shared_memory = 22528, q_rows = 64, q_tokens = 4, kv_tile = 64>
// TURING: memref.view {{.*}} to memref<1x2x64x88xf16, #gpu.address_space<workgroup>>
// TURING-LABEL: gpu.func @soft_cap_d160_g32_hnd_prefill_2
// TURING-SAME: dynamic_shared_memory = 21504, q_rows = 64, q_tokens = 2, kv_tile = 32>
// TURING: memref.view {{.*}} to memref<1x2x32x168xf16, #gpu.address_space<workgroup>>
// TURING-LABEL: gpu.func @causal_d72_g1_q128_prefill_3
// TURING-SAME: dynamic_shared_memory = 33792, q_rows = 128, q_tokens = 128, kv_tile = 32>
// TURING: memref.view {{.*}} to memref<1x2x32x88xf16, #gpu.address_space<workgroup>>
// TURING: memref.view {{.*}} to memref<192x88xf16, #gpu.address_space<workgroup>>
// TURING: scf.for %[[ROW:.*]] = %thread_id_x to %c192 step %c128{{.*}} {
// TURING-NEXT: vector.store %{{.*}}, %{{.*}}[%[[ROW]], %c72] {alignment = 16 : i64}
// TURING: memref.view %{{.*}}[%c11264][] : {{.*}} to memref<128x88xf16, #gpu.address_space<workgroup>>
// TURING: nvvm.mma.sync {{.*}}shape = #nvvm.shape<m = 16, n = 8, k = 8>

// The manifests: every chip's kernels with their shared memory.
// MANIFEST: "kv_layout": "nhd",
// MANIFEST: "name": "causal_d72_g3_prefill_0",
// MANIFEST: "grid": "requests x q_tiles x num_kv_heads",
// MANIFEST: "name": "plain_d96_g16_prefill_1",
// MANIFEST-NEXT: "position_free": true,
// MANIFEST-NEXT: "q_rows": 128,
// MANIFEST-NEXT: "q_tokens": 8,
// MANIFEST: "kv_layout": "hnd",
// MANIFEST: "name": "causal_d192_g32_hnd_prefill_2",
// MANIFEST: "name": "soft_cap_d192_g2_s1_prefill_3",
// MANIFEST: "chip": "sm_80",
// MANIFEST: "causal_d192_g32_hnd_prefill_2": {
// MANIFEST: "dynamic_shared_memory_bytes": 51200,
// MANIFEST: "causal_d72_g3_prefill_0": {
// MANIFEST: "dynamic_shared_memory_bytes": 45056,
// MANIFEST: "plain_d96_g16_prefill_1": {
// MANIFEST: "dynamic_shared_memory_bytes": 79872,
// MANIFEST: "chip": "sm_86",
// MANIFEST: "chip": "sm_89",
// MANIFEST: "chip": "sm_90a",
// MANIFEST: "soft_cap_d192_g2_s1_prefill_3": {
// MANIFEST: "dynamic_shared_memory_bytes": 51200,
// MANIFEST: "stages": 1,
// MANIFEST16: "chip": "sm_75",
// MANIFEST16: "causal_d16_g3_prefill_0": {
// MANIFEST16: "dynamic_shared_memory_bytes": 6144,
// MANIFEST16: "causal_d72_g1_q128_prefill_3": {
// MANIFEST16: "dynamic_shared_memory_bytes": 33792,
// MANIFEST16: "plain_d80_g16_prefill_1": {
// MANIFEST16: "dynamic_shared_memory_bytes": 22528,
// MANIFEST16: "soft_cap_d160_g32_hnd_prefill_2": {
// MANIFEST16: "dynamic_shared_memory_bytes": 21504,
// MANIFEST16: "chip": "sm_80",
// MANIFEST16: "causal_d16_g3_prefill_0": {
// MANIFEST16: "dynamic_shared_memory_bytes": 12288,
// MANIFEST16: "chip": "sm_86",
// MANIFEST16: "chip": "sm_89",
// MANIFEST16: "chip": "sm_90a",
// MANIFEST16: "soft_cap_d160_g32_hnd_prefill_2": {
// MANIFEST16: "dynamic_shared_memory_bytes": 43008,

//--- bf16.mlir
func.func @causal_d72_g3(%k: tensor<?x16x2x72xbf16>, %v: tensor<?x16x2x72xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x6x72xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x6x72xbf16>, tensor<?x6xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x2x72xbf16>, tensor<?x16x2x72xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 72, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x6x72xbf16> -> !attn.ragged_q<heads = 6, head_dim = 72, bf16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 6 : i64, num_kv_heads = 2 : i64, tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 6, head_dim = 72, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 72, bf16>
      -> tensor<?x6x72xbf16>, tensor<?x6xf32>
  return %o, %l : tensor<?x6x72xbf16>, tensor<?x6xf32>
}

func.func @plain_d96_g16(%k: tensor<?x16x2x96xbf16>, %v: tensor<?x16x2x96xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x96xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x96xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x2x96xbf16>, tensor<?x16x2x96xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 96, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x96xbf16> -> !attn.ragged_q<heads = 32, head_dim = 96, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {fused_head_groups, num_qo_heads = 32 : i64, num_kv_heads = 2 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 32, head_dim = 96, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 96, bf16>
      -> tensor<?x32x96xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x96xbf16>, tensor<?x32xf32>
}

func.func @causal_d192_g32_hnd(%k: tensor<?x2x16x192xbf16>, %v: tensor<?x2x16x192xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x64x192xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x64x192xbf16>, tensor<?x64xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x2x16x192xbf16>, tensor<?x2x16x192xbf16> -> !attn.paged_kv<page_size = 16, layout = hnd, heads = 2, head_dim = 192, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x64x192xbf16> -> !attn.ragged_q<heads = 64, head_dim = 192, bf16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 64 : i64, num_kv_heads = 2 : i64, tiles = #attn.tiles<q = 128, kv = 32, warps = 8, stages = 2>} : !attn.ragged_q<heads = 64, head_dim = 192, bf16>, !attn.paged_kv<page_size = 16, layout = hnd, heads = 2, head_dim = 192, bf16>
      -> tensor<?x64x192xbf16>, tensor<?x64xf32>
  return %o, %l : tensor<?x64x192xbf16>, tensor<?x64xf32>
}

func.func @soft_cap_d192_g2_s1(%k: tensor<?x1x2x192xbf16>, %v: tensor<?x1x2x192xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x4x192xbf16>,
    %qo: tensor<?xi32>, %cap: f32) -> (tensor<?x4x192xbf16>, tensor<?x4xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x1x2x192xbf16>, tensor<?x1x2x192xbf16> -> !attn.paged_kv<page_size = 1, layout = nhd, heads = 2, head_dim = 192, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x4x192xbf16> -> !attn.ragged_q<heads = 4, head_dim = 192, bf16>
  %o, %l = attn.attention @soft_cap(%q, %kv) params(%cap : f32)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64, tiles = #attn.tiles<q = 64, kv = 32, warps = 4, stages = 1, q_shared = true>} : !attn.ragged_q<heads = 4, head_dim = 192, bf16>, !attn.paged_kv<page_size = 1, layout = nhd, heads = 2, head_dim = 192, bf16>
      -> tensor<?x4x192xbf16>, tensor<?x4xf32>
  return %o, %l : tensor<?x4x192xbf16>, tensor<?x4xf32>
}

//--- f16.mlir
func.func @causal_d16_g3(%k: tensor<?x16x2x16xf16>, %v: tensor<?x16x2x16xf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x6x16xf16>,
    %qo: tensor<?xi32>) -> (tensor<?x6x16xf16>, tensor<?x6xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x2x16xf16>, tensor<?x16x2x16xf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 16, f16>
  %q = attn.ragged_q %queries, %qo : tensor<?x6x16xf16> -> !attn.ragged_q<heads = 6, head_dim = 16, f16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 6 : i64, num_kv_heads = 2 : i64, tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 6, head_dim = 16, f16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 16, f16>
      -> tensor<?x6x16xf16>, tensor<?x6xf32>
  return %o, %l : tensor<?x6x16xf16>, tensor<?x6xf32>
}

func.func @plain_d80_g16(%k: tensor<?x1x2x80xf16>, %v: tensor<?x1x2x80xf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x80xf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x80xf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x1x2x80xf16>, tensor<?x1x2x80xf16> -> !attn.paged_kv<page_size = 1, layout = nhd, heads = 2, head_dim = 80, f16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x80xf16> -> !attn.ragged_q<heads = 32, head_dim = 80, f16>
  %o, %l = attn.attention @plain(%q, %kv)
      {fused_head_groups, num_qo_heads = 32 : i64, num_kv_heads = 2 : i64, tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 32, head_dim = 80, f16>, !attn.paged_kv<page_size = 1, layout = nhd, heads = 2, head_dim = 80, f16>
      -> tensor<?x32x80xf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x80xf16>, tensor<?x32xf32>
}

func.func @soft_cap_d160_g32_hnd(%k: tensor<?x2x16x160xf16>, %v: tensor<?x2x16x160xf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x64x160xf16>,
    %qo: tensor<?xi32>, %cap: f32) -> (tensor<?x64x160xf16>, tensor<?x64xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x2x16x160xf16>, tensor<?x2x16x160xf16> -> !attn.paged_kv<page_size = 16, layout = hnd, heads = 2, head_dim = 160, f16>
  %q = attn.ragged_q %queries, %qo : tensor<?x64x160xf16> -> !attn.ragged_q<heads = 64, head_dim = 160, f16>
  %o, %l = attn.attention @soft_cap(%q, %kv) params(%cap : f32)
      {fused_head_groups, num_qo_heads = 64 : i64, num_kv_heads = 2 : i64, tiles = #attn.tiles<q = 64, kv = 32, warps = 4, stages = 2>} : !attn.ragged_q<heads = 64, head_dim = 160, f16>, !attn.paged_kv<page_size = 16, layout = hnd, heads = 2, head_dim = 160, f16>
      -> tensor<?x64x160xf16>, tensor<?x64xf32>
  return %o, %l : tensor<?x64x160xf16>, tensor<?x64xf32>
}

func.func @causal_d72_g1_q128(%k: tensor<?x16x4x72xf16>, %v: tensor<?x16x4x72xf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x4x72xf16>,
    %qo: tensor<?xi32>) -> (tensor<?x4x72xf16>, tensor<?x4xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x4x72xf16>, tensor<?x16x4x72xf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 4, head_dim = 72, f16>
  %q = attn.ragged_q %queries, %qo : tensor<?x4x72xf16> -> !attn.ragged_q<heads = 4, head_dim = 72, f16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 4 : i64, tiles = #attn.tiles<q = 128, kv = 32, warps = 4, stages = 2>} : !attn.ragged_q<heads = 4, head_dim = 72, f16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 4, head_dim = 72, f16>
      -> tensor<?x4x72xf16>, tensor<?x4xf32>
  return %o, %l : tensor<?x4x72xf16>, tensor<?x4xf32>
}

//--- invalid.mlir
// The verifier takes any even head_dim in 2..1024; the prefill kernel needs
// 16-byte rows of at least 16 and at most 256 elements.
func.func @d12(%k: tensor<?x16x2x12xbf16>, %v: tensor<?x16x2x12xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x4x12xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x4x12xbf16>, tensor<?x4xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x2x12xbf16>, tensor<?x16x2x12xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 12, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x4x12xbf16> -> !attn.ragged_q<heads = 4, head_dim = 12, bf16>
  // expected-error @+1 {{the prefill kernel generator needs head_dim a multiple of 8 from 16 to 256}}
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64, tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 4, head_dim = 12, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 12, bf16>
      -> tensor<?x4x12xbf16>, tensor<?x4xf32>
  return %o, %l : tensor<?x4x12xbf16>, tensor<?x4xf32>
}

// -----

func.func @d264(%k: tensor<?x16x2x264xbf16>, %v: tensor<?x16x2x264xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x4x264xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x4x264xbf16>, tensor<?x4xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x2x264xbf16>, tensor<?x16x2x264xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 264, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x4x264xbf16> -> !attn.ragged_q<heads = 4, head_dim = 264, bf16>
  // expected-error @+1 {{the prefill kernel generator needs head_dim a multiple of 8 from 16 to 256}}
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64, tiles = #attn.tiles<q = 64, kv = 32, warps = 4, stages = 2>} : !attn.ragged_q<heads = 4, head_dim = 264, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 264, bf16>
      -> tensor<?x4x264xbf16>, tensor<?x4xf32>
  return %o, %l : tensor<?x4x264xbf16>, tensor<?x4xf32>
}

// -----

func.func @d20(%k: tensor<?x16x2x20xf16>, %v: tensor<?x16x2x20xf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x4x20xf16>,
    %qo: tensor<?xi32>) -> (tensor<?x4x20xf16>, tensor<?x4xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x2x20xf16>, tensor<?x16x2x20xf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 20, f16>
  %q = attn.ragged_q %queries, %qo : tensor<?x4x20xf16> -> !attn.ragged_q<heads = 4, head_dim = 20, f16>
  // expected-error @+1 {{the prefill kernel generator needs head_dim a multiple of 8 from 16 to 256}}
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64, tiles = #attn.tiles<q = 16, kv = 32, warps = 1, stages = 2>} : !attn.ragged_q<heads = 4, head_dim = 20, f16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 20, f16>
      -> tensor<?x4x20xf16>, tensor<?x4xf32>
  return %o, %l : tensor<?x4x20xf16>, tensor<?x4xf32>
}
