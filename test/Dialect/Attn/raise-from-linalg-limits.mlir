// RUN: flashir-opt %s -split-input-file -verify-diagnostics -attn-raise-from-linalg | FileCheck %s
// RUN: flashir-opt %s -split-input-file -verify-diagnostics -attn-raise-from-linalg=paged-kv=1 | FileCheck %s --check-prefix=PAGED

// Batches too large for a materialised constant (issue 22: batch 2^31 - 1
// built a 3.5 GB indptr constant): indptr, page ids and last-page lengths
// are generated, so the rewrite is small and instant at any batch size.

// CHECK-LABEL: func.func @huge_batch
// CHECK-NOT: dense<
// CHECK: %[[N:.*]] = arith.constant 1073741825 : index
// CHECK: %[[QO:.*]] = tensor.generate %[[N]]
// CHECK: attn.ragged_q %{{.*}}, %[[QO]]
// CHECK: attn.attention @plain
// CHECK-NOT: dense<
// PAGED-LABEL: func.func @huge_batch
// PAGED-NOT: dense<
// PAGED: arith.constant 1073741824 : index
// PAGED: attn.paged_kv
// PAGED-NOT: dense<
func.func @huge_batch(%q: tensor<1073741824x1x2xf16>, %k: tensor<1073741824x1x2xf16>, %v: tensor<1073741824x1x2xf16>) -> tensor<1073741824x1x2xf16> {
  %zero = arith.constant 0.0 : f16
  %e0 = tensor.empty() : tensor<1073741824x1x1xf16>
  %s0 = linalg.fill ins(%zero : f16) outs(%e0 : tensor<1073741824x1x1xf16>) -> tensor<1073741824x1x1xf16>
  %s = linalg.batch_matmul
      indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>,
                       affine_map<(b, m, n, k) -> (b, n, k)>,
                       affine_map<(b, m, n, k) -> (b, m, n)>]
      ins(%q, %k : tensor<1073741824x1x2xf16>, tensor<1073741824x1x2xf16>) outs(%s0 : tensor<1073741824x1x1xf16>) -> tensor<1073741824x1x1xf16>
  %p = linalg.softmax dimension(2) ins(%s : tensor<1073741824x1x1xf16>) outs(%e0 : tensor<1073741824x1x1xf16>) -> tensor<1073741824x1x1xf16>
  %e1 = tensor.empty() : tensor<1073741824x1x2xf16>
  %o0 = linalg.fill ins(%zero : f16) outs(%e1 : tensor<1073741824x1x2xf16>) -> tensor<1073741824x1x2xf16>
  %o = linalg.batch_matmul ins(%p, %v : tensor<1073741824x1x1xf16>, tensor<1073741824x1x2xf16>) outs(%o0 : tensor<1073741824x1x2xf16>) -> tensor<1073741824x1x2xf16>
  return %o : tensor<1073741824x1x2xf16>
}

// -----

// Tokens past the views' i32 indices: left as it is, with a warning.
// CHECK-LABEL: func.func @too_many_tokens
// CHECK-NOT: attn.attention
// CHECK: linalg.softmax
func.func @too_many_tokens(%q: tensor<2147483647x2x4xf16>, %k: tensor<2147483647x3x4xf16>, %v: tensor<2147483647x3x4xf16>) -> tensor<2147483647x2x4xf16> {
  %zero = arith.constant 0.0 : f16
  %e0 = tensor.empty() : tensor<2147483647x2x3xf16>
  %s0 = linalg.fill ins(%zero : f16) outs(%e0 : tensor<2147483647x2x3xf16>) -> tensor<2147483647x2x3xf16>
  %s = linalg.batch_matmul
      indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>,
                       affine_map<(b, m, n, k) -> (b, n, k)>,
                       affine_map<(b, m, n, k) -> (b, m, n)>]
      ins(%q, %k : tensor<2147483647x2x4xf16>, tensor<2147483647x3x4xf16>) outs(%s0 : tensor<2147483647x2x3xf16>) -> tensor<2147483647x2x3xf16>
  %p = linalg.softmax dimension(2) ins(%s : tensor<2147483647x2x3xf16>) outs(%e0 : tensor<2147483647x2x3xf16>) -> tensor<2147483647x2x3xf16>
  %e1 = tensor.empty() : tensor<2147483647x2x4xf16>
  %o0 = linalg.fill ins(%zero : f16) outs(%e1 : tensor<2147483647x2x4xf16>) -> tensor<2147483647x2x4xf16>
  // expected-warning @+1 {{attention not raised: 2147483647 x 2 query and 2147483647 x 3 key tokens exceed the views' i32 indices}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2147483647x2x3xf16>, tensor<2147483647x3x4xf16>) outs(%o0 : tensor<2147483647x2x4xf16>) -> tensor<2147483647x2x4xf16>
  return %o : tensor<2147483647x2x4xf16>
}
