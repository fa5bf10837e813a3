//===- AttnDialect.cpp - attn dialect registration and library ------------===//

#include "flashir/Dialect/Attn/IR/Attn.h"

#include "mlir/IR/DialectImplementation.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace flashir::attn;

#include "flashir/Dialect/Attn/IR/AttnDialect.cpp.inc"
#include "flashir/Dialect/Attn/IR/AttnEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "flashir/Dialect/Attn/IR/AttnAttrs.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "flashir/Dialect/Attn/IR/AttnTypes.cpp.inc"

void AttnDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "flashir/Dialect/Attn/IR/AttnAttrs.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "flashir/Dialect/Attn/IR/AttnTypes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "flashir/Dialect/Attn/IR/AttnOps.cpp.inc"
      >();
}

StringRef AttnDialect::getStandardLibrarySource() {
  static const char kSource[] =
#include "StandardVariants.inc"
      ;
  return kSource;
}

VariantOp AttnDialect::lookupStandardVariant(StringRef name) {
  auto lookup = [&]() -> VariantOp {
    if (!standardLibrary)
      return nullptr;
    return dyn_cast_or_null<VariantOp>(
        SymbolTable::lookupSymbolIn(*standardLibrary, name));
  };
  {
    std::lock_guard<std::mutex> lock(standardLibraryMutex);
    if (standardLibraryParsed)
      return lookup();
  }
  // Parse without holding the lock: verifying the library runs on the
  // context's thread pool, whose waiting thread may pick up another task that
  // resolves a variant and so re-enters this function. Racing parses are
  // harmless; the first one published wins. The library is checked by the
  // test suite, so a parse failure here would be a build defect, reported
  // like any other diagnostic.
  OwningOpRef<ModuleOp> parsed = parseSourceString<ModuleOp>(
      getStandardLibrarySource(), ParserConfig(getContext()),
      "flashir-standard-variants.mlir");
  std::lock_guard<std::mutex> lock(standardLibraryMutex);
  if (!standardLibraryParsed) {
    standardLibraryParsed = true;
    standardLibrary = std::move(parsed);
  }
  return lookup();
}

//===----------------------------------------------------------------------===//
// Helpers shared by the verifiers
//===----------------------------------------------------------------------===//

bool flashir::attn::isIndexArrayType(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getRank() == 1 && tensor.isDynamicDim(0) &&
         tensor.getElementType().isSignlessInteger(32);
}

bool flashir::attn::isSupportedElementType(Type type) {
  return type.isF16() || type.isBF16() || type.isF32();
}

VariantOp flashir::attn::resolveVariant(Operation *from,
                                        FlatSymbolRefAttr ref) {
  if (!ref)
    return nullptr;
  if (Operation *sym = SymbolTable::lookupNearestSymbolFrom(from, ref))
    return dyn_cast<VariantOp>(sym);
  auto *dialect = from->getContext()->getLoadedDialect<AttnDialect>();
  return dialect ? dialect->lookupStandardVariant(ref.getValue()) : nullptr;
}

VariantParamAttr flashir::attn::getCheckedVariantParam(
    function_ref<InFlightDiagnostic()> emitError, MLIRContext *ctx,
    StringRef name, Type type, ParamKind kind) {
  return VariantParamAttr::getChecked(emitError, ctx, name, type, kind);
}

//===----------------------------------------------------------------------===//
// Attribute and type verifiers
//===----------------------------------------------------------------------===//

LogicalResult
VariantParamAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                         StringRef name, Type type, ParamKind kind) {
  if (name.empty())
    return emitError() << "variant parameter name must not be empty";
  if (kind == ParamKind::Buffer) {
    if (!isa<RankedTensorType>(type))
      return emitError() << "buffer parameter '" << name
                         << "' must have a ranked tensor type, got " << type;
    return success();
  }
  if (!type.isIntOrIndexOrFloat())
    return emitError() << stringifyParamKind(kind) << " parameter '" << name
                       << "' must have an integer, index or float type, got "
                       << type;
  return success();
}

/// Checks the parameters every view/state type shares.
static LogicalResult
verifyHeadShape(function_ref<InFlightDiagnostic()> emitError, int64_t numHeads,
                int64_t headDim) {
  if (numHeads < 1)
    return emitError() << "heads must be >= 1, got " << numHeads;
  if (headDim < 2 || headDim % 2 != 0 || headDim > 1024)
    return emitError() << "head_dim must be an even number in 2..1024 (hooks "
                          "pair element i with i + head_dim/2), got "
                       << headDim;
  return success();
}

static LogicalResult
verifyViewElementType(function_ref<InFlightDiagnostic()> emitError,
                      Type elementType) {
  if (!isSupportedElementType(elementType))
    return emitError() << "element type must be f16, bf16 or f32, got "
                       << elementType;
  return success();
}

LogicalResult PagedKVType::verify(function_ref<InFlightDiagnostic()> emitError,
                                  int64_t pageSize, KVLayout, int64_t numHeads,
                                  int64_t headDim, Type elementType) {
  if (pageSize < 1)
    return emitError() << "page_size must be >= 1, got " << pageSize;
  if (failed(verifyHeadShape(emitError, numHeads, headDim)))
    return failure();
  return verifyViewElementType(emitError, elementType);
}

LogicalResult RaggedKVType::verify(function_ref<InFlightDiagnostic()> emitError,
                                   int64_t numHeads, int64_t headDim,
                                   Type elementType) {
  if (failed(verifyHeadShape(emitError, numHeads, headDim)))
    return failure();
  return verifyViewElementType(emitError, elementType);
}

LogicalResult RaggedQType::verify(function_ref<InFlightDiagnostic()> emitError,
                                  int64_t numHeads, int64_t headDim,
                                  Type elementType) {
  if (failed(verifyHeadShape(emitError, numHeads, headDim)))
    return failure();
  return verifyViewElementType(emitError, elementType);
}

LogicalResult StateType::verify(function_ref<InFlightDiagnostic()> emitError,
                                int64_t numHeads, int64_t headDim,
                                FlatSymbolRefAttr variant) {
  if (!variant)
    return emitError() << "state type needs a variant symbol";
  return verifyHeadShape(emitError, numHeads, headDim);
}

LogicalResult
ChunkedStateType::verify(function_ref<InFlightDiagnostic()> emitError,
                         int64_t numHeads, int64_t headDim,
                         FlatSymbolRefAttr variant) {
  return StateType::verify(emitError, numHeads, headDim, variant);
}

LogicalResult
TileConfigAttr::verify(function_ref<InFlightDiagnostic()> emitError, int64_t q,
                       int64_t kv, int64_t warps, int64_t stages,
                       bool qShared) {
  if (!llvm::is_contained({1, 16, 32, 64, 128}, q))
    return emitError() << "q tile must be 1, 16, 32, 64 or 128, got " << q;
  if (!llvm::is_contained({32, 64, 128}, kv))
    return emitError() << "kv tile must be 32, 64 or 128, got " << kv;
  if (!llvm::is_contained({1, 2, 4, 8, 16}, warps))
    return emitError() << "warps must be 1, 2, 4, 8 or 16, got " << warps;
  if (stages < 1 || stages > 8)
    return emitError() << "stages must be in 1..8, got " << stages;
  if (qShared && q < 16)
    return emitError() << "q_shared needs a prefill tile (q >= 16), got q = "
                       << q;
  return success();
}
