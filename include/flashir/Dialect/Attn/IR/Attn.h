//===- Attn.h - attn dialect ------------------------------------*- C++ -*-===//
//
// Dialect, attributes, types and operations of the `attn` dialect.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHIR_DIALECT_ATTN_IR_ATTN_H
#define FLASHIR_DIALECT_ATTN_IR_ATTN_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "flashir/ABI/KernelABI.h"

#include <mutex>

#include "flashir/Dialect/Attn/IR/AttnEnums.h.inc"

namespace flashir::attn {
class VariantOp;

/// Whether a reduction has a merge rule (states can be split and combined).
inline bool isMergeable(ReductionKind kind) {
  return kind == ReductionKind::Softmax || kind == ReductionKind::Sigmoid;
}

/// Whether `type` is `tensor<?xi32>`, the type of every page table / indptr.
bool isIndexArrayType(mlir::Type type);

/// Whether `type` is an element type the views accept (f16, bf16, f32).
bool isSupportedElementType(mlir::Type type);
} // namespace flashir::attn

#include "flashir/Dialect/Attn/IR/AttnDialect.h.inc"

#define GET_ATTRDEF_CLASSES
#include "flashir/Dialect/Attn/IR/AttnAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "flashir/Dialect/Attn/IR/AttnTypes.h.inc"

#define GET_OP_CLASSES
#include "flashir/Dialect/Attn/IR/AttnOps.h.inc"

namespace flashir::attn {
/// The kernel ABI's kind (flashir/ABI) of an #attn.launch kind.
flashir::abi::KernelKind toABIKind(KernelKind kind);

/// Resolves the variant `ref` as seen from `from`: a variant defined in the
/// nearest symbol table, else the standard library's. Returns null if neither
/// exists (or the symbol is not a variant).
VariantOp resolveVariant(mlir::Operation *from, mlir::FlatSymbolRefAttr ref);

/// Replaces the results of `op` by `state`: directly if `op` returns a state,
/// else by `attn.finalize` of it (built with `b`); erases `op`. Used by the
/// passes that rewrite an attention into parts merged into one state.
void replaceAttentionWithState(mlir::OpBuilder &b, AttentionOp op,
                               mlir::Value state);

/// VariantParamAttr::getChecked, usable outside the TU that holds the
/// attribute storage.
VariantParamAttr
getCheckedVariantParam(llvm::function_ref<mlir::InFlightDiagnostic()> emitError,
                       mlir::MLIRContext *ctx, llvm::StringRef name,
                       mlir::Type type, ParamKind kind);
} // namespace flashir::attn

#endif // FLASHIR_DIALECT_ATTN_IR_ATTN_H
