// RUN: flashir-opt %s -split-input-file -attn-raise-from-linalg | FileCheck %s
// RUN: flashir-opt %s -split-input-file -attn-raise-from-linalg=paged-kv=1 | FileCheck %s --check-prefix=PAGED

// With paged-kv: one-token pages, identity page table, last pages full.
// PAGED-LABEL: func.func @scaled
// PAGED: tensor.generate
// PAGED: arith.constant 0 : i32
// PAGED: arith.constant 1 : i32
// PAGED: } : tensor<?xi32>
// PAGED: %[[KP:.*]] = tensor.cast %{{.*}} : tensor<64x1x1x64xf32> to tensor<?x1x1x64xf32>
// PAGED: %[[VP:.*]] = tensor.cast %{{.*}} : tensor<64x1x1x64xf32> to tensor<?x1x1x64xf32>
// PAGED: %[[IP:.*]] = tensor.generate
// PAGED: arith.constant 16 : i32
// PAGED: %[[IDX:.*]] = tensor.generate
// PAGED: attn.paged_kv %[[KP]], %[[VP]], %[[IP]], %[[IDX]], %{{.*}} : tensor<?x1x1x64xf32>, tensor<?x1x1x64xf32> -> !attn.paged_kv<page_size = 1, layout = nhd, heads = 1, head_dim = 64, f32>
// PAGED: attn.attention @plain

// Q·Kᵀ through batch_matmul's indexing maps, a scale, softmax, ·V.
// CHECK-LABEL: func.func @scaled
// CHECK-SAME: (%[[Q:.*]]: tensor<4x8x64xf32>, %[[K:.*]]: tensor<4x16x64xf32>, %[[V:.*]]: tensor<4x16x64xf32>)
// CHECK: %[[QF:.*]] = tensor.collapse_shape %[[Q]] {{\[}}[0, 1], [2]] : tensor<4x8x64xf32> into tensor<32x64xf32>
// CHECK: %[[QE:.*]] = tensor.expand_shape %[[QF]] {{\[}}[0], [1, 2]] output_shape [32, 1, 64] : tensor<32x64xf32> into tensor<32x1x64xf32>
// CHECK: %[[QC:.*]] = tensor.cast %[[QE]] : tensor<32x1x64xf32> to tensor<?x1x64xf32>
// CHECK: %[[N:.*]] = arith.constant 5 : index
// CHECK: %[[QO:.*]] = tensor.generate %[[N]] {
// CHECK: arith.constant 8 : i32
// CHECK: } : tensor<?xi32>
// CHECK: %[[RQ:.*]] = attn.ragged_q %[[QC]], %[[QO]] : tensor<?x1x64xf32> -> !attn.ragged_q<heads = 1, head_dim = 64, f32>
// CHECK: tensor.generate
// CHECK: arith.constant 16 : i32
// CHECK: %[[RKV:.*]] = attn.ragged_kv %{{.*}}, %{{.*}}, %{{.*}} : tensor<?x1x64xf32>, tensor<?x1x64xf32> -> !attn.ragged_kv<heads = 1, head_dim = 64, f32>
// CHECK: %[[O:.*]]:2 = attn.attention @plain(%[[RQ]], %[[RKV]]) {num_kv_heads = 1 : i64, num_qo_heads = 1 : i64, scale = 1.250000e-01 : f32}
// CHECK: %[[OS:.*]] = tensor.cast %[[O]]#0 : tensor<?x1x64xf32> to tensor<32x1x64xf32>
// CHECK: %[[OF:.*]] = tensor.collapse_shape %[[OS]] {{\[}}[0], [1, 2]]
// CHECK: %[[OUT:.*]] = tensor.expand_shape %[[OF]] {{\[}}[0, 1], [2]] output_shape [4, 8, 64] : tensor<32x64xf32> into tensor<4x8x64xf32>
// CHECK-NOT: linalg.softmax
// CHECK-NOT: linalg.batch_matmul
// CHECK: return %[[OUT]]
func.func @scaled(%q: tensor<4x8x64xf32>, %k: tensor<4x16x64xf32>, %v: tensor<4x16x64xf32>) -> tensor<4x8x64xf32> {
  %zero = arith.constant 0.0 : f32
  %c = arith.constant 0.125 : f32
  %e0 = tensor.empty() : tensor<4x8x16xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  %s = linalg.batch_matmul
      indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>,
                       affine_map<(b, m, n, k) -> (b, n, k)>,
                       affine_map<(b, m, n, k) -> (b, m, n)>]
      ins(%q, %k : tensor<4x8x64xf32>, tensor<4x16x64xf32>) outs(%s0 : tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  %scaled = linalg.generic {indexing_maps = [affine_map<(a, b, c) -> (a, b, c)>, affine_map<(a, b, c) -> (a, b, c)>],
                            iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<4x8x16xf32>) outs(%e0 : tensor<4x8x16xf32>) {
  ^bb0(%x: f32, %out: f32):
    %y = arith.mulf %x, %c : f32
    linalg.yield %y : f32
  } -> tensor<4x8x16xf32>
  %pe = tensor.empty() : tensor<4x8x16xf32>
  %p = linalg.softmax dimension(2) ins(%scaled : tensor<4x8x16xf32>) outs(%pe : tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  %e1 = tensor.empty() : tensor<4x8x64xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x8x64xf32>) -> tensor<4x8x64xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<4x8x16xf32>, tensor<4x16x64xf32>) outs(%o0 : tensor<4x8x64xf32>) -> tensor<4x8x64xf32>
  return %o : tensor<4x8x64xf32>
}

// -----

// Kᵀ as a linalg.transpose, a division by sqrt(d), bf16; no scale op gives
// scale 1 (next case).
// CHECK-LABEL: func.func @transposed
// CHECK: attn.attention @plain({{.*}}) {num_kv_heads = 1 : i64, num_qo_heads = 1 : i64, scale = 1.250000e-01 : f32} : !attn.ragged_q<heads = 1, head_dim = 64, bf16>
// CHECK-NOT: linalg.transpose
// CHECK-NOT: linalg.softmax
func.func @transposed(%q: tensor<2x3x64xbf16>, %k: tensor<2x5x64xbf16>, %v: tensor<2x5x64xbf16>) -> tensor<2x3x64xbf16> {
  %zero = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<2x64x5xbf16>
  %kt = linalg.transpose ins(%k : tensor<2x5x64xbf16>) outs(%e : tensor<2x64x5xbf16>) permutation = [0, 2, 1]
  %e0 = tensor.empty() : tensor<2x3x5xbf16>
  %s0 = linalg.fill ins(%zero : bf16) outs(%e0 : tensor<2x3x5xbf16>) -> tensor<2x3x5xbf16>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<2x3x64xbf16>, tensor<2x64x5xbf16>) outs(%s0 : tensor<2x3x5xbf16>) -> tensor<2x3x5xbf16>
  %scaled = linalg.generic {indexing_maps = [affine_map<(a, b, c) -> (a, b, c)>, affine_map<(a, b, c) -> (a, b, c)>],
                            iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<2x3x5xbf16>) outs(%e0 : tensor<2x3x5xbf16>) {
  ^bb0(%x: bf16, %out: bf16):
    %c = arith.constant 8.0 : bf16
    %y = arith.divf %x, %c : bf16
    linalg.yield %y : bf16
  } -> tensor<2x3x5xbf16>
  %p = linalg.softmax dimension(2) ins(%scaled : tensor<2x3x5xbf16>) outs(%e0 : tensor<2x3x5xbf16>) -> tensor<2x3x5xbf16>
  %e1 = tensor.empty() : tensor<2x3x64xbf16>
  %o0 = linalg.fill ins(%zero : bf16) outs(%e1 : tensor<2x3x64xbf16>) -> tensor<2x3x64xbf16>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x3x5xbf16>, tensor<2x5x64xbf16>) outs(%o0 : tensor<2x3x64xbf16>) -> tensor<2x3x64xbf16>
  return %o : tensor<2x3x64xbf16>
}

// -----

// CHECK-LABEL: func.func @unscaled
// CHECK: attn.attention @plain({{.*}}) {num_kv_heads = 1 : i64, num_qo_heads = 1 : i64, scale = 1.000000e+00 : f32}
func.func @unscaled(%q: tensor<1x2x4xf16>, %k: tensor<1x3x4xf16>, %v: tensor<1x3x4xf16>) -> tensor<1x2x4xf16> {
  %zero = arith.constant 0.0 : f16
  %e0 = tensor.empty() : tensor<1x2x3xf16>
  %s0 = linalg.fill ins(%zero : f16) outs(%e0 : tensor<1x2x3xf16>) -> tensor<1x2x3xf16>
  %s = linalg.batch_matmul
      indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>,
                       affine_map<(b, m, n, k) -> (b, n, k)>,
                       affine_map<(b, m, n, k) -> (b, m, n)>]
      ins(%q, %k : tensor<1x2x4xf16>, tensor<1x3x4xf16>) outs(%s0 : tensor<1x2x3xf16>) -> tensor<1x2x3xf16>
  %p = linalg.softmax dimension(2) ins(%s : tensor<1x2x3xf16>) outs(%e0 : tensor<1x2x3xf16>) -> tensor<1x2x3xf16>
  %e1 = tensor.empty() : tensor<1x2x4xf16>
  %o0 = linalg.fill ins(%zero : f16) outs(%e1 : tensor<1x2x4xf16>) -> tensor<1x2x4xf16>
  %o = linalg.batch_matmul ins(%p, %v : tensor<1x2x3xf16>, tensor<1x3x4xf16>) outs(%o0 : tensor<1x2x4xf16>) -> tensor<1x2x4xf16>
  return %o : tensor<1x2x4xf16>
}

// -----

// Negative: softmax over the query axis is not attention.
// CHECK-LABEL: func.func @wrong_axis
// CHECK-NOT: attn.attention
// CHECK: linalg.softmax dimension(1)
func.func @wrong_axis(%q: tensor<1x2x4xf32>, %k: tensor<1x3x4xf32>, %v: tensor<1x3x4xf32>) -> tensor<1x2x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<1x2x3xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x2x3xf32>) -> tensor<1x2x3xf32>
  %s = linalg.batch_matmul
      indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>,
                       affine_map<(b, m, n, k) -> (b, n, k)>,
                       affine_map<(b, m, n, k) -> (b, m, n)>]
      ins(%q, %k : tensor<1x2x4xf32>, tensor<1x3x4xf32>) outs(%s0 : tensor<1x2x3xf32>) -> tensor<1x2x3xf32>
  %p = linalg.softmax dimension(1) ins(%s : tensor<1x2x3xf32>) outs(%e0 : tensor<1x2x3xf32>) -> tensor<1x2x3xf32>
  %e1 = tensor.empty() : tensor<1x2x4xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<1x2x3xf32>, tensor<1x3x4xf32>) outs(%o0 : tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  return %o : tensor<1x2x4xf32>
}

// -----

// Negative: an extra op between the scores and the softmax (here an
// additive mask, not recognised yet), and scores used twice.
// CHECK-LABEL: func.func @extra_op
// CHECK-NOT: attn.attention
// CHECK: linalg.softmax
func.func @extra_op(%q: tensor<1x2x4xf32>, %k: tensor<1x3x4xf32>, %v: tensor<1x3x4xf32>, %mask: tensor<1x2x3xf32>) -> (tensor<1x2x4xf32>, tensor<1x2x3xf32>) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<1x2x3xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x2x3xf32>) -> tensor<1x2x3xf32>
  %s = linalg.batch_matmul
      indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>,
                       affine_map<(b, m, n, k) -> (b, n, k)>,
                       affine_map<(b, m, n, k) -> (b, m, n)>]
      ins(%q, %k : tensor<1x2x4xf32>, tensor<1x3x4xf32>) outs(%s0 : tensor<1x2x3xf32>) -> tensor<1x2x3xf32>
  %masked = linalg.add ins(%s, %mask : tensor<1x2x3xf32>, tensor<1x2x3xf32>) outs(%e0 : tensor<1x2x3xf32>) -> tensor<1x2x3xf32>
  %p = linalg.softmax dimension(2) ins(%masked : tensor<1x2x3xf32>) outs(%e0 : tensor<1x2x3xf32>) -> tensor<1x2x3xf32>
  %e1 = tensor.empty() : tensor<1x2x4xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<1x2x3xf32>, tensor<1x3x4xf32>) outs(%o0 : tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  return %o, %s : tensor<1x2x4xf32>, tensor<1x2x3xf32>
}

// -----

// Negative: V's length differs from K's (mismatched shapes), and a
// matmul accumulating into a non-zero init.
// CHECK-LABEL: func.func @mismatched
// CHECK-NOT: attn.attention
// CHECK-LABEL: func.func @accumulating
// CHECK-NOT: attn.attention
func.func @mismatched(%q: tensor<1x2x4xf32>, %k: tensor<1x3x4xf32>, %v: tensor<1x3x6xf32>) -> tensor<1x2x6xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<1x2x3xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x2x3xf32>) -> tensor<1x2x3xf32>
  %s = linalg.batch_matmul
      indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>,
                       affine_map<(b, m, n, k) -> (b, n, k)>,
                       affine_map<(b, m, n, k) -> (b, m, n)>]
      ins(%q, %k : tensor<1x2x4xf32>, tensor<1x3x4xf32>) outs(%s0 : tensor<1x2x3xf32>) -> tensor<1x2x3xf32>
  %p = linalg.softmax dimension(2) ins(%s : tensor<1x2x3xf32>) outs(%e0 : tensor<1x2x3xf32>) -> tensor<1x2x3xf32>
  %e1 = tensor.empty() : tensor<1x2x6xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x2x6xf32>) -> tensor<1x2x6xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<1x2x3xf32>, tensor<1x3x6xf32>) outs(%o0 : tensor<1x2x6xf32>) -> tensor<1x2x6xf32>
  return %o : tensor<1x2x6xf32>
}
func.func @accumulating(%q: tensor<1x2x4xf32>, %k: tensor<1x3x4xf32>, %v: tensor<1x3x4xf32>, %acc: tensor<1x2x4xf32>) -> tensor<1x2x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<1x2x3xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x2x3xf32>) -> tensor<1x2x3xf32>
  %s = linalg.batch_matmul
      indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>,
                       affine_map<(b, m, n, k) -> (b, n, k)>,
                       affine_map<(b, m, n, k) -> (b, m, n)>]
      ins(%q, %k : tensor<1x2x4xf32>, tensor<1x3x4xf32>) outs(%s0 : tensor<1x2x3xf32>) -> tensor<1x2x3xf32>
  %p = linalg.softmax dimension(2) ins(%s : tensor<1x2x3xf32>) outs(%e0 : tensor<1x2x3xf32>) -> tensor<1x2x3xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<1x2x3xf32>, tensor<1x3x4xf32>) outs(%acc : tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  return %o : tensor<1x2x4xf32>
}

// -----

// The causal mask j > i (Lq = Lk), fused with the scale in one generic,
// raises to @causal.
// CHECK-LABEL: func.func @causal_fused
// CHECK: attn.attention @causal({{.*}}) {num_kv_heads = 1 : i64, num_qo_heads = 1 : i64, scale = 5.000000e-01 : f32}
// CHECK-NOT: linalg.softmax
func.func @causal_fused(%q: tensor<2x6x4xf32>, %k: tensor<2x6x4xf32>, %v: tensor<2x6x4xf32>) -> tensor<2x6x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<2x6x6xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<2x6x6xf32>) -> tensor<2x6x6xf32>
  %s = linalg.batch_matmul
      indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>,
                       affine_map<(b, m, n, k) -> (b, n, k)>,
                       affine_map<(b, m, n, k) -> (b, m, n)>]
      ins(%q, %k : tensor<2x6x4xf32>, tensor<2x6x4xf32>) outs(%s0 : tensor<2x6x6xf32>) -> tensor<2x6x6xf32>
  %masked = linalg.generic {indexing_maps = [affine_map<(a, b, c) -> (a, b, c)>, affine_map<(a, b, c) -> (a, b, c)>],
                            iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<2x6x6xf32>) outs(%e0 : tensor<2x6x6xf32>) {
  ^bb0(%x: f32, %out: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %c = arith.constant 0.5 : f32
    %ninf = arith.constant 0xFF800000 : f32
    %y = arith.mulf %x, %c : f32
    %future = arith.cmpi ugt, %j, %i : index
    %r = arith.select %future, %ninf, %y : f32
    linalg.yield %r : f32
  } -> tensor<2x6x6xf32>
  %p = linalg.softmax dimension(2) ins(%masked : tensor<2x6x6xf32>) outs(%e0 : tensor<2x6x6xf32>) -> tensor<2x6x6xf32>
  %e1 = tensor.empty() : tensor<2x6x4xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x6x4xf32>) -> tensor<2x6x4xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x6x6xf32>, tensor<2x6x4xf32>) outs(%o0 : tensor<2x6x4xf32>) -> tensor<2x6x4xf32>
  return %o : tensor<2x6x4xf32>
}

// -----

// Scale and mask as two generics (mask first, written i < j).
// CHECK-LABEL: func.func @causal_chain
// CHECK: attn.attention @causal({{.*}}) {num_kv_heads = 1 : i64, num_qo_heads = 1 : i64, scale = 2.500000e-01 : f32}
#id = affine_map<(a, b, c) -> (a, b, c)>
func.func @causal_chain(%q: tensor<1x3x4xf32>, %k: tensor<1x3x4xf32>, %v: tensor<1x3x4xf32>) -> tensor<1x3x4xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %c = arith.constant 4.0 : f32
  %e0 = tensor.empty() : tensor<1x3x3xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x3x3xf32>) -> tensor<1x3x3xf32>
  %s = linalg.batch_matmul
      indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>,
                       affine_map<(b, m, n, k) -> (b, n, k)>,
                       affine_map<(b, m, n, k) -> (b, m, n)>]
      ins(%q, %k : tensor<1x3x4xf32>, tensor<1x3x4xf32>) outs(%s0 : tensor<1x3x3xf32>) -> tensor<1x3x3xf32>
  %masked = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<1x3x3xf32>) outs(%e0 : tensor<1x3x3xf32>) {
  ^bb0(%x: f32, %out: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %future = arith.cmpi slt, %i, %j : index
    %r = arith.select %future, %ninf, %x : f32
    linalg.yield %r : f32
  } -> tensor<1x3x3xf32>
  %scaled = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%masked : tensor<1x3x3xf32>) outs(%e0 : tensor<1x3x3xf32>) {
  ^bb0(%x: f32, %out: f32):
    %y = arith.divf %x, %c : f32
    linalg.yield %y : f32
  } -> tensor<1x3x3xf32>
  %p = linalg.softmax dimension(2) ins(%scaled : tensor<1x3x3xf32>) outs(%e0 : tensor<1x3x3xf32>) -> tensor<1x3x3xf32>
  %e1 = tensor.empty() : tensor<1x3x4xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x3x4xf32>) -> tensor<1x3x4xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<1x3x3xf32>, tensor<1x3x4xf32>) outs(%o0 : tensor<1x3x4xf32>) -> tensor<1x3x4xf32>
  return %o : tensor<1x3x4xf32>
}

// -----

// Negative: the mask the other way round (keys before the query masked),
// a causal mask with Lq != Lk (top-left is not attn's bottom-right causal),
// and an elementwise op that is neither scale nor mask.
// CHECK-LABEL: func.func @anti_causal
// CHECK-NOT: attn.attention
// CHECK-LABEL: func.func @causal_rectangular
// CHECK-NOT: attn.attention
// CHECK-LABEL: func.func @shifted
// CHECK-NOT: attn.attention
#id = affine_map<(a, b, c) -> (a, b, c)>
func.func @anti_causal(%q: tensor<1x3x4xf32>, %k: tensor<1x3x4xf32>, %v: tensor<1x3x4xf32>) -> tensor<1x3x4xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e0 = tensor.empty() : tensor<1x3x3xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x3x3xf32>) -> tensor<1x3x3xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (b, n, k)>, affine_map<(b, m, n, k) -> (b, m, n)>] ins(%q, %k : tensor<1x3x4xf32>, tensor<1x3x4xf32>) outs(%s0 : tensor<1x3x3xf32>) -> tensor<1x3x3xf32>
  %masked = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<1x3x3xf32>) outs(%e0 : tensor<1x3x3xf32>) {
  ^bb0(%x: f32, %out: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %past = arith.cmpi ult, %j, %i : index
    %r = arith.select %past, %ninf, %x : f32
    linalg.yield %r : f32
  } -> tensor<1x3x3xf32>
  %p = linalg.softmax dimension(2) ins(%masked : tensor<1x3x3xf32>) outs(%e0 : tensor<1x3x3xf32>) -> tensor<1x3x3xf32>
  %e1 = tensor.empty() : tensor<1x3x4xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x3x4xf32>) -> tensor<1x3x4xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<1x3x3xf32>, tensor<1x3x4xf32>) outs(%o0 : tensor<1x3x4xf32>) -> tensor<1x3x4xf32>
  return %o : tensor<1x3x4xf32>
}
func.func @causal_rectangular(%q: tensor<1x2x4xf32>, %k: tensor<1x3x4xf32>, %v: tensor<1x3x4xf32>) -> tensor<1x2x4xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e0 = tensor.empty() : tensor<1x2x3xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x2x3xf32>) -> tensor<1x2x3xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (b, n, k)>, affine_map<(b, m, n, k) -> (b, m, n)>] ins(%q, %k : tensor<1x2x4xf32>, tensor<1x3x4xf32>) outs(%s0 : tensor<1x2x3xf32>) -> tensor<1x2x3xf32>
  %masked = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<1x2x3xf32>) outs(%e0 : tensor<1x2x3xf32>) {
  ^bb0(%x: f32, %out: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %future = arith.cmpi ugt, %j, %i : index
    %r = arith.select %future, %ninf, %x : f32
    linalg.yield %r : f32
  } -> tensor<1x2x3xf32>
  %p = linalg.softmax dimension(2) ins(%masked : tensor<1x2x3xf32>) outs(%e0 : tensor<1x2x3xf32>) -> tensor<1x2x3xf32>
  %e1 = tensor.empty() : tensor<1x2x4xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<1x2x3xf32>, tensor<1x3x4xf32>) outs(%o0 : tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  return %o : tensor<1x2x4xf32>
}
func.func @shifted(%q: tensor<1x3x4xf32>, %k: tensor<1x3x4xf32>, %v: tensor<1x3x4xf32>) -> tensor<1x3x4xf32> {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %e0 = tensor.empty() : tensor<1x3x3xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x3x3xf32>) -> tensor<1x3x3xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (b, n, k)>, affine_map<(b, m, n, k) -> (b, m, n)>] ins(%q, %k : tensor<1x3x4xf32>, tensor<1x3x4xf32>) outs(%s0 : tensor<1x3x3xf32>) -> tensor<1x3x3xf32>
  %shifted = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<1x3x3xf32>) outs(%e0 : tensor<1x3x3xf32>) {
  ^bb0(%x: f32, %out: f32):
    %y = arith.addf %x, %one : f32
    linalg.yield %y : f32
  } -> tensor<1x3x3xf32>
  %p = linalg.softmax dimension(2) ins(%shifted : tensor<1x3x3xf32>) outs(%e0 : tensor<1x3x3xf32>) -> tensor<1x3x3xf32>
  %e1 = tensor.empty() : tensor<1x3x4xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x3x4xf32>) -> tensor<1x3x4xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<1x3x3xf32>, tensor<1x3x4xf32>) outs(%o0 : tensor<1x3x4xf32>) -> tensor<1x3x4xf32>
  return %o : tensor<1x3x4xf32>
}

// -----

// GQA: K and V broadcast from 2 KV heads to 2 query heads each (batch index
// = kv_head * 2 + r): one request per KV head, 2 query heads.
// CHECK-LABEL: func.func @gqa
// CHECK-SAME: (%[[Q:.*]]: tensor<4x3x8xf32>, %[[K:.*]]: tensor<2x5x8xf32>, %[[V:.*]]: tensor<2x5x8xf32>)
// CHECK: %[[QE:.*]] = tensor.expand_shape %[[Q]] {{\[}}[0, 1], [2], [3]] output_shape [2, 2, 3, 8]
// CHECK: %[[QT:.*]] = linalg.transpose ins(%[[QE]] : tensor<2x2x3x8xf32>) outs(%{{.*}} : tensor<2x3x2x8xf32>) permutation = [0, 2, 1, 3]
// CHECK: tensor.collapse_shape %[[QT]] {{\[}}[0, 1], [2], [3]] : tensor<2x3x2x8xf32> into tensor<6x2x8xf32>
// CHECK: attn.ragged_q {{.*}} -> !attn.ragged_q<heads = 2, head_dim = 8, f32>
// CHECK: tensor.collapse_shape %[[K]] {{\[}}[0, 1], [2]] : tensor<2x5x8xf32> into tensor<10x8xf32>
// CHECK: attn.ragged_kv {{.*}} -> !attn.ragged_kv<heads = 1, head_dim = 8, f32>
// CHECK: attn.attention @plain({{.*}}) {num_kv_heads = 1 : i64, num_qo_heads = 2 : i64, scale = 1.000000e+00 : f32}
// CHECK-SAME: -> tensor<?x2x8xf32>, tensor<?x2xf32>
// CHECK: linalg.transpose ins(%{{.*}} : tensor<2x3x2x8xf32>) outs(%{{.*}} : tensor<2x2x3x8xf32>) permutation = [0, 2, 1, 3]
// CHECK-NOT: linalg.broadcast
// CHECK-NOT: linalg.softmax
// CHECK: return %{{.*}} : tensor<4x3x8xf32>
func.func @gqa(%q: tensor<4x3x8xf32>, %k0: tensor<2x5x8xf32>, %v0: tensor<2x5x8xf32>) -> tensor<4x3x8xf32> {
  %zero = arith.constant 0.0 : f32
  %eb = tensor.empty() : tensor<2x2x5x8xf32>
  %kb = linalg.broadcast ins(%k0 : tensor<2x5x8xf32>) outs(%eb : tensor<2x2x5x8xf32>) dimensions = [1]
  %k = tensor.collapse_shape %kb [[0, 1], [2], [3]] : tensor<2x2x5x8xf32> into tensor<4x5x8xf32>
  %vb = linalg.broadcast ins(%v0 : tensor<2x5x8xf32>) outs(%eb : tensor<2x2x5x8xf32>) dimensions = [1]
  %v = tensor.collapse_shape %vb [[0, 1], [2], [3]] : tensor<2x2x5x8xf32> into tensor<4x5x8xf32>
  %e0 = tensor.empty() : tensor<4x3x5xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<4x3x5xf32>) -> tensor<4x3x5xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (b, n, k)>, affine_map<(b, m, n, k) -> (b, m, n)>]
      ins(%q, %k : tensor<4x3x8xf32>, tensor<4x5x8xf32>) outs(%s0 : tensor<4x3x5xf32>) -> tensor<4x3x5xf32>
  %p = linalg.softmax dimension(2) ins(%s : tensor<4x3x5xf32>) outs(%e0 : tensor<4x3x5xf32>) -> tensor<4x3x5xf32>
  %e1 = tensor.empty() : tensor<4x3x8xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x3x8xf32>) -> tensor<4x3x8xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<4x3x5xf32>, tensor<4x5x8xf32>) outs(%o0 : tensor<4x3x8xf32>) -> tensor<4x3x8xf32>
  return %o : tensor<4x3x8xf32>
}

// -----

// An additive mask tensor after the scale (in one generic): a variant
// reading the mask through per-request row offsets is added to the module.
// CHECK: attn.variant @raised_additive_mask_f32 reduction softmax params(bits : tensor<?xf32> buffer, row0 : i64 per_request, stride : i64 scalar, head_stride : i64 scalar)
// CHECK: logits
// CHECK: tensor.extract
// CHECK-LABEL: func.func @additive
// CHECK-SAME: %[[M:[^:]*]]: tensor<2x3x5xf32>)
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %[[M]] {{\[}}[0, 1, 2]] : tensor<2x3x5xf32> into tensor<30xf32>
// CHECK: %[[MD:.*]] = tensor.cast %[[FLAT]] : tensor<30xf32> to tensor<?xf32>
// CHECK: tensor.generate
// CHECK: arith.constant 15 : i64
// CHECK: arith.constant -10 : i64
// CHECK: } : tensor<?xi64>
// CHECK: attn.attention @raised_additive_mask_f32({{.*}}) params(%[[MD]], %{{.*}}, %{{.*}}, %{{.*}} : tensor<?xf32>, tensor<?xi64>, i64, i64) {{.*}}scale = 5.000000e-01 : f32
// CHECK-NOT: linalg.softmax
func.func @additive(%q: tensor<2x3x4xf32>, %k: tensor<2x5x4xf32>, %v: tensor<2x5x4xf32>, %mask: tensor<2x3x5xf32>) -> tensor<2x3x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<2x3x5xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (b, n, k)>, affine_map<(b, m, n, k) -> (b, m, n)>]
      ins(%q, %k : tensor<2x3x4xf32>, tensor<2x5x4xf32>) outs(%s0 : tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %masked = linalg.generic {indexing_maps = [affine_map<(a, b, c) -> (a, b, c)>, affine_map<(a, b, c) -> (a, b, c)>, affine_map<(a, b, c) -> (a, b, c)>],
                            iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s, %mask : tensor<2x3x5xf32>, tensor<2x3x5xf32>) outs(%e0 : tensor<2x3x5xf32>) {
  ^bb0(%x: f32, %m: f32, %out: f32):
    %c = arith.constant 0.5 : f32
    %y = arith.mulf %x, %c : f32
    %r = arith.addf %y, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x3x5xf32>
  %p = linalg.softmax dimension(2) ins(%masked : tensor<2x3x5xf32>) outs(%e0 : tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %e1 = tensor.empty() : tensor<2x3x4xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x3x5xf32>, tensor<2x5x4xf32>) outs(%o0 : tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %o : tensor<2x3x4xf32>
}

// -----

// A boolean mask (select(mask, s, -inf)) and an additive one as linalg.add.
// CHECK-DAG: attn.variant @raised_boolean_mask reduction softmax params(bits : tensor<?xi1> buffer
// CHECK-DAG: attn.variant @raised_additive_mask_bf16
// CHECK-LABEL: func.func @boolean
// CHECK: attn.attention @raised_boolean_mask(
// CHECK-LABEL: func.func @named_add
// CHECK: attn.attention @raised_additive_mask_bf16(
func.func @boolean(%q: tensor<1x3x4xf32>, %k: tensor<1x3x4xf32>, %v: tensor<1x3x4xf32>, %keep: tensor<1x3x3xi1>) -> tensor<1x3x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<1x3x3xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x3x3xf32>) -> tensor<1x3x3xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (b, n, k)>, affine_map<(b, m, n, k) -> (b, m, n)>]
      ins(%q, %k : tensor<1x3x4xf32>, tensor<1x3x4xf32>) outs(%s0 : tensor<1x3x3xf32>) -> tensor<1x3x3xf32>
  %masked = linalg.generic {indexing_maps = [affine_map<(a, b, c) -> (a, b, c)>, affine_map<(a, b, c) -> (a, b, c)>, affine_map<(a, b, c) -> (a, b, c)>],
                            iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s, %keep : tensor<1x3x3xf32>, tensor<1x3x3xi1>) outs(%e0 : tensor<1x3x3xf32>) {
  ^bb0(%x: f32, %m: i1, %out: f32):
    %ninf = arith.constant 0xFF800000 : f32
    %r = arith.select %m, %x, %ninf : f32
    linalg.yield %r : f32
  } -> tensor<1x3x3xf32>
  %p = linalg.softmax dimension(2) ins(%masked : tensor<1x3x3xf32>) outs(%e0 : tensor<1x3x3xf32>) -> tensor<1x3x3xf32>
  %e1 = tensor.empty() : tensor<1x3x4xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x3x4xf32>) -> tensor<1x3x4xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<1x3x3xf32>, tensor<1x3x4xf32>) outs(%o0 : tensor<1x3x4xf32>) -> tensor<1x3x4xf32>
  return %o : tensor<1x3x4xf32>
}
func.func @named_add(%q: tensor<1x3x4xbf16>, %k: tensor<1x3x4xbf16>, %v: tensor<1x3x4xbf16>, %bias: tensor<1x3x3xbf16>) -> tensor<1x3x4xbf16> {
  %zero = arith.constant 0.0 : bf16
  %e0 = tensor.empty() : tensor<1x3x3xbf16>
  %s0 = linalg.fill ins(%zero : bf16) outs(%e0 : tensor<1x3x3xbf16>) -> tensor<1x3x3xbf16>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (b, n, k)>, affine_map<(b, m, n, k) -> (b, m, n)>]
      ins(%q, %k : tensor<1x3x4xbf16>, tensor<1x3x4xbf16>) outs(%s0 : tensor<1x3x3xbf16>) -> tensor<1x3x3xbf16>
  %masked = linalg.add ins(%s, %bias : tensor<1x3x3xbf16>, tensor<1x3x3xbf16>) outs(%e0 : tensor<1x3x3xbf16>) -> tensor<1x3x3xbf16>
  %p = linalg.softmax dimension(2) ins(%masked : tensor<1x3x3xbf16>) outs(%e0 : tensor<1x3x3xbf16>) -> tensor<1x3x3xbf16>
  %e1 = tensor.empty() : tensor<1x3x4xbf16>
  %o0 = linalg.fill ins(%zero : bf16) outs(%e1 : tensor<1x3x4xbf16>) -> tensor<1x3x4xbf16>
  %o = linalg.batch_matmul ins(%p, %v : tensor<1x3x3xbf16>, tensor<1x3x4xbf16>) outs(%o0 : tensor<1x3x4xbf16>) -> tensor<1x3x4xbf16>
  return %o : tensor<1x3x4xbf16>
}

// -----

// Negative: the mask added before the scale ((s + M) * c is not s * c + M).
// CHECK-LABEL: func.func @mask_then_scale
// CHECK-NOT: attn.attention
func.func @mask_then_scale(%q: tensor<1x3x4xf32>, %k: tensor<1x3x4xf32>, %v: tensor<1x3x4xf32>, %mask: tensor<1x3x3xf32>) -> tensor<1x3x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<1x3x3xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x3x3xf32>) -> tensor<1x3x3xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (b, n, k)>, affine_map<(b, m, n, k) -> (b, m, n)>]
      ins(%q, %k : tensor<1x3x4xf32>, tensor<1x3x4xf32>) outs(%s0 : tensor<1x3x3xf32>) -> tensor<1x3x3xf32>
  %masked = linalg.add ins(%s, %mask : tensor<1x3x3xf32>, tensor<1x3x3xf32>) outs(%e0 : tensor<1x3x3xf32>) -> tensor<1x3x3xf32>
  %scaled = linalg.generic {indexing_maps = [affine_map<(a, b, c) -> (a, b, c)>, affine_map<(a, b, c) -> (a, b, c)>],
                            iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%masked : tensor<1x3x3xf32>) outs(%e0 : tensor<1x3x3xf32>) {
  ^bb0(%x: f32, %out: f32):
    %c = arith.constant 0.5 : f32
    %y = arith.mulf %x, %c : f32
    linalg.yield %y : f32
  } -> tensor<1x3x3xf32>
  %p = linalg.softmax dimension(2) ins(%scaled : tensor<1x3x3xf32>) outs(%e0 : tensor<1x3x3xf32>) -> tensor<1x3x3xf32>
  %e1 = tensor.empty() : tensor<1x3x4xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x3x4xf32>) -> tensor<1x3x4xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<1x3x3xf32>, tensor<1x3x4xf32>) outs(%o0 : tensor<1x3x4xf32>) -> tensor<1x3x4xf32>
  return %o : tensor<1x3x4xf32>
}

// -----

// Softmax spelled out: max, exp(s - max), sum, divide (over the last
// dimension, max and sum over fills of -inf and 0).
// CHECK-LABEL: func.func @decomposed_softmax
// CHECK: attn.attention @plain({{.*}}) {num_kv_heads = 1 : i64, num_qo_heads = 1 : i64, scale = 2.500000e-01 : f32}
// CHECK-NOT: math.exp
// CHECK-NOT: linalg.generic
// CHECK-LABEL: func.func @not_softmax
// CHECK-NOT: attn.attention
#id = affine_map<(a, b, c) -> (a, b, c)>
#row = affine_map<(a, b, c) -> (a, b)>
func.func @decomposed_softmax(%q: tensor<2x3x4xf32>, %k: tensor<2x5x4xf32>, %v: tensor<2x5x4xf32>) -> tensor<2x3x4xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %c = arith.constant 0.25 : f32
  %e0 = tensor.empty() : tensor<2x3x5xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %s1 = linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (b, n, k)>, affine_map<(b, m, n, k) -> (b, m, n)>]
      ins(%q, %k : tensor<2x3x4xf32>, tensor<2x5x4xf32>) outs(%s0 : tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %s = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s1 : tensor<2x3x5xf32>) outs(%e0 : tensor<2x3x5xf32>) {
  ^bb0(%x: f32, %out: f32):
    %y = arith.mulf %x, %c : f32
    linalg.yield %y : f32
  } -> tensor<2x3x5xf32>
  %er = tensor.empty() : tensor<2x3xf32>
  %m0 = linalg.fill ins(%ninf : f32) outs(%er : tensor<2x3xf32>) -> tensor<2x3xf32>
  %m = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%s : tensor<2x3x5xf32>) outs(%m0 : tensor<2x3xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %r = arith.maximumf %x, %acc : f32
    linalg.yield %r : f32
  } -> tensor<2x3xf32>
  %e = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s, %m : tensor<2x3x5xf32>, tensor<2x3xf32>) outs(%e0 : tensor<2x3x5xf32>) {
  ^bb0(%x: f32, %mx: f32, %out: f32):
    %d = arith.subf %x, %mx : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<2x3x5xf32>
  %l0 = linalg.fill ins(%zero : f32) outs(%er : tensor<2x3xf32>) -> tensor<2x3xf32>
  %l = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%e : tensor<2x3x5xf32>) outs(%l0 : tensor<2x3xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %r = arith.addf %x, %acc : f32
    linalg.yield %r : f32
  } -> tensor<2x3xf32>
  %p = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%e, %l : tensor<2x3x5xf32>, tensor<2x3xf32>) outs(%e0 : tensor<2x3x5xf32>) {
  ^bb0(%x: f32, %sum: f32, %out: f32):
    %r = arith.divf %x, %sum : f32
    linalg.yield %r : f32
  } -> tensor<2x3x5xf32>
  %e1 = tensor.empty() : tensor<2x3x4xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x3x5xf32>, tensor<2x5x4xf32>) outs(%o0 : tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %o : tensor<2x3x4xf32>
}

// Negative: normalised by the sum of the scores, not of the exponentials.
func.func @not_softmax(%q: tensor<2x3x4xf32>, %k: tensor<2x5x4xf32>, %v: tensor<2x5x4xf32>) -> tensor<2x3x4xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e0 = tensor.empty() : tensor<2x3x5xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (b, n, k)>, affine_map<(b, m, n, k) -> (b, m, n)>]
      ins(%q, %k : tensor<2x3x4xf32>, tensor<2x5x4xf32>) outs(%s0 : tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %er = tensor.empty() : tensor<2x3xf32>
  %m0 = linalg.fill ins(%ninf : f32) outs(%er : tensor<2x3xf32>) -> tensor<2x3xf32>
  %m = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%s : tensor<2x3x5xf32>) outs(%m0 : tensor<2x3xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %r = arith.maximumf %x, %acc : f32
    linalg.yield %r : f32
  } -> tensor<2x3xf32>
  %e = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s, %m : tensor<2x3x5xf32>, tensor<2x3xf32>) outs(%e0 : tensor<2x3x5xf32>) {
  ^bb0(%x: f32, %mx: f32, %out: f32):
    %d = arith.subf %x, %mx : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<2x3x5xf32>
  %l0 = linalg.fill ins(%zero : f32) outs(%er : tensor<2x3xf32>) -> tensor<2x3xf32>
  %l = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%s : tensor<2x3x5xf32>) outs(%l0 : tensor<2x3xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %r = arith.addf %x, %acc : f32
    linalg.yield %r : f32
  } -> tensor<2x3xf32>
  %p = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%e, %l : tensor<2x3x5xf32>, tensor<2x3xf32>) outs(%e0 : tensor<2x3x5xf32>) {
  ^bb0(%x: f32, %sum: f32, %out: f32):
    %r = arith.divf %x, %sum : f32
    linalg.yield %r : f32
  } -> tensor<2x3x5xf32>
  %e1 = tensor.empty() : tensor<2x3x4xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x3x5xf32>, tensor<2x5x4xf32>) outs(%o0 : tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %o : tensor<2x3x4xf32>
}
