// RUN: flashir-opt %s -attn-import-variants -convert-attn-to-gpu="chip=sm_80" | FileCheck %s
// RUN: flashir-opt %s -attn-import-variants -convert-attn-to-gpu="chip=sm_80 warps=4" | FileCheck %s --check-prefix=FOUR
// RUN: flashir-bundle %s -o %t --chips=sm_80,sm_86,sm_89,sm_90a --ptxas=%{ptxas} > /dev/null
// RUN: FileCheck %s --input-file=%t/manifest.json --check-prefix=MANIFEST

// The decode kernels for head dims that are multiples of 8 (16..256) and
// groups up to 32, assembled by ptxas for every tensor-core chip. The
// tensor-core kernel's lanes hold 32-column K chunks and 64-column V chunks:
// a partial last chunk's missing pieces are zero-filled copies (cp.async
// with a source size of 0) and its columns past D are not stored. Groups
// over 8 take both row halves of an m16 tile, over 16 a second tile.

// warps=-1 (the default): 4 warps per CTA, 2 where the lanes hold both row
// halves (g > 8); an explicit warps=4 holds for every group.
// CHECK-LABEL: gpu.func @plain_d72_g1_decode_0
// CHECK-SAME: block = 128
// Columns 64..71 of K: only the lanes with tig == 0 copy.
// CHECK: %[[SIZE:.*]] = arith.select %{{.*}}, %c8{{[_0-9]*}}, %c0{{[_0-9]*}} : index
// CHECK: nvgpu.device_async_copy {{.*}}, 8, %[[SIZE]] {bypassL1}
// Rows gid + 8 of its m16 tile are zero (one head).
// CHECK: nvvm.mma.sync A[%{{.*}}, %c0_i32, %{{.*}}, %c0_i32]
// CHECK-LABEL: gpu.func @plain_d96_g16_decode_2
// CHECK-SAME: block = 64
// Rows gid + 8 carry heads 8..15: a1/a3 are Q pieces, not zeros.
// CHECK-NOT: nvvm.mma.sync A[%{{.*}}, %c0_i32
// CHECK: nvvm.mma.sync A[%{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}]
// CHECK-LABEL: gpu.func @plain_d128_g32_decode_6
// CHECK-SAME: block = 64
// FOUR-LABEL: gpu.func @plain_d96_g16_decode_2
// FOUR-SAME: block = 128
// FOUR-LABEL: gpu.func @plain_d128_g32_decode_6
// FOUR-SAME: block = 128
// MANIFEST-DAG: "name": "plain_d72_g1_decode_0"
// MANIFEST-DAG: "name": "causal_d80_g3_p5_decode_1"
// MANIFEST-DAG: "name": "plain_d96_g16_decode_2"
// MANIFEST-DAG: "name": "soft_cap_d160_g7_p1_f16_decode_3"
// MANIFEST-DAG: "name": "causal_d192_g8_hnd_decode_4"
// MANIFEST-DAG: "name": "plain_d16_g32_p3_decode_5"
// MANIFEST-DAG: "name": "plain_d128_g32_decode_6"

func.func @plain_d72_g1(%k: tensor<?x16x4x72xbf16>, %v: tensor<?x16x4x72xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x4x72xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x4x72xbf16>, tensor<?x4xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x4x72xbf16>, tensor<?x16x4x72xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 4, head_dim = 72, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x4x72xbf16> -> !attn.ragged_q<heads = 4, head_dim = 72, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 4 : i64} : !attn.ragged_q<heads = 4, head_dim = 72, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 4, head_dim = 72, bf16>
      -> tensor<?x4x72xbf16>, tensor<?x4xf32>
  return %o, %l : tensor<?x4x72xbf16>, tensor<?x4xf32>
}

func.func @causal_d80_g3_p5(%k: tensor<?x5x2x80xbf16>, %v: tensor<?x5x2x80xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x6x80xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x6x80xbf16>, tensor<?x6xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x5x2x80xbf16>, tensor<?x5x2x80xbf16> -> !attn.paged_kv<page_size = 5, layout = nhd, heads = 2, head_dim = 80, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x6x80xbf16> -> !attn.ragged_q<heads = 6, head_dim = 80, bf16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 6 : i64, num_kv_heads = 2 : i64} : !attn.ragged_q<heads = 6, head_dim = 80, bf16>, !attn.paged_kv<page_size = 5, layout = nhd, heads = 2, head_dim = 80, bf16>
      -> tensor<?x6x80xbf16>, tensor<?x6xf32>
  return %o, %l : tensor<?x6x80xbf16>, tensor<?x6xf32>
}

func.func @plain_d96_g16(%k: tensor<?x16x2x96xbf16>, %v: tensor<?x16x2x96xbf16>, %indptr: tensor<?xi32>,
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

func.func @causal_d192_g8_hnd(%k: tensor<?x2x64x192xbf16>, %v: tensor<?x2x64x192xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x16x192xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x16x192xbf16>, tensor<?x16xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x2x64x192xbf16>, tensor<?x2x64x192xbf16> -> !attn.paged_kv<page_size = 64, layout = hnd, heads = 2, head_dim = 192, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x16x192xbf16> -> !attn.ragged_q<heads = 16, head_dim = 192, bf16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 16 : i64, num_kv_heads = 2 : i64} : !attn.ragged_q<heads = 16, head_dim = 192, bf16>, !attn.paged_kv<page_size = 64, layout = hnd, heads = 2, head_dim = 192, bf16>
      -> tensor<?x16x192xbf16>, tensor<?x16xf32>
  return %o, %l : tensor<?x16x192xbf16>, tensor<?x16xf32>
}

func.func @plain_d16_g32_p3(%k: tensor<?x3x1x16xbf16>, %v: tensor<?x3x1x16xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x16xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x16xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x3x1x16xbf16>, tensor<?x3x1x16xbf16> -> !attn.paged_kv<page_size = 3, layout = nhd, heads = 1, head_dim = 16, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x16xbf16> -> !attn.ragged_q<heads = 32, head_dim = 16, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 1 : i64} : !attn.ragged_q<heads = 32, head_dim = 16, bf16>, !attn.paged_kv<page_size = 3, layout = nhd, heads = 1, head_dim = 16, bf16>
      -> tensor<?x32x16xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x16xbf16>, tensor<?x32xf32>
}

func.func @plain_d128_g32(%k: tensor<?x16x1x128xbf16>, %v: tensor<?x16x1x128xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x32x128xbf16>,
    %qo: tensor<?xi32>) -> (tensor<?x32x128xbf16>, tensor<?x32xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x1x128xbf16>, tensor<?x16x1x128xbf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 1, head_dim = 128, bf16>
  %q = attn.ragged_q %queries, %qo : tensor<?x32x128xbf16> -> !attn.ragged_q<heads = 32, head_dim = 128, bf16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 32 : i64, num_kv_heads = 1 : i64} : !attn.ragged_q<heads = 32, head_dim = 128, bf16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 1, head_dim = 128, bf16>
      -> tensor<?x32x128xbf16>, tensor<?x32xf32>
  return %o, %l : tensor<?x32x128xbf16>, tensor<?x32xf32>
}
