// Tile overrides replace the chosen values field by field, within budget.
// RUN: flashir-opt %s -attn-select-tiles="chip=sm_80 avg-qo-len=512 kv-tile=32 tile-stages=3" | FileCheck %s
// RUN: flashir-opt %s -attn-select-tiles="chip=sm_80 avg-qo-len=512" | FileCheck %s --check-prefix=CHOSEN
// RUN: not flashir-opt %s -attn-select-tiles="chip=sm_80 q-tile=48" 2>&1 | FileCheck %s --check-prefix=BADQ
// RUN: not flashir-opt %s -attn-select-tiles="chip=sm_80 tile-warps=3" 2>&1 | FileCheck %s --check-prefix=BADW
// RUN: not flashir-opt %s -attn-select-tiles="chip=sm_75 q-tile=128 kv-tile=128 tile-stages=4" 2>&1 | FileCheck %s --check-prefix=BUDGET
// RUN: flashir-opt %s -attn-select-tiles="chip=sm_80 avg-qo-len=512 q-tile=64" | FileCheck %s --check-prefix=NEWQ
// RUN: not flashir-opt %s -attn-select-tiles="chip=sm_80 avg-qo-len=512 tile-warps=2" 2>&1 | FileCheck %s --check-prefix=NOKERNEL

// CHOSEN: tiles = #attn.tiles<q = 128, kv = [[KV:[0-9]+]], warps = 8, stages = 2>
// CHECK: tiles = #attn.tiles<q = 128, kv = 32, warps = 8, stages = 3>
// BADQ: attn-select-tiles: q-tile must be one of 1, 16, 32, 64, 128 (or 0), got 48
// BADW: attn-select-tiles: tile-warps must be one of 1, 2, 4, 8, 16 (or 0), got 3
// BUDGET: error: 'attn.attention' op the overridden tile <q = 128, kv = 128, warps = 8, stages = 4> exceeds the sm_75 budget: shared memory
// A new q gets the heuristic's warps for it (16 rows each at d 256), not
// the warps chosen for the old q.
// NEWQ: tiles = #attn.tiles<q = 64, kv = {{[0-9]+}}, warps = 4, stages = 2>
// Warps the prefill kernel does not build are refused.
// NOKERNEL: error: 'attn.attention' op the overridden tile <q = 128, warps = 2> has no prefill kernel: it runs q / 16 = 8 warps of 16 rows or q / 32 = 4 warps of 32 rows
func.func @prefill(%q: !attn.ragged_q<heads = 32, head_dim = 256, f16>,
                   %kv: !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 256, f16>)
    -> (tensor<?x32x256xf16>, tensor<?x32xf32>) {
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64}
      : !attn.ragged_q<heads = 32, head_dim = 256, f16>,
        !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 256, f16>
      -> tensor<?x32x256xf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x256xf16>, tensor<?x32xf32>
}
