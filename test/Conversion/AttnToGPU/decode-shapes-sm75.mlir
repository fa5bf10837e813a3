// RUN: flashir-opt %s -attn-import-variants -convert-attn-to-gpu="chip=sm_75" | FileCheck %s
// RUN: flashir-bundle %s -o %t --chips=sm_75 --ptxas=%{ptxas} > /dev/null
// RUN: FileCheck %s --input-file=%t/manifest.json --check-prefix=MANIFEST

// The CUDA-core decode kernel (sm_75, f16) for head dims that are not a
// power of two: key groups of D / 8 lanes rounded up to a power of two, the
// lanes past D / 8 holding zeros (their loads read column 0 and are
// replaced by zeros; they store nothing).

// CHECK-LABEL: gpu.func @soft_cap_d160_g7_p1_decode_0
// 20 lanes of columns in key groups of 32.
// CHECK: %[[E0:.*]] = arith.muli %{{.*}}, %c8{{[_0-9]*}} : index
// CHECK: %[[HAS:.*]] = arith.cmpi ult, %[[E0]], %c160{{[_0-9]*}} : index
// CHECK: arith.select %[[HAS]], %{{.*}}, %cst{{[_0-9]*}} : vector<8xf16>
// MANIFEST-DAG: "name": "soft_cap_d160_g7_p1_decode_0"
// MANIFEST-DAG: "name": "plain_d96_g4_decode_1"
// MANIFEST-DAG: "name": "causal_d72_g16_p256_decode_2"
// MANIFEST-DAG: "name": "causal_d48_g2_p3_hnd_decode_3"

func.func @soft_cap_d160_g7_p1(%k: tensor<?x1x2x160xf16>, %v: tensor<?x1x2x160xf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x14x160xf16>,
    %qo: tensor<?xi32>, %cap: f32) -> (tensor<?x14x160xf16>, tensor<?x14xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x1x2x160xf16>, tensor<?x1x2x160xf16> -> !attn.paged_kv<page_size = 1, layout = nhd, heads = 2, head_dim = 160, f16>
  %q = attn.ragged_q %queries, %qo : tensor<?x14x160xf16> -> !attn.ragged_q<heads = 14, head_dim = 160, f16>
  %o, %l = attn.attention @soft_cap(%q, %kv) params(%cap : f32)
      {num_qo_heads = 14 : i64, num_kv_heads = 2 : i64} : !attn.ragged_q<heads = 14, head_dim = 160, f16>, !attn.paged_kv<page_size = 1, layout = nhd, heads = 2, head_dim = 160, f16>
      -> tensor<?x14x160xf16>, tensor<?x14xf32>
  return %o, %l : tensor<?x14x160xf16>, tensor<?x14xf32>
}

func.func @plain_d96_g4(%k: tensor<?x16x2x96xf16>, %v: tensor<?x16x2x96xf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x8x96xf16>,
    %qo: tensor<?xi32>) -> (tensor<?x8x96xf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x16x2x96xf16>, tensor<?x16x2x96xf16> -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 96, f16>
  %q = attn.ragged_q %queries, %qo : tensor<?x8x96xf16> -> !attn.ragged_q<heads = 8, head_dim = 96, f16>
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64} : !attn.ragged_q<heads = 8, head_dim = 96, f16>, !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 96, f16>
      -> tensor<?x8x96xf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x96xf16>, tensor<?x8xf32>
}

func.func @causal_d72_g16_p256(%k: tensor<?x256x1x72xf16>, %v: tensor<?x256x1x72xf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x16x72xf16>,
    %qo: tensor<?xi32>) -> (tensor<?x16x72xf16>, tensor<?x16xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x256x1x72xf16>, tensor<?x256x1x72xf16> -> !attn.paged_kv<page_size = 256, layout = nhd, heads = 1, head_dim = 72, f16>
  %q = attn.ragged_q %queries, %qo : tensor<?x16x72xf16> -> !attn.ragged_q<heads = 16, head_dim = 72, f16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 16 : i64, num_kv_heads = 1 : i64} : !attn.ragged_q<heads = 16, head_dim = 72, f16>, !attn.paged_kv<page_size = 256, layout = nhd, heads = 1, head_dim = 72, f16>
      -> tensor<?x16x72xf16>, tensor<?x16xf32>
  return %o, %l : tensor<?x16x72xf16>, tensor<?x16xf32>
}

func.func @causal_d48_g2_p3_hnd(%k: tensor<?x2x3x48xf16>, %v: tensor<?x2x3x48xf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %queries: tensor<?x4x48xf16>,
    %qo: tensor<?xi32>) -> (tensor<?x4x48xf16>, tensor<?x4xf32>) {
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : tensor<?x2x3x48xf16>, tensor<?x2x3x48xf16> -> !attn.paged_kv<page_size = 3, layout = hnd, heads = 2, head_dim = 48, f16>
  %q = attn.ragged_q %queries, %qo : tensor<?x4x48xf16> -> !attn.ragged_q<heads = 4, head_dim = 48, f16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64} : !attn.ragged_q<heads = 4, head_dim = 48, f16>, !attn.paged_kv<page_size = 3, layout = hnd, heads = 2, head_dim = 48, f16>
      -> tensor<?x4x48xf16>, tensor<?x4xf32>
  return %o, %l : tensor<?x4x48xf16>, tensor<?x4xf32>
}
