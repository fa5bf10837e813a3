//===- Pipelines.h - FlashIR pass pipelines ---------------------*- C++ -*-===//

#ifndef FLASHIR_PIPELINES_PIPELINES_H
#define FLASHIR_PIPELINES_PIPELINES_H

#include "flashir/Conversion/AttnToGPUOptions.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace flashir {

/// attn (on tensors) → scf/memref loops, bufferized, still above LLVM:
/// attn-import-variants, convert-attn-to-loops, one-shot-bufferize (identity
/// layouts at function boundaries), buffer deallocation.
void buildAttnToLoopsPipeline(mlir::OpPassManager &pm);

/// The CPU path: buildAttnToLoopsPipeline, then down to the LLVM dialect,
/// ready for the ExecutionEngine. math ops without an LLVM intrinsic (tanh,
/// …) become libm calls.
void buildAttnToCPUPipeline(mlir::OpPassManager &pm);

/// Options of the scheduling pipeline.
struct AttnScheduleOptions
    : public mlir::PassPipelineOptions<AttnScheduleOptions> {
  Option<std::string> chip{*this, "chip",
                           llvm::cl::desc("target chip for tile selection"),
                           llvm::cl::init("sm_80")};
  Option<int64_t> chunkSize{
      *this, "chunk-size",
      llvm::cl::desc("keys per split-KV chunk; 0: runtime chunks; -1: no "
                     "split"),
      llvm::cl::init(-1)};
  Option<int64_t> avgQoLen{
      *this, "avg-qo-len",
      llvm::cl::desc("expected average query length (1 = decode)"),
      llvm::cl::init(1)};
  // Tile overrides (0: chosen by attn-select-tiles).
  Option<int64_t> qTile{*this, "q-tile",
                        llvm::cl::desc("override: query rows per tile"),
                        llvm::cl::init(0)};
  Option<int64_t> kvTile{*this, "kv-tile",
                         llvm::cl::desc("override: keys per tile"),
                         llvm::cl::init(0)};
  Option<int64_t> tileWarps{*this, "tile-warps",
                            llvm::cl::desc("override: warps per CTA"),
                            llvm::cl::init(0)};
  Option<int64_t> tileStages{*this, "tile-stages",
                             llvm::cl::desc("override: K/V stages"),
                             llvm::cl::init(0)};
};

/// How attention executes, without changing what it computes:
/// attn-import-variants, attn-compose-prefix, attn-fuse-head-groups,
/// attn-split-kv (if chunk-size >= 0), attn-select-tiles.
void buildAttnSchedulePipeline(mlir::OpPassManager &pm,
                               const AttnScheduleOptions &options);

/// Options of the NVIDIA pipeline.
struct AttnToPTXOptions : public mlir::PassPipelineOptions<AttnToPTXOptions> {
  Option<std::string> chip{*this, "chip", llvm::cl::desc("target chip"),
                           llvm::cl::init("sm_80")};
  Option<std::string> features{
      *this, "features",
      llvm::cl::desc("PTX features (the upstream default +ptx60 is too old "
                     "for sm_80+)"),
      llvm::cl::init("+ptx80")};
  Option<int64_t> warps{*this, "warps",
                        llvm::cl::desc("warps per decode CTA (-1: by shape, as "
                                       "convert-attn-to-gpu)"),
                        llvm::cl::init(-1)};
  Option<std::string> toolkit{
      *this, "toolkit",
      llvm::cl::desc(
          "CUDA toolkit directory (libdevice), e.g. /usr/local/cuda"),
      llvm::cl::init("")};
  Option<int64_t> unroll{*this, "unroll",
                         llvm::cl::desc("keys per key group per iteration"),
                         llvm::cl::init(2)};
  Option<int64_t> stages{
      *this, "stages",
      llvm::cl::desc("cp.async stages per warp (sm_80+); 0: register double "
                     "buffering; -1: by chip"),
      llvm::cl::init(-1)};
  Option<int64_t> minBlocks{
      *this, "min-blocks",
      llvm::cl::desc("resident CTAs per SM the register allocation must "
                     "allow (0: no bound)"),
      llvm::cl::init(0)};
  Option<KernelDesign> design{
      *this, "design", llvm::cl::desc("how the kernels compute"),
      llvm::cl::init(KernelDesign::Auto), kernelDesignValues()};
  Option<KVCopy> copy{
      *this, "copy",
      llvm::cl::desc("how the mma-sync decode kernels stage K/V"),
      llvm::cl::init(KVCopy::Auto), kvCopyValues()};
  Option<bool> headsInnermost{
      *this, "heads-innermost",
      llvm::cl::desc("KV head fastest in the CTAs' launch order"),
      llvm::cl::init(true)};
};

/// How the decode kernels are generated (convert-attn-to-gpu's options).
struct KernelOptions {
  std::string chip = "sm_80";
  int64_t warps = -1;
  int64_t unroll = 2;
  int64_t stages = -1;
  int64_t minBlocks = 0;
  KernelDesign design = KernelDesign::Auto;
  KVCopy copy = KVCopy::Auto;
  /// KV head fastest in the CTAs' launch order (same grid and ABI).
  bool headsInnermost = true;
  /// Split-KV attentions with 16+ row tiles get the prefill kernel.
  bool splitPrefill = false;
  /// sm_90a's wgmma prefill kernel runs persistent CTAs.
  PersistentPrefill persistentPrefill = PersistentPrefill::Auto;
};

/// attn → gpu.module of decode kernels (attn-import-variants,
/// convert-attn-to-gpu).
void buildAttnToKernelsPipeline(mlir::OpPassManager &pm,
                                const KernelOptions &options);

/// gpu.module kernels → the LLVM dialect with an NVVM target for `chip`
/// (attached, not yet serialized): what gpu-module-to-binary, or a caller
/// serializing each gpu.module itself, takes.
void buildKernelsToLLVMPipeline(mlir::OpPassManager &pm, llvm::StringRef chip,
                                llvm::StringRef features);

/// gpu.module kernels → NVVM → PTX in a gpu.binary for `chip`. `toolkit`
/// (a CUDA installation) provides libdevice for math functions; without it
/// the PTX may call functions ptxas cannot resolve.
void buildKernelsToPTXPipeline(mlir::OpPassManager &pm, llvm::StringRef chip,
                               llvm::StringRef features,
                               llvm::StringRef toolkit);

/// attn → decode kernels (convert-attn-to-gpu) → NVVM → PTX in a gpu.binary
/// (format=isa): no CUDA toolkit needed. The host attn program is left as
/// it is.
void buildAttnToPTXPipeline(mlir::OpPassManager &pm,
                            const AttnToPTXOptions &options);

/// Registers `attn-schedule`, `attn-to-ptx`, `attn-to-loops` and `attn-to-cpu`.
void registerAttnPipelines();

} // namespace flashir

namespace flashir {

/// The whole compilation in one call, for ML compilers embedding FlashIR.
struct FlashIRPipelineOptions {
  enum class Target { CPU, NVIDIA };
  Target target = Target::CPU;
  /// Run attn-raise-from-linalg first (linalg attention -> attn).
  bool raiseFromLinalg = false;
  /// Split policy: -1 no split-KV, 0 runtime chunks (the planner's), > 0
  /// chunks of that many keys.
  int64_t chunkSize = -1;
  /// Tile selection and NVIDIA code generation target.
  std::string chip = "sm_80";
  /// NVIDIA: PTX features, CUDA toolkit (libdevice), kernel shape.
  std::string ptxFeatures = "+ptx80";
  std::string toolkit;
  KernelOptions kernels;
  /// Expected average query length (tile selection).
  int64_t avgQoLen = 1;
  /// Tile overrides for attn-select-tiles (CPU path); 0 = chosen.
  int64_t qTile = 0, kvTile = 0, tileWarps = 0, tileStages = 0;
};

/// CPU: [raise], attn-schedule (prefix composition, head-group fusion,
/// split-KV, tiles for `chip`), attn-to-cpu (LLVM dialect for the JIT).
/// NVIDIA: [raise], attn-import-variants, [attn-split-kv], decode kernels for
/// `chip`, NVVM, PTX in a gpu.binary (the host program stays attn).
void buildFlashIRPipeline(mlir::OpPassManager &pm,
                          const FlashIRPipelineOptions &options);

/// Registers the attn dialect (and nothing else) into `registry`.
void registerFlashIRDialects(mlir::DialectRegistry &registry);

/// Everything FlashIR's tools use: every upstream dialect and extension, the
/// NVVM target, the LLVM IR translations (builtin, LLVM, NVVM, GPU) and
/// attn.
void registerFlashIRToolDialects(mlir::DialectRegistry &registry);

/// Registers FlashIR's passes and named pipelines with the global pass
/// registry, and the upstream passes the pipelines are made of (all of
/// them): call it before buildFlashIRPipeline or parsing a pipeline.
void registerFlashIRPasses();

} // namespace flashir

#endif // FLASHIR_PIPELINES_PIPELINES_H
