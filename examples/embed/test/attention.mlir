// Attention as an ML front end writes it in linalg; embed-opt raises it to
// attn and compiles it (for the CPU; for NVIDIA where libdevice is found).
// RUN: %embed-opt %s --target=cpu | %FileCheck %s --check-prefix=CPU
// RUN: %if libdevice %{ %embed-opt %s --target=nvidia --chip=sm_90a --toolkit=%toolkit | %FileCheck %s --check-prefix=NVIDIA %}
// CPU-LABEL: llvm.func @attention
// CPU-NOT: linalg.softmax
// CPU-NOT: attn.attention
// NVIDIA: gpu.binary @flashir_kernels
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
