// RUN: flashir-opt %s -split-input-file -canonicalize | FileCheck %s

!st = !attn.state<heads = 2, head_dim = 4, @causal>

// Empty states are the identity of merge: they are dropped, and a merge of
// one state is that state.
// CHECK-LABEL: func.func @drop_empty
// CHECK-SAME: (%[[A:.*]]: !attn.state<{{.*}}>, %[[B:.*]]: !attn.state<{{.*}}>
// CHECK-NEXT: %[[M:.*]] = attn.merge %[[A]], %[[B]] :
// CHECK-NEXT: return %[[M]]
func.func @drop_empty(%a: !st, %b: !st, %rows: index) -> !st {
  %e = attn.empty_state @causal %rows : !st
  %m = attn.merge %e, %a, %e, %b : !st, !st, !st, !st -> !st
  return %m : !st
}

// -----

!st = !attn.state<heads = 2, head_dim = 4, @causal>

// CHECK-LABEL: func.func @single
// CHECK-SAME: (%[[A:.*]]: !attn.state<{{.*}}>
// CHECK-NEXT: return %[[A]]
func.func @single(%a: !st, %rows: index) -> !st {
  %e = attn.empty_state @causal %rows : !st
  %m = attn.merge %a, %e : !st, !st -> !st
  return %m : !st
}

// -----

!st = !attn.state<heads = 2, head_dim = 4, @causal>

// Merging only empty states gives an empty state.
// CHECK-LABEL: func.func @all_empty
// CHECK-NEXT: %[[E:.*]] = attn.empty_state @causal
// CHECK-NEXT: return %[[E]]
func.func @all_empty(%rows: index) -> !st {
  %e = attn.empty_state @causal %rows : !st
  %m = attn.merge %e, %e : !st, !st -> !st
  return %m : !st
}

// -----

!st = !attn.state<heads = 2, head_dim = 4, @causal>

// The order of non-empty operands is kept (it fixes rounding).
// CHECK-LABEL: func.func @order_kept
// CHECK-SAME: (%[[A:.*]]: !attn.state<{{.*}}>, %[[B:.*]]: !attn.state<{{.*}}>, %[[C:.*]]: !attn.state<{{.*}}>
// CHECK-NEXT: attn.merge %[[C]], %[[A]], %[[B]] :
func.func @order_kept(%a: !st, %b: !st, %c: !st) -> !st {
  %m = attn.merge %c, %a, %b : !st, !st, !st -> !st
  return %m : !st
}
