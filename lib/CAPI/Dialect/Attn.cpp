//===- Attn.cpp - C API of the attn dialect and FlashIR's pipeline --------===//

#include "flashir-c/Dialect/Attn.h"

#include "flashir/Dialect/Attn/IR/Attn.h"
#include "flashir/Pipelines/Pipelines.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Pass.h"
#include "mlir/CAPI/Registration.h"
#include "mlir/CAPI/Support.h"

MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(Attn, attn, flashir::attn::AttnDialect)

void flashirRegisterAllDialects(MlirDialectRegistry registry) {
  flashir::registerFlashIRToolDialects(*unwrap(registry));
}

void flashirRegisterPasses(void) { flashir::registerFlashIRPasses(); }

MlirLogicalResult flashirBuildPipeline(MlirOpPassManager pm,
                                       MlirStringRef target, MlirStringRef chip,
                                       int64_t chunkSize, bool raiseFromLinalg,
                                       MlirStringRef toolkit) {
  flashir::FlashIRPipelineOptions options;
  llvm::StringRef t = unwrap(target);
  if (t == "cpu")
    options.target = flashir::FlashIRPipelineOptions::Target::CPU;
  else if (t == "nvidia")
    options.target = flashir::FlashIRPipelineOptions::Target::NVIDIA;
  else
    return mlirLogicalResultFailure();
  if (chip.length)
    options.chip = unwrap(chip).str();
  options.chunkSize = chunkSize;
  options.raiseFromLinalg = raiseFromLinalg;
  options.toolkit = unwrap(toolkit).str();
  flashir::buildFlashIRPipeline(*unwrap(pm), options);
  return mlirLogicalResultSuccess();
}
