// RUN: flashir-opt %s -split-input-file -attn-import-variants -verify-diagnostics | FileCheck %s

// Standard variants used by ops are copied in, in first-use order, once each;
// a variant the module defines itself is kept as is.
// CHECK-LABEL: module
// CHECK: attn.variant @soft_cap reduction softmax params(cap : f32 scalar) {
// CHECK: math.tanh
// CHECK: attn.variant @causal reduction softmax {
// CHECK: arith.cmpi sle
// CHECK: attn.variant @plain reduction softmax {
// CHECK-NEXT: mask(
// CHECK-NOT: attn.variant
// CHECK: func.func @uses
attn.variant @plain reduction softmax {
  // Not the library's @plain: a user variant that masks nothing out.
  mask(%q: index, %k: index, %h: index) {
    %t = arith.constant true
    attn.yield %t : i1
  }
}
func.func @uses(%q: !attn.ragged_q<heads = 2, head_dim = 4, f32>,
                %kv: !attn.ragged_kv<heads = 1, head_dim = 4, f32>, %cap: f32)
    -> (tensor<?x2x4xf32>, tensor<?x2xf32>) {
  %a:2 = attn.attention @soft_cap(%q, %kv) params(%cap : f32)
      {num_qo_heads = 2 : i64, num_kv_heads = 1 : i64}
      : !attn.ragged_q<heads = 2, head_dim = 4, f32>,
        !attn.ragged_kv<heads = 1, head_dim = 4, f32>
      -> tensor<?x2x4xf32>, tensor<?x2xf32>
  %s = attn.attention @causal(%q, %kv)
      {num_qo_heads = 2 : i64, num_kv_heads = 1 : i64}
      : !attn.ragged_q<heads = 2, head_dim = 4, f32>,
        !attn.ragged_kv<heads = 1, head_dim = 4, f32>
      -> !attn.state<heads = 2, head_dim = 4, @causal>
  %m = attn.merge %s, %s : !attn.state<heads = 2, head_dim = 4, @causal>,
      !attn.state<heads = 2, head_dim = 4, @causal>
      -> !attn.state<heads = 2, head_dim = 4, @causal>
  %b:2 = attn.attention @plain(%q, %kv)
      {num_qo_heads = 2 : i64, num_kv_heads = 1 : i64}
      : !attn.ragged_q<heads = 2, head_dim = 4, f32>,
        !attn.ragged_kv<heads = 1, head_dim = 4, f32>
      -> tensor<?x2x4xf32>, tensor<?x2xf32>
  return %a#0, %a#1 : tensor<?x2x4xf32>, tensor<?x2xf32>
}

// -----

// A variant named only by a state type is imported too.
// CHECK-LABEL: module
// CHECK: attn.variant @sigmoid reduction sigmoid params(bias : f32 scalar)
// CHECK: func.func @type_only
func.func @type_only(%s: !attn.state<heads = 2, head_dim = 4, @sigmoid>) {
  return
}

// -----

// A name that is neither defined nor in the library is reported, not dropped.
// expected-error @+1 {{variant 'nope' is used but defined neither in the module nor in the standard library}}
module {
  func.func @unknown(%s: !attn.state<heads = 2, head_dim = 4, @nope>) {
    return
  }
}
