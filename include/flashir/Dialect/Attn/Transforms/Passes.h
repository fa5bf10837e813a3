//===- Passes.h - attn dialect passes ---------------------------*- C++ -*-===//

#ifndef FLASHIR_DIALECT_ATTN_TRANSFORMS_PASSES_H
#define FLASHIR_DIALECT_ATTN_TRANSFORMS_PASSES_H

#include "flashir/Dialect/Attn/IR/Attn.h"
#include "mlir/Pass/Pass.h"

namespace flashir::attn {

#define GEN_PASS_DECL
#include "flashir/Dialect/Attn/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "flashir/Dialect/Attn/Transforms/Passes.h.inc"

} // namespace flashir::attn

#endif // FLASHIR_DIALECT_ATTN_TRANSFORMS_PASSES_H
