//===- Passes.h - FlashIR conversion passes ---------------------*- C++ -*-===//

#ifndef FLASHIR_CONVERSION_PASSES_H
#define FLASHIR_CONVERSION_PASSES_H

#include "flashir/Conversion/AttnToGPUOptions.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

namespace flashir {

/// convert-attn-to-loops unrolls an attention's views and a merge's states
/// into straight-line code, whose compile time grows faster than linearly;
/// past these counts it reports an error instead.
constexpr int64_t kMaxLoopLoweringViews = 64;
constexpr int64_t kMaxLoopLoweringMergeStates = 256;

#define GEN_PASS_DECL
#include "flashir/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "flashir/Conversion/Passes.h.inc"

} // namespace flashir

#endif // FLASHIR_CONVERSION_PASSES_H
