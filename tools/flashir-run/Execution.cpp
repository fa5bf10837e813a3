//===- Execution.cpp - compiling and calling the kernel -------------------===//
//
// Lowers the attn program with the CPU pipeline (after an optional
// --transform), JIT-compiles it with the MLIR ExecutionEngine and calls it
// with the batch's tensors passed as memref descriptors.
//
//===----------------------------------------------------------------------===//

#include "Runner.h"

#include "flashir/Pipelines/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace flashir::run {

/// A memref descriptor {allocated, aligned, offset, sizes[N], strides[N]}.
static std::vector<int64_t> descriptor(HostTensor &h) {
  std::vector<int64_t> d;
  auto ptr = reinterpret_cast<int64_t>(h.bytes.data());
  d.push_back(ptr);
  d.push_back(ptr);
  d.push_back(0);
  for (int64_t s : h.shape)
    d.push_back(s);
  int64_t stride = 1;
  std::vector<int64_t> strides(h.shape.size());
  for (int i = int(h.shape.size()) - 1; i >= 0; --i) {
    strides[i] = stride;
    stride *= h.shape[i];
  }
  d.insert(d.end(), strides.begin(), strides.end());
  return d;
}

/// The runner executes attn programs on the CPU: a --transform must keep
/// `func.func @kernel` (attn-level rewrites such as attn-split-kv) and must
/// not emit GPU code, which the CPU pipeline cannot run.
static void checkTransformed(ModuleOp module) {
  if (!module.lookupSymbol<func::FuncOp>("kernel"))
    usage("--transform must leave func.func @kernel in place (attn-level "
          "transforms such as attn-split-kv); it lowered or removed it");
  Operation *gpuOp = nullptr;
  module.walk([&](Operation *op) {
    if (op->getDialect() && op->getDialect()->getNamespace() == "gpu") {
      gpuOp = op;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (gpuOp)
    usage("--transform produced GPU code ('" +
          gpuOp->getName().getStringRef().str() +
          "'); flashir-run executes on the CPU (flashir-bundle compiles GPU "
          "kernels)");
}

std::unique_ptr<ExecutionEngine> compile(MLIRContext &ctx,
                                         const std::string &program,
                                         const std::string &transform,
                                         unsigned &plannerArgs,
                                         std::string &transformedIR) {
  // A pass that reports an error but does not fail must not let a run pass:
  // count errors (they are still printed by the default handler).
  int errors = 0;
  ScopedDiagnosticHandler counter(&ctx, [&](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error)
      ++errors;
    return failure();
  });
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(program, &ctx);
  if (!module)
    usage("the generated program does not verify (see above)");
  unsigned before =
      module->lookupSymbol<func::FuncOp>("kernel").getNumArguments();
  if (!transform.empty()) {
    PassManager tpm(&ctx);
    std::string error;
    llvm::raw_string_ostream os(error);
    if (failed(parsePassPipeline(transform, tpm, os)))
      usage("bad --transform: " + error);
    if (failed(tpm.run(*module)) || errors)
      usage("the --transform pipeline failed (see above)");
    llvm::raw_string_ostream ir(transformedIR);
    module->print(ir);
    checkTransformed(*module);
  }
  plannerArgs =
      module->lookupSymbol<func::FuncOp>("kernel").getNumArguments() - before;
  PassManager pm(&ctx);
  buildAttnToCPUPipeline(pm);
  if (failed(pm.run(*module)) || errors)
    usage("the CPU pipeline failed (see above)");
  ExecutionEngineOptions options;
  static std::function<llvm::Error(llvm::Module *)> transformer =
      makeOptimizingTransformer(/*optLevel=*/2, /*sizeLevel=*/0,
                                /*targetMachine=*/nullptr);
  options.transformer = transformer;
  static const StringRef float16Utils[] = {FLASHIR_FLOAT16_UTILS};
  options.sharedLibPaths = float16Utils;
  auto engine = ExecutionEngine::create(*module, options);
  if (!engine) {
    llvm::errs() << "flashir-run: JIT failed: "
                 << llvm::toString(engine.takeError()) << "\n";
    std::exit(2);
  }
  return std::move(*engine);
}

/// Calls the kernel on `batch`.
void invoke(ExecutionEngine &engine, ArrayRef<Slot> slots, Batch &batch) {
  std::vector<std::vector<int64_t>> descriptors;
  descriptors.reserve(slots.size() + batch.planner.size());
  std::vector<void *> pointers(slots.size() + batch.planner.size());
  std::vector<void *> packed(pointers.size());
  size_t i = 0;
  for (const Slot &slot : slots) {
    if (slot.kind == Slot::Scalar) {
      packed[i++] = &batch.scalarParams[slot.scalarIndex];
      continue;
    }
    descriptors.push_back(descriptor(slot.tensor(batch)));
    pointers[i] = descriptors.back().data();
    packed[i] = &pointers[i];
    ++i;
  }
  for (HostTensor &h : batch.planner) {
    descriptors.push_back(descriptor(h));
    pointers[i] = descriptors.back().data();
    packed[i] = &pointers[i];
    ++i;
  }
  if (llvm::Error err = engine.invokePacked("_mlir_ciface_kernel", packed)) {
    llvm::errs() << "flashir-run: call failed: "
                 << llvm::toString(std::move(err)) << "\n";
    std::exit(2);
  }
}

} // namespace flashir::run
