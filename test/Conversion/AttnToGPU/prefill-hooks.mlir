// RUN: split-file %s %t
// RUN: flashir-opt %t/all.mlir -attn-import-variants -convert-attn-to-gpu="chip=sm_80" | FileCheck %s
// RUN: flashir-opt %t/f16.mlir -attn-import-variants -convert-attn-to-gpu="chip=sm_75" | FileCheck %s --check-prefix=TURING
// RUN: flashir-opt %t/split.mlir -attn-import-variants -attn-split-kv=chunk-size=0 "-convert-attn-to-gpu=chip=sm_80 split-prefill=true" | FileCheck %s --check-prefix=SPLIT
// RUN: flashir-bundle %t/all.mlir -o %t/bundle --chips=sm_80,sm_86,sm_89,sm_90a --ptxas=%{ptxas} > /dev/null
// RUN: FileCheck %s --input-file=%t/bundle/manifest.json --check-prefix=MANIFEST
// RUN: flashir-bundle %t/f16.mlir -o %t/sm75 --chips=sm_75 --ptxas=%{ptxas} > /dev/null
// RUN: flashir-bundle %t/split.mlir -o %t/split --chips=sm_80,sm_90a --ptxas=%{ptxas} --schedule='attn-import-variants,attn-split-kv{chunk-size=0}' --split-prefill > /dev/null
// RUN: FileCheck %s --input-file=%t/split/manifest.json --check-prefix=SPLITMANIFEST

// Variant hooks on the tensor-core prefill kernel: RoPE written as a variant
// (query and key hooks), the sigmoid reduction, a buffer parameter
// (custom_mask's bit mask) and an output hook.
//  - The query hook transforms Q as it is loaded: the lanes' A fragment
//    pairs (16 rows per warp, Q in registers) or the 16-byte pieces of the
//    shared Q tile (32 rows per warp), each with its partners half a head
//    away read from global memory.
//  - The key hook transforms each K tile in shared memory in place: after
//    the barrier that makes the tile visible, every thread takes units of 8
//    columns (4 where D/2 is an odd multiple of 4, d72) and their partners
//    D/2 away (each the other's x_rot, so no thread reads what another
//    writes), then a second barrier precedes the ldmatrix reads.
//  - Sigmoid: p = 1 / (1 + 2^-x) with no running maximum (no lazy rescale,
//    no vote), l = sum p; the final rows are O unnormalised.
//  - custom_mask's bits are a memref<?xi8>; its mask is a packed-bit mask
//    (bit rowBit + kpos of the buffer): before the key loop the rows'
//    64-key windows (three 4-byte loads and two funnel shifts, or guarded
//    byte loads) become the CTA's tile classes in workgroup memory (ballots
//    and atomics of lane 0), CTAs start with the last q tile, the loop runs over the visible tiles only, skips
//    the arithmetic of tiles without a visible key and tests bits in
//    registers. A mask with a byte per key (@byte_mask) is inlined per score,
//    its positions clamped to the keys and rows that exist.
//  - The output hook applies to the final rows; a split chunk's partial
//    states stay normalised (its merge kernel applies sigmoid and the hook).

//--- all.mlir

// Rotary position embedding (rotate-half, as in Llama) written as a
// variant: q and k rotated by (position + offset) * theta^(-2i/D) for column
// pair (i, i + D/2); log2(theta), D/2 and the per-request position offset
// are parameters.
attn.variant @rope reduction softmax
    params(log2_theta : f32 scalar, half_dim : i32 scalar, offset : i32 per_request) {
  query(%x: f32, %xr: f32, %d: index, %pos: index, %head: index,
        %lt: f32, %half: i32, %off: i32) {
    %di = arith.index_cast %d : index to i32
    %i = arith.remui %di, %half : i32
    %if = arith.uitofp %i : i32 to f32
    %hf = arith.uitofp %half : i32 to f32
    %frac = arith.divf %if, %hf : f32
    %e = arith.mulf %frac, %lt : f32
    %ne = arith.negf %e : f32
    %freq = math.exp2 %ne : f32
    %p = arith.index_cast %pos : index to i32
    %pp = arith.addi %p, %off : i32
    %pf = arith.sitofp %pp : i32 to f32
    %a = arith.mulf %pf, %freq : f32
    %c = math.cos %a : f32
    %s = math.sin %a : f32
    %first = arith.cmpi ult, %di, %half : i32
    %nxr = arith.negf %xr : f32
    %rot = arith.select %first, %nxr, %xr : f32
    %xc = arith.mulf %x, %c : f32
    %rs = arith.mulf %rot, %s : f32
    %y = arith.addf %xc, %rs : f32
    attn.yield %y : f32
  }
  key(%x: f32, %xr: f32, %d: index, %pos: index, %head: index,
      %lt: f32, %half: i32, %off: i32) {
    %di = arith.index_cast %d : index to i32
    %i = arith.remui %di, %half : i32
    %if = arith.uitofp %i : i32 to f32
    %hf = arith.uitofp %half : i32 to f32
    %frac = arith.divf %if, %hf : f32
    %e = arith.mulf %frac, %lt : f32
    %ne = arith.negf %e : f32
    %freq = math.exp2 %ne : f32
    %p = arith.index_cast %pos : index to i32
    %pp = arith.addi %p, %off : i32
    %pf = arith.sitofp %pp : i32 to f32
    %a = arith.mulf %pf, %freq : f32
    %c = math.cos %a : f32
    %s = math.sin %a : f32
    %first = arith.cmpi ult, %di, %half : i32
    %nxr = arith.negf %xr : f32
    %rot = arith.select %first, %nxr, %xr : f32
    %xc = arith.mulf %x, %c : f32
    %rs = arith.mulf %rot, %s : f32
    %y = arith.addf %xc, %rs : f32
    attn.yield %y : f32
  }
}

// The output hook: o * 0.5 (no parameters).
attn.variant @scaled_out reduction softmax {
  output(%o: f32, %d: index, %head: index) {
    %half = arith.constant 0.5 : f32
    %r = arith.mulf %o, %half : f32
    attn.yield %r : f32
  }
}

// CHECK-LABEL: gpu.func @rope_d128_bf16_prefill_0
// The query hook on the A fragments (cos / sin of the rotation), before the
// key loop.
// CHECK: llvm.call_intrinsic "llvm.nvvm.cos.approx.f"
// CHECK: scf.for
// CHECK: nvvm.cp.async.wait.group 0
// CHECK-NEXT: gpu.barrier
// The key hook: a unit and its partner from the landed slot, transformed,
// written back; a barrier; then the ldmatrix reads.
// CHECK: vector.load [[RING:%[a-z0-9_]+]]{{\[}}[[SLOT:%[a-z0-9_]+]], %c0{{[_0-9]*}}, [[KEY:%[a-z0-9_]+]], [[COL:%[a-z0-9_]+]]] {{.*}} : memref<2x2x64x136xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// CHECK: vector.load [[RING]]{{\[}}[[SLOT]], %c0{{[_0-9]*}}, [[KEY]], [[PARTNER:%[a-z0-9_]+]]] {{.*}} : memref<2x2x64x136xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// CHECK: llvm.call_intrinsic "llvm.nvvm.cos.approx.f"
// CHECK: vector.store %{{.*}}, [[RING]]{{\[}}[[SLOT]], %c0{{[_0-9]*}}, [[KEY]], [[COL]]]
// CHECK: vector.store %{{.*}}, [[RING]]{{\[}}[[SLOT]], %c0{{[_0-9]*}}, [[KEY]], [[PARTNER]]]
// CHECK: gpu.barrier
// CHECK-NEXT: arith.index_cast
// CHECK: nvvm.ldmatrix
// CHECK: nvvm.mma.sync

// d72: units of 4 columns (D/2 = 36); Q in shared memory (32 rows per warp),
// each piece hooked and stored by its thread.
// CHECK-LABEL: gpu.func @rope_d72_f16_prefill_1
// CHECK: llvm.call_intrinsic "llvm.nvvm.sin.approx.f"
// CHECK: vector.store %{{.*}} : memref<128x88xf16, #gpu.address_space<workgroup>>, vector<8xf16>
// CHECK: scf.for
// CHECK: gpu.barrier
// CHECK: vector.load {{.*}} : memref<2x2x64x88xf16, #gpu.address_space<workgroup>>, vector<4xf16>
// CHECK: vector.store {{.*}} : memref<2x2x64x88xf16, #gpu.address_space<workgroup>>, vector<4xf16>
// CHECK: gpu.barrier
// CHECK: nvvm.ldmatrix

// An HND pool (memref-indexed copies, the staged loop) with one stage.
// CHECK-LABEL: gpu.func @rope_d64_hnd_s1_f16_prefill_2
// CHECK: scf.for
// CHECK: gpu.barrier
// CHECK: vector.store {{.*}} : memref<1x2x64x72xf16, #gpu.address_space<workgroup>>, vector<8xf16>
// CHECK: gpu.barrier
// CHECK: nvvm.ldmatrix

// CHECK-LABEL: gpu.func @sigmoid_d64_f16_prefill_3
// CHECK: scf.for
// CHECK-NOT: nvvm.vote.sync
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK: arith.divf %cst{{.*}}, %{{.*}} : f32
// CHECK-NOT: nvvm.vote.sync
// Final rows: O / l times l (unnormalised).
// CHECK: %[[L:.*]] = vector.broadcast %{{.*}} : f32 to vector<2xf32>
// CHECK: arith.mulf %{{.*}}, %[[L]] : vector<2xf32>

// CHECK-LABEL: gpu.func @custom_mask_d128_bf16_prefill_4
// CHECK-SAME: %{{.*}}: memref<?xi8>, %{{.*}}: memref<?xi64>, %{{.*}}: memref<?xi64>) workgroup(%[[CLASSES:.*]] : memref<130xi32, #gpu.address_space<workgroup>>)
// CHECK: gpu.grid_dim
// CHECK: memref.extract_aligned_pointer_as_index %{{.*}} : memref<?xi8>
// CHECK: memref.store %{{.*}}, %[[CLASSES]]
// CHECK: gpu.barrier
// CHECK: scf.for
// CHECK: llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr<1> -> i32
// CHECK: memref.load %{{.*}}[%{{.*}}] : memref<?xi8>
// CHECK: llvm.intr.fshr
// CHECK: nvvm.vote.sync  ballot
// CHECK: nvvm.vote.sync  ballot
// CHECK: llvm.intr.cttz
// CHECK: llvm.intr.ctlz
// CHECK: memref.atomic_rmw andi %{{.*}}, %[[CLASSES]]
// CHECK: memref.atomic_rmw ori %{{.*}}, %[[CLASSES]]
// CHECK: memref.atomic_rmw mins %{{.*}}, %[[CLASSES]]
// CHECK: memref.atomic_rmw maxs %{{.*}}, %[[CLASSES]]
// CHECK: gpu.barrier
// CHECK: memref.load %[[CLASSES]]
// CHECK: scf.for
// CHECK: memref.load %[[CLASSES]]
// CHECK: scf.if
// CHECK: nvvm.mma.sync
// CHECK: memref.load %[[CLASSES]]
// CHECK: llvm.intr.fshr
// CHECK: } else {
// The skipped tile: its copies, the state as carried.
// CHECK: nvvm.cp.async.shared.global
// CHECK: scf.yield %arg

// CHECK-LABEL: gpu.func @scaled_out_d96_f16_prefill_5
// CHECK: scf.for
// CHECK: } {{.*}}
// The output hook on each element of the lane's final pairs.
// CHECK: arith.mulf %{{.*}}, %cst{{.*}} : f32
// CHECK: arith.mulf %{{.*}}, %cst{{.*}} : f32
// CHECK: vector.from_elements
// CHECK: arith.truncf %{{.*}} : vector<2xf32> to vector<2xf16>

// One stage, raw copies (one K and one V slot): after the top wait and
// barrier tile it's V copies go out, then the key hook on the K slot and a
// barrier before the ldmatrix reads; tile it + 1's K copies wait for the
// barrier after Q.K^T.
// CHECK-LABEL: gpu.func @rope_d80_s1_bf16_prefill_6
// CHECK: scf.for
// CHECK: nvvm.cp.async.wait.group 0
// CHECK-NEXT: gpu.barrier
// CHECK: nvvm.cp.async.shared.global
// CHECK: nvvm.cp.async.commit.group
// CHECK: vector.store {{.*}} : memref<1x2x64x88xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// CHECK: gpu.barrier
// CHECK: nvvm.ldmatrix
// CHECK: nvvm.cp.async.wait.group 0
// CHECK-NEXT: gpu.barrier
// CHECK: nvvm.cp.async.shared.global

// CHECK-LABEL: gpu.func @byte_mask_d64_bf16_prefill_7
// CHECK-SAME: %{{.*}}: memref<?xi8>, %{{.*}}: memref<?xi64>, %{{.*}}: memref<?xi64>) kernel
// CHECK-NOT: nvvm.vote.sync  ballot
// CHECK: scf.for
// The hook reads a buffer: its key position is clamped to the range's last.
// CHECK: arith.minsi
// CHECK: memref.load %{{.*}}[%{{.*}}] : memref<?xi8>
// CHECK: nvvm.mma.sync

// MANIFEST-DAG: "name": "rope_d128_bf16_prefill_0"
// MANIFEST-DAG: "variant": "rope"
// MANIFEST-DAG: "variant": "sigmoid"
// MANIFEST-DAG: "variant": "custom_mask"
// MANIFEST-DAG: "variant": "scaled_out"
// MANIFEST-DAG: "param_kind": "buffer"

func.func @rope_d128_bf16(%k: tensor<?x16x2x128xbf16>, %v: tensor<?x16x2x128xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x8x128xbf16>,
    %qo: tensor<?xi32>, %log2_theta: f32, %half_dim: i32, %offset: tensor<?xi32>) -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x2x128xbf16>, tensor<?x16x2x128xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x8x128xbf16> -> !attn.ragged_q<heads = 8, head_dim = 128, bf16>
  %o, %l = attn.attention @rope(%q, %kv) params(%log2_theta, %half_dim, %offset : f32, i32, tensor<?xi32>)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64, tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 8, head_dim = 128, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, bf16>
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>
}

func.func @rope_d72_f16(%k: tensor<?x16x2x72xf16>, %v: tensor<?x16x2x72xf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x6x72xf16>,
    %qo: tensor<?xi32>, %log2_theta: f32, %half_dim: i32, %offset: tensor<?xi32>) -> (tensor<?x6x72xf16>, tensor<?x6xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x2x72xf16>, tensor<?x16x2x72xf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 72, f16>
  %q = attn.ragged_q %queries, %qo : tensor<?x6x72xf16> -> !attn.ragged_q<heads = 6, head_dim = 72, f16>
  %o, %l = attn.attention @rope(%q, %kv) params(%log2_theta, %half_dim, %offset : f32, i32, tensor<?xi32>)
      {num_qo_heads = 6 : i64, num_kv_heads = 2 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 6, head_dim = 72, f16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 72, f16>
      -> tensor<?x6x72xf16>, tensor<?x6xf32>
  return %o, %l : tensor<?x6x72xf16>, tensor<?x6xf32>
}

func.func @rope_d64_hnd_s1_f16(%k: tensor<?x4x16x64xf16>, %v: tensor<?x4x16x64xf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x4x64xf16>,
    %qo: tensor<?xi32>, %log2_theta: f32, %half_dim: i32, %offset: tensor<?xi32>) -> (tensor<?x4x64xf16>, tensor<?x4xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x4x16x64xf16>, tensor<?x4x16x64xf16> -> !attn.paged_kv<page_size = 16, layout = hnd, heads = 4, head_dim = 64, f16>
  %q = attn.ragged_q %queries, %qo : tensor<?x4x64xf16> -> !attn.ragged_q<heads = 4, head_dim = 64, f16>
  %o, %l = attn.attention @rope(%q, %kv) params(%log2_theta, %half_dim, %offset : f32, i32, tensor<?xi32>)
      {num_qo_heads = 4 : i64, num_kv_heads = 4 : i64, tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 1>} : !attn.ragged_q<heads = 4, head_dim = 64, f16>, !attn.paged_kv<page_size = 16, layout = hnd, heads = 4, head_dim = 64, f16>
      -> tensor<?x4x64xf16>, tensor<?x4xf32>
  return %o, %l : tensor<?x4x64xf16>, tensor<?x4xf32>
}

func.func @sigmoid_d64_f16(%k: tensor<?x16x2x64xf16>, %v: tensor<?x16x2x64xf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x8x64xf16>,
    %qo: tensor<?xi32>, %bias: f32) -> (tensor<?x8x64xf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x2x64xf16>, tensor<?x16x2x64xf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 64, f16>
  %q = attn.ragged_q %queries, %qo : tensor<?x8x64xf16> -> !attn.ragged_q<heads = 8, head_dim = 64, f16>
  %o, %l = attn.attention @sigmoid(%q, %kv) params(%bias : f32)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64, tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 8, head_dim = 64, f16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 64, f16>
      -> tensor<?x8x64xf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x64xf16>, tensor<?x8xf32>
}

func.func @custom_mask_d128_bf16(%k: tensor<?x16x2x128xbf16>, %v: tensor<?x16x2x128xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x8x128xbf16>,
    %qo: tensor<?xi32>, %bits: tensor<?xi8>, %row0: tensor<?xi64>, %stride: tensor<?xi64>) -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x2x128xbf16>, tensor<?x16x2x128xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x8x128xbf16> -> !attn.ragged_q<heads = 8, head_dim = 128, bf16>
  %o, %l = attn.attention @custom_mask(%q, %kv) params(%bits, %row0, %stride : tensor<?xi8>, tensor<?xi64>, tensor<?xi64>)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64, tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 8, head_dim = 128, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, bf16>
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>
}

func.func @scaled_out_d96_f16(%k: tensor<?x16x4x96xf16>, %v: tensor<?x16x4x96xf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x4x96xf16>,
    %qo: tensor<?xi32>) -> (tensor<?x4x96xf16>, tensor<?x4xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x4x96xf16>, tensor<?x16x4x96xf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 4, head_dim = 96, f16>
  %q = attn.ragged_q %queries, %qo : tensor<?x4x96xf16> -> !attn.ragged_q<heads = 4, head_dim = 96, f16>
  %o, %l = attn.attention @scaled_out(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 4 : i64, tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 4, head_dim = 96, f16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 4, head_dim = 96, f16>
      -> tensor<?x4x96xf16>, tensor<?x4xf32>
  return %o, %l : tensor<?x4x96xf16>, tensor<?x4xf32>
}

func.func @rope_d80_s1_bf16(%k: tensor<?x16x2x80xbf16>, %v: tensor<?x16x2x80xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x4x80xbf16>,
    %qo: tensor<?xi32>, %log2_theta: f32, %half_dim: i32, %offset: tensor<?xi32>) -> (tensor<?x4x80xbf16>, tensor<?x4xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x2x80xbf16>, tensor<?x16x2x80xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 80, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x4x80xbf16> -> !attn.ragged_q<heads = 4, head_dim = 80, bf16>
  %o, %l = attn.attention @rope(%q, %kv) params(%log2_theta, %half_dim, %offset : f32, i32, tensor<?xi32>)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64, tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 1>} : !attn.ragged_q<heads = 4, head_dim = 80, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 80, bf16>
      -> tensor<?x4x80xbf16>, tensor<?x4xf32>
  return %o, %l : tensor<?x4x80xbf16>, tensor<?x4xf32>
}

// A byte per key (not a packed-bit mask): inlined per score.
attn.variant @byte_mask reduction softmax
    params(bytes : tensor<?xi8> buffer, row0 : i64 per_request,
           stride : i64 per_request) {
  mask(%qpos: index, %kpos: index, %head: index, %bytes: tensor<?xi8>,
       %row0: i64, %stride: i64) {
    %q = arith.index_cast %qpos : index to i64
    %k = arith.index_cast %kpos : index to i64
    %rowStart = arith.muli %q, %stride : i64
    %base = arith.addi %row0, %rowStart : i64
    %at = arith.addi %base, %k : i64
    %i = arith.index_cast %at : i64 to index
    %byte = tensor.extract %bytes[%i] : tensor<?xi8>
    %c0 = arith.constant 0 : i8
    %keep = arith.cmpi ne, %byte, %c0 : i8
    attn.yield %keep : i1
  }
}

func.func @byte_mask_d64_bf16(%k: tensor<?x16x2x64xbf16>, %v: tensor<?x16x2x64xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x8x64xbf16>,
    %qo: tensor<?xi32>, %bytes: tensor<?xi8>, %row0: tensor<?xi64>, %stride: tensor<?xi64>) -> (tensor<?x8x64xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x2x64xbf16>, tensor<?x16x2x64xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 64, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x8x64xbf16> -> !attn.ragged_q<heads = 8, head_dim = 64, bf16>
  %o, %l = attn.attention @byte_mask(%q, %kv) params(%bytes, %row0, %stride : tensor<?xi8>, tensor<?xi64>, tensor<?xi64>)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64, tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 8, head_dim = 64, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 64, bf16>
      -> tensor<?x8x64xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x64xbf16>, tensor<?x8xf32>
}

//--- f16.mlir

// sm_75: m16n8k8 products, K/V tiles by plain loads and stores into one
// slot; the hooks as on sm_80.
// Rotary position embedding (rotate-half, as in Llama) written as a
// variant: q and k rotated by (position + offset) * theta^(-2i/D) for column
// pair (i, i + D/2); log2(theta), D/2 and the per-request position offset
// are parameters.
attn.variant @rope reduction softmax
    params(log2_theta : f32 scalar, half_dim : i32 scalar, offset : i32 per_request) {
  query(%x: f32, %xr: f32, %d: index, %pos: index, %head: index,
        %lt: f32, %half: i32, %off: i32) {
    %di = arith.index_cast %d : index to i32
    %i = arith.remui %di, %half : i32
    %if = arith.uitofp %i : i32 to f32
    %hf = arith.uitofp %half : i32 to f32
    %frac = arith.divf %if, %hf : f32
    %e = arith.mulf %frac, %lt : f32
    %ne = arith.negf %e : f32
    %freq = math.exp2 %ne : f32
    %p = arith.index_cast %pos : index to i32
    %pp = arith.addi %p, %off : i32
    %pf = arith.sitofp %pp : i32 to f32
    %a = arith.mulf %pf, %freq : f32
    %c = math.cos %a : f32
    %s = math.sin %a : f32
    %first = arith.cmpi ult, %di, %half : i32
    %nxr = arith.negf %xr : f32
    %rot = arith.select %first, %nxr, %xr : f32
    %xc = arith.mulf %x, %c : f32
    %rs = arith.mulf %rot, %s : f32
    %y = arith.addf %xc, %rs : f32
    attn.yield %y : f32
  }
  key(%x: f32, %xr: f32, %d: index, %pos: index, %head: index,
      %lt: f32, %half: i32, %off: i32) {
    %di = arith.index_cast %d : index to i32
    %i = arith.remui %di, %half : i32
    %if = arith.uitofp %i : i32 to f32
    %hf = arith.uitofp %half : i32 to f32
    %frac = arith.divf %if, %hf : f32
    %e = arith.mulf %frac, %lt : f32
    %ne = arith.negf %e : f32
    %freq = math.exp2 %ne : f32
    %p = arith.index_cast %pos : index to i32
    %pp = arith.addi %p, %off : i32
    %pf = arith.sitofp %pp : i32 to f32
    %a = arith.mulf %pf, %freq : f32
    %c = math.cos %a : f32
    %s = math.sin %a : f32
    %first = arith.cmpi ult, %di, %half : i32
    %nxr = arith.negf %xr : f32
    %rot = arith.select %first, %nxr, %xr : f32
    %xc = arith.mulf %x, %c : f32
    %rs = arith.mulf %rot, %s : f32
    %y = arith.addf %xc, %rs : f32
    attn.yield %y : f32
  }
}

// The output hook: o * 0.5 (no parameters).
attn.variant @scaled_out reduction softmax {
  output(%o: f32, %d: index, %head: index) {
    %half = arith.constant 0.5 : f32
    %r = arith.mulf %o, %half : f32
    attn.yield %r : f32
  }
}

// TURING-LABEL: gpu.func @rope_d72_f16_prefill_0
// TURING-NOT: nvvm.cp.async
// TURING: scf.for
// TURING: gpu.barrier
// TURING: vector.store {{.*}} : memref<1x2x64x88xf16, #gpu.address_space<workgroup>>, vector<4xf16>
// TURING: gpu.barrier
// TURING: nvvm.mma.sync {{.*}} shape = #nvvm.shape<m = 16, n = 8, k = 8>
// TURING-LABEL: gpu.func @sigmoid_d64_f16_prefill_1
// TURING-NOT: nvvm.vote.sync
// TURING-LABEL: gpu.func @scaled_out_d96_f16_prefill_2

func.func @rope_d72_f16(%k: tensor<?x16x2x72xf16>, %v: tensor<?x16x2x72xf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x6x72xf16>,
    %qo: tensor<?xi32>, %log2_theta: f32, %half_dim: i32, %offset: tensor<?xi32>) -> (tensor<?x6x72xf16>, tensor<?x6xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x2x72xf16>, tensor<?x16x2x72xf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 72, f16>
  %q = attn.ragged_q %queries, %qo : tensor<?x6x72xf16> -> !attn.ragged_q<heads = 6, head_dim = 72, f16>
  %o, %l = attn.attention @rope(%q, %kv) params(%log2_theta, %half_dim, %offset : f32, i32, tensor<?xi32>)
      {num_qo_heads = 6 : i64, num_kv_heads = 2 : i64, tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 6, head_dim = 72, f16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 72, f16>
      -> tensor<?x6x72xf16>, tensor<?x6xf32>
  return %o, %l : tensor<?x6x72xf16>, tensor<?x6xf32>
}

func.func @sigmoid_d64_f16(%k: tensor<?x16x2x64xf16>, %v: tensor<?x16x2x64xf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x8x64xf16>,
    %qo: tensor<?xi32>, %bias: f32) -> (tensor<?x8x64xf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x2x64xf16>, tensor<?x16x2x64xf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 64, f16>
  %q = attn.ragged_q %queries, %qo : tensor<?x8x64xf16> -> !attn.ragged_q<heads = 8, head_dim = 64, f16>
  %o, %l = attn.attention @sigmoid(%q, %kv) params(%bias : f32)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64, tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 8, head_dim = 64, f16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 64, f16>
      -> tensor<?x8x64xf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x64xf16>, tensor<?x8xf32>
}

func.func @scaled_out_d96_f16(%k: tensor<?x16x4x96xf16>, %v: tensor<?x16x4x96xf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x4x96xf16>,
    %qo: tensor<?xi32>) -> (tensor<?x4x96xf16>, tensor<?x4xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x4x96xf16>, tensor<?x16x4x96xf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 4, head_dim = 96, f16>
  %q = attn.ragged_q %queries, %qo : tensor<?x4x96xf16> -> !attn.ragged_q<heads = 4, head_dim = 96, f16>
  %o, %l = attn.attention @scaled_out(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 4 : i64, tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 4, head_dim = 96, f16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 4, head_dim = 96, f16>
      -> tensor<?x4x96xf16>, tensor<?x4xf32>
  return %o, %l : tensor<?x4x96xf16>, tensor<?x4xf32>
}

//--- split.mlir

// Split-KV prefill: a chunk that is its request's only one writes final rows
// (sigmoid: unnormalised; the output hook), any other one normalised
// partial states (lse = log l, m = 0 for sigmoid) for the merge kernel,
// which applies both to the merged rows. The staged O tile holds either
// form, chosen by the chunk.
// SPLIT-LABEL: gpu.func @split_sigmoid_d64_bf16_prefill_0
// SPLIT: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// SPLIT: arith.divf
// SPLIT: math.log
// SPLIT: arith.mulf %{{.*}}, %{{.*}} : vector<2xf32>
// SPLIT-NEXT: %[[FINAL:.*]] = arith.truncf %{{.*}} : vector<2xf32> to vector<2xbf16>
// SPLIT: %[[PARTIAL:.*]] = arith.truncf %{{.*}} : vector<2xf32> to vector<2xbf16>
// SPLIT: arith.select %{{.*}}, %[[FINAL]], %[[PARTIAL]] : vector<2xbf16>
// SPLIT-LABEL: gpu.func @split_sigmoid_d64_bf16_merge_0
// SPLIT: math.exp
// SPLIT-LABEL: gpu.func @split_scaled_out_d96_bf16_prefill_1
// SPLIT: math.log
// SPLIT: arith.mulf %{{.*}}, %cst{{.*}} : f32
// SPLIT: %[[FINAL:.*]] = arith.truncf %{{.*}} : vector<2xf32> to vector<2xbf16>
// SPLIT: %[[PARTIAL:.*]] = arith.truncf %{{.*}} : vector<2xf32> to vector<2xbf16>
// SPLIT: arith.select %{{.*}}, %[[FINAL]], %[[PARTIAL]] : vector<2xbf16>
// SPLIT-LABEL: gpu.func @split_scaled_out_d96_bf16_merge_1
// SPLIT: arith.mulf %{{.*}}, %cst{{.*}} : f32
// SPLITMANIFEST-DAG: "name": "split_sigmoid_d64_bf16_prefill_0"
// SPLITMANIFEST-DAG: "merge_kernel": "split_sigmoid_d64_bf16_merge_0"

// The output hook: o * 0.5 (no parameters).
attn.variant @scaled_out reduction softmax {
  output(%o: f32, %d: index, %head: index) {
    %half = arith.constant 0.5 : f32
    %r = arith.mulf %o, %half : f32
    attn.yield %r : f32
  }
}

func.func @split_sigmoid_d64_bf16(%k: tensor<?x16x2x64xbf16>, %v: tensor<?x16x2x64xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x8x64xbf16>,
    %qo: tensor<?xi32>, %bias: f32) -> (tensor<?x8x64xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x2x64xbf16>, tensor<?x16x2x64xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 64, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x8x64xbf16> -> !attn.ragged_q<heads = 8, head_dim = 64, bf16>
  %o, %l = attn.attention @sigmoid(%q, %kv) params(%bias : f32)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64, tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 8, head_dim = 64, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 64, bf16>
      -> tensor<?x8x64xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x64xbf16>, tensor<?x8xf32>
}

func.func @split_scaled_out_d96_bf16(%k: tensor<?x16x4x96xbf16>, %v: tensor<?x16x4x96xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x4x96xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x4x96xbf16>, tensor<?x4xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x4x96xbf16>, tensor<?x16x4x96xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 4, head_dim = 96, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x4x96xbf16> -> !attn.ragged_q<heads = 4, head_dim = 96, bf16>
  %o, %l = attn.attention @scaled_out(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 4 : i64, tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>} : !attn.ragged_q<heads = 4, head_dim = 96, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 4, head_dim = 96, bf16>
      -> tensor<?x4x96xbf16>, tensor<?x4xf32>
  return %o, %l : tensor<?x4x96xbf16>, tensor<?x4xf32>
}
