# Precompiled MLIR headers for the targets whose files spend most of their
# compile time parsing them: the GPU conversion (40 files) and flashir-run.
# Off by default: the build without them is the one that checks that each
# file includes what it uses; CI's second and third builds (sanitizers, GCC)
# turn it on.
option(FLASHIR_PRECOMPILED_HEADERS
       "Precompile the MLIR headers of the GPU conversion and flashir-run" OFF)

function(flashir_precompile_mlir_headers target)
  if(NOT FLASHIR_PRECOMPILED_HEADERS)
    return()
  endif()
  target_precompile_headers(${target} PRIVATE
    <mlir/Dialect/Arith/IR/Arith.h>
    <mlir/Dialect/Func/IR/FuncOps.h>
    <mlir/Dialect/GPU/IR/GPUDialect.h>
    <mlir/Dialect/LLVMIR/LLVMDialect.h>
    <mlir/Dialect/LLVMIR/NVVMDialect.h>
    <mlir/Dialect/Math/IR/Math.h>
    <mlir/Dialect/MemRef/IR/MemRef.h>
    <mlir/Dialect/NVGPU/IR/NVGPUDialect.h>
    <mlir/Dialect/SCF/IR/SCF.h>
    <mlir/Dialect/Tensor/IR/Tensor.h>
    <mlir/Dialect/Vector/IR/VectorOps.h>
    <mlir/IR/Builders.h>
    <mlir/IR/PatternMatch.h>)
endfunction()
