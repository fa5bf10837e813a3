// RUN: flashir-opt %s -split-input-file -attn-import-variants "-convert-attn-to-gpu=chip=sm_90a design=wgmma" | FileCheck %s
// RUN: flashir-opt %s -split-input-file -attn-import-variants "-convert-attn-to-gpu=chip=sm_90a design=wgmma persistent-prefill=off" | FileCheck %s --check-prefix=OFF

// persistent-prefill=auto (the default) gives persistent CTAs to the wgmma
// prefill kernels of head dim 64 with tensor copies only, except those that
// take four consumer warpgroups (no hooks but the causal mask, unsplit): at
// 128 and 256 and for gathered pages one CTA per q tile measured faster.

// A logits hook (soft-cap): two consumers, persistent.
// CHECK-LABEL: gpu.func @d64_paged_prefill_0
// CHECK-SAME: persistent = true
// CHECK: nvvm.read.ptx.sreg.nsmid
// OFF-LABEL: gpu.func @d64_paged_prefill_0
// OFF-NOT: persistent = true
// OFF-NOT: nvvm.read.ptx.sreg.nsmid
// OFF: gpu.return
func.func @d64_paged(%k: tensor<?x16x2x64xbf16>, %ip: tensor<?xi32>,
    %qs: tensor<?x8x64xbf16>, %cap: f32) -> (tensor<?x8x64xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %k, %ip, %ip, %ip
      : tensor<?x16x2x64xbf16>, tensor<?x16x2x64xbf16>
      -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 64, bf16>
  %q = attn.ragged_q %qs, %ip : tensor<?x8x64xbf16> -> !attn.ragged_q<heads = 8, head_dim = 64, bf16>
  %o, %l = attn.attention @soft_cap(%q, %kv) params(%cap : f32)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64,
       tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>}
      : !attn.ragged_q<heads = 8, head_dim = 64, bf16>,
        !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 64, bf16>
      -> tensor<?x8x64xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x64xbf16>, tensor<?x8xf32>
}

// -----

// CHECK-LABEL: gpu.func @d128_paged_prefill_0
// CHECK-NOT: persistent = true
// CHECK-NOT: nvvm.read.ptx.sreg.nsmid
// CHECK: gpu.return
func.func @d128_paged(%k: tensor<?x16x2x128xbf16>, %ip: tensor<?xi32>,
    %qs: tensor<?x8x128xbf16>) -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %k, %ip, %ip, %ip
      : tensor<?x16x2x128xbf16>, tensor<?x16x2x128xbf16>
      -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, bf16>
  %q = attn.ragged_q %qs, %ip : tensor<?x8x128xbf16> -> !attn.ragged_q<heads = 8, head_dim = 128, bf16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64,
       tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>}
      : !attn.ragged_q<heads = 8, head_dim = 128, bf16>,
        !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, bf16>
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>
}

// -----

// Pages of 5 keys: the producer's cp.async gather, one CTA per q tile.
// CHECK-LABEL: gpu.func @d64_gathered_prefill_0
// CHECK-NOT: persistent = true
// CHECK-NOT: nvvm.read.ptx.sreg.nsmid
// CHECK: gpu.return
func.func @d64_gathered(%k: tensor<?x5x2x64xbf16>, %ip: tensor<?xi32>,
    %qs: tensor<?x8x64xbf16>) -> (tensor<?x8x64xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %k, %ip, %ip, %ip
      : tensor<?x5x2x64xbf16>, tensor<?x5x2x64xbf16>
      -> !attn.paged_kv<page_size = 5, layout = nhd, heads = 2, head_dim = 64, bf16>
  %q = attn.ragged_q %qs, %ip : tensor<?x8x64xbf16> -> !attn.ragged_q<heads = 8, head_dim = 64, bf16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64,
       tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>}
      : !attn.ragged_q<heads = 8, head_dim = 64, bf16>,
        !attn.paged_kv<page_size = 5, layout = nhd, heads = 2, head_dim = 64, bf16>
      -> tensor<?x8x64xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x64xbf16>, tensor<?x8xf32>
}

// -----

// Head dim 64 without hooks, or with the causal mask: four consumer
// warpgroups (256 query rows, 64-key tiles, 24 / 112 registers) and one CTA
// per q tile, with persistent-prefill=auto as with off.
// CHECK-LABEL: gpu.func @d64_plain_prefill_0
// CHECK-NOT: persistent = true
// CHECK-SAME: nvvm.maxntid = array<i32: 640, 1, 1>
// CHECK-NOT: nvvm.read.ptx.sreg.nsmid
// CHECK: nvvm.setmaxregister  decrease 24
// CHECK: nvvm.setmaxregister  increase 112
// CHECK: gpu.return
// OFF-LABEL: gpu.func @d64_plain_prefill_0
// OFF-SAME: nvvm.maxntid = array<i32: 640, 1, 1>
func.func @d64_plain(%k: tensor<?x16x2x64xbf16>, %ip: tensor<?xi32>,
    %qs: tensor<?x8x64xbf16>) -> (tensor<?x8x64xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %k, %ip, %ip, %ip
      : tensor<?x16x2x64xbf16>, tensor<?x16x2x64xbf16>
      -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 64, bf16>
  %q = attn.ragged_q %qs, %ip : tensor<?x8x64xbf16> -> !attn.ragged_q<heads = 8, head_dim = 64, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64,
       tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>}
      : !attn.ragged_q<heads = 8, head_dim = 64, bf16>,
        !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 64, bf16>
      -> tensor<?x8x64xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x64xbf16>, tensor<?x8xf32>
}

// -----

// Exactly causal (its warpgroups mask from their own first rows).
// CHECK-LABEL: gpu.func @d64_causal_prefill_0
// CHECK-NOT: persistent = true
// CHECK-SAME: nvvm.maxntid = array<i32: 640, 1, 1>
// CHECK-NOT: nvvm.read.ptx.sreg.nsmid
// CHECK: nvvm.setmaxregister  decrease 24
// CHECK: nvvm.setmaxregister  increase 112
// CHECK: gpu.return
// OFF-LABEL: gpu.func @d64_causal_prefill_0
// OFF-SAME: nvvm.maxntid = array<i32: 640, 1, 1>
func.func @d64_causal(%k: tensor<?x16x2x64xbf16>, %ip: tensor<?xi32>,
    %qs: tensor<?x8x64xbf16>) -> (tensor<?x8x64xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %k, %ip, %ip, %ip
      : tensor<?x16x2x64xbf16>, tensor<?x16x2x64xbf16>
      -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 64, bf16>
  %q = attn.ragged_q %qs, %ip : tensor<?x8x64xbf16> -> !attn.ragged_q<heads = 8, head_dim = 64, bf16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64,
       tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>}
      : !attn.ragged_q<heads = 8, head_dim = 64, bf16>,
        !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 64, bf16>
      -> tensor<?x8x64xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x64xbf16>, tensor<?x8xf32>
}
