//===- embed-opt.cpp - an ML compiler's tool built on FlashIR -------------===//
//
// embed-opt INPUT [--target=cpu|nvidia] [--chip=sm_90a]: parses a linalg (or
// attn) program, runs FlashIR's pipeline with attention raised from linalg,
// and prints the result. Uses only the installed package's API:
// registerFlashIRToolDialects, registerFlashIRPasses, buildFlashIRPipeline.
//
//===----------------------------------------------------------------------===//

#include "flashir/Pipelines/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>
#include <string>

int main(int argc, char **argv) {
  if (argc < 2) {
    llvm::errs() << "usage: embed-opt INPUT [--target=cpu|nvidia] "
                    "[--chip=CHIP] [--toolkit=DIR]\n";
    return 2;
  }
  flashir::FlashIRPipelineOptions options;
  options.raiseFromLinalg = true;
  for (int i = 2; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--target=nvidia")
      options.target = flashir::FlashIRPipelineOptions::Target::NVIDIA;
    else if (arg == "--target=cpu")
      options.target = flashir::FlashIRPipelineOptions::Target::CPU;
    else if (arg.rfind("--chip=", 0) == 0)
      options.chip = arg.substr(7);
    else if (arg.rfind("--toolkit=", 0) == 0)
      options.toolkit = arg.substr(10);
    else {
      llvm::errs() << "embed-opt: unknown option " << arg << "\n";
      return 2;
    }
  }

  mlir::DialectRegistry registry;
  flashir::registerFlashIRToolDialects(registry);
  flashir::registerFlashIRPasses();
  mlir::MLIRContext context(registry);

  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(argv[1], sourceMgr,
                                            mlir::ParserConfig(&context));
  if (!module)
    return 1;
  mlir::PassManager pm(&context);
  flashir::buildFlashIRPipeline(pm, options);
  if (mlir::failed(pm.run(*module)))
    return 1;
  module->print(llvm::outs());
  llvm::outs() << "\n";
  return 0;
}
