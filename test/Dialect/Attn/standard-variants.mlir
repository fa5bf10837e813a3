// The standard library parses, verifies and round-trips on its own.
// RUN: flashir-opt %flashir_src_root/lib/Dialect/Attn/IR/StandardVariants.mlir | FileCheck %s
// RUN: flashir-opt %flashir_src_root/lib/Dialect/Attn/IR/StandardVariants.mlir | flashir-opt --mlir-print-op-generic | flashir-opt | FileCheck %s

// CHECK-LABEL: attn.variant @plain reduction softmax {}
// CHECK-LABEL: attn.variant @causal reduction softmax {
// CHECK-NEXT: mask(%{{.*}}: index, %{{.*}}: index, %{{.*}}: index) {
// CHECK-LABEL: attn.variant @sliding_window reduction softmax params(window_left : i32 per_request) {
// CHECK-NEXT: mask(%{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: i32) {
// CHECK-LABEL: attn.variant @soft_cap reduction softmax params(cap : f32 scalar) {
// CHECK: logits(
// CHECK: math.tanh
// CHECK: mask(
// CHECK-LABEL: attn.variant @alibi reduction softmax params(slope : f32 per_head) {
// CHECK: arith.sitofp
// CHECK-LABEL: attn.variant @custom_mask reduction softmax params(bits : tensor<?xi8> buffer, row0 : i64 per_request, stride : i64 per_request) {
// CHECK: tensor.extract
// CHECK-LABEL: attn.variant @sigmoid reduction sigmoid params(bias : f32 scalar) {
