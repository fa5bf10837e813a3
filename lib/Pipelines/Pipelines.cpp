//===- Pipelines.cpp - FlashIR pass pipelines -----------------------------===//

#include "flashir/Pipelines/Pipelines.h"

#include "flashir/Conversion/Passes.h"
#include "flashir/Dialect/Attn/IR/Attn.h"
#include "flashir/Dialect/Attn/Transforms/Passes.h"

#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

// The pipelines are spelled as text so that they read like the command line
// a user would type; every pass in them is registered by the tools.
static const char kToLoops[] =
    "attn-import-variants,convert-attn-to-loops,canonicalize,"
    "one-shot-bufferize{bufferize-function-boundaries=1 "
    "function-boundary-type-conversion=identity-layout-map},"
    "buffer-deallocation-pipeline,convert-bufferization-to-memref,"
    "canonicalize,cse";

static const char kLoopsToLLVM[] =
    "convert-scf-to-cf,expand-strided-metadata,lower-affine,"
    "finalize-memref-to-llvm,convert-math-to-llvm,convert-math-to-libm,"
    "convert-arith-to-llvm,convert-cf-to-llvm,convert-func-to-llvm,"
    "convert-index-to-llvm,reconcile-unrealized-casts";

static void addPipeline(OpPassManager &pm, const std::string &text) {
  std::string error;
  llvm::raw_string_ostream os(error);
  if (failed(parsePassPipeline(text, pm, os)))
    llvm::report_fatal_error(llvm::Twine("invalid built-in pipeline: ") +
                             error);
}

void flashir::buildAttnToLoopsPipeline(OpPassManager &pm) {
  addPipeline(pm, kToLoops);
}

void flashir::buildAttnToCPUPipeline(OpPassManager &pm) {
  addPipeline(pm, kToLoops);
  addPipeline(pm, kLoopsToLLVM);
}

void flashir::buildAttnSchedulePipeline(OpPassManager &pm,
                                        const AttnScheduleOptions &options) {
  std::string text = "attn-import-variants,attn-compose-prefix";
  // Fusion first: tile selection sizes the q tile for the fused rows.
  text += ",attn-fuse-head-groups";
  if (options.chunkSize >= 0)
    text +=
        ",attn-split-kv{chunk-size=" + std::to_string(options.chunkSize) + "}";
  text += ",attn-select-tiles{chip=" + options.chip.getValue() +
          " avg-qo-len=" + std::to_string(options.avgQoLen) +
          " q-tile=" + std::to_string(options.qTile) +
          " kv-tile=" + std::to_string(options.kvTile) +
          " tile-warps=" + std::to_string(options.tileWarps) +
          " tile-stages=" + std::to_string(options.tileStages) + "}";
  addPipeline(pm, text);
}

void flashir::buildAttnToKernelsPipeline(OpPassManager &pm,
                                         const KernelOptions &options) {
  addPipeline(
      pm,
      "attn-import-variants,convert-attn-to-gpu{chip=" + options.chip +
          " warps=" + std::to_string(options.warps) +
          " unroll=" + std::to_string(options.unroll) +
          " stages=" + std::to_string(options.stages) +
          " min-blocks=" + std::to_string(options.minBlocks) +
          " design=" + stringify(options.design).str() +
          " copy=" + stringify(options.copy).str() +
          " heads-innermost=" + (options.headsInnermost ? "true" : "false") +
          " split-prefill=" + (options.splitPrefill ? "true" : "false") +
          " persistent-prefill=" + stringify(options.persistentPrefill).str() +
          "}");
}

void flashir::buildKernelsToLLVMPipeline(OpPassManager &pm, StringRef chip,
                                         StringRef features) {
  addPipeline(pm, ("nvvm-attach-target{chip=" + chip + " features=" + features +
                   " O=3},gpu.module(convert-scf-to-cf,convert-gpu-to-nvvm,"
                   "flashir-externalize-dynamic-shared,convert-nvgpu-to-nvvm,"
                   "convert-nvvm-to-llvm,"
                   "convert-vector-to-llvm,canonicalize,cse),"
                   "reconcile-unrealized-casts")
                      .str());
}

void flashir::buildKernelsToPTXPipeline(OpPassManager &pm, StringRef chip,
                                        StringRef features, StringRef toolkit) {
  buildKernelsToLLVMPipeline(pm, chip, features);
  // The toolkit provides libdevice (math functions the NVVM lowering calls).
  std::string binary = "gpu-module-to-binary{format=isa";
  if (!toolkit.empty())
    binary += " toolkit=" + toolkit.str();
  binary += "}";
  addPipeline(pm, binary);
}

void flashir::buildAttnToPTXPipeline(OpPassManager &pm,
                                     const AttnToPTXOptions &options) {
  buildAttnToKernelsPipeline(pm,
                             {options.chip, options.warps, options.unroll,
                              options.stages, options.minBlocks, options.design,
                              options.copy, options.headsInnermost});
  buildKernelsToPTXPipeline(pm, options.chip, options.features,
                            options.toolkit);
}

void flashir::registerAttnPipelines() {
  PassPipelineRegistration<AttnToPTXOptions>(
      "attn-to-ptx",
      "Generate decode kernels for attn.attention ops and compile them to PTX",
      buildAttnToPTXPipeline);
  PassPipelineRegistration<AttnScheduleOptions>(
      "attn-schedule",
      "Decide how attention executes: prefix composition, head-group fusion, "
      "split-KV, tile selection",
      buildAttnSchedulePipeline);
  PassPipelineRegistration<>(
      "attn-to-loops",
      "Lower attn to bufferized scf/memref loop nests (CPU semantics)",
      buildAttnToLoopsPipeline);
  PassPipelineRegistration<>("attn-to-cpu",
                             "Lower attn to the LLVM dialect for CPU execution",
                             buildAttnToCPUPipeline);
}

void flashir::buildFlashIRPipeline(OpPassManager &pm,
                                   const FlashIRPipelineOptions &options) {
  if (options.raiseFromLinalg)
    addPipeline(pm, "attn-raise-from-linalg");
  if (options.target == FlashIRPipelineOptions::Target::CPU) {
    AttnScheduleOptions schedule;
    schedule.chip = options.chip;
    schedule.chunkSize = options.chunkSize;
    schedule.avgQoLen = options.avgQoLen;
    schedule.qTile = options.qTile;
    schedule.kvTile = options.kvTile;
    schedule.tileWarps = options.tileWarps;
    schedule.tileStages = options.tileStages;
    buildAttnSchedulePipeline(pm, schedule);
    buildAttnToCPUPipeline(pm);
    return;
  }
  // buildAttnToKernelsPipeline imports the variants; split-KV resolves the
  // standard ones itself.
  if (options.chunkSize >= 0)
    addPipeline(pm, "attn-split-kv{chunk-size=" +
                        std::to_string(options.chunkSize) + "}");
  KernelOptions kernels = options.kernels;
  kernels.chip = options.chip;
  buildAttnToKernelsPipeline(pm, kernels);
  buildKernelsToPTXPipeline(pm, options.chip, options.ptxFeatures,
                            options.toolkit);
}

void flashir::registerFlashIRDialects(DialectRegistry &registry) {
  registry.insert<attn::AttnDialect>();
}

void flashir::registerFlashIRToolDialects(DialectRegistry &registry) {
  registerAllDialects(registry);
  registerAllExtensions(registry);
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  registerFlashIRDialects(registry);
}

void flashir::registerFlashIRPasses() {
  // The named pipelines are spelled as text over upstream passes too.
  mlir::registerAllPasses();
  attn::registerAttnPasses();
  registerFlashIRConversionPasses();
  registerAttnPipelines();
}
