//===- KernelModules.cpp - gpu.modules of a bundle and their images -------===//

#include "KernelModules.h"

#include "mlir/Dialect/GPU/IR/CompilationInterfaces.h"
#include "mlir/IR/Threading.h"

using namespace mlir;

namespace flashir::bundle {

std::vector<std::string> kernelNames(gpu::GPUModuleOp module) {
  std::vector<std::string> names;
  for (auto func : module.getOps<gpu::GPUFuncOp>())
    if (func.isKernel())
      names.push_back(func.getName().str());
  return names;
}

/// Erases the kernels of `module` other than `keep`.
static void keepOnlyKernel(gpu::GPUModuleOp module, StringRef keep) {
  SmallVector<gpu::GPUFuncOp> others;
  for (auto func : module.getOps<gpu::GPUFuncOp>())
    if (func.isKernel() && func.getName() != keep)
      others.push_back(func);
  for (gpu::GPUFuncOp func : others)
    func->erase();
}

void splitPerKernel(ModuleOp module) {
  SmallVector<gpu::GPUModuleOp> originals(module.getOps<gpu::GPUModuleOp>());
  for (gpu::GPUModuleOp original : originals) {
    original.walk([](gpu::GPUFuncOp func) { func->removeAttr("attn.launch"); });
    std::vector<std::string> names = kernelNames(original);
    if (names.size() < 2)
      continue;
    OpBuilder builder(original->getContext());
    builder.setInsertionPointAfter(original);
    for (const std::string &name : llvm::drop_begin(names)) {
      auto copy = cast<gpu::GPUModuleOp>(builder.clone(*original));
      copy.setName((original.getName() + "_" + name).str());
      keepOnlyKernel(copy, name);
    }
    keepOnlyKernel(original, names.front());
  }
}

LogicalResult
serializeModules(ModuleOp module, StringRef toolkit,
                 function_ref<LogicalResult(size_t, StringRef)> emit) {
  SmallVector<gpu::GPUModuleOp> modules(module.getOps<gpu::GPUModuleOp>());
  gpu::TargetOptions options(toolkit, /*librariesToLink=*/{},
                             /*cmdOptions=*/"", /*elfSection=*/"",
                             gpu::CompilationTarget::Assembly);
  // Each serialization translates into its own llvm::LLVMContext and only
  // reads the MLIR module; diagnostics go through the context's handler.
  return failableParallelForEachN(
      module.getContext(), 0, modules.size(), [&](size_t i) -> LogicalResult {
        gpu::GPUModuleOp gpuModule = modules[i];
        ArrayAttr targets = gpuModule.getTargetsAttr();
        auto target = targets && targets.size() == 1
                          ? dyn_cast<gpu::TargetAttrInterface>(targets[0])
                          : nullptr;
        if (!target)
          return gpuModule.emitError("needs exactly one GPU target");
        std::optional<SmallVector<char, 0>> ptx =
            target.serializeToObject(gpuModule, options);
        if (!ptx)
          return gpuModule.emitError("could not be compiled to PTX");
        StringRef text(ptx->data(), ptx->size());
        // The serializer NUL-terminates the PTX (for cuModuleLoadData);
        // ptxas reads a file and rejects the NUL.
        return emit(i, text.rtrim('\0'));
      });
}

} // namespace flashir::bundle
