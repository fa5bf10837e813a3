//===- Options.cpp - flashir-run's command line ---------------------------===//
//
// The options, the checks of their values and the defaults that depend on
// other options; the rest of the runner sees only the resulting Options.
//
//===----------------------------------------------------------------------===//

#include "Runner.h"

#include "flashir/Conversion/Passes.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace cl = llvm::cl;

//===----------------------------------------------------------------------===//
// Options
//===----------------------------------------------------------------------===//

static cl::OptionCategory category("flashir-run options");
static cl::opt<std::string> variantName("variant", cl::desc("variant symbol"),
                                        cl::init("plain"), cl::cat(category));
static cl::opt<std::string>
    variantsFile("variants-file",
                 cl::desc(".mlir file with attn.variant definitions (user "
                          "variants; their hooks are interpreted in float64 "
                          "for the reference)"),
                 cl::cat(category));
static cl::opt<std::string> dtype("dtype", cl::desc("f32, f16 or bf16"),
                                  cl::init("f32"), cl::cat(category));
static cl::opt<int64_t> headDim("head-dim", cl::init(64), cl::cat(category));
static cl::opt<int64_t> numQoHeads("qo-heads", cl::init(4), cl::cat(category));
static cl::opt<int64_t> numKvHeads("kv-heads", cl::init(1), cl::cat(category));
static cl::opt<std::string> layout("layout", cl::desc("nhd, hnd or ragged"),
                                   cl::init("nhd"), cl::cat(category));
static cl::opt<int64_t> pageSize("page-size", cl::init(16), cl::cat(category));
static cl::list<int64_t> qoLens("qo-lens", cl::CommaSeparated,
                                cl::desc("queries per request"),
                                cl::cat(category));
static cl::list<int64_t> kvLens("kv-lens", cl::CommaSeparated,
                                cl::desc("keys per request"),
                                cl::cat(category));
static cl::opt<int64_t> numViews(
    "views", cl::init(1),
    cl::desc("split every request's keys into this many consecutive views"),
    cl::cat(category));
static cl::opt<std::string>
    mode("mode", cl::init("direct"),
         cl::desc("direct: one attention over all views; merge: one state "
                  "per view, merged in several orders (and with empty "
                  "states), each finalized and checked"),
         cl::cat(category));
static cl::opt<bool>
    sharedPages("shared-pages", cl::init(false),
                cl::desc("requests 1.. share request 0's first physical page"),
                cl::cat(category));
static cl::opt<unsigned> seed("seed", cl::init(1), cl::cat(category));
static cl::opt<double> scaleOpt("scale", cl::init(0.0),
                                cl::desc("logit scale (0: 1/sqrt(head_dim))"),
                                cl::cat(category));
static cl::opt<double> capOpt("cap", cl::init(2.0), cl::desc("soft_cap's cap"),
                              cl::cat(category));
static cl::opt<double> biasOpt("bias", cl::init(-1.0),
                               cl::desc("sigmoid's bias"), cl::cat(category));
static cl::opt<double> rtolOpt("rtol", cl::init(0.0),
                               cl::desc("0: 1e-5 for f32, 1e-2 for f16/bf16"),
                               cl::cat(category));
static cl::opt<double> atolOpt("atol", cl::init(0.0),
                               cl::desc("0: 1e-5 for f32, 1e-2 for f16/bf16"),
                               cl::cat(category));
static cl::opt<bool> dumpIR("dump-ir", cl::init(false),
                            cl::desc("print the generated attn program"),
                            cl::cat(category));

static cl::opt<std::string> transformOpt(
    "transform",
    cl::desc("pass pipeline applied to the attn program (e.g. "
             "'attn-split-kv{chunk-size=37}'); the transformed and the "
             "untransformed programs both run and are compared"),
    cl::cat(category));
static cl::opt<int64_t> prefixLenOpt(
    "prefix-len", cl::init(-1),
    cl::desc("add a shared prefix of this many tokens (attn.shared_paged_kv) "
             "as the first view"),
    cl::cat(category));
static cl::opt<bool> batchInvariance(
    "check-batch-invariance", cl::init(false),
    cl::desc("also run every request alone and require bitwise-identical "
             "rows"),
    cl::cat(category));

namespace flashir::run {

[[noreturn]] void usage(const std::string &message) {
  llvm::errs() << "flashir-run: " << message << "\n";
  llvm::errs().flush();
  std::exit(2);
}

/// Rejects option values the runner cannot honour, naming the bound: every
/// size is bounded so that the generated batch fits in memory, its int32
/// index arrays do not overflow and the run ends in seconds.
static void checkOptions() {
  constexpr int64_t kMaxHeads = 1024, kMaxPageSize = 1 << 16,
                    kMaxRequests = 4096, kMaxLength = 1 << 20;
  constexpr double kMaxElements = double(1 << 26), kMaxWork = double(1LL << 32);
  auto inRange = [](const char *name, int64_t value, int64_t lo, int64_t hi) {
    if (value < lo || value > hi)
      usage(std::string("--") + name + " must be in " + std::to_string(lo) +
            ".." + std::to_string(hi) + ", got " + std::to_string(value));
  };
  if (layout != "nhd" && layout != "hnd" && layout != "ragged")
    usage("--layout must be nhd, hnd or ragged");
  if (mode != "direct" && mode != "merge")
    usage("--mode must be direct or merge");
  if (qoLens.empty() || qoLens.size() != kvLens.size())
    usage("--qo-lens and --kv-lens must list the same number (>= 1) of "
          "requests");
  inRange("head-dim", headDim, 2, 1024);
  if (headDim % 2)
    usage("--head-dim must be even");
  inRange("qo-heads", numQoHeads, 1, kMaxHeads);
  inRange("kv-heads", numKvHeads, 1, kMaxHeads);
  if (numQoHeads % numKvHeads)
    usage("--qo-heads must be a multiple of --kv-heads");
  inRange("page-size", pageSize, 1, kMaxPageSize);
  // Merge mode's largest merge has 2 * views + 1 states, within the
  // lowering's bound too.
  static_assert(2 * kMaxLoopLoweringViews + 1 <= kMaxLoopLoweringMergeStates);
  inRange("views", numViews, 1, kMaxLoopLoweringViews);
  if (qoLens.size() > size_t(kMaxRequests))
    usage("at most " + std::to_string(kMaxRequests) + " requests, got " +
          std::to_string(qoLens.size()));
  if (prefixLenOpt >= 0) {
    inRange("prefix-len", prefixLenOpt, 0, kMaxLength);
    if (mode == "merge")
      usage("--prefix-len works with --mode=direct (compose with "
            "--transform=attn-compose-prefix)");
  }
  int64_t prefix = std::max<int64_t>(prefixLenOpt, 0);
  // Tensor elements the batch allocates (queries, outputs, K and V pools
  // with up to one partial page per request and view) and multiply-adds the
  // kernel and the reference each perform; doubles cannot overflow here.
  double rows = 0, keys = 0, work = 0;
  for (size_t i = 0; i < qoLens.size(); ++i) {
    inRange("qo-lens", qoLens[i], 0, kMaxLength);
    inRange("kv-lens", kvLens[i], 0, kMaxLength);
    rows += double(qoLens[i]);
    keys += double(kvLens[i]) + double(numViews) * double(pageSize);
    work += double(qoLens[i]) * double(kvLens[i] + prefix);
  }
  keys += double(prefix) + 4.0 * double(pageSize);
  double results = mode == "merge" ? 4 : 1;
  double elements =
      rows * double(numQoHeads) * double(headDim) * (1 + 2 * results) +
      2 * keys * double(numKvHeads) * double(headDim);
  work *= double(numQoHeads) * double(headDim) * (mode == "merge" ? 2 : 1);
  if (elements > kMaxElements)
    usage(llvm::formatv("the batch needs {0:e2} tensor elements; flashir-run "
                        "allows at most {1} (2^26)",
                        elements, int64_t(kMaxElements))
              .str());
  if (work > kMaxWork)
    usage(llvm::formatv("the batch needs {0:e2} multiply-adds per run; "
                        "flashir-run allows at most {1} (2^32)",
                        work, int64_t(kMaxWork))
              .str());
}

Options parseOptions(int argc, char **argv) {
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv,
                              "JIT-run an attn program on the CPU and check "
                              "it against the float64 reference\n");
  Options o;
  o.dtypeName = dtype;
  if (dtype == "f32")
    o.dtype = DType::F32;
  else if (dtype == "f16")
    o.dtype = DType::F16;
  else if (dtype == "bf16")
    o.dtype = DType::BF16;
  else
    usage("--dtype must be f32, f16 or bf16");
  checkOptions();
  o.variantName = variantName;
  o.variantsFile = variantsFile;
  o.headDim = headDim;
  o.numQoHeads = numQoHeads;
  o.numKvHeads = numKvHeads;
  o.pageSize = pageSize;
  o.layout = layout;
  o.paged = layout != "ragged";
  o.hnd = layout == "hnd";
  o.mode = mode;
  o.mergeMode = mode == "merge";
  o.transform = transformOpt;
  o.qoLens.assign(qoLens.begin(), qoLens.end());
  o.kvLens.assign(kvLens.begin(), kvLens.end());
  o.numViews = numViews;
  o.sharedPages = sharedPages;
  o.seed = seed;
  bool f32 = o.dtype == DType::F32;
  o.scale = scaleOpt > 0 ? double(scaleOpt) : 1.0 / std::sqrt(double(headDim));
  o.cap = capOpt;
  o.bias = biasOpt;
  o.rtol = rtolOpt > 0 ? double(rtolOpt) : (f32 ? 1e-5 : 1e-2);
  o.atol = atolOpt > 0 ? double(atolOpt) : (f32 ? 1e-5 : 1e-2);
  o.dumpIR = dumpIR;
  o.prefixLen = prefixLenOpt;
  o.hasPrefix = prefixLenOpt >= 0;
  o.batchInvariance = batchInvariance;
  return o;
}

} // namespace flashir::run
