//===- flashir-bundle.cpp - attn program to a kernel bundle ---------------===//
//
// Writes a kernel bundle for the attention ops of an attn program: one PTX
// file per kernel and chip (and a cubin where ptxas is available) plus
// `manifest.json` describing each kernel's ABI, launch configuration, shapes,
// variant and parameters — everything the runtime needs, no MLIR required
// to read it.
//
//===----------------------------------------------------------------------===//

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
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

#include <chrono>

using namespace mlir;
namespace cl = llvm::cl;

static cl::opt<std::string> input(cl::Positional, cl::desc("<attn program>"),
                                  cl::Required);
static cl::opt<std::string> outputDir("o", cl::desc("bundle directory"),
                                      cl::Required);
static cl::list<std::string>
    chips("chips", cl::CommaSeparated,
          cl::desc("target chips (default: sm_75,sm_80,sm_86,sm_89,sm_90a)"));
static cl::opt<int64_t> warps("warps", cl::init(4), cl::desc("warps per CTA"));
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
static cl::opt<int64_t> tensorCores(
    "tensor-cores", cl::init(-1),
    cl::desc("decode kernels on tensor cores (1), CUDA cores (0), or by chip "
             "(-1: tensor cores on sm_80+)"));
static cl::opt<int64_t>
    bulkCopy("bulk-copy", cl::init(-1),
             cl::desc("tensor-core kernels: K/V rows by cp.async.bulk (1), "
                      "16-byte cp.async (0), or by chip (-1: bulk on sm_90a)"));
static cl::opt<bool> headsInnermost(
    "heads-innermost", cl::init(true),
    cl::desc("KV head fastest in the CTAs' launch order (same grid)"));
static cl::opt<bool> splitPrefill(
    "split-prefill", cl::init(false),
    cl::desc("split-KV attentions with 16+ row tiles get the tensor-core "
             "prefill kernel (grid chunks x q_tiles x heads; no runtime "
             "runner yet) instead of the split-KV decode kernel"));
static cl::opt<std::string> schedule(
    "schedule", cl::init(""),
    cl::desc("pass pipeline run on the program before kernel generation, "
             "e.g. 'attn-split-kv{chunk-size=0}' for split-KV kernels"));
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

/// out[key] = the integer launch attribute `name`, where `launch` has it.
void copyInteger(DictionaryAttr launch, StringRef name, llvm::json::Object &out,
                 StringRef key) {
  if (auto value = launch.getAs<IntegerAttr>(name))
    out[key] = value.getInt();
}

/// Manifest entry of one kernel (chip-independent), read off its gpu.func.
llvm::json::Object describe(gpu::GPUFuncOp func) {
  auto launch = func->getAttrOfType<DictionaryAttr>("attn.launch");
  ArrayAttr names = launch ? launch.getAs<ArrayAttr>("args") : ArrayAttr();
  llvm::json::Array args;
  for (auto [index, type] : llvm::enumerate(func.getArgumentTypes())) {
    llvm::json::Object arg;
    arg["name"] = names && index < names.size()
                      ? cast<StringAttr>(names[index]).str()
                      : "arg" + std::to_string(index);
    if (auto memref = dyn_cast<MemRefType>(type)) {
      arg["kind"] = "memref";
      arg["element"] = typeString(memref.getElementType());
      llvm::json::Array shape;
      for (int64_t d : memref.getShape())
        shape.push_back(ShapedType::isDynamic(d) ? -1 : d);
      arg["shape"] = std::move(shape);
    } else {
      arg["kind"] = "scalar";
      arg["element"] = typeString(type);
    }
    args.push_back(std::move(arg));
  }
  llvm::json::Object kernel;
  kernel["name"] = func.getName().str();
  kernel["args"] = std::move(args);
  // Memref arguments are passed as expanded descriptors: allocated and
  // aligned pointer, offset, sizes, strides (MLIR's default convention).
  kernel["memref_abi"] = "descriptor";
  if (launch)
    if (auto grid = launch.getAs<StringAttr>("grid"))
      kernel["grid"] = grid.str();
  kernel["block"] =
      func.getKnownBlockSize() ? (*func.getKnownBlockSize())[0] : 0;
  if (launch) {
    // Prefill kernels also: query rows per CTA, keys per K/V tile and
    // tokens per q tile (the grid's y extent divides by it).
    for (StringRef name : {"unroll", "q_rows", "kv_tile", "q_tokens"})
      copyInteger(launch, name, kernel, name);
    if (auto variant = launch.getAs<FlatSymbolRefAttr>("variant"))
      kernel["variant"] = variant.getValue().str();
  }
  return kernel;
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

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  flashir::registerFlashIRPasses();
  cl::ParseCommandLineOptions(argc, argv, "FlashIR kernel bundle writer\n");
  if (chips.empty())
    for (const char *chip : {"sm_75", "sm_80", "sm_86", "sm_89", "sm_90a"})
      chips.push_back(chip);

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

  // The kernels per chip (cp.async staging where the chip has it), then
  // PTX. The ABI is the same for every chip; shared memory is not.
  auto kernelsFor = [&](StringRef chip) -> OwningOpRef<ModuleOp> {
    OwningOpRef<ModuleOp> copy = cast<ModuleOp>((*module)->clone());
    flashir::KernelOptions options;
    options.chip = chip.str();
    options.warps = warps;
    options.unroll = unroll;
    options.minBlocks = minBlocks;
    const flashir::target::ChipInfo *info = flashir::target::lookupChip(chip);
    options.stages = info && !info->hasCpAsync ? 0 : stages.getValue();
    // Chips without bf16 mma.sync: the CUDA-core decode kernel (f16 prefill
    // still gets tensor cores, by chip).
    options.tensorCores = info && !info->hasBF16 && tensorCores == 1
                              ? -1
                              : tensorCores.getValue();
    options.bulkCopy = info && !info->hasMbarrierTx ? 0 : bulkCopy.getValue();
    options.headsInnermost = headsInnermost;
    options.splitPrefill = splitPrefill;
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
    if (failed(pm.run(*copy)))
      return nullptr;
    return copy;
  };
  for (const std::string &chip : chips)
    if (!flashir::target::lookupChip(chip)) {
      llvm::errs() << "flashir-bundle: unknown chip '" << chip
                   << "'; expected one of " << flashir::target::validChipNames()
                   << "\n";
      return 1;
    }
  llvm::json::Array entries;
  // The kernels (names and grids) of the first chip: the manifest's, which
  // every other chip must match.
  SmallVector<std::pair<std::string, std::string>> signature;
  auto signatureOf = [](ModuleOp module) {
    SmallVector<std::pair<std::string, std::string>> kernels;
    module.walk([&](gpu::GPUFuncOp func) {
      if (!func.isKernel())
        return;
      std::string grid;
      if (auto launch = func->getAttrOfType<DictionaryAttr>("attn.launch"))
        if (auto g = launch.getAs<StringAttr>("grid"))
          grid = g.str();
      kernels.push_back({func.getName().str(), grid});
    });
    return kernels;
  };
  {
    OwningOpRef<ModuleOp> first = kernelsFor(chips.front());
    if (!first)
      return 1;
    first->walk([&](gpu::GPUFuncOp func) {
      if (func.isKernel())
        entries.push_back(describe(func));
    });
    signature = signatureOf(*first);
  }
  if (entries.empty()) {
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
  // libdevice comes from the toolkit that holds ptxas (or CUDA_HOME).
  std::string toolkit;
  if (!ptxas.empty())
    toolkit =
        llvm::sys::path::parent_path(llvm::sys::path::parent_path(ptxas)).str();
  else if (const char *home = std::getenv("CUDA_HOME"))
    toolkit = home;
  else if (llvm::sys::fs::is_directory("/usr/local/cuda/nvvm/libdevice"))
    toolkit = "/usr/local/cuda";
  // The NVVM lowering calls libdevice for exp, log, tanh, fmax...: without
  // it the PTX would reference functions nothing defines.
  SmallString<128> libdevice(toolkit);
  llvm::sys::path::append(libdevice, "nvvm", "libdevice");
  if (toolkit.empty() || !llvm::sys::fs::is_directory(libdevice)) {
    llvm::errs()
        << "flashir-bundle: no CUDA toolkit with libdevice found "
           "(looked next to ptxas, in $CUDA_HOME and /usr/local/cuda); "
           "install the CUDA toolkit or set CUDA_HOME\n";
    return 2;
  }

  llvm::json::Array targets;
  for (const std::string &chip : chips) {
    auto start = std::chrono::steady_clock::now();
    OwningOpRef<ModuleOp> copy = kernelsFor(chip);
    if (!copy)
      return 1;
    if (signatureOf(*copy) != signature) {
      llvm::errs() << "flashir-bundle: " << chip << " gets other kernels than "
                   << chips.front()
                   << " (e.g. no bf16 prefill kernel on sm_75); bundle these "
                      "chips separately (--chips)\n";
      return 1;
    }
    // Per-chip launch facts: static shared memory and pipelining.
    llvm::json::Object perKernel;
    copy->walk([&](gpu::GPUFuncOp func) {
      if (!func.isKernel())
        return;
      llvm::json::Object facts;
      facts["shared_memory_bytes"] = sharedMemoryBytes(func);
      if (auto launch = func->getAttrOfType<DictionaryAttr>("attn.launch")) {
        copyInteger(launch, "stages", facts, "stages");
        if (auto tc = launch.getAs<BoolAttr>("tensor_cores"))
          facts["tensor_cores"] = tc.getValue();
        if (auto bulk = launch.getAs<BoolAttr>("bulk_copy"))
          facts["bulk_copy"] = bulk.getValue();
        for (StringRef fact :
             {"programmatic_wait", "completes_after_predecessor"})
          if (auto flag = launch.getAs<BoolAttr>(fact))
            facts[fact] = flag.getValue();
        copyInteger(launch, "dynamic_shared_memory", facts,
                    "dynamic_shared_memory_bytes");
        if (auto box = launch.getAs<ArrayAttr>("tensor_map_box")) {
          llvm::json::Array extents;
          for (Attribute extent : box)
            extents.push_back(cast<IntegerAttr>(extent).getInt());
          facts["tensor_map_box"] = std::move(extents);
        }
      }
      perKernel[func.getName()] = std::move(facts);
    });
    PassManager pm(&ctx);
    flashir::buildKernelsToPTXPipeline(pm, chip, "+ptx80", toolkit);
    if (failed(pm.run(*copy)))
      return 1;
    double ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - start)
                    .count();
    std::string ptx;
    copy->walk([&](gpu::BinaryOp binary) {
      for (Attribute object : binary.getObjects())
        ptx = cast<gpu::ObjectAttr>(object).getObject().str();
    });
    // The serializer NUL-terminates the PTX (for cuModuleLoadData); ptxas
    // reads a file and rejects the NUL.
    while (!ptx.empty() && ptx.back() == '\0')
      ptx.pop_back();
    SmallString<128> ptxFile(outputDir);
    llvm::sys::path::append(ptxFile, "kernels." + chip + ".ptx");
    std::string error;
    auto out = openOutputFile(ptxFile, &error);
    if (!out) {
      llvm::errs() << "flashir-bundle: " << error << "\n";
      return 1;
    }
    out->os() << ptx;
    out->keep();
    out.reset(); // closed before ptxas reads it
    llvm::json::Object target;
    target["chip"] = chip;
    target["ptx"] = ("kernels." + chip + ".ptx");
    target["compile_ms"] = ms;
    target["kernels"] = std::move(perKernel);
    if (!ptxas.empty()) {
      SmallString<128> cubin(outputDir);
      llvm::sys::path::append(cubin, "kernels." + chip + ".cubin");
      std::string arch = "-arch=" + chip;
      SmallVector<StringRef> argv = {ptxas, arch, "-O3", ptxFile, "-o", cubin};
      std::string msg;
      int rc =
          llvm::sys::ExecuteAndWait(ptxas, argv, std::nullopt, {}, 0, 0, &msg);
      if (rc != 0) {
        llvm::errs() << "flashir-bundle: ptxas failed for " << chip << " ("
                     << rc << ") " << msg << "\n";
        return 1;
      }
      target["cubin"] = ("kernels." + chip + ".cubin");
    }
    targets.push_back(std::move(target));
    llvm::outs() << llvm::format("%s: %.0f ms attn -> PTX%s\n", chip.c_str(),
                                 ms, ptxas.empty() ? "" : " (+ cubin)");
  }

  llvm::json::Object manifest;
  manifest["abi_version"] = 3;
  manifest["source"] = llvm::sys::path::filename(input).str();
  manifest["kernels"] = std::move(entries);
  manifest["targets"] = std::move(targets);
  SmallString<128> manifestFile(outputDir);
  llvm::sys::path::append(manifestFile, "manifest.json");
  std::string error;
  auto out = openOutputFile(manifestFile, &error);
  if (!out) {
    llvm::errs() << "flashir-bundle: " << error << "\n";
    return 1;
  }
  out->os() << llvm::formatv("{0:2}", llvm::json::Value(std::move(manifest)))
            << "\n";
  out->keep();
  return 0;
}
