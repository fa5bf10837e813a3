//===- flashir-bundle.cpp - attn program to a kernel bundle ---------------===//
//
// Writes a kernel bundle for the attention ops of an attn program: PTX
// files per chip (and a cubin where ptxas is available) plus
// `manifest.json` describing each kernel's ABI, launch configuration, shapes,
// variant and parameters — everything the runtime needs, no MLIR required
// to read it.
//
//===----------------------------------------------------------------------===//

#include "KernelModules.h"

#include "flashir/ABI/Manifest.h"
#include "flashir/Conversion/Passes.h"
#include "flashir/Dialect/Attn/IR/Attn.h"
#include "flashir/Dialect/Attn/Transforms/Passes.h"
#include "flashir/Pipelines/Pipelines.h"
#include "flashir/Target/Chip.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

#include <algorithm>
#include <chrono>

using namespace mlir;
namespace cl = llvm::cl;
namespace abi = flashir::abi;

static cl::opt<std::string> input(cl::Positional, cl::desc("<attn program>"),
                                  cl::Required);
static cl::opt<std::string> outputDir("o", cl::desc("bundle directory"),
                                      cl::Required);
static cl::list<std::string>
    chips("chips", cl::CommaSeparated,
          cl::desc("target chips (default: sm_75,sm_80,sm_86,sm_89,sm_90a)"));
static cl::opt<int64_t> warps(
    "warps", cl::init(-1),
    cl::desc("warps per decode CTA (-1: by shape, as convert-attn-to-gpu)"));
static cl::opt<int64_t> unroll("unroll", cl::init(2),
                               cl::desc("keys per key group per iteration"));
static cl::opt<int64_t>
    stages("stages", cl::init(-1),
           cl::desc("cp.async stages per warp on sm_80+ (-1: default; "
                    "sm_75 always uses register double buffering)"));
static cl::opt<int64_t>
    minBlocks("min-blocks", cl::init(0),
              cl::desc("resident CTAs per SM the register allocation must "
                       "allow (0: no bound)"));
static cl::opt<flashir::KernelDesign>
    kernelDesign("design", cl::init(flashir::KernelDesign::Auto),
                 cl::desc("how the kernels compute"),
                 flashir::kernelDesignValues());
static cl::opt<flashir::KVCopy>
    kvCopy("copy", cl::init(flashir::KVCopy::Auto),
           cl::desc("how the mma-sync decode kernels stage K/V"),
           flashir::kvCopyValues());
static cl::opt<bool> headsInnermost(
    "heads-innermost", cl::init(true),
    cl::desc("KV head fastest in the CTAs' launch order (same grid)"));
static cl::opt<bool> splitPrefill(
    "split-prefill", cl::init(false),
    cl::desc("split-KV attentions with 16+ row tiles get the tensor-core "
             "prefill kernel (grid chunks x q_tiles x heads; no runtime "
             "runner yet) instead of the split-KV decode kernel"));
static cl::opt<flashir::PersistentPrefill> persistentPrefill(
    "persistent-prefill", cl::init(flashir::PersistentPrefill::Auto),
    cl::desc("sm_90a's wgmma prefill kernel runs persistent CTAs (one per "
             "SM walking the grid's q tiles; auto: at head dim 64 with tensor "
             "copies, but not the kernels with four consumer warpgroups)"),
    flashir::persistentPrefillValues());
static cl::opt<std::string> schedule(
    "schedule", cl::init(""),
    cl::desc("pass pipeline run on the program before kernel generation, "
             "e.g. 'attn-split-kv{chunk-size=0}' for split-KV kernels"));
static cl::opt<bool> modulePerKernel(
    "module-per-kernel", cl::init(false),
    cl::desc("one module (PTX file, cubin) per kernel, compiled in parallel: "
             "the bundle compiles in the time of its largest kernel (the "
             "JIT's choice); default: one module per chip"));
static cl::opt<std::string>
    ptxasPath("ptxas", cl::init(""),
              cl::desc("ptxas for cubins (default: $CUDA_HOME/bin, "
                       "/usr/local/cuda/bin, PATH; none: PTX only)"));

namespace {

std::string typeString(Type type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << type;
  return s;
}

/// Static shared memory of a kernel (its workgroup attributions).
int64_t sharedMemoryBytes(gpu::GPUFuncOp func) {
  int64_t bytes = 0;
  for (BlockArgument attribution : func.getWorkgroupAttributions()) {
    auto type = cast<MemRefType>(attribution.getType());
    bytes += type.getNumElements() * type.getElementTypeBitWidth() / 8;
  }
  return bytes;
}

/// The kernel's #attn.launch (the GPU conversion puts one on every kernel).
flashir::attn::LaunchAttr launchOf(gpu::GPUFuncOp func) {
  return func->getAttrOfType<flashir::attn::LaunchAttr>("attn.launch");
}

abi::ParamKind paramKindOf(flashir::attn::ParamKind kind) {
  switch (kind) {
  case flashir::attn::ParamKind::Scalar:
    return abi::ParamKind::Scalar;
  case flashir::attn::ParamKind::PerRequest:
    return abi::ParamKind::PerRequest;
  case flashir::attn::ParamKind::PerHead:
    return abi::ParamKind::PerHead;
  case flashir::attn::ParamKind::Buffer:
    break;
  }
  return abi::ParamKind::Buffer;
}

/// Whether `variant` (null: plain attention) neither masks nor reads query
/// or key positions.
bool isPositionFree(flashir::attn::VariantOp variant) {
  if (!variant)
    return true;
  if (!variant.getMask().empty() || !variant.getQuery().empty() ||
      !variant.getKey().empty())
    return false;
  Region &logits = variant.getLogits();
  // logits(s, qpos, kpos, head, params...)
  return logits.empty() || (logits.getArgument(1).use_empty() &&
                            logits.getArgument(2).use_empty());
}

/// The manifest entry of one kernel (chip-independent), read off its
/// gpu.func and #attn.launch (verified: its grid parses and its arguments
/// follow the ABI).
abi::KernelInfo describe(gpu::GPUFuncOp func,
                         flashir::attn::LaunchAttr launch) {
  abi::KernelInfo k;
  k.name = func.getName().str();
  k.kind = flashir::attn::toABIKind(launch.getKind());
  k.grid = *abi::Grid::parse(launch.getGrid());
  k.block = launch.getBlock();
  k.unroll = launch.getUnroll();
  k.qRows = launch.getQRows();
  k.qTokens = launch.getQTokens();
  k.kvTile = launch.getKvTile();
  k.variant = launch.getVariant().getValue().str();
  if (FlatSymbolRefAttr merge = launch.getMergeKernel())
    k.mergeKernel = merge.getValue().str();
  SmallVector<std::string> names = launch.getArgNames();
  k.ragged = k.kind != abi::KernelKind::Merge &&
             abi::raggedSignature({names.begin(), names.end()});
  std::vector<std::string> argNames(names.begin(), names.end());
  std::vector<abi::FixedArg> fixed = abi::fixedArgs(
      k.kind, k.split(), k.ragged,
      k.kind == abi::KernelKind::Merge ? 1 : abi::viewsOfSignature(argNames));
  // The variant lives in the attn program (the gpu.module's parent), or in
  // the standard library.
  Operation *program = func->getParentOfType<gpu::GPUModuleOp>()->getParentOp();
  flashir::attn::VariantOp variant =
      flashir::attn::resolveVariant(program, launch.getVariant());
  SmallVector<flashir::attn::VariantParamAttr> params;
  if (variant)
    params = variant.getParamList();
  k.positionFree = k.kind != abi::KernelKind::Merge && isPositionFree(variant);
  for (auto [index, type] : llvm::enumerate(func.getArgumentTypes())) {
    abi::KernelArg arg;
    arg.name = names[index];
    if (index < fixed.size()) {
      arg.role = fixed[index].role;
      arg.view = fixed[index].view;
    }
    if (auto memref = dyn_cast<MemRefType>(type)) {
      arg.memref = true;
      // An HND pool is indexed (page, slot, head, column) through strides
      // that put the heads outside the page's rows.
      if (arg.role == abi::ArgRole::KPool && !memref.getLayout().isIdentity())
        k.hnd = true;
      arg.element = typeString(memref.getElementType());
      for (int64_t d : memref.getShape())
        arg.shape.push_back(ShapedType::isDynamic(d) ? -1 : d);
    } else {
      arg.element = typeString(type);
    }
    if (arg.role == abi::ArgRole::Param && index - fixed.size() < params.size())
      arg.paramKind = paramKindOf(params[index - fixed.size()].getKind());
    k.args.push_back(std::move(arg));
  }
  return k;
}

/// What `func` needs on the chip it was generated for.
abi::KernelFacts factsOf(gpu::GPUFuncOp func,
                         flashir::attn::LaunchAttr launch) {
  abi::KernelFacts f;
  f.sharedMemoryBytes = sharedMemoryBytes(func);
  f.dynamicSharedMemoryBytes = launch.getDynamicSharedMemory();
  f.stages = launch.getStages();
  f.tensorCores = launch.getTensorCores();
  f.bulkCopy = launch.getBulkCopy();
  f.programmaticWait = launch.getProgrammaticWait();
  f.completesAfterPredecessor = launch.getCompletesAfterPredecessor();
  f.persistent = launch.getPersistent();
  if (DenseI64ArrayAttr box = launch.getTensorMapBox())
    f.tensorMapBox.assign(box.asArrayRef().begin(), box.asArrayRef().end());
  return f;
}

/// The generated kernels of `module` with their launch attributes.
SmallVector<std::pair<gpu::GPUFuncOp, flashir::attn::LaunchAttr>>
kernelsOf(ModuleOp module) {
  SmallVector<std::pair<gpu::GPUFuncOp, flashir::attn::LaunchAttr>> kernels;
  module.walk([&](gpu::GPUFuncOp func) {
    if (func.isKernel())
      kernels.push_back({func, launchOf(func)});
  });
  return kernels;
}

std::string findPtxas() {
  if (!ptxasPath.empty())
    return ptxasPath == "none" ? "" : ptxasPath.getValue();
  SmallVector<std::string> candidates;
  if (const char *home = std::getenv("CUDA_HOME"))
    candidates.push_back(std::string(home) + "/bin/ptxas");
  candidates.push_back("/usr/local/cuda/bin/ptxas");
  for (const std::string &c : candidates)
    if (llvm::sys::fs::can_execute(c))
      return c;
  if (auto found = llvm::sys::findProgramByName("ptxas"))
    return *found;
  return "";
}

using Generated =
    SmallVector<std::pair<gpu::GPUFuncOp, flashir::attn::LaunchAttr>>;

/// The kernels of `module` for `chip` (cp.async staging where the chip has
/// it), before PTX; null after a diagnostic. The ABI is the same for every
/// chip; shared memory is not.
OwningOpRef<ModuleOp> kernelsFor(MLIRContext &ctx, ModuleOp module,
                                 StringRef chip) {
  OwningOpRef<ModuleOp> copy = cast<ModuleOp>(module->clone());
  flashir::KernelOptions options;
  options.chip = chip.str();
  options.warps = warps;
  options.unroll = unroll;
  options.minBlocks = minBlocks;
  const flashir::target::ChipInfo *info = flashir::target::lookupChip(chip);
  options.stages = info && !info->hasCpAsync ? 0 : stages.getValue();
  // Chips without bf16 mma.sync: the CUDA-core decode kernel (f16 prefill
  // still gets tensor cores, by chip).
  flashir::KernelDesign design = kernelDesign.getValue();
  // design=wgmma is sm_90a's prefill: the other chips of a bundle get
  // mma-sync.
  if (info && !info->hasWgmma && design == flashir::KernelDesign::Wgmma)
    design = flashir::KernelDesign::MmaSync;
  options.design =
      info && !info->hasBF16 && design == flashir::KernelDesign::MmaSync
          ? flashir::KernelDesign::Auto
          : design;
  options.copy = info && !info->hasMbarrierTx ? flashir::KVCopy::CpAsync
                                              : kvCopy.getValue();
  options.headsInnermost = headsInnermost;
  options.splitPrefill = splitPrefill;
  options.persistentPrefill = persistentPrefill;
  PassManager pm(&ctx);
  if (!schedule.empty()) {
    std::string error;
    llvm::raw_string_ostream os(error);
    if (failed(parsePassPipeline(schedule, pm, os))) {
      llvm::errs() << "flashir-bundle: bad --schedule: " << error << "\n";
      return nullptr;
    }
  }
  flashir::buildAttnToKernelsPipeline(pm, options);
  if (failed(applyPassManagerCLOptions(pm)))
    return nullptr;
  applyDefaultTimingPassManagerCLOptions(pm);
  if (failed(pm.run(*copy)))
    return nullptr;
  return copy;
}

/// The ABI of each generated kernel into `out`; false (after a diagnostic)
/// for a kernel without launch facts.
bool signatureOf(const Generated &generated,
                 std::vector<abi::KernelInfo> &out) {
  out.clear();
  for (auto [func, launch] : generated) {
    if (!launch) {
      func.emitError("generated kernel without #attn.launch");
      return false;
    }
    out.push_back(describe(func, launch));
  }
  return true;
}

/// Whether two chips' kernels agree on what the manifest records once.
bool sameKernels(const std::vector<abi::KernelInfo> &a,
                 const std::vector<abi::KernelInfo> &b) {
  auto same = [](const abi::KernelInfo &x, const abi::KernelInfo &y) {
    return x.name == y.name && x.kind == y.kind && x.grid == y.grid &&
           x.args.size() == y.args.size();
  };
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), same);
}

/// The CUDA toolkit whose libdevice the NVVM lowering links (it calls
/// libdevice for exp, log, tanh, fmax...: without it the PTX would reference
/// functions nothing defines): the one that holds ptxas, $CUDA_HOME or
/// /usr/local/cuda; empty (after a message) if none has libdevice.
std::string findToolkit(StringRef ptxas) {
  std::string toolkit;
  if (!ptxas.empty())
    toolkit =
        llvm::sys::path::parent_path(llvm::sys::path::parent_path(ptxas)).str();
  else if (const char *home = std::getenv("CUDA_HOME"))
    toolkit = home;
  else if (llvm::sys::fs::is_directory("/usr/local/cuda/nvvm/libdevice"))
    toolkit = "/usr/local/cuda";
  SmallString<128> libdevice(toolkit);
  llvm::sys::path::append(libdevice, "nvvm", "libdevice");
  if (toolkit.empty() || !llvm::sys::fs::is_directory(libdevice)) {
    llvm::errs()
        << "flashir-bundle: no CUDA toolkit with libdevice found "
           "(looked next to ptxas, in $CUDA_HOME and /usr/local/cuda); "
           "install the CUDA toolkit or set CUDA_HOME\n";
    return "";
  }
  return toolkit;
}

/// Writes `text` to `dir`/`name`.
LogicalResult writeFile(StringRef dir, StringRef name, StringRef text) {
  SmallString<128> path(dir);
  llvm::sys::path::append(path, name);
  std::string error;
  auto out = openOutputFile(path, &error);
  if (!out) {
    llvm::errs() << "flashir-bundle: " << error << "\n";
    return failure();
  }
  out->os() << text;
  out->keep();
  return success();
}

/// ptxas of `ptxName` to `cubinName` in the output directory.
LogicalResult assemble(StringRef ptxas, StringRef chip, StringRef ptxName,
                       StringRef cubinName) {
  SmallString<128> ptxFile(outputDir), cubin(outputDir);
  llvm::sys::path::append(ptxFile, ptxName);
  llvm::sys::path::append(cubin, cubinName);
  std::string arch = ("-arch=" + chip).str();
  SmallVector<StringRef> argv = {ptxas, arch, "-O3", ptxFile, "-o", cubin};
  std::string msg;
  int rc = llvm::sys::ExecuteAndWait(ptxas, argv, std::nullopt, {}, 0, 0, &msg);
  if (rc != 0) {
    llvm::errs() << "flashir-bundle: ptxas failed for " << chip << " (" << rc
                 << ") " << msg << "\n";
    return failure();
  }
  return success();
}

/// The PTX (and, with ptxas, the cubin) of each gpu.module of `kernels`
/// (lowered to LLVM) into the output directory, compiled in parallel, and
/// their files into `target`. `names` holds each module's kernels.
LogicalResult writeImages(ModuleOp kernels,
                          const std::vector<std::vector<std::string>> &names,
                          StringRef ptxas, StringRef toolkit,
                          abi::TargetInfo &target) {
  target.modules.assign(names.size(), {});
  const std::string &chip = target.chip;
  return flashir::bundle::serializeModules(
      kernels, toolkit, [&](size_t i, StringRef ptx) {
        abi::ModuleFiles &files = target.modules[i];
        // One module keeps the name it always had; it defines every kernel.
        std::string stem = names.size() == 1 ? "kernels." + chip
                                             : names[i].front() + "." + chip;
        if (names.size() > 1)
          files.kernels = names[i];
        files.ptx = stem + ".ptx";
        if (failed(writeFile(outputDir, files.ptx, ptx)))
          return failure();
        if (ptxas.empty())
          return success();
        files.cubin = stem + ".cubin";
        return assemble(ptxas, chip, files.ptx, files.cubin);
      });
}

/// One chip's kernels (`kernels`, generated by kernelsFor), PTX (and cubin)
/// into the output directory and its target entry into `manifest`, whose
/// kernels every chip must generate alike.
LogicalResult compileChip(MLIRContext &ctx, OwningOpRef<ModuleOp> kernels,
                          const std::string &chip, StringRef ptxas,
                          StringRef toolkit, abi::Manifest &manifest,
                          std::chrono::steady_clock::time_point start) {
  Generated generated = kernelsOf(*kernels);
  std::vector<abi::KernelInfo> signature;
  if (!signatureOf(generated, signature))
    return failure();
  if (!sameKernels(signature, manifest.kernels)) {
    llvm::errs() << "flashir-bundle: " << chip << " gets other kernels than "
                 << chips.front()
                 << " (e.g. no bf16 prefill kernel on sm_75); bundle these "
                    "chips separately (--chips)\n";
    return failure();
  }
  // Per-chip launch facts: shared memory, pipelining, launch order.
  abi::TargetInfo target;
  target.chip = chip;
  for (auto [func, launch] : generated)
    target.kernels[func.getName().str()] = factsOf(func, launch);
  if (modulePerKernel)
    flashir::bundle::splitPerKernel(*kernels);
  std::vector<std::vector<std::string>> names;
  for (auto module : kernels->getOps<gpu::GPUModuleOp>())
    names.push_back(flashir::bundle::kernelNames(module));
  // --mlir-timing: the lowering's passes, then the parallel serialization.
  DefaultTimingManager timing;
  applyDefaultTimingManagerCLOptions(timing);
  TimingScope root = timing.getRootScope();
  PassManager pm(&ctx);
  flashir::buildKernelsToLLVMPipeline(pm, chip, "+ptx80");
  if (failed(applyPassManagerCLOptions(pm)))
    return failure();
  pm.enableTiming(root);
  if (failed(pm.run(*kernels)))
    return failure();
  TimingScope serialize = root.nest("SerializeModules (LLVM -> PTX, ptxas)");
  if (failed(writeImages(*kernels, names, ptxas, toolkit, target)))
    return failure();
  serialize.stop();
  target.compileMs = std::chrono::duration<double, std::milli>(
                         std::chrono::steady_clock::now() - start)
                         .count();
  llvm::outs() << llvm::format("%s: %.0f ms attn -> PTX%s", chip.c_str(),
                               target.compileMs,
                               ptxas.empty() ? "" : " (+ cubin)");
  if (names.size() > 1)
    llvm::outs() << " in " << names.size() << " modules";
  llvm::outs() << "\n";
  manifest.targets.push_back(std::move(target));
  return success();
}

/// manifest.json, after checking that the runtime's reader accepts it.
LogicalResult writeManifestFile(const abi::Manifest &manifest) {
  std::string text = abi::writeManifest(manifest), why;
  abi::Manifest check;
  if (!abi::parseManifest(text, check, why)) {
    llvm::errs() << "flashir-bundle: internal error: the manifest breaks the "
                    "kernel ABI: "
                 << why << "\n";
    return failure();
  }
  return writeFile(outputDir, "manifest.json", text);
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  flashir::registerFlashIRPasses();
  // --mlir-timing and the other pass-manager options (per chip's pipelines).
  registerPassManagerCLOptions();
  registerDefaultTimingManagerCLOptions();
  cl::ParseCommandLineOptions(argc, argv, "FlashIR kernel bundle writer\n");
  if (chips.empty())
    for (const char *chip : {"sm_75", "sm_80", "sm_86", "sm_89", "sm_90a"})
      chips.push_back(chip);
  for (const std::string &chip : chips)
    if (!flashir::target::lookupChip(chip)) {
      llvm::errs() << "flashir-bundle: unknown chip '" << chip
                   << "'; expected one of " << flashir::target::validChipNames()
                   << "\n";
      return 1;
    }

  DialectRegistry registry;
  flashir::registerFlashIRToolDialects(registry);
  registry.insert<flashir::attn::AttnDialect>();
  MLIRContext ctx(registry);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler handler(sourceMgr, &ctx);
  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(input, sourceMgr, ParserConfig(&ctx));
  if (!module)
    return 1;

  abi::Manifest manifest;
  manifest.source = llvm::sys::path::filename(input).str();
  // The kernels of the first chip are the manifest's.
  auto start = std::chrono::steady_clock::now();
  OwningOpRef<ModuleOp> first = kernelsFor(ctx, *module, chips.front());
  if (!first || !signatureOf(kernelsOf(*first), manifest.kernels))
    return 1;
  if (manifest.kernels.empty()) {
    llvm::errs() << "flashir-bundle: no attention to compile in " << input
                 << "\n";
    return 1;
  }
  if (std::error_code ec = llvm::sys::fs::create_directories(outputDir)) {
    llvm::errs() << "flashir-bundle: cannot create " << outputDir << ": "
                 << ec.message() << "\n";
    return 1;
  }
  std::string ptxas = findPtxas();
  std::string toolkit = findToolkit(ptxas);
  if (toolkit.empty())
    return 2;
  // The first chip's kernels are already generated; the others' now.
  for (size_t i = 0; i < chips.size(); ++i) {
    OwningOpRef<ModuleOp> kernels = std::move(first);
    if (i > 0) {
      start = std::chrono::steady_clock::now();
      kernels = kernelsFor(ctx, *module, chips[i]);
      if (!kernels)
        return 1;
    }
    if (failed(compileChip(ctx, std::move(kernels), chips[i], ptxas, toolkit,
                           manifest, start)))
      return 1;
  }
  return failed(writeManifestFile(manifest)) ? 1 : 0;
}
