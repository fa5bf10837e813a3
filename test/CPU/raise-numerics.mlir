// The raised form computes what the linalg program computes: the same
// attention is written twice, once in the form attn-raise-from-linalg
// recognises (raised to attn.attention, lowered by convert-attn-to-loops)
// and once with a decomposed softmax (left as linalg, lowered by
// convert-linalg-to-loops); both run on the same pseudo-random inputs and
// the largest difference must stay below 1e-5.
// RUN: flashir-opt %s -attn-raise-from-linalg | FileCheck %s --check-prefix=RAISED
// RUN: flashir-opt %s \
// RUN:   -pass-pipeline="builtin.module(attn-raise-from-linalg,attn-import-variants,convert-attn-to-loops,canonicalize,one-shot-bufferize{bufferize-function-boundaries=1 function-boundary-type-conversion=identity-layout-map},buffer-deallocation-pipeline,convert-bufferization-to-memref,convert-linalg-to-loops,convert-vector-to-scf,convert-scf-to-cf,convert-vector-to-llvm,expand-strided-metadata,lower-affine,finalize-memref-to-llvm,convert-math-to-llvm,convert-arith-to-llvm,convert-cf-to-llvm,convert-func-to-llvm,convert-index-to-llvm,reconcile-unrealized-casts)" \
// RUN: | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_c_runner_utils \
// RUN: | FileCheck %s
// The same with K/V raised to one-token pages (the NVIDIA form).
// RUN: flashir-opt %s \
// RUN:   -pass-pipeline="builtin.module(attn-raise-from-linalg{paged-kv=1},attn-import-variants,convert-attn-to-loops,canonicalize,one-shot-bufferize{bufferize-function-boundaries=1 function-boundary-type-conversion=identity-layout-map},buffer-deallocation-pipeline,convert-bufferization-to-memref,convert-linalg-to-loops,convert-vector-to-scf,convert-scf-to-cf,convert-vector-to-llvm,expand-strided-metadata,lower-affine,finalize-memref-to-llvm,convert-math-to-llvm,convert-arith-to-llvm,convert-cf-to-llvm,convert-func-to-llvm,convert-index-to-llvm,reconcile-unrealized-casts)" \
// RUN: | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_c_runner_utils \
// RUN: | FileCheck %s

// RAISED-LABEL: func.func @raised
// RAISED: attn.attention @plain
// RAISED-LABEL: func.func @decomposed
// RAISED-NOT: attn.attention
// RAISED-LABEL: func.func @raised_causal
// RAISED: attn.attention @causal
// RAISED-LABEL: func.func @decomposed_causal
// RAISED-NOT: attn.attention
// RAISED-LABEL: func.func @raised_masked
// RAISED: attn.attention @raised_boolean_mask
// RAISED: attn.attention @raised_additive_mask_f32
// RAISED-LABEL: func.func @raised_spelled_out
// RAISED: attn.attention @plain
// RAISED-LABEL: func.func @raised_gqa
// RAISED: attn.attention @plain({{.*}}) {num_kv_heads = 1 : i64, num_qo_heads = 3 : i64

// CHECK: max abs difference
// CHECK-NEXT: {{[0-9.e+-]+}}
// CHECK-NEXT: within 1e-5
// CHECK-NEXT: 1
// CHECK-NEXT: causal: max abs difference
// CHECK-NEXT: {{[0-9.e+-]+}}
// CHECK-NEXT: within 1e-5
// CHECK-NEXT: 1
// CHECK-NEXT: gqa: max abs difference
// CHECK-NEXT: {{[0-9.e+-]+}}
// CHECK-NEXT: within 1e-5
// CHECK-NEXT: 1
// CHECK-NEXT: additive mask: max abs difference
// CHECK-NEXT: {{[0-9.e+-]+}}
// CHECK-NEXT: within 1e-5
// CHECK-NEXT: 1
// CHECK-NEXT: boolean mask: max abs difference
// CHECK-NEXT: {{[0-9.e+-]+}}
// CHECK-NEXT: within 1e-5
// CHECK-NEXT: 1
// CHECK-NEXT: spelled-out softmax: max abs difference
// CHECK-NEXT: {{[0-9.e+-]+}}
// CHECK-NEXT: within 1e-5
// CHECK-NEXT: 1

#id3 = affine_map<(a, b, c) -> (a, b, c)>
#row = affine_map<(a, b, c) -> (a, b)>

// Values in [-1, 1) from a hash of the index and a seed.
func.func @fill(%seed: i64) -> tensor<3x5x8xf32> {
  %e = tensor.empty() : tensor<3x5x8xf32>
  %t = linalg.generic {indexing_maps = [#id3], iterator_types = ["parallel", "parallel", "parallel"]}
      outs(%e : tensor<3x5x8xf32>) {
  ^bb0(%out: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %k = linalg.index 2 : index
    %ii = arith.index_cast %i : index to i64
    %jj = arith.index_cast %j : index to i64
    %kk = arith.index_cast %k : index to i64
    %c1 = arith.constant 7919 : i64
    %c2 = arith.constant 104729 : i64
    %c3 = arith.constant 1299709 : i64
    %c4 = arith.constant 2654435761 : i64
    %m = arith.constant 1000003 : i64
    %a = arith.muli %ii, %c1 : i64
    %b = arith.muli %jj, %c2 : i64
    %c = arith.muli %kk, %c3 : i64
    %s = arith.muli %seed, %c4 : i64
    %h0 = arith.addi %a, %b : i64
    %h1 = arith.addi %h0, %c : i64
    %h2 = arith.addi %h1, %s : i64
    %h3 = arith.muli %h2, %h2 : i64
    %h = arith.remui %h3, %m : i64
    %f = arith.uitofp %h : i64 to f32
    %scale = arith.constant 1.0e-6 : f32
    %two = arith.constant 2.0 : f32
    %one = arith.constant 1.0 : f32
    %u = arith.mulf %f, %scale : f32
    %v = arith.mulf %u, %two : f32
    %w = arith.subf %v, %one : f32
    linalg.yield %w : f32
  } -> tensor<3x5x8xf32>
  return %t : tensor<3x5x8xf32>
}

// Recognised: Q·Kᵀ, scale, softmax, ·V.
func.func @raised(%q: tensor<3x5x8xf32>, %k: tensor<3x5x8xf32>, %v: tensor<3x5x8xf32>) -> tensor<3x5x8xf32> {
  %zero = arith.constant 0.0 : f32
  %scale = arith.constant 0.35355339 : f32
  %e0 = tensor.empty() : tensor<3x5x5xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<3x5x5xf32>) -> tensor<3x5x5xf32>
  %s = linalg.batch_matmul
      indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>,
                       affine_map<(b, m, n, k) -> (b, n, k)>,
                       affine_map<(b, m, n, k) -> (b, m, n)>]
      ins(%q, %k : tensor<3x5x8xf32>, tensor<3x5x8xf32>) outs(%s0 : tensor<3x5x5xf32>) -> tensor<3x5x5xf32>
  %scaled = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<3x5x5xf32>) outs(%e0 : tensor<3x5x5xf32>) {
  ^bb0(%x: f32, %out: f32):
    %y = arith.mulf %x, %scale : f32
    linalg.yield %y : f32
  } -> tensor<3x5x5xf32>
  %p = linalg.softmax dimension(2) ins(%scaled : tensor<3x5x5xf32>) outs(%e0 : tensor<3x5x5xf32>) -> tensor<3x5x5xf32>
  %e1 = tensor.empty() : tensor<3x5x8xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<3x5x8xf32>) -> tensor<3x5x8xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<3x5x5xf32>, tensor<3x5x8xf32>) outs(%o0 : tensor<3x5x8xf32>) -> tensor<3x5x8xf32>
  return %o : tensor<3x5x8xf32>
}

// The same attention with softmax spelled out (not recognised).
func.func @decomposed(%q: tensor<3x5x8xf32>, %k: tensor<3x5x8xf32>, %v: tensor<3x5x8xf32>) -> tensor<3x5x8xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %scale = arith.constant 0.35355339 : f32
  %e0 = tensor.empty() : tensor<3x5x5xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<3x5x5xf32>) -> tensor<3x5x5xf32>
  %s = linalg.batch_matmul
      indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>,
                       affine_map<(b, m, n, k) -> (b, n, k)>,
                       affine_map<(b, m, n, k) -> (b, m, n)>]
      ins(%q, %k : tensor<3x5x8xf32>, tensor<3x5x8xf32>) outs(%s0 : tensor<3x5x5xf32>) -> tensor<3x5x5xf32>
  %er = tensor.empty() : tensor<3x5xf32>
  %m0 = linalg.fill ins(%ninf : f32) outs(%er : tensor<3x5xf32>) -> tensor<3x5xf32>
  %m = linalg.generic {indexing_maps = [#id3, #row], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%s : tensor<3x5x5xf32>) outs(%m0 : tensor<3x5xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.mulf %x, %scale : f32
    %r = arith.maximumf %y, %acc : f32
    linalg.yield %r : f32
  } -> tensor<3x5xf32>
  %l0 = linalg.fill ins(%zero : f32) outs(%er : tensor<3x5xf32>) -> tensor<3x5xf32>
  %l = linalg.generic {indexing_maps = [#id3, #row, #row], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%s, %m : tensor<3x5x5xf32>, tensor<3x5xf32>) outs(%l0 : tensor<3x5xf32>) {
  ^bb0(%x: f32, %mx: f32, %acc: f32):
    %y = arith.mulf %x, %scale : f32
    %d = arith.subf %y, %mx : f32
    %p = math.exp %d : f32
    %r = arith.addf %p, %acc : f32
    linalg.yield %r : f32
  } -> tensor<3x5xf32>
  %p = linalg.generic {indexing_maps = [#id3, #row, #row, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s, %m, %l : tensor<3x5x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>) outs(%e0 : tensor<3x5x5xf32>) {
  ^bb0(%x: f32, %mx: f32, %sum: f32, %out: f32):
    %y = arith.mulf %x, %scale : f32
    %d = arith.subf %y, %mx : f32
    %e = math.exp %d : f32
    %r = arith.divf %e, %sum : f32
    linalg.yield %r : f32
  } -> tensor<3x5x5xf32>
  %e1 = tensor.empty() : tensor<3x5x8xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<3x5x8xf32>) -> tensor<3x5x8xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<3x5x5xf32>, tensor<3x5x8xf32>) outs(%o0 : tensor<3x5x8xf32>) -> tensor<3x5x8xf32>
  return %o : tensor<3x5x8xf32>
}

// Causal (j > i masked), mask and scale in one generic: raised to @causal.
func.func @raised_causal(%q: tensor<3x5x8xf32>, %k: tensor<3x5x8xf32>, %v: tensor<3x5x8xf32>) -> tensor<3x5x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<3x5x5xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<3x5x5xf32>) -> tensor<3x5x5xf32>
  %s = linalg.batch_matmul
      indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>,
                       affine_map<(b, m, n, k) -> (b, n, k)>,
                       affine_map<(b, m, n, k) -> (b, m, n)>]
      ins(%q, %k : tensor<3x5x8xf32>, tensor<3x5x8xf32>) outs(%s0 : tensor<3x5x5xf32>) -> tensor<3x5x5xf32>
  %masked = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<3x5x5xf32>) outs(%e0 : tensor<3x5x5xf32>) {
  ^bb0(%x: f32, %out: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %scale = arith.constant 0.35355339 : f32
    %ninf = arith.constant 0xFF800000 : f32
    %y = arith.mulf %x, %scale : f32
    %future = arith.cmpi ugt, %j, %i : index
    %r = arith.select %future, %ninf, %y : f32
    linalg.yield %r : f32
  } -> tensor<3x5x5xf32>
  %p = linalg.softmax dimension(2) ins(%masked : tensor<3x5x5xf32>) outs(%e0 : tensor<3x5x5xf32>) -> tensor<3x5x5xf32>
  %e1 = tensor.empty() : tensor<3x5x8xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<3x5x8xf32>) -> tensor<3x5x8xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<3x5x5xf32>, tensor<3x5x8xf32>) outs(%o0 : tensor<3x5x8xf32>) -> tensor<3x5x8xf32>
  return %o : tensor<3x5x8xf32>
}

// The same with the softmax spelled out and the mask in each step.
func.func @decomposed_causal(%q: tensor<3x5x8xf32>, %k: tensor<3x5x8xf32>, %v: tensor<3x5x8xf32>) -> tensor<3x5x8xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %scale = arith.constant 0.35355339 : f32
  %e0 = tensor.empty() : tensor<3x5x5xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<3x5x5xf32>) -> tensor<3x5x5xf32>
  %s = linalg.batch_matmul
      indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>,
                       affine_map<(b, m, n, k) -> (b, n, k)>,
                       affine_map<(b, m, n, k) -> (b, m, n)>]
      ins(%q, %k : tensor<3x5x8xf32>, tensor<3x5x8xf32>) outs(%s0 : tensor<3x5x5xf32>) -> tensor<3x5x5xf32>
  %er = tensor.empty() : tensor<3x5xf32>
  %m0 = linalg.fill ins(%ninf : f32) outs(%er : tensor<3x5xf32>) -> tensor<3x5xf32>
  %m = linalg.generic {indexing_maps = [#id3, #row], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%s : tensor<3x5x5xf32>) outs(%m0 : tensor<3x5xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %future = arith.cmpi ugt, %j, %i : index
    %y = arith.mulf %x, %scale : f32
    %ym = arith.select %future, %ninf, %y : f32
    %r = arith.maximumf %ym, %acc : f32
    linalg.yield %r : f32
  } -> tensor<3x5xf32>
  %l0 = linalg.fill ins(%zero : f32) outs(%er : tensor<3x5xf32>) -> tensor<3x5xf32>
  %l = linalg.generic {indexing_maps = [#id3, #row, #row], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%s, %m : tensor<3x5x5xf32>, tensor<3x5xf32>) outs(%l0 : tensor<3x5xf32>) {
  ^bb0(%x: f32, %mx: f32, %acc: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %future = arith.cmpi ugt, %j, %i : index
    %y = arith.mulf %x, %scale : f32
    %d = arith.subf %y, %mx : f32
    %p = math.exp %d : f32
    %pm = arith.select %future, %zero, %p : f32
    %r = arith.addf %pm, %acc : f32
    linalg.yield %r : f32
  } -> tensor<3x5xf32>
  %p = linalg.generic {indexing_maps = [#id3, #row, #row, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s, %m, %l : tensor<3x5x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>) outs(%e0 : tensor<3x5x5xf32>) {
  ^bb0(%x: f32, %mx: f32, %sum: f32, %out: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %future = arith.cmpi ugt, %j, %i : index
    %y = arith.mulf %x, %scale : f32
    %d = arith.subf %y, %mx : f32
    %e = math.exp %d : f32
    %r = arith.divf %e, %sum : f32
    %rm = arith.select %future, %zero, %r : f32
    linalg.yield %rm : f32
  } -> tensor<3x5x5xf32>
  %e1 = tensor.empty() : tensor<3x5x8xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<3x5x8xf32>) -> tensor<3x5x8xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<3x5x5xf32>, tensor<3x5x8xf32>) outs(%o0 : tensor<3x5x8xf32>) -> tensor<3x5x8xf32>
  return %o : tensor<3x5x8xf32>
}

// Largest |a - b|, and whether it is below 1e-5 while b is not all zero.
func.func @compare(%a: tensor<3x5x8xf32>, %b: tensor<3x5x8xf32>) -> (f32, i1) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %diff = linalg.generic {indexing_maps = [#id3, #id3, affine_map<(a, b, c) -> ()>],
                          iterator_types = ["reduction", "reduction", "reduction"]}
      ins(%a, %b : tensor<3x5x8xf32>, tensor<3x5x8xf32>) outs(%init : tensor<f32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %d = arith.subf %x, %y : f32
    %ad = math.absf %d : f32
    %r = arith.maximumf %ad, %acc : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %mag = linalg.generic {indexing_maps = [#id3, affine_map<(a, b, c) -> ()>],
                         iterator_types = ["reduction", "reduction", "reduction"]}
      ins(%b : tensor<3x5x8xf32>) outs(%init : tensor<f32>) {
  ^bb0(%x: f32, %acc: f32):
    %ax = math.absf %x : f32
    %r = arith.maximumf %ax, %acc : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %dv = tensor.extract %diff[] : tensor<f32>
  %mv = tensor.extract %mag[] : tensor<f32>
  %tol = arith.constant 1.0e-5 : f32
  %floor = arith.constant 1.0e-2 : f32
  %close = arith.cmpf olt, %dv, %tol : f32
  %nonzero = arith.cmpf ogt, %mv, %floor : f32
  %ok = arith.andi %close, %nonzero : i1
  return %dv, %ok : f32, i1
}

// A mask on the scores: additive (s * c + M) or boolean (select(M, s * c,
// -inf)), raised; and the same spelled out with a decomposed softmax.
func.func @raised_masked(%q: tensor<3x5x8xf32>, %k: tensor<3x5x8xf32>, %v: tensor<3x5x8xf32>,
                         %bias: tensor<3x5x5xf32>, %keep: tensor<3x5x5xi1>, %boolean: i1) -> tensor<3x5x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<3x5x5xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<3x5x5xf32>) -> tensor<3x5x5xf32>
  %s = linalg.batch_matmul
      indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>,
                       affine_map<(b, m, n, k) -> (b, n, k)>,
                       affine_map<(b, m, n, k) -> (b, m, n)>]
      ins(%q, %k : tensor<3x5x8xf32>, tensor<3x5x8xf32>) outs(%s0 : tensor<3x5x5xf32>) -> tensor<3x5x5xf32>
  %o = scf.if %boolean -> tensor<3x5x8xf32> {
    %masked = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
        ins(%s, %keep : tensor<3x5x5xf32>, tensor<3x5x5xi1>) outs(%e0 : tensor<3x5x5xf32>) {
    ^bb0(%x: f32, %m: i1, %out: f32):
      %scale = arith.constant 0.35355339 : f32
      %ninf = arith.constant 0xFF800000 : f32
      %y = arith.mulf %x, %scale : f32
      %r = arith.select %m, %y, %ninf : f32
      linalg.yield %r : f32
    } -> tensor<3x5x5xf32>
    %p = linalg.softmax dimension(2) ins(%masked : tensor<3x5x5xf32>) outs(%e0 : tensor<3x5x5xf32>) -> tensor<3x5x5xf32>
    %e1 = tensor.empty() : tensor<3x5x8xf32>
    %o0 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<3x5x8xf32>) -> tensor<3x5x8xf32>
    %r = linalg.batch_matmul ins(%p, %v : tensor<3x5x5xf32>, tensor<3x5x8xf32>) outs(%o0 : tensor<3x5x8xf32>) -> tensor<3x5x8xf32>
    scf.yield %r : tensor<3x5x8xf32>
  } else {
    %s1 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<3x5x5xf32>) -> tensor<3x5x5xf32>
    %s2 = linalg.batch_matmul
        indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>,
                         affine_map<(b, m, n, k) -> (b, n, k)>,
                         affine_map<(b, m, n, k) -> (b, m, n)>]
        ins(%q, %k : tensor<3x5x8xf32>, tensor<3x5x8xf32>) outs(%s1 : tensor<3x5x5xf32>) -> tensor<3x5x5xf32>
    %masked = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
        ins(%s2, %bias : tensor<3x5x5xf32>, tensor<3x5x5xf32>) outs(%e0 : tensor<3x5x5xf32>) {
    ^bb0(%x: f32, %m: f32, %out: f32):
      %scale = arith.constant 0.35355339 : f32
      %y = arith.mulf %x, %scale : f32
      %r = arith.addf %y, %m : f32
      linalg.yield %r : f32
    } -> tensor<3x5x5xf32>
    %p = linalg.softmax dimension(2) ins(%masked : tensor<3x5x5xf32>) outs(%e0 : tensor<3x5x5xf32>) -> tensor<3x5x5xf32>
    %e1 = tensor.empty() : tensor<3x5x8xf32>
    %o0 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<3x5x8xf32>) -> tensor<3x5x8xf32>
    %r = linalg.batch_matmul ins(%p, %v : tensor<3x5x5xf32>, tensor<3x5x8xf32>) outs(%o0 : tensor<3x5x8xf32>) -> tensor<3x5x8xf32>
    scf.yield %r : tensor<3x5x8xf32>
  }
  return %o : tensor<3x5x8xf32>
}

// Reference: scores t = s * c + bias (bias -inf where masked).
func.func @decomposed_biased(%q: tensor<3x5x8xf32>, %k: tensor<3x5x8xf32>, %v: tensor<3x5x8xf32>,
                             %bias: tensor<3x5x5xf32>) -> tensor<3x5x8xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %scale = arith.constant 0.35355339 : f32
  %e0 = tensor.empty() : tensor<3x5x5xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<3x5x5xf32>) -> tensor<3x5x5xf32>
  %s = linalg.batch_matmul
      indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>,
                       affine_map<(b, m, n, k) -> (b, n, k)>,
                       affine_map<(b, m, n, k) -> (b, m, n)>]
      ins(%q, %k : tensor<3x5x8xf32>, tensor<3x5x8xf32>) outs(%s0 : tensor<3x5x5xf32>) -> tensor<3x5x5xf32>
  %t = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s, %bias : tensor<3x5x5xf32>, tensor<3x5x5xf32>) outs(%e0 : tensor<3x5x5xf32>) {
  ^bb0(%x: f32, %b: f32, %out: f32):
    %y = arith.mulf %x, %scale : f32
    %r = arith.addf %y, %b : f32
    linalg.yield %r : f32
  } -> tensor<3x5x5xf32>
  %er = tensor.empty() : tensor<3x5xf32>
  %m0 = linalg.fill ins(%ninf : f32) outs(%er : tensor<3x5xf32>) -> tensor<3x5xf32>
  %m = linalg.generic {indexing_maps = [#id3, #row], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%t : tensor<3x5x5xf32>) outs(%m0 : tensor<3x5xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %r = arith.maximumf %x, %acc : f32
    linalg.yield %r : f32
  } -> tensor<3x5xf32>
  %l0 = linalg.fill ins(%zero : f32) outs(%er : tensor<3x5xf32>) -> tensor<3x5xf32>
  %l = linalg.generic {indexing_maps = [#id3, #row, #row], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%t, %m : tensor<3x5x5xf32>, tensor<3x5xf32>) outs(%l0 : tensor<3x5xf32>) {
  ^bb0(%x: f32, %mx: f32, %acc: f32):
    %d = arith.subf %x, %mx : f32
    %p = math.exp %d : f32
    %r = arith.addf %p, %acc : f32
    linalg.yield %r : f32
  } -> tensor<3x5xf32>
  %p = linalg.generic {indexing_maps = [#id3, #row, #row, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%t, %m, %l : tensor<3x5x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>) outs(%e0 : tensor<3x5x5xf32>) {
  ^bb0(%x: f32, %mx: f32, %sum: f32, %out: f32):
    %d = arith.subf %x, %mx : f32
    %e = math.exp %d : f32
    %r = arith.divf %e, %sum : f32
    linalg.yield %r : f32
  } -> tensor<3x5x5xf32>
  %e1 = tensor.empty() : tensor<3x5x8xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<3x5x8xf32>) -> tensor<3x5x8xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<3x5x5xf32>, tensor<3x5x8xf32>) outs(%o0 : tensor<3x5x8xf32>) -> tensor<3x5x8xf32>
  return %o : tensor<3x5x8xf32>
}

// Softmax spelled out the canonical way (max, exp(s - max), sum, divide):
// raised as well.
func.func @raised_spelled_out(%q: tensor<3x5x8xf32>, %k: tensor<3x5x8xf32>, %v: tensor<3x5x8xf32>) -> tensor<3x5x8xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e0 = tensor.empty() : tensor<3x5x5xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<3x5x5xf32>) -> tensor<3x5x5xf32>
  %s1 = linalg.batch_matmul
      indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>,
                       affine_map<(b, m, n, k) -> (b, n, k)>,
                       affine_map<(b, m, n, k) -> (b, m, n)>]
      ins(%q, %k : tensor<3x5x8xf32>, tensor<3x5x8xf32>) outs(%s0 : tensor<3x5x5xf32>) -> tensor<3x5x5xf32>
  %s = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s1 : tensor<3x5x5xf32>) outs(%e0 : tensor<3x5x5xf32>) {
  ^bb0(%x: f32, %out: f32):
    %scale = arith.constant 0.35355339 : f32
    %y = arith.mulf %x, %scale : f32
    linalg.yield %y : f32
  } -> tensor<3x5x5xf32>
  %er = tensor.empty() : tensor<3x5xf32>
  %m0 = linalg.fill ins(%ninf : f32) outs(%er : tensor<3x5xf32>) -> tensor<3x5xf32>
  %m = linalg.generic {indexing_maps = [#id3, #row], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%s : tensor<3x5x5xf32>) outs(%m0 : tensor<3x5xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %r = arith.maximumf %x, %acc : f32
    linalg.yield %r : f32
  } -> tensor<3x5xf32>
  %e = linalg.generic {indexing_maps = [#id3, #row, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s, %m : tensor<3x5x5xf32>, tensor<3x5xf32>) outs(%e0 : tensor<3x5x5xf32>) {
  ^bb0(%x: f32, %mx: f32, %out: f32):
    %d = arith.subf %x, %mx : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<3x5x5xf32>
  %l0 = linalg.fill ins(%zero : f32) outs(%er : tensor<3x5xf32>) -> tensor<3x5xf32>
  %l = linalg.generic {indexing_maps = [#id3, #row], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%e : tensor<3x5x5xf32>) outs(%l0 : tensor<3x5xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %r = arith.addf %x, %acc : f32
    linalg.yield %r : f32
  } -> tensor<3x5xf32>
  %p = linalg.generic {indexing_maps = [#id3, #row, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%e, %l : tensor<3x5x5xf32>, tensor<3x5xf32>) outs(%e0 : tensor<3x5x5xf32>) {
  ^bb0(%x: f32, %sum: f32, %out: f32):
    %r = arith.divf %x, %sum : f32
    linalg.yield %r : f32
  } -> tensor<3x5x5xf32>
  %e1 = tensor.empty() : tensor<3x5x8xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<3x5x8xf32>) -> tensor<3x5x8xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<3x5x5xf32>, tensor<3x5x8xf32>) outs(%o0 : tensor<3x5x8xf32>) -> tensor<3x5x8xf32>
  return %o : tensor<3x5x8xf32>
}

// GQA: one KV head broadcast to the three query heads.
func.func @broadcast_heads(%x: tensor<1x5x8xf32>) -> tensor<3x5x8xf32> {
  %e = tensor.empty() : tensor<1x3x5x8xf32>
  %b = linalg.broadcast ins(%x : tensor<1x5x8xf32>) outs(%e : tensor<1x3x5x8xf32>) dimensions = [1]
  %c = tensor.collapse_shape %b [[0, 1], [2], [3]] : tensor<1x3x5x8xf32> into tensor<3x5x8xf32>
  return %c : tensor<3x5x8xf32>
}

func.func @raised_gqa(%q: tensor<3x5x8xf32>, %k0: tensor<1x5x8xf32>, %v0: tensor<1x5x8xf32>) -> tensor<3x5x8xf32> {
  %zero = arith.constant 0.0 : f32
  %eb = tensor.empty() : tensor<1x3x5x8xf32>
  %kb = linalg.broadcast ins(%k0 : tensor<1x5x8xf32>) outs(%eb : tensor<1x3x5x8xf32>) dimensions = [1]
  %k = tensor.collapse_shape %kb [[0, 1], [2], [3]] : tensor<1x3x5x8xf32> into tensor<3x5x8xf32>
  %vb = linalg.broadcast ins(%v0 : tensor<1x5x8xf32>) outs(%eb : tensor<1x3x5x8xf32>) dimensions = [1]
  %v = tensor.collapse_shape %vb [[0, 1], [2], [3]] : tensor<1x3x5x8xf32> into tensor<3x5x8xf32>
  %e0 = tensor.empty() : tensor<3x5x5xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<3x5x5xf32>) -> tensor<3x5x5xf32>
  %s = linalg.batch_matmul
      indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>,
                       affine_map<(b, m, n, k) -> (b, n, k)>,
                       affine_map<(b, m, n, k) -> (b, m, n)>]
      ins(%q, %k : tensor<3x5x8xf32>, tensor<3x5x8xf32>) outs(%s0 : tensor<3x5x5xf32>) -> tensor<3x5x5xf32>
  %scaled = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<3x5x5xf32>) outs(%e0 : tensor<3x5x5xf32>) {
  ^bb0(%x: f32, %out: f32):
    %scale = arith.constant 0.35355339 : f32
    %y = arith.mulf %x, %scale : f32
    linalg.yield %y : f32
  } -> tensor<3x5x5xf32>
  %p = linalg.softmax dimension(2) ins(%scaled : tensor<3x5x5xf32>) outs(%e0 : tensor<3x5x5xf32>) -> tensor<3x5x5xf32>
  %e1 = tensor.empty() : tensor<3x5x8xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<3x5x8xf32>) -> tensor<3x5x8xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<3x5x5xf32>, tensor<3x5x8xf32>) outs(%o0 : tensor<3x5x8xf32>) -> tensor<3x5x8xf32>
  return %o : tensor<3x5x8xf32>
}

func.func @main() {
  %s1 = arith.constant 1 : i64
  %s2 = arith.constant 2 : i64
  %s3 = arith.constant 3 : i64
  %q = call @fill(%s1) : (i64) -> tensor<3x5x8xf32>
  %k = call @fill(%s2) : (i64) -> tensor<3x5x8xf32>
  %v = call @fill(%s3) : (i64) -> tensor<3x5x8xf32>
  %a = call @raised(%q, %k, %v) : (tensor<3x5x8xf32>, tensor<3x5x8xf32>, tensor<3x5x8xf32>) -> tensor<3x5x8xf32>
  %b = call @decomposed(%q, %k, %v) : (tensor<3x5x8xf32>, tensor<3x5x8xf32>, tensor<3x5x8xf32>) -> tensor<3x5x8xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %diff = linalg.generic {indexing_maps = [#id3, #id3, affine_map<(a, b, c) -> ()>],
                          iterator_types = ["reduction", "reduction", "reduction"]}
      ins(%a, %b : tensor<3x5x8xf32>, tensor<3x5x8xf32>) outs(%init : tensor<f32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %d = arith.subf %x, %y : f32
    %ad = math.absf %d : f32
    %r = arith.maximumf %ad, %acc : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  // The outputs are not all zero (else the comparison proves nothing).
  %mag = linalg.generic {indexing_maps = [#id3, affine_map<(a, b, c) -> ()>],
                         iterator_types = ["reduction", "reduction", "reduction"]}
      ins(%b : tensor<3x5x8xf32>) outs(%init : tensor<f32>) {
  ^bb0(%x: f32, %acc: f32):
    %ax = math.absf %x : f32
    %r = arith.maximumf %ax, %acc : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %dv = tensor.extract %diff[] : tensor<f32>
  %mv = tensor.extract %mag[] : tensor<f32>
  %tol = arith.constant 1.0e-5 : f32
  %floor = arith.constant 1.0e-2 : f32
  %close = arith.cmpf olt, %dv, %tol : f32
  %nonzero = arith.cmpf ogt, %mv, %floor : f32
  %ok = arith.andi %close, %nonzero : i1
  vector.print str "max abs difference\n"
  vector.print %dv : f32
  vector.print str "within 1e-5\n"
  vector.print %ok : i1
  %ca = call @raised_causal(%q, %k, %v) : (tensor<3x5x8xf32>, tensor<3x5x8xf32>, tensor<3x5x8xf32>) -> tensor<3x5x8xf32>
  %cb = call @decomposed_causal(%q, %k, %v) : (tensor<3x5x8xf32>, tensor<3x5x8xf32>, tensor<3x5x8xf32>) -> tensor<3x5x8xf32>
  %cd, %cok = call @compare(%ca, %cb) : (tensor<3x5x8xf32>, tensor<3x5x8xf32>) -> (f32, i1)
  vector.print str "causal: max abs difference\n"
  vector.print %cd : f32
  vector.print str "within 1e-5\n"
  vector.print %cok : i1
  %k0 = tensor.extract_slice %k[0, 0, 0] [1, 5, 8] [1, 1, 1] : tensor<3x5x8xf32> to tensor<1x5x8xf32>
  %v0 = tensor.extract_slice %v[0, 0, 0] [1, 5, 8] [1, 1, 1] : tensor<3x5x8xf32> to tensor<1x5x8xf32>
  %ga = call @raised_gqa(%q, %k0, %v0) : (tensor<3x5x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>) -> tensor<3x5x8xf32>
  %kb = call @broadcast_heads(%k0) : (tensor<1x5x8xf32>) -> tensor<3x5x8xf32>
  %vb = call @broadcast_heads(%v0) : (tensor<1x5x8xf32>) -> tensor<3x5x8xf32>
  %gb = call @decomposed(%q, %kb, %vb) : (tensor<3x5x8xf32>, tensor<3x5x8xf32>, tensor<3x5x8xf32>) -> tensor<3x5x8xf32>
  %gd, %gok = call @compare(%ga, %gb) : (tensor<3x5x8xf32>, tensor<3x5x8xf32>) -> (f32, i1)
  vector.print str "gqa: max abs difference\n"
  vector.print %gd : f32
  vector.print str "within 1e-5\n"
  vector.print %gok : i1
  // Masks: a random bias; keep where the bias is above -0.5 or on the
  // diagonal (no row fully masked), with -inf bias where not kept.
  %s4 = arith.constant 4 : i64
  %b8 = call @fill(%s4) : (i64) -> tensor<3x5x8xf32>
  %bias = tensor.extract_slice %b8[0, 0, 0] [3, 5, 5] [1, 1, 1] : tensor<3x5x8xf32> to tensor<3x5x5xf32>
  %ek = tensor.empty() : tensor<3x5x5xi1>
  %keep = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%bias : tensor<3x5x5xf32>) outs(%ek : tensor<3x5x5xi1>) {
  ^bb0(%x: f32, %out: i1):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %diag = arith.cmpi eq, %i, %j : index
    %lim = arith.constant -0.5 : f32
    %above = arith.cmpf ogt, %x, %lim : f32
    %r = arith.ori %diag, %above : i1
    linalg.yield %r : i1
  } -> tensor<3x5x5xi1>
  %eb = tensor.empty() : tensor<3x5x5xf32>
  %keepBias = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%keep : tensor<3x5x5xi1>) outs(%eb : tensor<3x5x5xf32>) {
  ^bb0(%m: i1, %out: f32):
    %z = arith.constant 0.0 : f32
    %ninf = arith.constant 0xFF800000 : f32
    %r = arith.select %m, %z, %ninf : f32
    linalg.yield %r : f32
  } -> tensor<3x5x5xf32>
  %false = arith.constant false
  %true = arith.constant true
  %aa = call @raised_masked(%q, %k, %v, %bias, %keep, %false) : (tensor<3x5x8xf32>, tensor<3x5x8xf32>, tensor<3x5x8xf32>, tensor<3x5x5xf32>, tensor<3x5x5xi1>, i1) -> tensor<3x5x8xf32>
  %ab = call @decomposed_biased(%q, %k, %v, %bias) : (tensor<3x5x8xf32>, tensor<3x5x8xf32>, tensor<3x5x8xf32>, tensor<3x5x5xf32>) -> tensor<3x5x8xf32>
  %ad, %aok = call @compare(%aa, %ab) : (tensor<3x5x8xf32>, tensor<3x5x8xf32>) -> (f32, i1)
  vector.print str "additive mask: max abs difference\n"
  vector.print %ad : f32
  vector.print str "within 1e-5\n"
  vector.print %aok : i1
  %ba = call @raised_masked(%q, %k, %v, %bias, %keep, %true) : (tensor<3x5x8xf32>, tensor<3x5x8xf32>, tensor<3x5x8xf32>, tensor<3x5x5xf32>, tensor<3x5x5xi1>, i1) -> tensor<3x5x8xf32>
  %bb = call @decomposed_biased(%q, %k, %v, %keepBias) : (tensor<3x5x8xf32>, tensor<3x5x8xf32>, tensor<3x5x8xf32>, tensor<3x5x5xf32>) -> tensor<3x5x8xf32>
  %bd, %bok = call @compare(%ba, %bb) : (tensor<3x5x8xf32>, tensor<3x5x8xf32>) -> (f32, i1)
  vector.print str "boolean mask: max abs difference\n"
  vector.print %bd : f32
  vector.print str "within 1e-5\n"
  vector.print %bok : i1
  %da = call @raised_spelled_out(%q, %k, %v) : (tensor<3x5x8xf32>, tensor<3x5x8xf32>, tensor<3x5x8xf32>) -> tensor<3x5x8xf32>
  %dd, %dok = call @compare(%da, %b) : (tensor<3x5x8xf32>, tensor<3x5x8xf32>) -> (f32, i1)
  vector.print str "spelled-out softmax: max abs difference\n"
  vector.print %dd : f32
  vector.print str "within 1e-5\n"
  vector.print %dok : i1
  return
}
