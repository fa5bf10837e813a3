//===- flashir-opt.cpp - mlir-opt with the attn dialect -------------------===//
//
// Every upstream dialect, pass and extension, the NVVM target and the LLVM IR
// translations, plus the attn dialect and its passes.
//
//===----------------------------------------------------------------------===//

#include "flashir/Pipelines/Pipelines.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  flashir::registerFlashIRPasses(); // upstream passes included

  mlir::DialectRegistry registry;
  flashir::registerFlashIRToolDialects(registry);

  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "FlashIR optimizer driver\n", registry));
}
