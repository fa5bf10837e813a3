// RUN: flashir-opt %s -split-input-file -attn-import-variants -convert-attn-to-gpu="warps=4 design=simt" -verify-diagnostics | FileCheck %s
// RUN: flashir-opt %s -split-input-file -attn-import-variants -convert-attn-to-gpu="warps=4 chip=sm_75" -verify-diagnostics | FileCheck %s --check-prefix=TURING

!q    = !attn.ragged_q<heads = 8, head_dim = 128, bf16>
!kv   = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, bf16>
!pool = tensor<?x16x2x128xbf16>

// One kernel per attention, in a gpu.module of a gpu.container_module; the
// attn program stays (it is the CPU reference). Arguments: q, qo_indptr,
// K and V pools, the page table, out, lse, the K/V tensor maps (read only
// by kernels with tensor copies), then the parameters; one
// 16-byte aligned workgroup buffer (cp.async ring, then the warps' states);
// 128 threads.
// CHECK: module attributes {gpu.container_module}
// CHECK: func.func @decode
// CHECK: attn.attention @soft_cap
// CHECK: gpu.module @flashir_kernels
// CHECK: gpu.func @decode_decode_0(%{{.*}}: memref<?x8x128xbf16>, %{{.*}}: memref<?xi32>, %{{.*}}: memref<?x16x2x128xbf16>, %{{.*}}: memref<?x16x2x128xbf16>, %{{.*}}: memref<?xi32>, %{{.*}}: memref<?xi32>, %{{.*}}: memref<?xi32>, %{{.*}}: memref<?x8x128xbf16>, %{{.*}}: memref<?x8xf32>, %{{.*}}: memref<2x16xi64>, %{{.*}}: f32) workgroup(%{{.*}} : memref<32768xi8, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}) kernel
// CHECK-SAME: attn.launch = #attn.launch<kind = decode, grid = "requests x num_kv_heads", block = 128, variant = @soft_cap, args = ["q", "qo_indptr", "k_pool", "v_pool", "indptr", "indices", "last_page_len", "out", "lse", "kv_maps", "cap"], stages = 4, unroll = 2>
// CHECK-SAME: known_block_size = array<i32: 128, 1, 1>
// The hook's division by the cap becomes a multiplication by its reciprocal,
// computed once on entry.
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %[[RCAP:.*]] = arith.divf %[[ONE]], %[[CAP:.*]] : f32
// CHECK: gpu.block_id x
// CHECK: gpu.block_id y
// CHECK: memref.view {{.*}} to memref<4x4x132xf32, #gpu.address_space<workgroup>>
// CHECK: memref.view {{.*}} to memref<4x4x4x32x8xbf16, #gpu.address_space<workgroup>>
// The prologue fills 3 of the 4 stages: 16-byte cp.async copies of K and V
// rows found through the page table, one group per stage.
// CHECK: nvgpu.device_async_copy %{{.*}}, 8 {bypassL1} : memref<?x16x2x128xbf16> to memref<4x4x4x32x8xbf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_create_group
// CHECK: nvgpu.device_async_create_group
// CHECK: nvgpu.device_async_create_group
// The main loop issues stage it + 3, then waits for stage it.
// CHECK: scf.for
// CHECK: nvgpu.device_async_copy
// CHECK: nvgpu.device_async_create_group
// CHECK: nvgpu.device_async_wait %{{.*}} {numGroups = 3 : i32}
// CHECK: vector.load %{{.*}} {alignment = 16 : i64} : memref<4x4x4x32x8xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// A key's 4 scores: fma chains, then a transposing butterfly over the key's
// 16 lanes (rows halve at offsets 8 and 4, then plain steps 2 and 1).
// CHECK: math.fma
// CHECK: arith.select
// CHECK: gpu.shuffle  xor %{{.*}}, %c8_i32{{[_0-9]*}}, %c32_i32{{.*}} : f32
// CHECK: gpu.shuffle  xor %{{.*}}, %c4_i32{{[_0-9]*}}, %c32_i32{{.*}} : f32
// CHECK: gpu.shuffle  xor %{{.*}}, %c2_i32{{[_0-9]*}}, %c32_i32{{.*}} : f32
// CHECK: gpu.shuffle  xor %{{.*}}, %c1_i32{{[_0-9]*}}, %c32_i32{{.*}} : f32
// The inlined soft-cap hook on the lane's own row, natural-domain logits:
// cap * tanh(s * (1 / cap)) with the hardware tanh.approx.f32; hook math
// may contract.
// CHECK: arith.mulf %{{.*}}, %[[RCAP]] : f32
// CHECK-NEXT: llvm.inline_asm asm_dialect = att "tanh.approx.f32 $0, $1;", "=f,f"
// CHECK-NEXT: arith.mulf %{{.*}}, %[[CAP]] fastmath<contract> : f32
// Base-2 exponentials; rescale factors and probabilities from the rows'
// owner lanes.
// CHECK: math.exp2
// CHECK: gpu.shuffle  idx
// CHECK: vector.fma
// CHECK: gpu.barrier
// 1 / l differs per query row (defined in the row loop): still a division.
// CHECK: arith.divf %{{.*}}, %{{.*}} : f32
// CHECK: vector.store %{{.*}} : memref<?x8x128xbf16>, vector<8xbf16>

// sm_75 has no cp.async: the next iteration's K/V are loaded into registers.
// TURING-LABEL: gpu.func @decode_decode_0
// TURING-SAME: #attn.launch<kind = decode,
// TURING-SAME: "kv_maps", "cap"], unroll = 2>
// TURING-NOT: nvgpu.device_async_copy
// TURING: vector.load %{{.*}} {alignment = 16 : i64} : memref<?x16x2x128xbf16>, vector<8xbf16>
// TURING: scf.for
// TURING: vector.load %{{.*}} {alignment = 16 : i64} : memref<?x16x2x128xbf16>, vector<8xbf16>
// TURING: gpu.shuffle  xor
func.func @decode(%k: !pool, %v: !pool, %ip: tensor<?xi32>, %ix: tensor<?xi32>,
                  %lp: tensor<?xi32>, %qs: tensor<?x8x128xbf16>,
                  %qo: tensor<?xi32>, %cap: f32)
    -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %v, %ip, %ix, %lp : !pool, !pool -> !kv
  %q = attn.ragged_q %qs, %qo : tensor<?x8x128xbf16> -> !q
  %o, %l = attn.attention @soft_cap(%q, %kv) params(%cap : f32)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64} : !q, !kv
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>
}

// -----

!q    = !attn.ragged_q<heads = 2, head_dim = 12, f16>
!kv   = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 12, f16>
!pool = tensor<?x16x2x12xf16>

// What the decode generator does not cover is a diagnostic: rows of 16-byte
// pieces.
func.func @head_dim_12(%k: !pool, %ip: tensor<?xi32>, %qs: tensor<?x2x12xf16>) {
  %kv = attn.paged_kv %k, %k, %ip, %ip, %ip : !pool, !pool -> !kv
  %q = attn.ragged_q %qs, %ip : tensor<?x2x12xf16> -> !q
  // expected-error @+1 {{the decode kernel generator needs head_dim a multiple of 8 from 16 to 256}}
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 2 : i64, num_kv_heads = 2 : i64} : !q, !kv
      -> tensor<?x2x12xf16>, tensor<?x2xf32>
  return
}

// -----

!q    = !attn.ragged_q<heads = 2, head_dim = 64, f16>
!kv   = !attn.paged_kv<page_size = 16, layout = nhd, heads = 1, head_dim = 64, f16>
!pool = tensor<?x16x1x64xf16>

// Sigmoid: p = 1 / (1 + 2^-x) per key (the approximate reciprocal), no
// maximum.
// CHECK-LABEL: gpu.func @sigmoid_case_decode_
// CHECK: %[[NEG:.*]] = arith.negf
// CHECK: %[[POW:.*]] = llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"(%[[NEG]])
// CHECK: %[[DEN:.*]] = arith.addf %{{.*}}, %[[POW]]
// CHECK: nvvm.rcp.approx.ftz.f %[[DEN]] : f32
func.func @sigmoid_case(%k: !pool, %ip: tensor<?xi32>, %qs: tensor<?x2x64xf16>, %b: f32) {
  %kv = attn.paged_kv %k, %k, %ip, %ip, %ip : !pool, !pool -> !kv
  %q = attn.ragged_q %qs, %ip : tensor<?x2x64xf16> -> !q
  %o, %l = attn.attention @sigmoid(%q, %kv) params(%b : f32)
      {num_qo_heads = 2 : i64, num_kv_heads = 1 : i64} : !q, !kv
      -> tensor<?x2x64xf16>, tensor<?x2xf32>
  return
}

// -----

!q    = !attn.ragged_q<heads = 16, head_dim = 64, f16>
!kv   = !attn.paged_kv<page_size = 16, layout = nhd, heads = 1, head_dim = 64, f16>
!pool = tensor<?x16x1x64xf16>

func.func @group16(%k: !pool, %ip: tensor<?xi32>, %qs: tensor<?x16x64xf16>) {
  %kv = attn.paged_kv %k, %k, %ip, %ip, %ip : !pool, !pool -> !kv
  %q = attn.ragged_q %qs, %ip : tensor<?x16x64xf16> -> !q
  // expected-error @+1 {{the decode kernel generator needs at most 8 query heads per KV head in the CUDA-core kernel at head_dim 64 (the tensor-core kernel takes more)}}
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 16 : i64, num_kv_heads = 1 : i64} : !q, !kv
      -> tensor<?x16x64xf16>, tensor<?x16xf32>
  return
}

// -----

!q    = !attn.ragged_q<heads = 2, head_dim = 64, f16>
!kv   = !attn.paged_kv<page_size = 16, layout = nhd, heads = 1, head_dim = 64, f16>
!pool = tensor<?x16x1x64xf16>

// A buffer parameter is a memref argument; the mask hook's tensor.extract
// becomes a load.
// CHECK-LABEL: gpu.func @custom_mask_case_decode_
// CHECK-SAME: %[[BITS:[a-z0-9]+]]: memref<?xi8>
// CHECK: memref.load %[[BITS]][%{{.*}}] : memref<?xi8>
func.func @custom_mask_case(%k: !pool, %ip: tensor<?xi32>, %qs: tensor<?x2x64xf16>,
                       %bits: tensor<?xi8>, %r: tensor<?xi64>) {
  %kv = attn.paged_kv %k, %k, %ip, %ip, %ip : !pool, !pool -> !kv
  %q = attn.ragged_q %qs, %ip : tensor<?x2x64xf16> -> !q
  %o, %l = attn.attention @custom_mask(%q, %kv)
      params(%bits, %r, %r : tensor<?xi8>, tensor<?xi64>, tensor<?xi64>)
      {num_qo_heads = 2 : i64, num_kv_heads = 1 : i64} : !q, !kv
      -> tensor<?x2x64xf16>, tensor<?x2xf32>
  return
}

