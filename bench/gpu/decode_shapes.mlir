// The decode kernels' coverage for the GPU check (bench/gpu/coverage_check.sh;
// scripts/gpu-bundle.sh compiles it for sm_80 / sm_90a, its f16 functions for
// sm_75, and split-KV): a covering design over head dims (16..256, multiples
// of 8), groups (1..32), page sizes (1, 3, 5, 16, 64, 256), NHD / HND pools,
// f16 / bf16 and every variant (the standard library, RoPE written as a
// variant below, an output hook), plus the benchmark shapes of the coverage
// targets: plain_d96_h32_p16 / plain_d192_h32_p16 (vs plain_h32_p16 of
// decode_kernels.mlir), plain_h64_g16_p16 (group 16 vs plain_h64_p16's 8),
// rope_d128_h32_p16 and rope128_d128_h32_p16 (fused RoPE vs plain_h32_p16). Function names start with
// the variant's name (the checker's reference reads the manifest's variant).

// Rotary position embedding (rotate-half, as in Llama) written as a
// variant: q and k rotated by (position + offset) * theta^(-2i/D) for column
// pair (i, i + D/2); log2(theta), D/2 and the per-request position offset
// are parameters.
attn.variant @rope reduction softmax
    params(log2_theta : f32 scalar, half_dim : i32 scalar, offset : i32 per_request) {
  query(%x: f32, %xr: f32, %d: index, %pos: index, %head: index,
        %lt: f32, %half: i32, %off: i32) {
    %di = arith.index_cast %d : index to i32
    %i = arith.remui %di, %half : i32
    %if = arith.uitofp %i : i32 to f32
    %hf = arith.uitofp %half : i32 to f32
    %frac = arith.divf %if, %hf : f32
    %e = arith.mulf %frac, %lt : f32
    %ne = arith.negf %e : f32
    %freq = math.exp2 %ne : f32
    %p = arith.index_cast %pos : index to i32
    %pp = arith.addi %p, %off : i32
    %pf = arith.sitofp %pp : i32 to f32
    %a = arith.mulf %pf, %freq : f32
    %c = math.cos %a : f32
    %s = math.sin %a : f32
    %first = arith.cmpi ult, %di, %half : i32
    %nxr = arith.negf %xr : f32
    %rot = arith.select %first, %nxr, %xr : f32
    %xc = arith.mulf %x, %c : f32
    %rs = arith.mulf %rot, %s : f32
    %y = arith.addf %xc, %rs : f32
    attn.yield %y : f32
  }
  key(%x: f32, %xr: f32, %d: index, %pos: index, %head: index,
      %lt: f32, %half: i32, %off: i32) {
    %di = arith.index_cast %d : index to i32
    %i = arith.remui %di, %half : i32
    %if = arith.uitofp %i : i32 to f32
    %hf = arith.uitofp %half : i32 to f32
    %frac = arith.divf %if, %hf : f32
    %e = arith.mulf %frac, %lt : f32
    %ne = arith.negf %e : f32
    %freq = math.exp2 %ne : f32
    %p = arith.index_cast %pos : index to i32
    %pp = arith.addi %p, %off : i32
    %pf = arith.sitofp %pp : i32 to f32
    %a = arith.mulf %pf, %freq : f32
    %c = math.cos %a : f32
    %s = math.sin %a : f32
    %first = arith.cmpi ult, %di, %half : i32
    %nxr = arith.negf %xr : f32
    %rot = arith.select %first, %nxr, %xr : f32
    %xc = arith.mulf %x, %c : f32
    %rs = arith.mulf %rot, %s : f32
    %y = arith.addf %xc, %rs : f32
    attn.yield %y : f32
  }
}

// @rope for head dim 128 with D/2 a constant: the partners d and d + 64 then
// share their angle, so the compiled kernel computes each sine and cosine
// once per pair.
attn.variant @rope128 reduction softmax
    params(log2_theta : f32 scalar, offset : i32 per_request) {
  query(%x: f32, %xr: f32, %d: index, %pos: index, %head: index,
        %lt: f32, %off: i32) {
    %half = arith.constant 64 : i32
    %di = arith.index_cast %d : index to i32
    %i = arith.remui %di, %half : i32
    %if = arith.uitofp %i : i32 to f32
    %hf = arith.uitofp %half : i32 to f32
    %frac = arith.divf %if, %hf : f32
    %e = arith.mulf %frac, %lt : f32
    %ne = arith.negf %e : f32
    %freq = math.exp2 %ne : f32
    %p = arith.index_cast %pos : index to i32
    %pp = arith.addi %p, %off : i32
    %pf = arith.sitofp %pp : i32 to f32
    %a = arith.mulf %pf, %freq : f32
    %c = math.cos %a : f32
    %s = math.sin %a : f32
    %first = arith.cmpi ult, %di, %half : i32
    %nxr = arith.negf %xr : f32
    %rot = arith.select %first, %nxr, %xr : f32
    %xc = arith.mulf %x, %c : f32
    %rs = arith.mulf %rot, %s : f32
    %y = arith.addf %xc, %rs : f32
    attn.yield %y : f32
  }
  key(%x: f32, %xr: f32, %d: index, %pos: index, %head: index,
      %lt: f32, %off: i32) {
    %half = arith.constant 64 : i32
    %di = arith.index_cast %d : index to i32
    %i = arith.remui %di, %half : i32
    %if = arith.uitofp %i : i32 to f32
    %hf = arith.uitofp %half : i32 to f32
    %frac = arith.divf %if, %hf : f32
    %e = arith.mulf %frac, %lt : f32
    %ne = arith.negf %e : f32
    %freq = math.exp2 %ne : f32
    %p = arith.index_cast %pos : index to i32
    %pp = arith.addi %p, %off : i32
    %pf = arith.sitofp %pp : i32 to f32
    %a = arith.mulf %pf, %freq : f32
    %c = math.cos %a : f32
    %s = math.sin %a : f32
    %first = arith.cmpi ult, %di, %half : i32
    %nxr = arith.negf %xr : f32
    %rot = arith.select %first, %nxr, %xr : f32
    %xc = arith.mulf %x, %c : f32
    %rs = arith.mulf %rot, %s : f32
    %y = arith.addf %xc, %rs : f32
    attn.yield %y : f32
  }
}

// An output hook: o * 0.5.
attn.variant @scaled_out reduction softmax {
  output(%o: f32, %d: index, %head: index) {
    %half = arith.constant 0.5 : f32
    %r = arith.mulf %o, %half : f32
    attn.yield %r : f32
  }
}

func.func @plain_d72_g1_p16_bf16(%k: tensor<?x16x4x72xbf16>, %v: tensor<?x16x4x72xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x4x72xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x4x72xbf16>, tensor<?x4xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x4x72xbf16>, tensor<?x16x4x72xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 4, head_dim = 72, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x4x72xbf16> -> !attn.ragged_q<heads = 4, head_dim = 72, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 4 : i64} : !attn.ragged_q<heads = 4, head_dim = 72, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 4, head_dim = 72, bf16>
      -> tensor<?x4x72xbf16>, tensor<?x4xf32>
  return %o, %l : tensor<?x4x72xbf16>, tensor<?x4xf32>
}

func.func @causal_d80_g3_p5_bf16(%k: tensor<?x5x2x80xbf16>, %v: tensor<?x5x2x80xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x6x80xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x6x80xbf16>, tensor<?x6xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x5x2x80xbf16>, tensor<?x5x2x80xbf16> -> !attn.paged_kv<page_size = 5, layout = nhd, heads = 2, head_dim = 80, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x6x80xbf16> -> !attn.ragged_q<heads = 6, head_dim = 80, bf16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 6 : i64, num_kv_heads = 2 : i64} : !attn.ragged_q<heads = 6, head_dim = 80, bf16>, !attn.paged_kv<page_size = 5, layout = nhd, heads = 2, head_dim = 80, bf16>
      -> tensor<?x6x80xbf16>, tensor<?x6xf32>
  return %o, %l : tensor<?x6x80xbf16>, tensor<?x6xf32>
}

func.func @plain_d96_g16_p16_bf16(%k: tensor<?x16x2x96xbf16>, %v: tensor<?x16x2x96xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x96xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x96xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x2x96xbf16>, tensor<?x16x2x96xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 96, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x96xbf16> -> !attn.ragged_q<heads = 32, head_dim = 96, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 2 : i64} : !attn.ragged_q<heads = 32, head_dim = 96, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 96, bf16>
      -> tensor<?x32x96xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x96xbf16>, tensor<?x32xf32>
}

func.func @soft_cap_d160_g7_p1_f16(%k: tensor<?x1x2x160xf16>, %v: tensor<?x1x2x160xf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x14x160xf16>,
    %qo: tensor<?xi32>, %cap: f32) -> (tensor<?x14x160xf16>, tensor<?x14xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x1x2x160xf16>, tensor<?x1x2x160xf16> -> !attn.paged_kv<page_size = 1, layout = nhd, heads = 2, head_dim = 160, f16>
  %q = attn.ragged_q %queries, %qo : tensor<?x14x160xf16> -> !attn.ragged_q<heads = 14, head_dim = 160, f16>
  %o, %l = attn.attention @soft_cap(%q, %kv) params(%cap : f32)
      {num_qo_heads = 14 : i64, num_kv_heads = 2 : i64} : !attn.ragged_q<heads = 14, head_dim = 160, f16>, !attn.paged_kv<page_size = 1, layout = nhd, heads = 2, head_dim = 160, f16>
      -> tensor<?x14x160xf16>, tensor<?x14xf32>
  return %o, %l : tensor<?x14x160xf16>, tensor<?x14xf32>
}

func.func @causal_d192_g8_p64_bf16_hnd(%k: tensor<?x2x64x192xbf16>, %v: tensor<?x2x64x192xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x16x192xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x16x192xbf16>, tensor<?x16xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x2x64x192xbf16>, tensor<?x2x64x192xbf16> -> !attn.paged_kv<page_size = 64, layout = hnd, heads = 2, head_dim = 192, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x16x192xbf16> -> !attn.ragged_q<heads = 16, head_dim = 192, bf16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 16 : i64, num_kv_heads = 2 : i64} : !attn.ragged_q<heads = 16, head_dim = 192, bf16>, !attn.paged_kv<page_size = 64, layout = hnd, heads = 2, head_dim = 192, bf16>
      -> tensor<?x16x192xbf16>, tensor<?x16xf32>
  return %o, %l : tensor<?x16x192xbf16>, tensor<?x16xf32>
}

func.func @plain_d16_g32_p3_bf16(%k: tensor<?x3x1x16xbf16>, %v: tensor<?x3x1x16xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x16xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x16xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x3x1x16xbf16>, tensor<?x3x1x16xbf16> -> !attn.paged_kv<page_size = 3, layout = nhd, heads = 1, head_dim = 16, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x16xbf16> -> !attn.ragged_q<heads = 32, head_dim = 16, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 1 : i64} : !attn.ragged_q<heads = 32, head_dim = 16, bf16>, !attn.paged_kv<page_size = 3, layout = nhd, heads = 1, head_dim = 16, bf16>
      -> tensor<?x32x16xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x16xbf16>, tensor<?x32xf32>
}

func.func @alibi_d256_g16_p256_bf16(%k: tensor<?x256x1x256xbf16>, %v: tensor<?x256x1x256xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x16x256xbf16>,
    %qo: tensor<?xi32>, %slopes: tensor<16xf32>) -> (tensor<?x16x256xbf16>, tensor<?x16xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x256x1x256xbf16>, tensor<?x256x1x256xbf16> -> !attn.paged_kv<page_size = 256, layout = nhd, heads = 1, head_dim = 256, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x16x256xbf16> -> !attn.ragged_q<heads = 16, head_dim = 256, bf16>
  %o, %l = attn.attention @alibi(%q, %kv) params(%slopes : tensor<16xf32>)
      {num_qo_heads = 16 : i64, num_kv_heads = 1 : i64} : !attn.ragged_q<heads = 16, head_dim = 256, bf16>, !attn.paged_kv<page_size = 256, layout = nhd, heads = 1, head_dim = 256, bf16>
      -> tensor<?x16x256xbf16>, tensor<?x16xf32>
  return %o, %l : tensor<?x16x256xbf16>, tensor<?x16xf32>
}

func.func @plain_d96_g4_p16_f16(%k: tensor<?x16x2x96xf16>, %v: tensor<?x16x2x96xf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x8x96xf16>,
    %qo: tensor<?xi32>) -> (tensor<?x8x96xf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x2x96xf16>, tensor<?x16x2x96xf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 96, f16>
  %q = attn.ragged_q %queries, %qo : tensor<?x8x96xf16> -> !attn.ragged_q<heads = 8, head_dim = 96, f16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64} : !attn.ragged_q<heads = 8, head_dim = 96, f16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 96, f16>
      -> tensor<?x8x96xf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x96xf16>, tensor<?x8xf32>
}

func.func @causal_d72_g16_p256_f16(%k: tensor<?x256x1x72xf16>, %v: tensor<?x256x1x72xf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x16x72xf16>,
    %qo: tensor<?xi32>) -> (tensor<?x16x72xf16>, tensor<?x16xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x256x1x72xf16>, tensor<?x256x1x72xf16> -> !attn.paged_kv<page_size = 256, layout = nhd, heads = 1, head_dim = 72, f16>
  %q = attn.ragged_q %queries, %qo : tensor<?x16x72xf16> -> !attn.ragged_q<heads = 16, head_dim = 72, f16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 16 : i64, num_kv_heads = 1 : i64} : !attn.ragged_q<heads = 16, head_dim = 72, f16>, !attn.paged_kv<page_size = 256, layout = nhd, heads = 1, head_dim = 72, f16>
      -> tensor<?x16x72xf16>, tensor<?x16xf32>
  return %o, %l : tensor<?x16x72xf16>, tensor<?x16xf32>
}

func.func @sliding_window_d64_g5_p16_f16_hnd(%k: tensor<?x2x16x64xf16>, %v: tensor<?x2x16x64xf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x10x64xf16>,
    %qo: tensor<?xi32>, %window: tensor<?xi32>) -> (tensor<?x10x64xf16>, tensor<?x10xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x2x16x64xf16>, tensor<?x2x16x64xf16> -> !attn.paged_kv<page_size = 16, layout = hnd, heads = 2, head_dim = 64, f16>
  %q = attn.ragged_q %queries, %qo : tensor<?x10x64xf16> -> !attn.ragged_q<heads = 10, head_dim = 64, f16>
  %o, %l = attn.attention @sliding_window(%q, %kv) params(%window : tensor<?xi32>)
      {num_qo_heads = 10 : i64, num_kv_heads = 2 : i64} : !attn.ragged_q<heads = 10, head_dim = 64, f16>, !attn.paged_kv<page_size = 16, layout = hnd, heads = 2, head_dim = 64, f16>
      -> tensor<?x10x64xf16>, tensor<?x10xf32>
  return %o, %l : tensor<?x10x64xf16>, tensor<?x10xf32>
}

func.func @plain_d128_g32_p16_bf16(%k: tensor<?x16x1x128xbf16>, %v: tensor<?x16x1x128xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x128xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x128xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x1x128xbf16>, tensor<?x16x1x128xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 1, head_dim = 128, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x128xbf16> -> !attn.ragged_q<heads = 32, head_dim = 128, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 1 : i64} : !attn.ragged_q<heads = 32, head_dim = 128, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 1, head_dim = 128, bf16>
      -> tensor<?x32x128xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x128xbf16>, tensor<?x32xf32>
}

func.func @causal_d48_g2_p3_f16(%k: tensor<?x3x2x48xf16>, %v: tensor<?x3x2x48xf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x4x48xf16>,
    %qo: tensor<?xi32>) -> (tensor<?x4x48xf16>, tensor<?x4xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x3x2x48xf16>, tensor<?x3x2x48xf16> -> !attn.paged_kv<page_size = 3, layout = nhd, heads = 2, head_dim = 48, f16>
  %q = attn.ragged_q %queries, %qo : tensor<?x4x48xf16> -> !attn.ragged_q<heads = 4, head_dim = 48, f16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64} : !attn.ragged_q<heads = 4, head_dim = 48, f16>, !attn.paged_kv<page_size = 3, layout = nhd, heads = 2, head_dim = 48, f16>
      -> tensor<?x4x48xf16>, tensor<?x4xf32>
  return %o, %l : tensor<?x4x48xf16>, tensor<?x4xf32>
}

func.func @plain_d96_h32_p16(%k: tensor<?x16x8x96xbf16>, %v: tensor<?x16x8x96xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x96xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x96xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x8x96xbf16>, tensor<?x16x8x96xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 96, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x96xbf16> -> !attn.ragged_q<heads = 32, head_dim = 96, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64} : !attn.ragged_q<heads = 32, head_dim = 96, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 96, bf16>
      -> tensor<?x32x96xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x96xbf16>, tensor<?x32xf32>
}

func.func @plain_d192_h32_p16(%k: tensor<?x16x8x192xbf16>, %v: tensor<?x16x8x192xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x192xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x192xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x8x192xbf16>, tensor<?x16x8x192xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 192, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x192xbf16> -> !attn.ragged_q<heads = 32, head_dim = 192, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64} : !attn.ragged_q<heads = 32, head_dim = 192, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 192, bf16>
      -> tensor<?x32x192xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x192xbf16>, tensor<?x32xf32>
}

func.func @plain_h64_g16_p16(%k: tensor<?x16x4x128xbf16>, %v: tensor<?x16x4x128xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x64x128xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x64x128xbf16>, tensor<?x64xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x4x128xbf16>, tensor<?x16x4x128xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 4, head_dim = 128, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x64x128xbf16> -> !attn.ragged_q<heads = 64, head_dim = 128, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 64 : i64, num_kv_heads = 4 : i64} : !attn.ragged_q<heads = 64, head_dim = 128, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 4, head_dim = 128, bf16>
      -> tensor<?x64x128xbf16>, tensor<?x64xf32>
  return %o, %l : tensor<?x64x128xbf16>, tensor<?x64xf32>
}

func.func @rope_d128_h32_p16(%k: tensor<?x16x8x128xbf16>, %v: tensor<?x16x8x128xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x128xbf16>,
    %qo: tensor<?xi32>, %log2_theta: f32, %half_dim: i32, %offset: tensor<?xi32>) -> (tensor<?x32x128xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x8x128xbf16>, tensor<?x16x8x128xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x128xbf16> -> !attn.ragged_q<heads = 32, head_dim = 128, bf16>
  %o, %l = attn.attention @rope(%q, %kv) params(%log2_theta, %half_dim, %offset : f32, i32, tensor<?xi32>)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64} : !attn.ragged_q<heads = 32, head_dim = 128, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, bf16>
      -> tensor<?x32x128xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x128xbf16>, tensor<?x32xf32>
}

func.func @rope_d72_g3_p3_f16_hnd(%k: tensor<?x2x3x72xf16>, %v: tensor<?x2x3x72xf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x6x72xf16>,
    %qo: tensor<?xi32>, %log2_theta: f32, %half_dim: i32, %offset: tensor<?xi32>) -> (tensor<?x6x72xf16>, tensor<?x6xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x2x3x72xf16>, tensor<?x2x3x72xf16> -> !attn.paged_kv<page_size = 3, layout = hnd, heads = 2, head_dim = 72, f16>
  %q = attn.ragged_q %queries, %qo : tensor<?x6x72xf16> -> !attn.ragged_q<heads = 6, head_dim = 72, f16>
  %o, %l = attn.attention @rope(%q, %kv) params(%log2_theta, %half_dim, %offset : f32, i32, tensor<?xi32>)
      {num_qo_heads = 6 : i64, num_kv_heads = 2 : i64} : !attn.ragged_q<heads = 6, head_dim = 72, f16>, !attn.paged_kv<page_size = 3, layout = hnd, heads = 2, head_dim = 72, f16>
      -> tensor<?x6x72xf16>, tensor<?x6xf32>
  return %o, %l : tensor<?x6x72xf16>, tensor<?x6xf32>
}

func.func @rope_d96_g16_p16_bf16(%k: tensor<?x16x2x96xbf16>, %v: tensor<?x16x2x96xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x96xbf16>,
    %qo: tensor<?xi32>, %log2_theta: f32, %half_dim: i32, %offset: tensor<?xi32>) -> (tensor<?x32x96xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x2x96xbf16>, tensor<?x16x2x96xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 96, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x96xbf16> -> !attn.ragged_q<heads = 32, head_dim = 96, bf16>
  %o, %l = attn.attention @rope(%q, %kv) params(%log2_theta, %half_dim, %offset : f32, i32, tensor<?xi32>)
      {num_qo_heads = 32 : i64, num_kv_heads = 2 : i64} : !attn.ragged_q<heads = 32, head_dim = 96, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 96, bf16>
      -> tensor<?x32x96xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x96xbf16>, tensor<?x32xf32>
}

func.func @sigmoid_d128_g4_p16_bf16(%k: tensor<?x16x8x128xbf16>, %v: tensor<?x16x8x128xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x128xbf16>,
    %qo: tensor<?xi32>, %bias: f32) -> (tensor<?x32x128xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x8x128xbf16>, tensor<?x16x8x128xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x128xbf16> -> !attn.ragged_q<heads = 32, head_dim = 128, bf16>
  %o, %l = attn.attention @sigmoid(%q, %kv) params(%bias : f32)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64} : !attn.ragged_q<heads = 32, head_dim = 128, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, bf16>
      -> tensor<?x32x128xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x128xbf16>, tensor<?x32xf32>
}

func.func @sigmoid_d80_g5_p1_f16(%k: tensor<?x1x2x80xf16>, %v: tensor<?x1x2x80xf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x10x80xf16>,
    %qo: tensor<?xi32>, %bias: f32) -> (tensor<?x10x80xf16>, tensor<?x10xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x1x2x80xf16>, tensor<?x1x2x80xf16> -> !attn.paged_kv<page_size = 1, layout = nhd, heads = 2, head_dim = 80, f16>
  %q = attn.ragged_q %queries, %qo : tensor<?x10x80xf16> -> !attn.ragged_q<heads = 10, head_dim = 80, f16>
  %o, %l = attn.attention @sigmoid(%q, %kv) params(%bias : f32)
      {num_qo_heads = 10 : i64, num_kv_heads = 2 : i64} : !attn.ragged_q<heads = 10, head_dim = 80, f16>, !attn.paged_kv<page_size = 1, layout = nhd, heads = 2, head_dim = 80, f16>
      -> tensor<?x10x80xf16>, tensor<?x10xf32>
  return %o, %l : tensor<?x10x80xf16>, tensor<?x10xf32>
}

func.func @custom_mask_d128_g8_p16_bf16(%k: tensor<?x16x2x128xbf16>, %v: tensor<?x16x2x128xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x16x128xbf16>,
    %qo: tensor<?xi32>, %bits: tensor<?xi8>, %row0: tensor<?xi64>, %stride: tensor<?xi64>) -> (tensor<?x16x128xbf16>, tensor<?x16xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x2x128xbf16>, tensor<?x16x2x128xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x16x128xbf16> -> !attn.ragged_q<heads = 16, head_dim = 128, bf16>
  %o, %l = attn.attention @custom_mask(%q, %kv) params(%bits, %row0, %stride : tensor<?xi8>, tensor<?xi64>, tensor<?xi64>)
      {num_qo_heads = 16 : i64, num_kv_heads = 2 : i64} : !attn.ragged_q<heads = 16, head_dim = 128, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, bf16>
      -> tensor<?x16x128xbf16>, tensor<?x16xf32>
  return %o, %l : tensor<?x16x128xbf16>, tensor<?x16xf32>
}

func.func @custom_mask_d64_g2_p5_f16_hnd(%k: tensor<?x2x5x64xf16>, %v: tensor<?x2x5x64xf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x4x64xf16>,
    %qo: tensor<?xi32>, %bits: tensor<?xi8>, %row0: tensor<?xi64>, %stride: tensor<?xi64>) -> (tensor<?x4x64xf16>, tensor<?x4xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x2x5x64xf16>, tensor<?x2x5x64xf16> -> !attn.paged_kv<page_size = 5, layout = hnd, heads = 2, head_dim = 64, f16>
  %q = attn.ragged_q %queries, %qo : tensor<?x4x64xf16> -> !attn.ragged_q<heads = 4, head_dim = 64, f16>
  %o, %l = attn.attention @custom_mask(%q, %kv) params(%bits, %row0, %stride : tensor<?xi8>, tensor<?xi64>, tensor<?xi64>)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64} : !attn.ragged_q<heads = 4, head_dim = 64, f16>, !attn.paged_kv<page_size = 5, layout = hnd, heads = 2, head_dim = 64, f16>
      -> tensor<?x4x64xf16>, tensor<?x4xf32>
  return %o, %l : tensor<?x4x64xf16>, tensor<?x4xf32>
}

func.func @scaled_out_d192_g4_p64_bf16(%k: tensor<?x64x2x192xbf16>, %v: tensor<?x64x2x192xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x8x192xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x8x192xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x64x2x192xbf16>, tensor<?x64x2x192xbf16> -> !attn.paged_kv<page_size = 64, layout = nhd, heads = 2, head_dim = 192, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x8x192xbf16> -> !attn.ragged_q<heads = 8, head_dim = 192, bf16>
  %o, %l = attn.attention @scaled_out(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64} : !attn.ragged_q<heads = 8, head_dim = 192, bf16>, !attn.paged_kv<page_size = 64, layout = nhd, heads = 2, head_dim = 192, bf16>
      -> tensor<?x8x192xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x192xbf16>, tensor<?x8xf32>
}

func.func @rope128_d128_h32_p16(%k: tensor<?x16x8x128xbf16>, %v: tensor<?x16x8x128xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x128xbf16>,
    %qo: tensor<?xi32>, %log2_theta: f32, %offset: tensor<?xi32>) -> (tensor<?x32x128xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x8x128xbf16>, tensor<?x16x8x128xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x128xbf16> -> !attn.ragged_q<heads = 32, head_dim = 128, bf16>
  %o, %l = attn.attention @rope128(%q, %kv) params(%log2_theta, %offset : f32, tensor<?xi32>)
      {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64} : !attn.ragged_q<heads = 32, head_dim = 128, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 8, head_dim = 128, bf16>
      -> tensor<?x32x128xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x128xbf16>, tensor<?x32xf32>
}

// Ragged views (attn.ragged_kv): the keys' contiguous rows, no page table.
func.func @plain_d128_g4_ragged_bf16(%k: tensor<?x2x128xbf16>, %v: tensor<?x2x128xbf16>, %indptr: tensor<?xi32>,
    %queries: tensor<?x8x128xbf16>, %qo: tensor<?xi32>) -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %kv = attn.ragged_kv %k, %v, %indptr : tensor<?x2x128xbf16>, tensor<?x2x128xbf16> -> !attn.ragged_kv<heads = 2, head_dim = 128, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x8x128xbf16> -> !attn.ragged_q<heads = 8, head_dim = 128, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64} : !attn.ragged_q<heads = 8, head_dim = 128, bf16>, !attn.ragged_kv<heads = 2, head_dim = 128, bf16>
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>
}

func.func @causal_d72_g3_ragged_f16(%k: tensor<?x2x72xf16>, %v: tensor<?x2x72xf16>, %indptr: tensor<?xi32>,
    %queries: tensor<?x6x72xf16>, %qo: tensor<?xi32>) -> (tensor<?x6x72xf16>, tensor<?x6xf32>) {
  %kv = attn.ragged_kv %k, %v, %indptr : tensor<?x2x72xf16>, tensor<?x2x72xf16> -> !attn.ragged_kv<heads = 2, head_dim = 72, f16>
  %q = attn.ragged_q %queries, %qo : tensor<?x6x72xf16> -> !attn.ragged_q<heads = 6, head_dim = 72, f16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 6 : i64, num_kv_heads = 2 : i64} : !attn.ragged_q<heads = 6, head_dim = 72, f16>, !attn.ragged_kv<heads = 2, head_dim = 72, f16>
      -> tensor<?x6x72xf16>, tensor<?x6xf32>
  return %o, %l : tensor<?x6x72xf16>, tensor<?x6xf32>
}

func.func @soft_cap_d256_g16_ragged_bf16(%k: tensor<?x1x256xbf16>, %v: tensor<?x1x256xbf16>, %indptr: tensor<?xi32>,
    %queries: tensor<?x16x256xbf16>, %qo: tensor<?xi32>, %cap: f32) -> (tensor<?x16x256xbf16>, tensor<?x16xf32>) {
  %kv = attn.ragged_kv %k, %v, %indptr : tensor<?x1x256xbf16>, tensor<?x1x256xbf16> -> !attn.ragged_kv<heads = 1, head_dim = 256, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x16x256xbf16> -> !attn.ragged_q<heads = 16, head_dim = 256, bf16>
  %o, %l = attn.attention @soft_cap(%q, %kv) params(%cap : f32)
      {num_qo_heads = 16 : i64, num_kv_heads = 1 : i64} : !attn.ragged_q<heads = 16, head_dim = 256, bf16>, !attn.ragged_kv<heads = 1, head_dim = 256, bf16>
      -> tensor<?x16x256xbf16>, tensor<?x16xf32>
  return %o, %l : tensor<?x16x256xbf16>, tensor<?x16xf32>
}
