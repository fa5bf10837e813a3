//===- Runtime.cpp - C API of the FlashIR runtime -------------------------===//

#include "flashir-c/Runtime.h"

#include "flashir/Runtime/Cascade.h"
#include "flashir/Runtime/MergeStates.h"
#include "flashir/Runtime/SplitKV.h"

#include <string>

using namespace flashir::runtime;

struct FlashIRSplitKV {
  std::unique_ptr<CudaDriver> driver;
  std::unique_ptr<KernelBundle> bundle;
  std::unique_ptr<SplitKVRunner> runner;
  int64_t numQoHeads = 0, numKvHeads = 0, headDim = 0, pageSize = 0;
};

namespace {

thread_local std::string lastError;

int report(const Status &s) {
  lastError = s.message();
  return static_cast<int>(s.code());
}
int invalid(const std::string &message) {
  return report(Status::error(StatusCode::InvalidArgument, message));
}

/// The CUDA driver (the device of the caller's current context, else 0)
/// and bundle `dir` loaded for `chip`.
Status openBundle(const char *dir, const char *chip,
                  std::unique_ptr<CudaDriver> &driver,
                  std::unique_ptr<KernelBundle> &bundle) {
  if (Status s = CudaDriver::open(CudaDriver::kCurrentDevice, driver); !s)
    return s;
  return KernelBundle::open(*driver, dir, chip, bundle);
}

} // namespace

extern "C" const char *flashirLastError(void) { return lastError.c_str(); }

extern "C" int flashirSplitKVCreate(const char *bundleDir, const char *chip,
                                    const char *decodeKernel,
                                    const char *mergeKernel,
                                    int64_t maxRequests, int64_t maxChunks,
                                    int64_t maxRows, int64_t numCtas,
                                    FlashIRSplitKV **out) {
  lastError.clear();
  if (!bundleDir || !chip || !decodeKernel || !mergeKernel || !out)
    return invalid("flashirSplitKVCreate: null argument");
  auto decode = std::make_unique<FlashIRSplitKV>();
  if (Status s = openBundle(bundleDir, chip, decode->driver, decode->bundle);
      !s)
    return report(s);
  SplitKVRunner::Config config;
  config.decodeKernel = decodeKernel;
  config.mergeKernel = mergeKernel;
  config.capacity = {maxRequests, maxChunks, maxRows};
  // num_ctas / max_chunks <= 0: from the kernel's occupancy on this GPU.
  config.options.numCtas = numCtas;
  if (Status s = SplitKVRunner::create(*decode->driver, *decode->bundle, config,
                                       decode->runner);
      !s)
    return report(s);
  const KernelInfo *k = decode->bundle->find(decodeKernel);
  decode->numQoHeads = k->numQoHeads();
  decode->headDim = k->headDim();
  decode->pageSize = k->pageSize();
  decode->numKvHeads = k->numKvHeads();
  *out = decode.release();
  return FLASHIR_OK;
}

extern "C" int flashirSplitKVShape(const FlashIRSplitKV *decode,
                                   int64_t *numQoHeads, int64_t *numKvHeads,
                                   int64_t *headDim, int64_t *pageSize) {
  if (!decode)
    return invalid("flashirSplitKVShape: null handle");
  if (numQoHeads)
    *numQoHeads = decode->numQoHeads;
  if (numKvHeads)
    *numKvHeads = decode->numKvHeads;
  if (headDim)
    *headDim = decode->headDim;
  if (pageSize)
    *pageSize = decode->pageSize;
  return FLASHIR_OK;
}

extern "C" int
flashirSplitKVPlan(FlashIRSplitKV *decode, const int32_t *qoIndptr,
                   const int32_t *kvIndptr, const int32_t *kvIndices,
                   const int32_t *lastPageLen, int64_t batch, int64_t numPages,
                   void *stream, int64_t *numChunks) {
  lastError.clear();
  if (!decode)
    return invalid("flashirSplitKVPlan: null handle");
  if (batch < 0)
    return invalid("batch must be >= 0");
  BatchRef ref;
  ref.table = {kvIndptr, kvIndices, lastPageLen, batch};
  ref.qoIndptr = qoIndptr;
  ref.numPages = numPages;
  ref.pageSize = decode->pageSize;
  ref.numQoHeads = decode->numQoHeads;
  ref.numKvHeads = decode->numKvHeads;
  if (Status s = decode->driver->synchronizeStream(stream); !s)
    return report(s); // the staging buffer may still be in use
  if (Status s = decode->runner->plan(ref, stream); !s)
    return report(s);
  if (numChunks)
    *numChunks = int64_t(decode->runner->lastPlan().items.size());
  return FLASHIR_OK;
}

/// The C parameters as the runtime's (the caller checked the array).
static std::vector<AttentionBuffers::Param> paramsOf(const FlashIRParam *params,
                                                     int64_t numParams) {
  std::vector<AttentionBuffers::Param> out;
  for (int64_t i = 0; i < numParams; ++i) {
    AttentionBuffers::Param param;
    param.pointer = params[i].pointer;
    param.size = params[i].size;
    param.scalar = params[i].scalar;
    param.integer = params[i].integer;
    out.push_back(param);
  }
  return out;
}

extern "C" int
flashirSplitKVRunWithParams(FlashIRSplitKV *decode, void *q, void *kPool,
                            void *vPool, int64_t numPages, void *kvIndices,
                            int64_t numIndices, void *out, void *lse,
                            const FlashIRParam *params, int64_t numParams,
                            void *stream, int capacityGrids) {
  lastError.clear();
  if (numParams < 0 || (numParams > 0 && !params))
    return invalid("flashirSplitKVRunWithParams: " + std::to_string(numParams) +
                   " parameters at " + (params ? "an array" : "null"));
  if (!decode)
    return invalid("flashirSplitKVRun: null handle");
  if (!q || !kPool || !vPool || !kvIndices || !out || !lse)
    return invalid("flashirSplitKVRun: null device pointer");
  SplitKVRunner::Buffers buffers;
  buffers.q = q;
  buffers.kPool = kPool;
  buffers.vPool = vPool;
  buffers.indices = kvIndices;
  buffers.out = out;
  buffers.lse = lse;
  buffers.numPages = numPages;
  buffers.numIndices = numIndices;
  buffers.params = paramsOf(params, numParams);
  if (Status s = decode->runner->run(buffers, stream, capacityGrids != 0); !s)
    return report(s);
  return FLASHIR_OK;
}

extern "C" int flashirSplitKVRun(FlashIRSplitKV *decode, void *q, void *kPool,
                                 void *vPool, int64_t numPages, void *kvIndices,
                                 int64_t numIndices, void *out, void *lse,
                                 void *stream, int capacityGrids) {
  return flashirSplitKVRunWithParams(decode, q, kPool, vPool, numPages,
                                     kvIndices, numIndices, out, lse, nullptr,
                                     0, stream, capacityGrids);
}

extern "C" void flashirSplitKVDestroy(FlashIRSplitKV *decode) { delete decode; }

struct FlashIRCascade {
  std::unique_ptr<CudaDriver> driver;
  std::unique_ptr<KernelBundle> prefill, decode;
  std::unique_ptr<CascadeDecodeRunner> runner;
};

/// Both entry points; errors name the one called (`api`).
static int createCascade(const char *api, const char *prefillBundleDir,
                         const char *prefillKernel, const char *decodeBundleDir,
                         const char *decodeKernel, const char *mergeKernel,
                         const char *chip, int64_t maxRequests,
                         int64_t prefixChunks, int64_t minChunkKeys,
                         int64_t suffixChunks, int64_t minSuffixChunkKeys,
                         FlashIRCascade **out) {
  lastError.clear();
  if (!prefillBundleDir || !prefillKernel || !decodeBundleDir ||
      !decodeKernel || !mergeKernel || !chip || !out)
    return invalid(std::string(api) + ": null argument");
  for (auto [name, value] :
       {std::pair{"min_chunk_keys", minChunkKeys},
        std::pair{"suffix_chunks", suffixChunks},
        std::pair{"min_suffix_chunk_keys", minSuffixChunkKeys}})
    if (value < 1)
      return invalid(std::string(api) + ": " + name + " must be >= 1, got " +
                     std::to_string(value));
  auto cascade = std::make_unique<FlashIRCascade>();
  if (Status s = CudaDriver::open(CudaDriver::kCurrentDevice, cascade->driver);
      !s)
    return report(s);
  if (Status s = KernelBundle::open(*cascade->driver, prefillBundleDir, chip,
                                    cascade->prefill);
      !s)
    return report(s);
  if (Status s = KernelBundle::open(*cascade->driver, decodeBundleDir, chip,
                                    cascade->decode);
      !s)
    return report(s);
  CascadeDecodeRunner::Config config;
  config.prefillKernel = prefillKernel;
  config.decodeKernel = decodeKernel;
  config.mergeKernel = mergeKernel;
  config.maxRequests = maxRequests;
  config.prefixChunks = prefixChunks;
  config.minChunkKeys = minChunkKeys;
  config.suffixChunks = suffixChunks;
  config.minSuffixChunkKeys = minSuffixChunkKeys;
  if (Status s = CascadeDecodeRunner::create(
          *cascade->driver, *cascade->prefill, *cascade->decode, config,
          cascade->runner);
      !s)
    return report(s);
  *out = cascade.release();
  return FLASHIR_OK;
}

extern "C" int flashirCascadeCreate(const char *prefillBundleDir,
                                    const char *prefillKernel,
                                    const char *decodeBundleDir,
                                    const char *decodeKernel,
                                    const char *mergeKernel, const char *chip,
                                    int64_t maxRequests, int64_t prefixChunks,
                                    FlashIRCascade **out) {
  CascadeDecodeRunner::Config defaults;
  return createCascade("flashirCascadeCreate", prefillBundleDir, prefillKernel,
                       decodeBundleDir, decodeKernel, mergeKernel, chip,
                       maxRequests, prefixChunks, defaults.minChunkKeys,
                       defaults.suffixChunks, defaults.minSuffixChunkKeys, out);
}

extern "C" int flashirCascadeCreateWithChunks(
    const char *prefillBundleDir, const char *prefillKernel,
    const char *decodeBundleDir, const char *decodeKernel,
    const char *mergeKernel, const char *chip, int64_t maxRequests,
    int64_t prefixChunks, int64_t minChunkKeys, int64_t suffixChunks,
    int64_t minSuffixChunkKeys, FlashIRCascade **out) {
  return createCascade("flashirCascadeCreateWithChunks", prefillBundleDir,
                       prefillKernel, decodeBundleDir, decodeKernel,
                       mergeKernel, chip, maxRequests, prefixChunks,
                       minChunkKeys, suffixChunks, minSuffixChunkKeys, out);
}

extern "C" int flashirCascadeShape(const FlashIRCascade *cascade,
                                   int64_t *numQoHeads, int64_t *numKvHeads,
                                   int64_t *headDim, int64_t *pageSize,
                                   int64_t *prefixChunks) {
  lastError.clear();
  if (!cascade)
    return invalid("flashirCascadeShape: null handle");
  const CascadeDecodeRunner &r = *cascade->runner;
  for (auto [dst, value] :
       {std::pair{numQoHeads, r.numQoHeads()},
        std::pair{numKvHeads, r.numKvHeads()}, std::pair{headDim, r.headDim()},
        std::pair{pageSize, r.pageSize()},
        std::pair{prefixChunks, r.prefixChunks()}})
    if (dst)
      *dst = value;
  return FLASHIR_OK;
}

extern "C" int flashirCascadePlannedChunks(const FlashIRCascade *cascade,
                                           int64_t *prefixChunks) {
  lastError.clear();
  if (!cascade || !prefixChunks)
    return invalid("flashirCascadePlannedChunks: null handle or output");
  *prefixChunks = cascade->runner->plannedPrefixChunks();
  return FLASHIR_OK;
}

extern "C" int flashirCascadePlannedSuffixChunks(const FlashIRCascade *cascade,
                                                 int64_t *suffixChunks) {
  lastError.clear();
  if (!cascade || !suffixChunks)
    return invalid("flashirCascadePlannedSuffixChunks: null handle or output");
  *suffixChunks = cascade->runner->plannedSuffixChunks();
  return FLASHIR_OK;
}

extern "C" int flashirCascadePlan(FlashIRCascade *cascade,
                                  const int32_t *prefixIndices,
                                  int64_t numPrefixPages, int64_t prefixLen,
                                  const int32_t *kvIndptr,
                                  const int32_t *kvIndices,
                                  const int32_t *lastPageLen, int64_t batch,
                                  int64_t numPages, void *stream) {
  lastError.clear();
  if (!cascade)
    return invalid("flashirCascadePlan: null handle");
  if (batch < 0 || numPrefixPages < 0)
    return invalid("batch and num_prefix_pages must be >= 0");
  if (!kvIndptr || !lastPageLen)
    return invalid("flashirCascadePlan: null page table");
  if (Status s = cascade->driver->synchronizeStream(stream); !s)
    return report(s); // the staging buffer may still be in use
  PageTableRef suffixes{kvIndptr, kvIndices, lastPageLen, batch};
  if (Status s = cascade->runner->plan(prefixIndices, numPrefixPages, prefixLen,
                                       suffixes, numPages, stream);
      !s)
    return report(s);
  return FLASHIR_OK;
}

extern "C" int
flashirCascadeRunWithParams(FlashIRCascade *cascade, void *q, void *kPool,
                            void *vPool, int64_t numPages, void *prefixIndices,
                            int64_t numPrefixIndices, void *kvIndices,
                            int64_t numIndices, void *out, void *lse,
                            const FlashIRParam *params, int64_t numParams,
                            void *stream, int capacityGrids) {
  lastError.clear();
  if (numParams < 0 || (numParams > 0 && !params))
    return invalid("flashirCascadeRunWithParams: " + std::to_string(numParams) +
                   " parameters at " + (params ? "an array" : "null"));
  if (!cascade)
    return invalid("flashirCascadeRun: null handle");
  if (!q || !kPool || !vPool || !prefixIndices || !kvIndices || !out || !lse)
    return invalid("flashirCascadeRun: null device pointer");
  CascadeDecodeRunner::Buffers buffers;
  buffers.q = q;
  buffers.kPool = kPool;
  buffers.vPool = vPool;
  buffers.prefixIndices = prefixIndices;
  buffers.suffixIndices = kvIndices;
  buffers.out = out;
  buffers.lse = lse;
  buffers.numPages = numPages;
  buffers.numPrefixIndices = numPrefixIndices;
  buffers.numSuffixIndices = numIndices;
  buffers.params = paramsOf(params, numParams);
  if (Status s = cascade->runner->run(buffers, stream, capacityGrids != 0); !s)
    return report(s);
  return FLASHIR_OK;
}

extern "C" int flashirCascadeRun(FlashIRCascade *cascade, void *q, void *kPool,
                                 void *vPool, int64_t numPages,
                                 void *prefixIndices, int64_t numPrefixIndices,
                                 void *kvIndices, int64_t numIndices, void *out,
                                 void *lse, void *stream, int capacityGrids) {
  return flashirCascadeRunWithParams(
      cascade, q, kPool, vPool, numPages, prefixIndices, numPrefixIndices,
      kvIndices, numIndices, out, lse, nullptr, 0, stream, capacityGrids);
}

extern "C" void flashirCascadeDestroy(FlashIRCascade *cascade) {
  delete cascade;
}

struct FlashIRMerge {
  std::unique_ptr<CudaDriver> driver;
  std::unique_ptr<KernelBundle> bundle;
  std::string kernel;
  int64_t numHeads = 0, headDim = 0;
};

extern "C" int flashirMergeCreate(const char *bundleDir, const char *chip,
                                  const char *mergeKernel, FlashIRMerge **out) {
  lastError.clear();
  if (!bundleDir || !chip || !mergeKernel || !out)
    return invalid("flashirMergeCreate: null argument");
  auto merge = std::make_unique<FlashIRMerge>();
  if (Status s = openBundle(bundleDir, chip, merge->driver, merge->bundle); !s)
    return report(s);
  const KernelInfo *k = merge->bundle->find(mergeKernel);
  if (!k || k->kind != flashir::abi::KernelKind::Merge)
    return invalid(std::string("the bundle has no merge kernel ") +
                   mergeKernel);
  merge->kernel = mergeKernel;
  merge->numHeads = k->numQoHeads();
  merge->headDim = k->headDim();
  *out = merge.release();
  return FLASHIR_OK;
}

extern "C" int flashirMergeShape(const FlashIRMerge *merge, int64_t *numHeads,
                                 int64_t *headDim) {
  if (!merge)
    return invalid("flashirMergeShape: null handle");
  if (numHeads)
    *numHeads = merge->numHeads;
  if (headDim)
    *headDim = merge->headDim;
  return FLASHIR_OK;
}

extern "C" int flashirMergeRun(FlashIRMerge *merge, const void *rowIndptr,
                               const void *stateIndptr, void *states,
                               void *stateLse, void *out, void *lse,
                               int64_t rows, int64_t statesPerRow,
                               void *stream) {
  lastError.clear();
  if (!merge)
    return invalid("flashirMergeRun: null handle");
  MergeBuffers buffers;
  buffers.rowIndptr = rowIndptr;
  buffers.stateIndptr = stateIndptr;
  buffers.states = states;
  buffers.stateLse = stateLse;
  buffers.out = out;
  buffers.lse = lse;
  buffers.rows = rows;
  buffers.statesPerRow = statesPerRow;
  if (Status s = mergeStates(*merge->bundle, merge->kernel, buffers, stream);
      !s)
    return report(s);
  return FLASHIR_OK;
}

extern "C" void flashirMergeDestroy(FlashIRMerge *merge) { delete merge; }
