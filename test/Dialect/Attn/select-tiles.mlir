// RUN: flashir-opt %s -attn-select-tiles | FileCheck %s --check-prefixes=CHECK,SM80,SM80-DECODE
// RUN: flashir-opt %s -attn-select-tiles="chip=sm_80 avg-qo-len=4" | FileCheck %s --check-prefixes=CHECK,SM80,SM80-AVG4
// RUN: flashir-opt %s -attn-select-tiles="chip=sm_80 avg-qo-len=512" | FileCheck %s --check-prefixes=CHECK,SM80,SM80-PREFILL
// RUN: flashir-opt %s -attn-select-tiles=chip=sm_75 | FileCheck %s --check-prefixes=CHECK,SM75,SM75-DECODE
// RUN: flashir-opt %s -attn-select-tiles="chip=sm_75 avg-qo-len=512" | FileCheck %s --check-prefixes=CHECK,SM75,SM75-PREFILL
// RUN: flashir-opt %s -attn-select-tiles="chip=sm_86 avg-qo-len=512" | FileCheck %s --check-prefixes=CHECK,SM86,SM86-PREFILL
// RUN: flashir-opt %s -attn-select-tiles="chip=sm_90a avg-qo-len=1" | FileCheck %s --check-prefixes=CHECK,SM90,SM90-DECODE
// RUN: flashir-opt %s -attn-select-tiles="chip=sm_90a avg-qo-len=512" | FileCheck %s --check-prefixes=CHECK,SM90,SM90-PREFILL

// The same functions in bf16 (2-byte elements, so the same tiles) on sm_80+;
// sm_75 refuses bf16.
// RUN: sed -e s/f16/bf16/g %s | flashir-opt -attn-select-tiles | FileCheck %s --check-prefixes=CHECK,SM80,SM80-DECODE
// RUN: sed -e s/f16/bf16/g %s | flashir-opt -attn-select-tiles="chip=sm_80 avg-qo-len=4" | FileCheck %s --check-prefixes=CHECK,SM80,SM80-AVG4
// RUN: sed -e s/f16/bf16/g %s | flashir-opt -attn-select-tiles="chip=sm_86 avg-qo-len=512" | FileCheck %s --check-prefixes=CHECK,SM86,SM86-PREFILL
// RUN: sed -e s/f16/bf16/g %s | flashir-opt -attn-select-tiles="chip=sm_90a avg-qo-len=512" | FileCheck %s --check-prefixes=CHECK,SM90,SM90-PREFILL
// RUN: sed -e s/f16/bf16/g %s | not flashir-opt -attn-select-tiles=chip=sm_75 2>&1 | FileCheck %s --check-prefix=SM75-BF16
// SM75-BF16: error: 'attn.attention' op cannot select tiles: sm_75 has no bf16 tensor-core instructions

// Pass-level errors: an unknown chip, a non-positive average query length.
// RUN: not flashir-opt %s -attn-select-tiles=chip=sm_99 2>&1 | FileCheck %s --check-prefix=BADCHIP
// BADCHIP: error: attn-select-tiles: unknown chip 'sm_99'; valid chips are sm_75, sm_80, sm_86, sm_89, sm_90a
// RUN: not flashir-opt %s -attn-select-tiles="chip=sm_80 avg-qo-len=0" 2>&1 | FileCheck %s --check-prefix=BADLEN
// BADLEN: error: attn-select-tiles: avg-qo-len must be >= 1, got 0

// Attentions no tile fits: select-tiles-invalid.mlir.

// attn-select-tiles records `tiles` on every attention for the chip and the
// expected average query length (seed 000 sec. 5), and the chip on the
// module. Rows per tile: avg-qo-len, times the group size g = 32/4 = 8 when
// `fused_head_groups` is set; q is the smallest of 1/16/32/64/128 covering
// them (1 only for a single row), halved while nothing fits. kv is the
// largest of 128/64/32 that fits the shared-memory and register budget and
// leaves >= 8 warps resident per SM (else the one with the most resident
// warps). Warps are the prefill kernel's: 4 for decode (q = 1); 32 rows per
// warp at q = 128 where cp.async, 16-bit elements, d <= 128 and 64-key
// tiles fit (not sm_75, not d 256, not f32; on sm_86 only for d 64), else
// q / 16; 2 stages with cp.async (sm_80+), 1 on sm_75. The heuristic and
// its budget are unit-tested in unittests/Target/ChipTest.cpp.

// SM80: module attributes {attn.target = "sm_80"}
// SM75: module attributes {attn.target = "sm_75"}
// SM86: module attributes {attn.target = "sm_86"}
// SM90: module attributes {attn.target = "sm_90a"}

// head_dim 64, GQA group of 8, not fused: the rows of one query head.
// CHECK-LABEL: func.func @d64(
// SM80-DECODE: tiles = #attn.tiles<q = 1, kv = 128, warps = 4, stages = 2>
// SM80-AVG4: tiles = #attn.tiles<q = 16, kv = 32, warps = 1, stages = 2>
// SM80-PREFILL: tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>
// SM75-DECODE: tiles = #attn.tiles<q = 1, kv = 64, warps = 4, stages = 1>
// SM75-PREFILL: tiles = #attn.tiles<q = 128, kv = 128, warps = 8, stages = 1>
// SM86-PREFILL: tiles = #attn.tiles<q = 128, kv = 32, warps = 4, stages = 2>
// SM90-DECODE: tiles = #attn.tiles<q = 1, kv = 128, warps = 4, stages = 2>
// SM90-PREFILL: tiles = #attn.tiles<q = 128, kv = 128, warps = 4, stages = 2>
func.func @d64(%q: !attn.ragged_q<heads = 32, head_dim = 64, f16>,
    %kv: !attn.ragged_kv<heads = 4, head_dim = 64, f16>)
    -> (tensor<?x32x64xf16>, tensor<?x32xf32>) {
  %o, %lse = attn.attention @plain(%q, %kv) {num_qo_heads = 32 : i64, num_kv_heads = 4 : i64}
      : !attn.ragged_q<heads = 32, head_dim = 64, f16>,
        !attn.ragged_kv<heads = 4, head_dim = 64, f16>
      -> tensor<?x32x64xf16>, tensor<?x32xf32>
  return %o, %lse : tensor<?x32x64xf16>, tensor<?x32xf32>
}

// head_dim 64, the group of 8 fused into rows: 8x the rows.
// CHECK-LABEL: func.func @d64_fused(
// SM80-DECODE: tiles = #attn.tiles<q = 16, kv = 32, warps = 1, stages = 2>
// SM80-AVG4: tiles = #attn.tiles<q = 32, kv = 64, warps = 2, stages = 2>
// SM80-PREFILL: tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>
// SM75-DECODE: tiles = #attn.tiles<q = 16, kv = 32, warps = 1, stages = 1>
// SM75-PREFILL: tiles = #attn.tiles<q = 128, kv = 128, warps = 8, stages = 1>
// SM86-PREFILL: tiles = #attn.tiles<q = 128, kv = 32, warps = 4, stages = 2>
// SM90-DECODE: tiles = #attn.tiles<q = 16, kv = 32, warps = 1, stages = 2>
// SM90-PREFILL: tiles = #attn.tiles<q = 128, kv = 128, warps = 4, stages = 2>
func.func @d64_fused(%q: !attn.ragged_q<heads = 32, head_dim = 64, f16>,
    %kv: !attn.ragged_kv<heads = 4, head_dim = 64, f16>)
    -> (tensor<?x32x64xf16>, tensor<?x32xf32>) {
  %o, %lse = attn.attention @plain(%q, %kv) {fused_head_groups, num_qo_heads = 32 : i64, num_kv_heads = 4 : i64}
      : !attn.ragged_q<heads = 32, head_dim = 64, f16>,
        !attn.ragged_kv<heads = 4, head_dim = 64, f16>
      -> tensor<?x32x64xf16>, tensor<?x32xf32>
  return %o, %lse : tensor<?x32x64xf16>, tensor<?x32xf32>
}

// head_dim 128, GQA group of 8, not fused: the rows of one query head.
// CHECK-LABEL: func.func @d128(
// SM80-DECODE: tiles = #attn.tiles<q = 1, kv = 64, warps = 4, stages = 2>
// SM80-AVG4: tiles = #attn.tiles<q = 16, kv = 32, warps = 1, stages = 2>
// SM80-PREFILL: tiles = #attn.tiles<q = 128, kv = 32, warps = 4, stages = 2>
// SM75-DECODE: tiles = #attn.tiles<q = 1, kv = 32, warps = 4, stages = 1>
// SM75-PREFILL: tiles = #attn.tiles<q = 128, kv = 64, warps = 8, stages = 1>
// SM86-PREFILL: tiles = #attn.tiles<q = 128, kv = 64, warps = 8, stages = 2>
// SM90-DECODE: tiles = #attn.tiles<q = 1, kv = 64, warps = 4, stages = 2>
// SM90-PREFILL: tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>
func.func @d128(%q: !attn.ragged_q<heads = 32, head_dim = 128, f16>,
    %kv: !attn.ragged_kv<heads = 4, head_dim = 128, f16>)
    -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %o, %lse = attn.attention @plain(%q, %kv) {num_qo_heads = 32 : i64, num_kv_heads = 4 : i64}
      : !attn.ragged_q<heads = 32, head_dim = 128, f16>,
        !attn.ragged_kv<heads = 4, head_dim = 128, f16>
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>
}

// head_dim 128, the group of 8 fused into rows: 8x the rows.
// CHECK-LABEL: func.func @d128_fused(
// SM80-DECODE: tiles = #attn.tiles<q = 16, kv = 32, warps = 1, stages = 2>
// SM80-AVG4: tiles = #attn.tiles<q = 32, kv = 32, warps = 2, stages = 2>
// SM80-PREFILL: tiles = #attn.tiles<q = 128, kv = 32, warps = 4, stages = 2>
// SM75-DECODE: tiles = #attn.tiles<q = 16, kv = 32, warps = 1, stages = 1>
// SM75-PREFILL: tiles = #attn.tiles<q = 128, kv = 64, warps = 8, stages = 1>
// SM86-PREFILL: tiles = #attn.tiles<q = 128, kv = 64, warps = 8, stages = 2>
// SM90-DECODE: tiles = #attn.tiles<q = 16, kv = 32, warps = 1, stages = 2>
// SM90-PREFILL: tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>
func.func @d128_fused(%q: !attn.ragged_q<heads = 32, head_dim = 128, f16>,
    %kv: !attn.ragged_kv<heads = 4, head_dim = 128, f16>)
    -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %o, %lse = attn.attention @plain(%q, %kv) {fused_head_groups, num_qo_heads = 32 : i64, num_kv_heads = 4 : i64}
      : !attn.ragged_q<heads = 32, head_dim = 128, f16>,
        !attn.ragged_kv<heads = 4, head_dim = 128, f16>
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>
}

// head_dim 256, GQA group of 8, not fused: the rows of one query head.
// CHECK-LABEL: func.func @d256(
// SM80-DECODE: tiles = #attn.tiles<q = 1, kv = 32, warps = 4, stages = 2>
// SM80-AVG4: tiles = #attn.tiles<q = 16, kv = 32, warps = 1, stages = 2>
// SM80-PREFILL: tiles = #attn.tiles<q = 128, kv = 32, warps = 8, stages = 2>
// SM75-DECODE: tiles = #attn.tiles<q = 1, kv = 32, warps = 4, stages = 1>
// SM75-PREFILL: tiles = #attn.tiles<q = 128, kv = 32, warps = 8, stages = 1>
// SM86-PREFILL: tiles = #attn.tiles<q = 128, kv = 32, warps = 8, stages = 2>
// SM90-DECODE: tiles = #attn.tiles<q = 1, kv = 32, warps = 4, stages = 2>
// 16 rows per warp at d 256 with 64-key tiles: Q waits in shared memory
// where it fits next to the ring (sm_90a's 227 KB); where not (sm_80's 163
// KB) it stays in registers and the tile narrows to 32 keys.
// SM90-PREFILL: tiles = #attn.tiles<q = 128, kv = 64, warps = 8, stages = 2, q_shared = true>
func.func @d256(%q: !attn.ragged_q<heads = 32, head_dim = 256, f16>,
    %kv: !attn.ragged_kv<heads = 4, head_dim = 256, f16>)
    -> (tensor<?x32x256xf16>, tensor<?x32xf32>) {
  %o, %lse = attn.attention @plain(%q, %kv) {num_qo_heads = 32 : i64, num_kv_heads = 4 : i64}
      : !attn.ragged_q<heads = 32, head_dim = 256, f16>,
        !attn.ragged_kv<heads = 4, head_dim = 256, f16>
      -> tensor<?x32x256xf16>, tensor<?x32xf32>
  return %o, %lse : tensor<?x32x256xf16>, tensor<?x32xf32>
}

// head_dim 256, the group of 8 fused into rows: 8x the rows.
// CHECK-LABEL: func.func @d256_fused(
// SM80-DECODE: tiles = #attn.tiles<q = 16, kv = 32, warps = 1, stages = 2>
// SM80-AVG4: tiles = #attn.tiles<q = 32, kv = 32, warps = 2, stages = 2>
// SM80-PREFILL: tiles = #attn.tiles<q = 128, kv = 32, warps = 8, stages = 2>
// SM75-DECODE: tiles = #attn.tiles<q = 16, kv = 32, warps = 1, stages = 1>
// SM75-PREFILL: tiles = #attn.tiles<q = 128, kv = 32, warps = 8, stages = 1>
// SM86-PREFILL: tiles = #attn.tiles<q = 128, kv = 32, warps = 8, stages = 2>
// SM90-DECODE: tiles = #attn.tiles<q = 16, kv = 32, warps = 1, stages = 2>
// SM90-PREFILL: tiles = #attn.tiles<q = 128, kv = 64, warps = 8, stages = 2, q_shared = true>
func.func @d256_fused(%q: !attn.ragged_q<heads = 32, head_dim = 256, f16>,
    %kv: !attn.ragged_kv<heads = 4, head_dim = 256, f16>)
    -> (tensor<?x32x256xf16>, tensor<?x32xf32>) {
  %o, %lse = attn.attention @plain(%q, %kv) {fused_head_groups, num_qo_heads = 32 : i64, num_kv_heads = 4 : i64}
      : !attn.ragged_q<heads = 32, head_dim = 256, f16>,
        !attn.ragged_kv<heads = 4, head_dim = 256, f16>
      -> tensor<?x32x256xf16>, tensor<?x32xf32>
  return %o, %lse : tensor<?x32x256xf16>, tensor<?x32xf32>
}

// f32 (4-byte elements; the sed RUN lines leave it f32), no GQA.
// CHECK-LABEL: func.func @d128_f32_mha(
// SM80-DECODE: tiles = #attn.tiles<q = 1, kv = 32, warps = 4, stages = 2>
// SM80-AVG4: tiles = #attn.tiles<q = 16, kv = 32, warps = 1, stages = 2>
// SM80-PREFILL: tiles = #attn.tiles<q = 128, kv = 64, warps = 8, stages = 2>
// SM75-DECODE: tiles = #attn.tiles<q = 1, kv = 32, warps = 4, stages = 1>
// SM75-PREFILL: tiles = #attn.tiles<q = 128, kv = 32, warps = 8, stages = 1>
// SM86-PREFILL: tiles = #attn.tiles<q = 128, kv = 32, warps = 8, stages = 2>
// SM90-DECODE: tiles = #attn.tiles<q = 1, kv = 32, warps = 4, stages = 2>
// SM90-PREFILL: tiles = #attn.tiles<q = 128, kv = 64, warps = 8, stages = 2>
func.func @d128_f32_mha(%q: !attn.ragged_q<heads = 8, head_dim = 128, f32>,
    %kv: !attn.ragged_kv<heads = 8, head_dim = 128, f32>)
    -> (tensor<?x8x128xf32>, tensor<?x8xf32>) {
  %o, %lse = attn.attention @plain(%q, %kv) {num_qo_heads = 8 : i64, num_kv_heads = 8 : i64}
      : !attn.ragged_q<heads = 8, head_dim = 128, f32>,
        !attn.ragged_kv<heads = 8, head_dim = 128, f32>
      -> tensor<?x8x128xf32>, tensor<?x8xf32>
  return %o, %lse : tensor<?x8x128xf32>, tensor<?x8xf32>
}

// A configuration already present is replaced.
// CHECK-LABEL: func.func @replaced(
// CHECK-NOT: warps = 16
// SM80-DECODE: tiles = #attn.tiles<q = 16, kv = 32, warps = 1, stages = 2>
// SM80-AVG4: tiles = #attn.tiles<q = 32, kv = 32, warps = 2, stages = 2>
// SM80-PREFILL: tiles = #attn.tiles<q = 128, kv = 32, warps = 4, stages = 2>
// SM75-DECODE: tiles = #attn.tiles<q = 16, kv = 32, warps = 1, stages = 1>
// SM75-PREFILL: tiles = #attn.tiles<q = 128, kv = 64, warps = 8, stages = 1>
// SM86-PREFILL: tiles = #attn.tiles<q = 128, kv = 64, warps = 8, stages = 2>
// SM90-DECODE: tiles = #attn.tiles<q = 16, kv = 32, warps = 1, stages = 2>
// SM90-PREFILL: tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>
func.func @replaced(%q: !attn.ragged_q<heads = 32, head_dim = 128, f16>,
    %kv: !attn.ragged_kv<heads = 4, head_dim = 128, f16>)
    -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %o, %lse = attn.attention @plain(%q, %kv) {fused_head_groups, num_qo_heads = 32 : i64, num_kv_heads = 4 : i64, tiles = #attn.tiles<q = 128, kv = 128, warps = 16, stages = 8>}
      : !attn.ragged_q<heads = 32, head_dim = 128, f16>,
        !attn.ragged_kv<heads = 4, head_dim = 128, f16>
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>
}
