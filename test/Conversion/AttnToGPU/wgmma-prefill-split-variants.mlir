// RUN: flashir-opt %s -attn-import-variants -attn-split-kv=chunk-size=0 "-convert-attn-to-gpu=chip=sm_90a design=wgmma split-prefill=true" | FileCheck %s

// Split-KV wgmma prefill kernels beyond wgmma-prefill-split.mlir's (which
// sm_80 also lowers): head dim 256 and an exactly causal mask.

// Head dim 256: O's accumulators need all 240 consumer registers, so the
// split kernel keeps 24 / 240.
// CHECK-LABEL: gpu.func @split_d256_prefill_0
// CHECK-SAME: grid = "chunks x q_tiles x num_qo_heads", block = 384
// CHECK: nvvm.setmaxregister  decrease 24
// CHECK: nvvm.setmaxregister  increase 240
!q256  = !attn.ragged_q<heads = 4, head_dim = 256, bf16>
!kv256 = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 256, bf16>
!pool256 = tensor<?x16x2x256xbf16>
func.func @split_d256(%k: !pool256, %ip: tensor<?xi32>, %qs: tensor<?x4x256xbf16>)
    -> (tensor<?x4x256xbf16>, tensor<?x4xf32>) {
  %kv = attn.paged_kv %k, %k, %ip, %ip, %ip : !pool256, !pool256 -> !kv256
  %q = attn.ragged_q %qs, %ip : tensor<?x4x256xbf16> -> !q256
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64,
       tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !q256, !kv256
      -> tensor<?x4x256xbf16>, tensor<?x4xf32>
  return %o, %l : tensor<?x4x256xbf16>, tensor<?x4xf32>
}

// Exactly causal and split: each row's visible keys, as a count from the
// chunk's first key, max(min(end, position + 1) - begin, 0), compared
// unsigned with key - begin (keys before the chunk wrap around; a row
// whose position precedes the chunk sees none).
// CHECK-LABEL: gpu.func @split_causal_prefill_1
// CHECK: nvvm.setmaxregister  increase 232
// The warpgroup's first row's bound (its first masked tile), then the rows'.
// CHECK: %[[WGNEXT:.*]] = arith.addi %{{.*}}, %c1 : index
// CHECK-NEXT: arith.minsi %{{.*}}, %[[WGNEXT]] : index
// CHECK: %[[NEXT:.*]] = arith.addi %{{.*}}, %c1 : index
// CHECK-NEXT: %[[END:.*]] = arith.minsi %{{.*}}, %[[NEXT]] : index
// CHECK-NEXT: %[[RAW:.*]] = arith.subi %[[END]], %[[BEGIN:.*]] : index
// CHECK-NEXT: %[[BOUND:.*]] = arith.maxsi %[[RAW]], %c0 : index
// CHECK: scf.for
// CHECK: %[[REL:.*]] = arith.subi %{{.*}}, %[[BEGIN]] : index
// CHECK-NEXT: arith.cmpi ult, %[[REL]], %[[BOUND]] : index
!q128 = !attn.ragged_q<heads = 8, head_dim = 128, bf16>
!kv128 = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, bf16>
!pool128 = tensor<?x16x2x128xbf16>
func.func @split_causal(%k: !pool128, %ip: tensor<?xi32>, %qs: tensor<?x8x128xbf16>)
    -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %k, %ip, %ip, %ip : !pool128, !pool128 -> !kv128
  %q = attn.ragged_q %qs, %ip : tensor<?x8x128xbf16> -> !q128
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64,
       tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !q128, !kv128
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>
}
