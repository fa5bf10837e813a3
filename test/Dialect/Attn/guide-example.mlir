// The worked example of docs/WritingVariants.md parses, verifies and runs
// through the import pass unchanged.
// RUN: %python %S/Inputs/extract_mlir.py %flashir_src_root/docs/WritingVariants.md > %t.mlir
// RUN: flashir-opt %t.mlir -attn-import-variants | FileCheck %s

// CHECK-LABEL: attn.variant @gemma2_local reduction softmax params(window_left : i32 per_request)
// CHECK: math.tanh
// CHECK: mask(
// CHECK-NOT: attn.variant
// CHECK-LABEL: func.func @gemma2_decode
// CHECK: attn.attention @gemma2_local(%{{.*}}, %{{.*}}) params(%{{.*}} : tensor<?xi32>)
