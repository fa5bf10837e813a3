//===- KernelModules.h - a bundle's gpu.modules, compiled -------*- C++ -*-===//
//
// flashir-bundle compiles each gpu.module to PTX on its own thread (and
// ptxas in its own process), so a bundle split into one gpu.module per kernel
// compiles in the time of its largest kernel: the JIT's first plan() waits
// for that, not for the sum.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHIR_TOOLS_FLASHIR_BUNDLE_KERNELMODULES_H
#define FLASHIR_TOOLS_FLASHIR_BUNDLE_KERNELMODULES_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace flashir::bundle {

/// Moves every kernel of `module`'s gpu.modules into a gpu.module of its own
/// (a copy named `<module>_<kernel>`, holding the helpers too). Kernels of
/// different modules may name each other only through their #attn.launch
/// attributes, which the manifest has already recorded: they are dropped.
void splitPerKernel(mlir::ModuleOp module);

/// The kernels (gpu.funcs) of a gpu.module, in order.
std::vector<std::string> kernelNames(mlir::gpu::GPUModuleOp module);

/// Serializes every gpu.module of `module` (lowered to the LLVM dialect, an
/// NVVM target attached) to PTX, the modules in parallel, and calls
/// `emit(index, ptx)` on the compiling thread with the module's position
/// among them. `toolkit` provides libdevice.
mlir::LogicalResult serializeModules(
    mlir::ModuleOp module, llvm::StringRef toolkit,
    llvm::function_ref<mlir::LogicalResult(size_t, llvm::StringRef)> emit);

} // namespace flashir::bundle

#endif // FLASHIR_TOOLS_FLASHIR_BUNDLE_KERNELMODULES_H
