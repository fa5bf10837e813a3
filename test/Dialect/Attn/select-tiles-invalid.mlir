// RUN: flashir-opt %s -split-input-file -verify-diagnostics -attn-select-tiles=chip=sm_75
// RUN: not flashir-opt %s -split-input-file -attn-select-tiles="chip=sm_90a avg-qo-len=512" 2>&1 | FileCheck %s --check-prefix=SM90

// Attentions attn-select-tiles cannot give a tile configuration (the
// positive cases and the pass-level errors are in select-tiles.mlir).

// sm_75 has no bf16 instructions, decode or not, fused or not.
func.func @bf16(%q: !attn.ragged_q<heads = 32, head_dim = 128, bf16>,
    %kv: !attn.ragged_kv<heads = 8, head_dim = 128, bf16>)
    -> (tensor<?x32x128xbf16>, tensor<?x32xf32>) {
  // expected-error @+1 {{'attn.attention' op cannot select tiles: sm_75 has no bf16 tensor-core instructions}}
  %o, %lse = attn.attention @plain(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64}
      : !attn.ragged_q<heads = 32, head_dim = 128, bf16>,
        !attn.ragged_kv<heads = 8, head_dim = 128, bf16>
      -> tensor<?x32x128xbf16>, tensor<?x32xf32>
  return %o, %lse : tensor<?x32x128xbf16>, tensor<?x32xf32>
}

// -----

func.func @bf16_fused(%q: !attn.ragged_q<heads = 32, head_dim = 64, bf16>,
    %kv: !attn.ragged_kv<heads = 4, head_dim = 64, bf16>)
    -> tensor<?x32x64xf32> {
  // expected-error @+1 {{'attn.attention' op cannot select tiles: sm_75 has no bf16 tensor-core instructions}}
  %o, %lse = attn.attention @plain(%q, %kv)
      {fused_head_groups, num_qo_heads = 32 : i64, num_kv_heads = 4 : i64}
      : !attn.ragged_q<heads = 32, head_dim = 64, bf16>,
        !attn.ragged_kv<heads = 4, head_dim = 64, bf16>
      -> tensor<?x32x64xf32>, tensor<?x32xf32>
  return %o : tensor<?x32x64xf32>
}

// -----

// head_dim 1024 (the largest the types accept): even one key tile of K and
// V overflows shared memory.
// sm_75, decode: 1 stage * 32 keys * 1024 * 2 bytes * 2 (K, V) + 1 * 1024 * 2.
// sm_90a, prefill (q halved down to 16; the prefill kernel's padded rows):
// 2 stages * 2 * 32 * (1024 + 8) * 2.
// SM90: error: 'attn.attention' op cannot select tiles: head_dim 1024 (f16) needs 264192 bytes of shared memory for the smallest tile (q = 16, kv = 32, 2 stages), sm_90a allows 232448
func.func @huge_head_dim(%q: !attn.ragged_q<heads = 8, head_dim = 1024, f16>,
    %kv: !attn.ragged_kv<heads = 8, head_dim = 1024, f16>)
    -> (tensor<?x8x1024xf16>, tensor<?x8xf32>) {
  // expected-error @+1 {{'attn.attention' op cannot select tiles: head_dim 1024 (f16) needs 133120 bytes of shared memory for the smallest tile (q = 1, kv = 32, 1 stage), sm_75 allows 65536}}
  %o, %lse = attn.attention @plain(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 8 : i64}
      : !attn.ragged_q<heads = 8, head_dim = 1024, f16>,
        !attn.ragged_kv<heads = 8, head_dim = 1024, f16>
      -> tensor<?x8x1024xf16>, tensor<?x8xf32>
  return %o, %lse : tensor<?x8x1024xf16>, tensor<?x8xf32>
}

// -----

// f32 doubles the bytes: head_dim 256 with fused rows (q = 16) needs
// 1 * 2 * 32 * (256 + 8) * 4 bytes on sm_75. Each attention is
// checked on its own: the f16 one next to it gets its tiles.
func.func @f32_fused(%q: !attn.ragged_q<heads = 16, head_dim = 256, f32>,
    %kv: !attn.ragged_kv<heads = 2, head_dim = 256, f32>,
    %qh: !attn.ragged_q<heads = 16, head_dim = 256, f16>,
    %kvh: !attn.ragged_kv<heads = 2, head_dim = 256, f16>)
    -> (tensor<?x16x256xf32>, tensor<?x16x256xf16>) {
  // expected-error @+1 {{'attn.attention' op cannot select tiles: head_dim 256 (f32) needs 67584 bytes of shared memory for the smallest tile (q = 16, kv = 32, 1 stage), sm_75 allows 65536}}
  %o, %lse = attn.attention @plain(%q, %kv)
      {fused_head_groups, num_qo_heads = 16 : i64, num_kv_heads = 2 : i64}
      : !attn.ragged_q<heads = 16, head_dim = 256, f32>,
        !attn.ragged_kv<heads = 2, head_dim = 256, f32>
      -> tensor<?x16x256xf32>, tensor<?x16xf32>
  %oh, %lseh = attn.attention @plain(%qh, %kvh)
      {fused_head_groups, num_qo_heads = 16 : i64, num_kv_heads = 2 : i64}
      : !attn.ragged_q<heads = 16, head_dim = 256, f16>,
        !attn.ragged_kv<heads = 2, head_dim = 256, f16>
      -> tensor<?x16x256xf16>, tensor<?x16xf32>
  return %o, %oh : tensor<?x16x256xf32>, tensor<?x16x256xf16>
}
