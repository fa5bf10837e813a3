// RUN: flashir-opt %s -attn-fuse-head-groups | FileCheck %s

!kv2 = !attn.ragged_kv<heads = 2, head_dim = 8, f16>
!kv4 = !attn.ragged_kv<heads = 4, head_dim = 8, f16>
!kv1 = !attn.ragged_kv<heads = 1, head_dim = 8, f16>

// Group size 7 (any g >= 1 is supported): marked for fusion.
// CHECK-LABEL: func.func @group7
// CHECK: attn.attention @causal(%{{.*}}, %{{.*}}) {fused_head_groups, num_kv_heads = 2 : i64, num_qo_heads = 14 : i64}
func.func @group7(%q: !attn.ragged_q<heads = 14, head_dim = 8, f16>, %kv: !kv2)
    -> (tensor<?x14x8xf16>, tensor<?x14xf32>) {
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 14 : i64, num_kv_heads = 2 : i64}
      : !attn.ragged_q<heads = 14, head_dim = 8, f16>, !kv2
      -> tensor<?x14x8xf16>, tensor<?x14xf32>
  return %o, %l : tensor<?x14x8xf16>, tensor<?x14xf32>
}

// Group size 1: nothing to fold.
// CHECK-LABEL: func.func @group1
// CHECK: attn.attention @plain(%{{.*}}, %{{.*}}) {num_kv_heads = 4 : i64, num_qo_heads = 4 : i64}
func.func @group1(%q: !attn.ragged_q<heads = 4, head_dim = 8, f16>, %kv: !kv4)
    -> (tensor<?x4x8xf16>, tensor<?x4xf32>) {
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 4 : i64}
      : !attn.ragged_q<heads = 4, head_dim = 8, f16>, !kv4
      -> tensor<?x4x8xf16>, tensor<?x4xf32>
  return %o, %l : tensor<?x4x8xf16>, tensor<?x4xf32>
}

// States and other attributes are kept.
// CHECK-LABEL: func.func @state
// CHECK: attn.attention @causal(%{{.*}}, %{{.*}}) {fused_head_groups, num_kv_heads = 1 : i64, num_qo_heads = 8 : i64, scale = 5.000000e-01 : f32} {{.*}} -> !attn.state<heads = 8, head_dim = 8, @causal>
func.func @state(%q: !attn.ragged_q<heads = 8, head_dim = 8, f16>, %kv: !kv1)
    -> !attn.state<heads = 8, head_dim = 8, @causal> {
  %s = attn.attention @causal(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 1 : i64, scale = 0.5 : f32}
      : !attn.ragged_q<heads = 8, head_dim = 8, f16>, !kv1
      -> !attn.state<heads = 8, head_dim = 8, @causal>
  return %s : !attn.state<heads = 8, head_dim = 8, @causal>
}
