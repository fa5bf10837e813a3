// RUN: flashir-opt %s -split-input-file -verify-diagnostics -pass-pipeline='builtin.module(gpu.module(flashir-externalize-dynamic-shared))' | FileCheck %s

// The zero-length shared-memory global convert-gpu-to-nvvm makes for
// gpu.dynamic_shared_memory becomes external (NVPTX: `.extern .shared
// ... []`); globals with a size, an initializer or in another address space
// keep their linkage.
// CHECK-LABEL: gpu.module @kernels
// CHECK: llvm.mlir.global external @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
// CHECK: llvm.mlir.global internal @sized() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<16 x i8>
// CHECK: llvm.mlir.global internal @global_space() {addr_space = 1 : i32} : !llvm.array<0 x i8>
gpu.module @kernels {
  llvm.mlir.global internal @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
  llvm.mlir.global internal @sized() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<16 x i8>
  llvm.mlir.global internal @global_space() {addr_space = 1 : i32} : !llvm.array<0 x i8>
}

// -----

// A non-integer addr_space (which the global's verifier lets through) is
// reported, not dereferenced.
gpu.module @bad_space {
  // expected-error @+1 {{'llvm.mlir.global' op needs an integer addr_space}}
  llvm.mlir.global internal @g() {addr_space = array<i32: 0>} : !llvm.array<0 x i8>
}

// -----

// No addr_space: the default (0), left alone.
// CHECK-LABEL: gpu.module @default_space
// CHECK: llvm.mlir.global internal @g() {{.*}}: !llvm.array<0 x i8>
gpu.module @default_space {
  llvm.mlir.global internal @g() : !llvm.array<0 x i8>
}
