//===- flashir-run.cpp - JIT-run attn on the CPU against float64 ----------===//
//
// Generates a batch (ragged queries, paged or ragged KV with shuffled,
// non-contiguous and optionally shared pages), writes the attn program for
// it, lowers it with the CPU pipeline, runs it with the MLIR ExecutionEngine
// and compares every output against the independent float64 reference
// (lib/Reference). Exits 1 past tolerance, 2 on bad usage.
//
//===----------------------------------------------------------------------===//

#include "Runner.h"

#include "flashir/Conversion/Passes.h"
#include "flashir/Dialect/Attn/Transforms/Passes.h"
#include "flashir/Pipelines/Pipelines.h"

#include "mlir/Parser/Parser.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>

using namespace mlir;
using namespace flashir;
using namespace flashir::run;

namespace {

/// The variant to run: from --variants-file first, then the standard
/// library.
struct VariantSource {
  std::string userVariants; // the file's text, written before the kernel
  OwningOpRef<ModuleOp> userModule;
  attn::VariantOp variant;
  bool standard = false;
};

void resolveVariant(MLIRContext &ctx, const Options &opts,
                    VariantSource &source) {
  if (!opts.variantsFile.empty()) {
    auto file = llvm::MemoryBuffer::getFile(opts.variantsFile);
    if (!file)
      usage("cannot read " + opts.variantsFile);
    source.userVariants = (*file)->getBuffer().str();
  }
  if (!source.userVariants.empty()) {
    source.userModule = parseSourceString<ModuleOp>(source.userVariants, &ctx,
                                                    opts.variantsFile);
    if (!source.userModule)
      usage("cannot parse " + opts.variantsFile);
    source.variant = dyn_cast_or_null<attn::VariantOp>(
        SymbolTable::lookupSymbolIn(*source.userModule, opts.variantName));
  }
  if (!source.variant) {
    source.variant =
        ctx.getOrLoadDialect<attn::AttnDialect>()->lookupStandardVariant(
            opts.variantName);
    source.standard = true;
  }
  if (!source.variant)
    usage("no variant named '" + opts.variantName + "'");
  if (opts.mergeMode && !source.variant.isMergeable())
    usage("--mode=merge needs a variant with a merge rule");
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  Options opts = parseOptions(argc, argv);
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();

  // The MLIR side.
  DialectRegistry registry;
  flashir::registerFlashIRToolDialects(registry);
  flashir::registerFlashIRPasses();
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  VariantSource source;
  resolveVariant(ctx, opts, source);

  // The inputs and the program.
  std::mt19937 rng(opts.seed);
  std::vector<int32_t> qoIndptr;
  Batch batch = makeBatch(rng, opts, qoIndptr);
  int64_t totalQ = qoIndptr.back();
  ref::Variant refVariant;
  std::vector<ParamData> params =
      makeParams(rng, opts, source.variant, source.standard, batch, refVariant);
  Program program = writeProgram(opts, source.variant, params,
                                 source.userVariants, totalQ, batch);
  if (opts.dumpIR)
    llvm::outs() << program.text << "\n";

  // Compile: the program as written and, with --transform, transformed.
  auto t0 = std::chrono::steady_clock::now();
  unsigned unusedPlanner = 0, plannerArgs = 0;
  std::string transformedIR;
  std::unique_ptr<ExecutionEngine> baseline =
      compile(ctx, program.text, "", unusedPlanner, transformedIR);
  std::unique_ptr<ExecutionEngine> transformed;
  if (!opts.transform.empty()) {
    transformed =
        compile(ctx, program.text, opts.transform, plannerArgs, transformedIR);
    if (opts.dumpIR)
      llvm::outs() << "// after --transform:\n" << transformedIR << "\n";
    if (plannerArgs != 0 && plannerArgs != 3)
      usage("the transform appended an unexpected number of arguments");
  }
  auto t1 = std::chrono::steady_clock::now();

  // Run: the baseline twice (determinism), the transformed program once.
  std::vector<Slot> &slots = program.slots;
  Batch second = batch;
  invoke(*baseline, slots, batch);
  invoke(*baseline, slots, second);
  bool deterministic = true;
  for (size_t i = 0; i < batch.outs.size(); ++i)
    deterministic &= batch.outs[i].bytes == second.outs[i].bytes;
  Batch chunked = batch;
  if (transformed) {
    if (plannerArgs == 3)
      chunked.planner = randomChunks(rng, chunked);
    for (HostTensor &o : chunked.outs)
      std::fill(o.bytes.begin(), o.bytes.end(), 0xff);
    Batch again = chunked;
    invoke(*transformed, slots, chunked);
    invoke(*transformed, slots, again);
    for (size_t i = 0; i < chunked.outs.size(); ++i)
      deterministic &= chunked.outs[i].bytes == again.outs[i].bytes;
  }
  auto t2 = std::chrono::steady_clock::now();

  Expected expected = computeReference(opts, batch, qoIndptr, refVariant);
  auto t3 = std::chrono::steady_clock::now();

  auto ms = [](auto a, auto b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  llvm::outs() << "variant=" << opts.variantName
               << " reduction=" << ref::toString(refVariant.reduction)
               << " dtype=" << opts.dtypeName << " head_dim=" << opts.headDim
               << " qo_heads=" << opts.numQoHeads
               << " kv_heads=" << opts.numKvHeads << " layout=" << opts.layout;
  if (opts.paged)
    llvm::outs() << " page_size=" << opts.pageSize;
  if (opts.hasPrefix)
    llvm::outs() << " prefix=" << batch.prefixLen;
  llvm::outs() << " views=" << opts.numViews << " mode=" << opts.mode
               << " requests=" << batch.B << " rows=" << totalQ
               << " seed=" << opts.seed << "\n";
  llvm::outs() << llvm::format(
      "compile %.0f ms, run %.1f ms, reference %.1f ms\n", ms(t0, t1),
      ms(t1, t2), ms(t2, t3));
  bool ok = checkOutputs(opts, batch, expected, program.resultLabels, "");
  llvm::outs() << "deterministic: " << (deterministic ? "yes" : "NO") << "\n";
  ok &= deterministic;
  if (transformed) {
    ok &= checkOutputs(opts, chunked, expected, program.resultLabels,
                       "transformed: ");
    compareTransformed(opts, batch, chunked);
  }
  if (opts.batchInvariance) {
    // Every request alone, through the transformed program if any: its rows
    // must be bitwise identical to the rows of the batched run.
    if (plannerArgs)
      usage("--check-batch-invariance needs chunks fixed at compile time");
    bool invariant = checkBatchInvariance(
        opts, transformed ? *transformed : *baseline, slots,
        transformed ? chunked : batch, params, qoIndptr);
    llvm::outs() << "batch-invariant: " << (invariant ? "yes" : "NO") << "\n";
    ok &= invariant;
  }
  llvm::outs() << (ok ? "PASS" : "FAIL")
               << llvm::format(" (rtol %g, atol %g)\n", opts.rtol, opts.atol);
  return ok ? 0 : 1;
}
