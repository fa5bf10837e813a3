//===- flashir-opt.cpp - mlir-opt with the attn dialect -------------------===//
//
// Every upstream dialect, pass and extension, the NVVM target and the LLVM IR
// translations, plus the attn dialect and its passes.
//
//===----------------------------------------------------------------------===//

#include "flashir/Conversion/Passes.h"
#include "flashir/Dialect/Attn/IR/Attn.h"
#include "flashir/Dialect/Attn/Transforms/Passes.h"
#include "flashir/Pipelines/Pipelines.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  flashir::registerFlashIRPasses();

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  mlir::registerBuiltinDialectTranslation(registry);
  mlir::registerLLVMDialectTranslation(registry);
  mlir::registerNVVMDialectTranslation(registry);
  mlir::registerGPUDialectTranslation(registry);
  flashir::registerFlashIRDialects(registry);

  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "FlashIR optimizer driver\n", registry));
}
