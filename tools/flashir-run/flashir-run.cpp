//===- flashir-run.cpp - JIT-run attn on the CPU against float64 ----------===//
//
// Generates a batch (ragged queries, paged or ragged KV with shuffled,
// non-contiguous and optionally shared pages), writes the attn program for
// it, lowers it with the CPU pipeline, runs it with the MLIR ExecutionEngine
// and compares every output against the independent float64 reference
// (lib/Reference). Exits 1 past tolerance, 2 on bad usage.
//
//===----------------------------------------------------------------------===//

#include "HookInterpreter.h"

#include "flashir/Conversion/Passes.h"
#include "flashir/Dialect/Attn/IR/Attn.h"
#include "flashir/Dialect/Attn/Transforms/Passes.h"
#include "flashir/Pipelines/Pipelines.h"
#include "flashir/Reference/Reference.h"
#include "flashir/Runtime/Float16.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <sstream>

using namespace mlir;
using namespace flashir;
namespace ref = flashir::reference;
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

//===----------------------------------------------------------------------===//
// Storage types
//===----------------------------------------------------------------------===//

namespace {

enum class DType { F32, F16, BF16 };

using runtime::fromBF16;
using runtime::fromF16;
using runtime::toBF16;
using runtime::toF16;

/// A tensor as the kernel sees it (bytes) and as the reference sees it
/// (double, after rounding to the storage type).
struct HostTensor {
  std::vector<int64_t> shape;
  std::vector<double> value; // reference view
  std::vector<uint8_t> bytes;
  size_t elemSize = 4;

  int64_t numel() const {
    return std::accumulate(shape.begin(), shape.end(), int64_t(1),
                           std::multiplies<int64_t>());
  }
};

HostTensor makeFloat(DType t, std::vector<int64_t> shape,
                     const std::vector<float> &data) {
  HostTensor h;
  h.shape = std::move(shape);
  h.elemSize = t == DType::F32 ? 4 : 2;
  h.bytes.resize(data.size() * h.elemSize);
  h.value.resize(data.size());
  for (size_t i = 0; i < data.size(); ++i) {
    if (t == DType::F32) {
      std::memcpy(&h.bytes[4 * i], &data[i], 4);
      h.value[i] = data[i];
    } else {
      uint16_t bits = t == DType::F16 ? toF16(data[i]) : toBF16(data[i]);
      std::memcpy(&h.bytes[2 * i], &bits, 2);
      h.value[i] = t == DType::F16 ? fromF16(bits) : fromBF16(bits);
    }
  }
  return h;
}

template <typename T>
HostTensor makeInt(std::vector<int64_t> shape, const std::vector<T> &data) {
  HostTensor h;
  h.shape = std::move(shape);
  h.elemSize = sizeof(T);
  h.bytes.resize(data.size() * sizeof(T));
  if (!data.empty()) // memcpy from an empty vector's null data() is UB
    std::memcpy(h.bytes.data(), data.data(), h.bytes.size());
  h.value.assign(data.begin(), data.end());
  return h;
}

std::vector<float> readFloat(DType t, const HostTensor &h) {
  std::vector<float> out(h.numel());
  for (size_t i = 0; i < out.size(); ++i) {
    if (t == DType::F32) {
      std::memcpy(&out[i], &h.bytes[4 * i], 4);
    } else {
      uint16_t bits;
      std::memcpy(&bits, &h.bytes[2 * i], 2);
      out[i] = t == DType::F16 ? fromF16(bits) : fromBF16(bits);
    }
  }
  return out;
}

/// A memref descriptor {allocated, aligned, offset, sizes[N], strides[N]}.
std::vector<int64_t> descriptor(HostTensor &h) {
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

[[noreturn]] void usage(const std::string &message) {
  llvm::errs() << "flashir-run: " << message << "\n";
  llvm::errs().flush();
  std::exit(2);
}

/// Rejects option values the runner cannot honour, naming the bound: every
/// size is bounded so that the generated batch fits in memory, its int32
/// index arrays do not overflow and the run ends in seconds.
void checkOptions() {
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

std::string shapeStr(const std::vector<int64_t> &shape, bool dynamicFirst,
                     const std::string &elem) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i)
    s +=
        (i == 0 && dynamicFirst ? std::string("?") : std::to_string(shape[i])) +
        "x";
  return s + elem;
}

//===----------------------------------------------------------------------===//
// The batch
//===----------------------------------------------------------------------===//

struct Batch {
  int64_t B = 0;
  std::vector<int64_t> qo, kv;
  // One entry per view.
  struct ViewData {
    std::vector<int64_t> lens;
    HostTensor k, v, indptr, indices, last, kvIndptr;
    ref::View reference;
  };
  std::vector<ViewData> views;
  // The shared prefix (view 0 of the attention) when --prefix-len is given.
  bool hasPrefix = false;
  int64_t prefixLen = 0;
  HostTensor prefixK, prefixV, prefixIndices, prefixLenTensor;
  ref::PagedView prefixReference; // per-request rows filled by referenceOf
  HostTensor q, qoIndptr;
  std::vector<HostTensor> paramTensors; // non-scalar parameters, in order
  std::vector<float> scalarParams;      // scalar parameters, in order
  std::vector<HostTensor> planner;      // runtime chunk arrays, if any
  std::vector<HostTensor> outs;         // (o, lse) per result
};

/// Builds view `part` of `count` for each request: a page-aligned slice of
/// its keys, in a pool of shuffled pages with NaN in every unused slot.
Batch::ViewData makeView(std::mt19937 &rng, DType t,
                         const std::vector<int64_t> &lens, bool paged, bool hnd,
                         int64_t P, int64_t Hkv, int64_t D, bool share) {
  Batch::ViewData view;
  view.lens = lens;
  int64_t B = lens.size();
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  if (!paged) {
    std::vector<int32_t> indptr(1, 0);
    for (int64_t l : lens)
      indptr.push_back(indptr.back() + int32_t(l));
    int64_t total = indptr.back();
    std::vector<float> k(total * Hkv * D), v(k.size());
    for (auto &x : k)
      x = uni(rng);
    for (auto &x : v)
      x = uni(rng);
    view.k = makeFloat(t, {total, Hkv, D}, k);
    view.v = makeFloat(t, {total, Hkv, D}, v);
    view.kvIndptr = makeInt<int32_t>({B + 1}, indptr);
    ref::RaggedView r;
    r.k = view.k.value;
    r.v = view.v.value;
    r.kvIndptr = indptr;
    view.reference = r;
    return view;
  }
  std::vector<int64_t> pagesPer(B);
  int64_t needed = 0;
  for (int64_t b = 0; b < B; ++b) {
    pagesPer[b] = (lens[b] + P - 1) / P;
    needed += pagesPer[b];
  }
  int64_t numPages = needed + 3; // spare pages the table never names
  std::vector<int32_t> perm(numPages);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  std::vector<int32_t> indptr(1, 0), indices, last;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t p = 0; p < pagesPer[b]; ++p)
      indices.push_back(perm[indices.size()]);
    indptr.push_back(int32_t(indices.size()));
    last.push_back(pagesPer[b] ? int32_t(lens[b] - (pagesPer[b] - 1) * P) : 0);
  }
  // Shared physical pages: every later request whose first page is full
  // reuses request 0's first page (if that one is full too).
  if (share && B > 1 && pagesPer[0] > 0 && lens[0] >= P)
    for (int64_t b = 1; b < B; ++b)
      if (pagesPer[b] > 0 && lens[b] >= P)
        indices[indptr[b]] = indices[0];
  // Fill the pool: NaN everywhere, then random values in every slot a
  // request reads.
  std::vector<float> k(numPages * P * Hkv * D, nan), v(k.size(), nan);
  auto offset = [&](int64_t page, int64_t slot, int64_t h) {
    return hnd ? ((page * Hkv + h) * P + slot) * D
               : ((page * P + slot) * Hkv + h) * D;
  };
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < lens[b]; ++t) {
      int64_t page = indices[indptr[b] + t / P], slot = t % P;
      for (int64_t h = 0; h < Hkv; ++h)
        for (int64_t d = 0; d < D; ++d) {
          int64_t o = offset(page, slot, h) + d;
          if (std::isnan(k[o])) { // a shared slot keeps its first value
            k[o] = uni(rng);
            v[o] = uni(rng);
          }
        }
    }
  std::vector<int64_t> poolShape =
      hnd ? std::vector<int64_t>{numPages, Hkv, P, D}
          : std::vector<int64_t>{numPages, P, Hkv, D};
  view.k = makeFloat(t, poolShape, k);
  view.v = makeFloat(t, poolShape, v);
  view.indptr = makeInt<int32_t>({B + 1}, indptr);
  view.indices = makeInt<int32_t>({int64_t(indices.size())}, indices);
  view.last = makeInt<int32_t>({B}, last);
  ref::PagedView r;
  r.pageSize = P;
  r.layout = hnd ? ref::Layout::HND : ref::Layout::NHD;
  r.numPages = numPages;
  r.k = view.k.value;
  r.v = view.v.value;
  r.indptr = indptr;
  r.indices = indices;
  r.lastPageLen = last;
  view.reference = r;
  return view;
}

} // namespace

namespace {

/// One argument of the generated kernel.
struct Slot {
  enum Kind { Tensor, Scalar } kind;
  std::function<HostTensor &(Batch &)> tensor; // Tensor
  size_t scalarIndex = 0;                      // Scalar
};

/// The rows of request `b` of a batch, as a batch of its own: the same pools,
/// the page-table rows of `b`, its queries and per-request parameters.
Batch sliceRequest(const Batch &full, int64_t b,
                   ArrayRef<run::ParamData> params, DType t) {
  Batch one;
  one.B = 1;
  one.qo = {full.qo[b]};
  one.kv = {full.kv[b]};
  int32_t q0 = ((const int32_t *)full.qoIndptr.bytes.data())[b];
  int64_t rowBytes =
      full.q.numel() / std::max<int64_t>(full.q.shape[0], 1) * full.q.elemSize;
  one.q = full.q;
  one.q.shape[0] = full.qo[b];
  one.q.bytes.assign(full.q.bytes.begin() + q0 * rowBytes,
                     full.q.bytes.begin() + (q0 + full.qo[b]) * rowBytes);
  one.qoIndptr =
      makeInt<int32_t>({2}, std::vector<int32_t>{0, int32_t(full.qo[b])});
  for (const Batch::ViewData &v : full.views) {
    Batch::ViewData w;
    w.lens = {v.lens[b]};
    if (!v.kvIndptr.bytes.empty()) {
      auto *ip = (const int32_t *)v.kvIndptr.bytes.data();
      int64_t tokenBytes =
          v.k.numel() / std::max<int64_t>(v.k.shape[0], 1) * v.k.elemSize;
      w.k = v.k;
      w.v = v.v;
      w.k.shape[0] = w.v.shape[0] = ip[b + 1] - ip[b];
      w.k.bytes.assign(v.k.bytes.begin() + ip[b] * tokenBytes,
                       v.k.bytes.begin() + ip[b + 1] * tokenBytes);
      w.v.bytes.assign(v.v.bytes.begin() + ip[b] * tokenBytes,
                       v.v.bytes.begin() + ip[b + 1] * tokenBytes);
      w.kvIndptr =
          makeInt<int32_t>({2}, std::vector<int32_t>{0, ip[b + 1] - ip[b]});
    } else {
      auto *ip = (const int32_t *)v.indptr.bytes.data();
      auto *ix = (const int32_t *)v.indices.bytes.data();
      auto *last = (const int32_t *)v.last.bytes.data();
      w.k = v.k;
      w.v = v.v;
      w.indptr =
          makeInt<int32_t>({2}, std::vector<int32_t>{0, ip[b + 1] - ip[b]});
      w.indices =
          makeInt<int32_t>({ip[b + 1] - ip[b]},
                           std::vector<int32_t>(ix + ip[b], ix + ip[b + 1]));
      w.last = makeInt<int32_t>({1}, std::vector<int32_t>{last[b]});
    }
    one.views.push_back(std::move(w));
  }
  one.hasPrefix = full.hasPrefix;
  one.prefixLen = full.prefixLen;
  one.prefixK = full.prefixK;
  one.prefixV = full.prefixV;
  one.prefixIndices = full.prefixIndices;
  one.prefixLenTensor = full.prefixLenTensor;
  one.scalarParams = full.scalarParams;
  size_t tensorIndex = 0;
  for (const run::ParamData &p : params) {
    if (p.kind == attn::ParamKind::Scalar)
      continue;
    HostTensor h = full.paramTensors[tensorIndex++];
    if (p.kind == attn::ParamKind::PerRequest) {
      std::vector<uint8_t> bytes(h.bytes.begin() + b * h.elemSize,
                                 h.bytes.begin() + (b + 1) * h.elemSize);
      h.bytes = bytes;
      h.shape = {1};
    }
    one.paramTensors.push_back(std::move(h));
  }
  for (const HostTensor &o : full.outs) {
    HostTensor h = o;
    h.shape[0] = full.qo[b];
    h.bytes.assign(h.numel() * h.elemSize, 0xff);
    one.outs.push_back(std::move(h));
  }
  (void)t;
  return one;
}

/// Bytes of rows [r0, r0 + n) of an output.
std::vector<uint8_t> rowBytes(const HostTensor &h, int64_t r0, int64_t n) {
  int64_t row = h.numel() / std::max<int64_t>(h.shape[0], 1) * h.elemSize;
  return std::vector<uint8_t>(h.bytes.begin() + r0 * row,
                              h.bytes.begin() + (r0 + n) * row);
}

/// The runner executes attn programs on the CPU: a --transform must keep
/// `func.func @kernel` (attn-level rewrites such as attn-split-kv) and must
/// not emit GPU code, which the CPU pipeline cannot run.
void checkTransformed(ModuleOp module) {
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

/// Compiles the attn program (after `transform`, if any) for the JIT.
/// Returns the engine and the number of planner arguments the transform
/// appended.
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

/// Random runtime chunks: each request's keys cut at 0..3 random positions
/// (anywhere, also inside a page), as a host planner might.
std::vector<HostTensor> randomChunks(std::mt19937 &rng, const Batch &batch) {
  std::vector<int32_t> indptr(1, 0), starts, ends;
  for (int64_t b = 0; b < batch.B; ++b) {
    int64_t n = batch.kv[b] + batch.prefixLen;
    std::vector<int64_t> cuts = {0, n};
    int extra = std::uniform_int_distribution<int>(0, 3)(rng);
    for (int c = 0; c < extra && n > 1; ++c)
      cuts.push_back(std::uniform_int_distribution<int64_t>(1, n - 1)(rng));
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    for (size_t c = 0; c + 1 < cuts.size(); ++c) {
      starts.push_back(int32_t(cuts[c]));
      ends.push_back(int32_t(cuts[c + 1]));
    }
    indptr.push_back(int32_t(starts.size()));
  }
  return {makeInt<int32_t>({batch.B + 1}, indptr),
          makeInt<int32_t>({int64_t(starts.size())}, starts),
          makeInt<int32_t>({int64_t(ends.size())}, ends)};
}

} // namespace

//===----------------------------------------------------------------------===//
// main
//===----------------------------------------------------------------------===//

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv,
                              "JIT-run an attn program on the CPU and check "
                              "it against the float64 reference\n");
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();

  DType t;
  std::string elem = dtype;
  if (dtype == "f32")
    t = DType::F32;
  else if (dtype == "f16")
    t = DType::F16;
  else if (dtype == "bf16")
    t = DType::BF16;
  else
    usage("--dtype must be f32, f16 or bf16");
  checkOptions();
  int64_t D = headDim, Hq = numQoHeads, Hkv = numKvHeads, P = pageSize;
  bool paged = layout != "ragged", hnd = layout == "hnd";
  bool hasPrefix = prefixLenOpt >= 0;
  bool mergeMode = mode == "merge";
  double scale = scaleOpt > 0 ? double(scaleOpt) : 1.0 / std::sqrt(double(D));
  double rtol = rtolOpt > 0 ? double(rtolOpt) : (t == DType::F32 ? 1e-5 : 1e-2);
  double atol = atolOpt > 0 ? double(atolOpt) : (t == DType::F32 ? 1e-5 : 1e-2);

  // The MLIR side.
  DialectRegistry registry;
  flashir::registerFlashIRToolDialects(registry);
  flashir::registerFlashIRPasses();
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();

  std::string userVariants;
  if (!variantsFile.empty()) {
    auto file = llvm::MemoryBuffer::getFile(variantsFile);
    if (!file)
      usage("cannot read " + variantsFile);
    userVariants = (*file)->getBuffer().str();
  }
  // Resolve the variant: the user's file first, then the standard library.
  OwningOpRef<ModuleOp> userModule;
  attn::VariantOp variant;
  bool standard = false;
  if (!userVariants.empty()) {
    userModule = parseSourceString<ModuleOp>(userVariants, &ctx, variantsFile);
    if (!userModule)
      usage("cannot parse " + variantsFile);
    variant = dyn_cast_or_null<attn::VariantOp>(
        SymbolTable::lookupSymbolIn(*userModule, variantName));
  }
  if (!variant) {
    variant = ctx.getOrLoadDialect<attn::AttnDialect>()->lookupStandardVariant(
        variantName);
    standard = true;
  }
  if (!variant)
    usage("no variant named '" + variantName + "'");
  if (mergeMode && !variant.isMergeable())
    usage("--mode=merge needs a variant with a merge rule");

  // The batch.
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  Batch batch;
  batch.B = qoLens.size();
  batch.qo.assign(qoLens.begin(), qoLens.end());
  batch.kv.assign(kvLens.begin(), kvLens.end());
  std::vector<int32_t> qoIndptr(1, 0);
  for (int64_t l : batch.qo)
    qoIndptr.push_back(qoIndptr.back() + int32_t(l));
  int64_t totalQ = qoIndptr.back();
  std::vector<float> qData(totalQ * Hq * D);
  for (auto &x : qData)
    x = uni(rng);
  batch.q = makeFloat(t, {totalQ, Hq, D}, qData);
  batch.qoIndptr = makeInt<int32_t>({batch.B + 1}, qoIndptr);
  if (hasPrefix) {
    if (!paged)
      usage("--prefix-len needs a paged --layout");
    Batch::ViewData shared =
        makeView(rng, t, {int64_t(prefixLenOpt)}, true, hnd, P, Hkv, D, false);
    batch.hasPrefix = true;
    batch.prefixLen = prefixLenOpt;
    batch.prefixK = shared.k;
    batch.prefixV = shared.v;
    batch.prefixIndices = shared.indices;
    batch.prefixLenTensor =
        makeInt<int32_t>({1}, std::vector<int32_t>{int32_t(prefixLenOpt)});
    // The reference sees it as a paged view whose rows all name the same
    // pages.
    auto &r = std::get<ref::PagedView>(shared.reference);
    ref::PagedView all = r;
    all.indptr = {0};
    all.indices.clear();
    all.lastPageLen.clear();
    for (int64_t b = 0; b < batch.B; ++b) {
      all.indices.insert(all.indices.end(), r.indices.begin(), r.indices.end());
      all.indptr.push_back(int32_t(all.indices.size()));
      all.lastPageLen.push_back(r.lastPageLen[0]);
    }
    batch.prefixReference = all;
  }
  // Split each request's keys into numViews page-aligned consecutive parts.
  std::vector<std::vector<int64_t>> partLens(numViews,
                                             std::vector<int64_t>(batch.B));
  for (int64_t b = 0; b < batch.B; ++b) {
    int64_t left = batch.kv[b], unit = paged ? P : 1;
    int64_t units = (left + unit - 1) / unit;
    for (int64_t v = 0; v < numViews; ++v) {
      int64_t share =
          v + 1 == numViews ? left : std::min(left, (units / numViews) * unit);
      partLens[v][b] = share;
      left -= share;
    }
  }
  for (int64_t v = 0; v < numViews; ++v)
    batch.views.push_back(makeView(rng, t, partLens[v], paged, hnd, P, Hkv, D,
                                   sharedPages && v == 0));
  // Per-request key counts the variant parameters see include the prefix.
  std::vector<int64_t> totalKv(batch.kv);
  for (auto &n : totalKv)
    n += batch.prefixLen;

  // Variant parameters: generated per declaration, shared by the kernel and
  // the reference.
  std::vector<run::ParamData> params;
  ref::Variant refVariant;
  for (attn::VariantParamAttr decl : variant.getParamList()) {
    run::ParamData p;
    p.kind = decl.getKind();
    p.type = decl.getType();
    if (auto tensor = dyn_cast<RankedTensorType>(p.type))
      p.type = tensor.getElementType();
    int64_t n = p.kind == attn::ParamKind::PerRequest ? batch.B
                : p.kind == attn::ParamKind::PerHead  ? Hq
                                                      : 1;
    bool isFloat = isa<FloatType>(p.type);
    StringRef name = decl.getName();
    if (standard && name == "window_left") {
      for (int64_t b = 0; b < batch.B; ++b)
        p.i.push_back(std::uniform_int_distribution<int64_t>(
            -1, std::max<int64_t>(totalKv[b], 1))(rng));
    } else if (standard && name == "cap") {
      p.f.push_back(capOpt);
    } else if (standard && name == "bias") {
      p.f.push_back(biasOpt);
    } else if (standard && name == "slope") {
      for (int64_t h = 0; h < Hq; ++h)
        p.f.push_back(std::exp2(-8.0 * double(h + 1) / double(Hq)));
    } else if (standard &&
               (name == "bits" || name == "row0" || name == "stride")) {
      // Filled together below.
    } else if (p.kind == attn::ParamKind::Buffer) {
      for (int i = 0; i < 4096; ++i)
        p.i.push_back(std::uniform_int_distribution<int>(-128, 127)(rng));
    } else {
      for (int64_t i = 0; i < n; ++i) {
        if (isFloat)
          p.f.push_back(std::uniform_real_distribution<double>(0.5, 1.5)(rng));
        else
          p.i.push_back(std::uniform_int_distribution<int64_t>(0, 8)(rng));
      }
    }
    params.push_back(std::move(p));
  }
  if (standard && variantName == "custom_mask") {
    std::vector<std::vector<uint8_t>> masks(batch.B);
    for (int64_t b = 0; b < batch.B; ++b)
      for (int64_t i = 0; i < batch.qo[b] * totalKv[b]; ++i)
        masks[b].push_back(std::uniform_int_distribution<int>(0, 1)(rng));
    ref::CustomMaskParams cm;
    if (ref::Status s = ref::customMaskParams(masks, batch.qo, totalKv, cm); !s)
      usage(s.message());
    if (cm.bits.empty())
      cm.bits.push_back(0); // a zero-sized buffer is still a buffer
    params[0].i.assign(cm.bits.begin(), cm.bits.end());
    for (auto &x : params[0].i)
      x = int8_t(uint8_t(x));
    params[1].i = cm.row0;
    params[2].i = cm.stride;
    refVariant = ref::customMask(cm.bits, cm.row0, cm.stride);
  } else if (standard) {
    if (variantName == "plain")
      refVariant = ref::plain();
    else if (variantName == "causal")
      refVariant = ref::causal();
    else if (variantName == "sliding_window")
      refVariant = ref::slidingWindow(
          std::vector<int32_t>(params[0].i.begin(), params[0].i.end()));
    else if (variantName == "soft_cap")
      refVariant = ref::softCap(params[0].f[0]);
    else if (variantName == "alibi")
      refVariant = ref::alibi(params[0].f);
    else if (variantName == "sigmoid")
      refVariant = ref::sigmoid(params[0].f[0]);
    else
      usage("no reference for standard variant '" + variantName + "'");
  } else if (runtime::Status s =
                 run::interpretVariant(variant, params, refVariant);
             !s) {
    usage(s.message());
  }

  // The attn program: its arguments (slots) in order, then its body.
  std::string T = elem;
  std::vector<Slot> slots;
  std::vector<std::string> argDecls;
  std::ostringstream body;
  auto addTensor = [&](std::function<HostTensor &(Batch &)> get,
                       const std::string &elemType) {
    HostTensor &h = get(batch);
    std::string name = "%a" + std::to_string(argDecls.size());
    std::string shape = shapeStr(h.shape, true, elemType);
    argDecls.push_back(name + ": memref<" + shape + ">");
    slots.push_back({Slot::Tensor, std::move(get), 0});
    std::string tname = name + "_t";
    body << "  " << tname << " = bufferization.to_tensor " << name
         << " restrict : memref<" << shape << "> to tensor<" << shape << ">\n";
    return std::make_pair(tname, "tensor<" + shape + ">");
  };
  std::string viewType =
      paged ? "!attn.paged_kv<page_size = " + std::to_string(P) +
                  ", layout = " + std::string(hnd ? "hnd" : "nhd") +
                  ", heads = " + std::to_string(Hkv) +
                  ", head_dim = " + std::to_string(D) + ", " + T + ">"
            : "!attn.ragged_kv<heads = " + std::to_string(Hkv) +
                  ", head_dim = " + std::to_string(D) + ", " + T + ">";
  std::vector<std::string> viewNames;
  if (hasPrefix) {
    auto k = addTensor([](Batch &b) -> HostTensor & { return b.prefixK; }, T);
    auto v = addTensor([](Batch &b) -> HostTensor & { return b.prefixV; }, T);
    auto ix = addTensor(
        [](Batch &b) -> HostTensor & { return b.prefixIndices; }, "i32");
    auto len = addTensor(
        [](Batch &b) -> HostTensor & { return b.prefixLenTensor; }, "i32");
    body << "  %c0 = arith.constant 0 : index\n"
         << "  %plen_i32 = tensor.extract " << len.first
         << "[%c0] : " << len.second << "\n"
         << "  %plen = arith.index_cast %plen_i32 : i32 to index\n"
         << "  %prefix = attn.shared_paged_kv " << k.first << ", " << v.first
         << ", " << ix.first << ", %plen : " << k.second << ", " << v.second
         << " -> " << viewType << "\n";
    viewNames.push_back("%prefix");
  }
  for (size_t v = 0; v < batch.views.size(); ++v) {
    auto view = [v](Batch &b) -> Batch::ViewData & { return b.views[v]; };
    auto k = addTensor([=](Batch &b) -> HostTensor & { return view(b).k; }, T);
    auto val =
        addTensor([=](Batch &b) -> HostTensor & { return view(b).v; }, T);
    std::string name = "%view" + std::to_string(v);
    if (paged) {
      auto ip = addTensor(
          [=](Batch &b) -> HostTensor & { return view(b).indptr; }, "i32");
      auto ix = addTensor(
          [=](Batch &b) -> HostTensor & { return view(b).indices; }, "i32");
      auto lp = addTensor(
          [=](Batch &b) -> HostTensor & { return view(b).last; }, "i32");
      body << "  " << name << " = attn.paged_kv " << k.first << ", "
           << val.first << ", " << ip.first << ", " << ix.first << ", "
           << lp.first << " : " << k.second << ", " << val.second << " -> "
           << viewType << "\n";
    } else {
      auto ip = addTensor(
          [=](Batch &b) -> HostTensor & { return view(b).kvIndptr; }, "i32");
      body << "  " << name << " = attn.ragged_kv " << k.first << ", "
           << val.first << ", " << ip.first << " : " << k.second << ", "
           << val.second << " -> " << viewType << "\n";
    }
    viewNames.push_back(name);
  }
  auto q = addTensor([](Batch &b) -> HostTensor & { return b.q; }, T);
  auto qo =
      addTensor([](Batch &b) -> HostTensor & { return b.qoIndptr; }, "i32");
  std::string qType = "!attn.ragged_q<heads = " + std::to_string(Hq) +
                      ", head_dim = " + std::to_string(D) + ", " + T + ">";
  body << "  %q = attn.ragged_q " << q.first << ", " << qo.first << " : "
       << q.second << " -> " << qType << "\n";

  // Parameters.
  std::vector<std::string> paramNames, paramTypes;
  for (auto [decl, p] : llvm::zip_equal(variant.getParamList(), params)) {
    std::string typeStr;
    llvm::raw_string_ostream ts(typeStr);
    ts << p.type;
    if (p.kind == attn::ParamKind::Scalar) {
      if (!p.type.isF32())
        usage("the runner supports scalar parameters of type f32 only");
      std::string name = "%a" + std::to_string(argDecls.size());
      argDecls.push_back(name + ": f32");
      slots.push_back({Slot::Scalar, nullptr, batch.scalarParams.size()});
      batch.scalarParams.push_back(float(p.f[0]));
      paramNames.push_back(name);
      paramTypes.push_back("f32");
      continue;
    }
    HostTensor h;
    int64_t n = int64_t(isa<FloatType>(p.type) ? p.f.size() : p.i.size());
    if (p.type.isF32())
      h = makeFloat(DType::F32, {n},
                    std::vector<float>(p.f.begin(), p.f.end()));
    else if (p.type.isInteger(32))
      h = makeInt<int32_t>({n}, std::vector<int32_t>(p.i.begin(), p.i.end()));
    else if (p.type.isInteger(64))
      h = makeInt<int64_t>({n}, p.i);
    else if (p.type.isInteger(8))
      h = makeInt<int8_t>({n}, std::vector<int8_t>(p.i.begin(), p.i.end()));
    else
      usage("the runner supports f32, i8, i32 and i64 parameter tensors only");
    size_t index = batch.paramTensors.size();
    batch.paramTensors.push_back(std::move(h));
    std::string declType;
    llvm::raw_string_ostream ds(declType);
    if (p.kind == attn::ParamKind::Buffer)
      ds << decl.getType();
    else
      ds << "tensor<?x" << typeStr << ">";
    auto m = addTensor(
        [index](Batch &b) -> HostTensor & { return b.paramTensors[index]; },
        typeStr);
    if (m.second != declType)
      usage("buffer parameter '" + decl.getName().str() +
            "' must be a dynamic 1-D tensor");
    paramNames.push_back(m.first);
    paramTypes.push_back(m.second);
  }
  std::string paramClause;
  if (!paramNames.empty()) {
    paramClause = " params(";
    for (size_t i = 0; i < paramNames.size(); ++i)
      paramClause += (i ? ", " : "") + paramNames[i];
    paramClause += " : ";
    for (size_t i = 0; i < paramTypes.size(); ++i)
      paramClause += (i ? ", " : "") + paramTypes[i];
    paramClause += ")";
  }
  // The scale as an exact f32 hex literal.
  std::string heads;
  {
    char buf[16];
    float s = float(scale);
    uint32_t bits;
    std::memcpy(&bits, &s, 4);
    std::snprintf(buf, sizeof(buf), "0x%08X", bits);
    heads = "{num_qo_heads = " + std::to_string(Hq) +
            " : i64, num_kv_heads = " + std::to_string(Hkv) +
            " : i64, scale = " + buf + " : f32}";
  }

  std::string oType = "tensor<?x" + std::to_string(Hq) + "x" +
                      std::to_string(D) + "x" + T + ">";
  std::string lType = "tensor<?x" + std::to_string(Hq) + "xf32>";
  std::string stType = "!attn.state<heads = " + std::to_string(Hq) +
                       ", head_dim = " + std::to_string(D) + ", @" +
                       variantName + ">";
  std::vector<std::string> resultNames, resultLabels;
  std::string sym = "@" + variantName.getValue();
  if (!mergeMode) {
    std::string views, types;
    for (auto &n : viewNames) {
      views += ", " + n;
      types += ", " + viewType;
    }
    body << "  %r0_o, %r0_l = attn.attention " << sym << "(%q" << views << ")"
         << paramClause << " " << heads << " : " << qType << types << " -> "
         << oType << ", " << lType << "\n";
    resultNames.push_back("%r0");
    resultLabels.push_back(viewNames.size() > 1
                               ? "attention over " +
                                     std::to_string(viewNames.size()) + " views"
                               : "attention");
  } else {
    int64_t K = numViews;
    for (int64_t v = 0; v < K; ++v)
      body << "  %s" << v << " = attn.attention " << sym << "(%q, "
           << viewNames[v] << ")" << paramClause << " " << heads << " : "
           << qType << ", " << viewType << " -> " << stType << "\n";
    body << "  %c0_rows = arith.constant 0 : index\n"
         << "  %rows = tensor.dim " << q.first << ", %c0_rows : " << q.second
         << "\n"
         << "  %empty = attn.empty_state " << sym << " %rows : " << stType
         << "\n";
    auto merge = [&](const std::string &out,
                     const std::vector<std::string> &in) {
      body << "  " << out << " = attn.merge ";
      for (size_t i = 0; i < in.size(); ++i)
        body << (i ? ", " : "") << in[i];
      body << " : ";
      for (size_t i = 0; i < in.size(); ++i)
        body << (i ? ", " : "") << stType;
      body << " -> " << stType << "\n";
    };
    std::vector<std::string> all, reversed;
    for (int64_t v = 0; v < K; ++v)
      all.push_back("%s" + std::to_string(v));
    reversed.assign(all.rbegin(), all.rend());
    // Left fold (N-ary), right-nested binary, reversed order, and the
    // states interleaved with empty states.
    merge("%m0", all);
    std::string acc = all.back();
    for (int64_t v = K - 2; v >= 0; --v) {
      merge("%n" + std::to_string(v), {all[v], acc});
      acc = "%n" + std::to_string(v);
    }
    std::vector<std::string> withEmpty = {"%empty"};
    for (auto &s : all) {
      withEmpty.push_back(s);
      withEmpty.push_back("%empty");
    }
    merge("%m2", reversed);
    merge("%m3", withEmpty);
    std::vector<std::pair<std::string, std::string>> finals = {
        {"%m0", "merge left-to-right"},
        {acc, "merge right-nested"},
        {"%m2", "merge reversed"},
        {"%m3", "merge with empty states"}};
    for (size_t i = 0; i < finals.size(); ++i) {
      std::string r = "%r" + std::to_string(i);
      body << "  " << r << "_o, " << r << "_l = attn.finalize "
           << finals[i].first << " : " << stType << " -> " << oType << ", "
           << lType << "\n";
      resultNames.push_back(r);
      resultLabels.push_back(finals[i].second);
    }
  }
  // Output buffers, written with materialize_in_destination.
  for (size_t i = 0; i < resultNames.size(); ++i) {
    for (int part = 0; part < 2; ++part) {
      HostTensor h;
      h.shape = part ? std::vector<int64_t>{totalQ, Hq}
                     : std::vector<int64_t>{totalQ, Hq, D};
      h.elemSize = part || t == DType::F32 ? 4 : 2;
      h.bytes.assign(h.numel() * h.elemSize, 0xff); // NaN-ish poison
      size_t index = batch.outs.size();
      batch.outs.push_back(std::move(h));
      std::string name = "%a" + std::to_string(argDecls.size());
      std::string shape =
          shapeStr(batch.outs.back().shape, true, part ? "f32" : T);
      argDecls.push_back(name + ": memref<" + shape + ">");
      slots.push_back(
          {Slot::Tensor,
           [index](Batch &b) -> HostTensor & { return b.outs[index]; }, 0});
      body << "  bufferization.materialize_in_destination " << resultNames[i]
           << (part ? "_l" : "_o") << " in restrict writable " << name
           << " : (tensor<" << shape << ">, memref<" << shape << ">) -> ()\n";
    }
  }

  std::ostringstream fn;
  fn << userVariants << "\n";
  fn << "func.func @kernel(";
  for (size_t i = 0; i < argDecls.size(); ++i)
    fn << (i ? ", " : "") << argDecls[i];
  fn << ") attributes {llvm.emit_c_interface} {\n"
     << body.str() << "  return\n}\n";
  std::string program = fn.str();
  if (dumpIR)
    llvm::outs() << program << "\n";

  // Compile: the program as written and, with --transform, transformed.
  auto t0 = std::chrono::steady_clock::now();
  unsigned unusedPlanner = 0, plannerArgs = 0;
  std::string transformedIR;
  std::unique_ptr<ExecutionEngine> baseline =
      compile(ctx, program, "", unusedPlanner, transformedIR);
  std::unique_ptr<ExecutionEngine> transformed;
  if (!transformOpt.empty()) {
    transformed =
        compile(ctx, program, transformOpt, plannerArgs, transformedIR);
    if (dumpIR)
      llvm::outs() << "// after --transform:\n" << transformedIR << "\n";
    if (plannerArgs != 0 && plannerArgs != 3)
      usage("the transform appended an unexpected number of arguments");
  }
  auto t1 = std::chrono::steady_clock::now();

  // Run: the baseline twice (determinism), the transformed program once.
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

  // The reference.
  ref::Problem problem;
  problem.numQoHeads = Hq;
  problem.numKvHeads = Hkv;
  problem.headDim = D;
  problem.scale = double(float(scale)); // the kernel's f32 scale
  problem.qoIndptr = qoIndptr;
  problem.q = batch.q.value;
  if (hasPrefix)
    problem.views.push_back(batch.prefixReference);
  ref::State expected;
  if (!mergeMode) {
    for (auto &vd : batch.views)
      problem.views.push_back(vd.reference);
    if (ref::Status s = ref::attention(problem, refVariant, true, expected); !s)
      usage("reference: " + s.message());
  } else {
    std::vector<ref::State> parts;
    for (auto &vd : batch.views) {
      ref::Problem one = problem;
      one.views = {vd.reference};
      ref::State s;
      if (ref::Status st = ref::attention(one, refVariant, false, s); !st)
        usage("reference: " + st.message());
      parts.push_back(std::move(s));
    }
    ref::State merged;
    if (ref::Status s = ref::mergeAll(parts, refVariant.reduction, merged); !s)
      usage("reference: " + s.message());
    expected = ref::finalize(merged, refVariant);
  }
  auto t3 = std::chrono::steady_clock::now();
  // The kernel writes outputs in the storage type: compare against the
  // reference rounded the same way, so the tolerance measures computation.
  std::vector<double> expectedO;
  {
    std::vector<float> f(expected.o.begin(), expected.o.end());
    expectedO = makeFloat(t, {int64_t(f.size())}, f).value;
  }

  auto ms = [](auto a, auto b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  llvm::outs() << "variant=" << variantName
               << " reduction=" << ref::toString(refVariant.reduction)
               << " dtype=" << dtype << " head_dim=" << D << " qo_heads=" << Hq
               << " kv_heads=" << Hkv << " layout=" << layout;
  if (paged)
    llvm::outs() << " page_size=" << P;
  if (hasPrefix)
    llvm::outs() << " prefix=" << batch.prefixLen;
  llvm::outs() << " views=" << numViews << " mode=" << mode
               << " requests=" << batch.B << " rows=" << totalQ
               << " seed=" << seed << "\n";
  llvm::outs() << llvm::format(
      "compile %.0f ms, run %.1f ms, reference %.1f ms\n", ms(t0, t1),
      ms(t1, t2), ms(t2, t3));
  ref::CompareOptions copts;
  copts.rtol = rtol;
  copts.atol = atol;
  bool ok = true;
  auto check = [&](Batch &b, const std::string &prefix) {
    for (size_t i = 0; i < resultNames.size(); ++i) {
      std::vector<float> o = readFloat(t, b.outs[2 * i]);
      std::vector<float> l = readFloat(DType::F32, b.outs[2 * i + 1]);
      ref::Errors eo =
          ref::compare(expectedO.data(), o.data(), o.size(), copts);
      ref::Errors el =
          ref::compare(expected.lse.data(), l.data(), l.size(), copts);
      llvm::outs() << prefix << resultLabels[i] << ": output " << eo.summary()
                   << "\n"
                   << prefix << resultLabels[i] << ": lse    " << el.summary()
                   << "\n";
      ok &= eo.ok() && el.ok();
    }
  };
  check(batch, "");
  llvm::outs() << "deterministic: " << (deterministic ? "yes" : "NO") << "\n";
  ok &= deterministic;
  if (transformed) {
    check(chunked, "transformed: ");
    // Transformed vs untransformed, both f32-accumulated.
    double maxDiff = 0;
    bool bitwise = true;
    for (size_t i = 0; i < batch.outs.size(); ++i) {
      bitwise &= batch.outs[i].bytes == chunked.outs[i].bytes;
      std::vector<float> a = readFloat(i % 2 ? DType::F32 : t, batch.outs[i]);
      std::vector<float> c = readFloat(i % 2 ? DType::F32 : t, chunked.outs[i]);
      for (size_t j = 0; j < a.size(); ++j)
        if (std::isfinite(a[j]) && std::isfinite(c[j]))
          maxDiff = std::max(maxDiff, double(std::fabs(a[j] - c[j])));
    }
    llvm::outs() << llvm::format("transformed vs untransformed: max abs diff "
                                 "%.3g, bitwise identical: %s\n",
                                 maxDiff, bitwise ? "yes" : "no");
  }
  if (batchInvariance) {
    // Every request alone, through the transformed program if any: its rows
    // must be bitwise identical to the rows of the batched run.
    ExecutionEngine &engine = transformed ? *transformed : *baseline;
    Batch &full = transformed ? chunked : batch;
    if (plannerArgs)
      usage("--check-batch-invariance needs chunks fixed at compile time");
    bool invariant = true;
    for (int64_t b = 0; b < batch.B; ++b) {
      Batch one = sliceRequest(full, b, params, t);
      invoke(engine, slots, one);
      for (size_t i = 0; i < full.outs.size(); ++i)
        invariant &= one.outs[i].bytes ==
                     rowBytes(full.outs[i], qoIndptr[b], batch.qo[b]);
    }
    llvm::outs() << "batch-invariant: " << (invariant ? "yes" : "NO") << "\n";
    ok &= invariant;
  }
  llvm::outs() << (ok ? "PASS" : "FAIL")
               << llvm::format(" (rtol %g, atol %g)\n", rtol, atol);
  return ok ? 0 : 1;
}
