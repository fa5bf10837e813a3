// RUN: split-file %s %t
// RUN: flashir-opt %t/all.mlir -convert-attn-to-gpu="chip=sm_90a" | FileCheck %s
// RUN: flashir-opt %t/all.mlir -convert-attn-to-gpu="chip=sm_75" | FileCheck %s --check-prefix=SIMT
// RUN: flashir-bundle %t/all.mlir -o %t/bundle --chips=sm_80,sm_86,sm_89,sm_90a --ptxas=%{ptxas} > /dev/null
// RUN: FileCheck %s --input-file=%t/bundle/manifest.json --check-prefix=MANIFEST
// RUN: flashir-bundle %t/f16.mlir -o %t/sm75 --chips=sm_75 --ptxas=%{ptxas} > /dev/null

// Variant hooks on the GPU decode kernels (VariantHooks): RoPE written as a
// variant (query and key hooks, rotate-half), an output hook, the sigmoid
// reduction and a buffer parameter (custom_mask's bit mask), in the
// tensor-core kernel (sm_90a) and the CUDA-core one (sm_75). A key hook
// transforms the K pieces in registers between the load and the mma: at
// head dim 128 a lane's partner piece (column + 64) is its own chunk c + 2;
// at 72 it is read from the tile in shared memory, or shuffled from the
// key group's lane that holds it (CUDA cores). sin / cos are the hardware
// approximations.

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

// CHECK-LABEL: gpu.func @rope_d128_decode_0
// CHECK: llvm.call_intrinsic "llvm.nvvm.cos.approx.f"
// CHECK: llvm.call_intrinsic "llvm.nvvm.sin.approx.f"
// CHECK: nvvm.mma.sync
// CHECK-LABEL: gpu.func @rope_d72_hnd_decode_1
// CHECK-LABEL: gpu.func @sigmoid_d96_decode_2
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK-LABEL: gpu.func @custom_mask_d64_decode_3
// CHECK-SAME: memref<?xi8>
// CHECK-LABEL: gpu.func @scaled_out_d80_decode_4
// CHECK: arith.mulf %{{.*}}, %cst{{.*}} : f32
// SIMT-LABEL: gpu.func @rope_d128_decode_0
// SIMT: gpu.shuffle idx
// SIMT-LABEL: gpu.func @rope_d72_hnd_decode_1
// MANIFEST-DAG: "name": "rope_d128_decode_0"
// MANIFEST-DAG: "variant": "rope"
// MANIFEST-DAG: "variant": "sigmoid"
// MANIFEST-DAG: "variant": "custom_mask"
// MANIFEST-DAG: "param_kind": "buffer"

func.func @rope_d128(%k: tensor<?x16x2x128xbf16>, %v: tensor<?x16x2x128xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x8x128xbf16>,
    %qo: tensor<?xi32>, %log2_theta: f32, %half_dim: i32, %offset: tensor<?xi32>) -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x2x128xbf16>, tensor<?x16x2x128xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x8x128xbf16> -> !attn.ragged_q<heads = 8, head_dim = 128, bf16>
  %o, %l = attn.attention @rope(%q, %kv) params(%log2_theta, %half_dim, %offset : f32, i32, tensor<?xi32>)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64} : !attn.ragged_q<heads = 8, head_dim = 128, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, bf16>
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>
}

func.func @rope_d72_hnd(%k: tensor<?x2x16x72xf16>, %v: tensor<?x2x16x72xf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x6x72xf16>,
    %qo: tensor<?xi32>, %log2_theta: f32, %half_dim: i32, %offset: tensor<?xi32>) -> (tensor<?x6x72xf16>, tensor<?x6xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x2x16x72xf16>, tensor<?x2x16x72xf16> -> !attn.paged_kv<page_size = 16, layout = hnd, heads = 2, head_dim = 72, f16>
  %q = attn.ragged_q %queries, %qo : tensor<?x6x72xf16> -> !attn.ragged_q<heads = 6, head_dim = 72, f16>
  %o, %l = attn.attention @rope(%q, %kv) params(%log2_theta, %half_dim, %offset : f32, i32, tensor<?xi32>)
      {num_qo_heads = 6 : i64, num_kv_heads = 2 : i64} : !attn.ragged_q<heads = 6, head_dim = 72, f16>, !attn.paged_kv<page_size = 16, layout = hnd, heads = 2, head_dim = 72, f16>
      -> tensor<?x6x72xf16>, tensor<?x6xf32>
  return %o, %l : tensor<?x6x72xf16>, tensor<?x6xf32>
}

func.func @sigmoid_d96(%k: tensor<?x5x4x96xf16>, %v: tensor<?x5x4x96xf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x12x96xf16>,
    %qo: tensor<?xi32>, %bias: f32) -> (tensor<?x12x96xf16>, tensor<?x12xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x5x4x96xf16>, tensor<?x5x4x96xf16> -> !attn.paged_kv<page_size = 5, layout = nhd, heads = 4, head_dim = 96, f16>
  %q = attn.ragged_q %queries, %qo : tensor<?x12x96xf16> -> !attn.ragged_q<heads = 12, head_dim = 96, f16>
  %o, %l = attn.attention @sigmoid(%q, %kv) params(%bias : f32)
      {num_qo_heads = 12 : i64, num_kv_heads = 4 : i64} : !attn.ragged_q<heads = 12, head_dim = 96, f16>, !attn.paged_kv<page_size = 5, layout = nhd, heads = 4, head_dim = 96, f16>
      -> tensor<?x12x96xf16>, tensor<?x12xf32>
  return %o, %l : tensor<?x12x96xf16>, tensor<?x12xf32>
}

func.func @custom_mask_d64(%k: tensor<?x16x1x64xf16>, %v: tensor<?x16x1x64xf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x8x64xf16>,
    %qo: tensor<?xi32>, %bits: tensor<?xi8>, %row0: tensor<?xi64>, %stride: tensor<?xi64>) -> (tensor<?x8x64xf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x1x64xf16>, tensor<?x16x1x64xf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 1, head_dim = 64, f16>
  %q = attn.ragged_q %queries, %qo : tensor<?x8x64xf16> -> !attn.ragged_q<heads = 8, head_dim = 64, f16>
  %o, %l = attn.attention @custom_mask(%q, %kv) params(%bits, %row0, %stride : tensor<?xi8>, tensor<?xi64>, tensor<?xi64>)
      {num_qo_heads = 8 : i64, num_kv_heads = 1 : i64} : !attn.ragged_q<heads = 8, head_dim = 64, f16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 1, head_dim = 64, f16>
      -> tensor<?x8x64xf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x64xf16>, tensor<?x8xf32>
}

func.func @scaled_out_d80(%k: tensor<?x1x4x80xf16>, %v: tensor<?x1x4x80xf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x4x80xf16>,
    %qo: tensor<?xi32>) -> (tensor<?x4x80xf16>, tensor<?x4xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x1x4x80xf16>, tensor<?x1x4x80xf16> -> !attn.paged_kv<page_size = 1, layout = nhd, heads = 4, head_dim = 80, f16>
  %q = attn.ragged_q %queries, %qo : tensor<?x4x80xf16> -> !attn.ragged_q<heads = 4, head_dim = 80, f16>
  %o, %l = attn.attention @scaled_out(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 4 : i64} : !attn.ragged_q<heads = 4, head_dim = 80, f16>, !attn.paged_kv<page_size = 1, layout = nhd, heads = 4, head_dim = 80, f16>
      -> tensor<?x4x80xf16>, tensor<?x4xf32>
  return %o, %l : tensor<?x4x80xf16>, tensor<?x4xf32>
}

//--- f16.mlir

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
func.func @rope_d128(%k: tensor<?x16x2x128xbf16>, %v: tensor<?x16x2x128xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x8x128xbf16>,
    %qo: tensor<?xi32>, %log2_theta: f32, %half_dim: i32, %offset: tensor<?xi32>) -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x2x128xbf16>, tensor<?x16x2x128xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x8x128xbf16> -> !attn.ragged_q<heads = 8, head_dim = 128, bf16>
  %o, %l = attn.attention @rope(%q, %kv) params(%log2_theta, %half_dim, %offset : f32, i32, tensor<?xi32>)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64} : !attn.ragged_q<heads = 8, head_dim = 128, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, bf16>
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>
}

func.func @rope_d72_hnd(%k: tensor<?x2x16x72xf16>, %v: tensor<?x2x16x72xf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x6x72xf16>,
    %qo: tensor<?xi32>, %log2_theta: f32, %half_dim: i32, %offset: tensor<?xi32>) -> (tensor<?x6x72xf16>, tensor<?x6xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x2x16x72xf16>, tensor<?x2x16x72xf16> -> !attn.paged_kv<page_size = 16, layout = hnd, heads = 2, head_dim = 72, f16>
  %q = attn.ragged_q %queries, %qo : tensor<?x6x72xf16> -> !attn.ragged_q<heads = 6, head_dim = 72, f16>
  %o, %l = attn.attention @rope(%q, %kv) params(%log2_theta, %half_dim, %offset : f32, i32, tensor<?xi32>)
      {num_qo_heads = 6 : i64, num_kv_heads = 2 : i64} : !attn.ragged_q<heads = 6, head_dim = 72, f16>, !attn.paged_kv<page_size = 16, layout = hnd, heads = 2, head_dim = 72, f16>
      -> tensor<?x6x72xf16>, tensor<?x6xf32>
  return %o, %l : tensor<?x6x72xf16>, tensor<?x6xf32>
}

func.func @sigmoid_d96(%k: tensor<?x5x4x96xf16>, %v: tensor<?x5x4x96xf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x12x96xf16>,
    %qo: tensor<?xi32>, %bias: f32) -> (tensor<?x12x96xf16>, tensor<?x12xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x5x4x96xf16>, tensor<?x5x4x96xf16> -> !attn.paged_kv<page_size = 5, layout = nhd, heads = 4, head_dim = 96, f16>
  %q = attn.ragged_q %queries, %qo : tensor<?x12x96xf16> -> !attn.ragged_q<heads = 12, head_dim = 96, f16>
  %o, %l = attn.attention @sigmoid(%q, %kv) params(%bias : f32)
      {num_qo_heads = 12 : i64, num_kv_heads = 4 : i64} : !attn.ragged_q<heads = 12, head_dim = 96, f16>, !attn.paged_kv<page_size = 5, layout = nhd, heads = 4, head_dim = 96, f16>
      -> tensor<?x12x96xf16>, tensor<?x12xf32>
  return %o, %l : tensor<?x12x96xf16>, tensor<?x12xf32>
}

func.func @custom_mask_d64(%k: tensor<?x16x1x64xf16>, %v: tensor<?x16x1x64xf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x8x64xf16>,
    %qo: tensor<?xi32>, %bits: tensor<?xi8>, %row0: tensor<?xi64>, %stride: tensor<?xi64>) -> (tensor<?x8x64xf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x1x64xf16>, tensor<?x16x1x64xf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 1, head_dim = 64, f16>
  %q = attn.ragged_q %queries, %qo : tensor<?x8x64xf16> -> !attn.ragged_q<heads = 8, head_dim = 64, f16>
  %o, %l = attn.attention @custom_mask(%q, %kv) params(%bits, %row0, %stride : tensor<?xi8>, tensor<?xi64>, tensor<?xi64>)
      {num_qo_heads = 8 : i64, num_kv_heads = 1 : i64} : !attn.ragged_q<heads = 8, head_dim = 64, f16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 1, head_dim = 64, f16>
      -> tensor<?x8x64xf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x64xf16>, tensor<?x8xf32>
}
