// RUN: flashir-opt %s -attn-raise-from-linalg -attn-import-variants -convert-attn-to-gpu="chip=sm_90a" | FileCheck %s

// Attention raised from linalg reaches the GPU as a ragged view (the keys'
// contiguous rows), with no one-token page table: each batch index is a
// request of 256 keys, rows indptr[r] .. indptr[r + 1].
// CHECK: attn.ragged_kv
// CHECK-LABEL: gpu.func @attention_decode_0
// CHECK-SAME: memref<?x1x1x128xbf16>
// CHECK-SAME: args = ["q", "qo_indptr", "k_pool", "v_pool", "indptr", "out", "lse", "kv_maps"]
func.func @attention(%q: tensor<4x1x128xbf16>, %k: tensor<4x256x128xbf16>, %v: tensor<4x256x128xbf16>) -> tensor<4x1x128xbf16> {
  %zero = arith.constant 0.0 : bf16
  %c = arith.constant 0.08838834764 : bf16
  %e0 = tensor.empty() : tensor<4x1x256xbf16>
  %s0 = linalg.fill ins(%zero : bf16) outs(%e0 : tensor<4x1x256xbf16>) -> tensor<4x1x256xbf16>
  %s = linalg.batch_matmul
      indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>,
                       affine_map<(b, m, n, k) -> (b, n, k)>,
                       affine_map<(b, m, n, k) -> (b, m, n)>]
      ins(%q, %k : tensor<4x1x128xbf16>, tensor<4x256x128xbf16>) outs(%s0 : tensor<4x1x256xbf16>) -> tensor<4x1x256xbf16>
  %scaled = linalg.generic {indexing_maps = [affine_map<(a, b, c) -> (a, b, c)>, affine_map<(a, b, c) -> (a, b, c)>],
                            iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<4x1x256xbf16>) outs(%e0 : tensor<4x1x256xbf16>) {
  ^bb0(%x: bf16, %out: bf16):
    %y = arith.mulf %x, %c : bf16
    linalg.yield %y : bf16
  } -> tensor<4x1x256xbf16>
  %p = linalg.softmax dimension(2) ins(%scaled : tensor<4x1x256xbf16>) outs(%e0 : tensor<4x1x256xbf16>) -> tensor<4x1x256xbf16>
  %e1 = tensor.empty() : tensor<4x1x128xbf16>
  %o0 = linalg.fill ins(%zero : bf16) outs(%e1 : tensor<4x1x128xbf16>) -> tensor<4x1x128xbf16>
  %o = linalg.batch_matmul ins(%p, %v : tensor<4x1x256xbf16>, tensor<4x256x128xbf16>) outs(%o0 : tensor<4x1x128xbf16>) -> tensor<4x1x128xbf16>
  return %o : tensor<4x1x128xbf16>
}
