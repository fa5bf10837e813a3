//===- SplitKV.h - planned split-KV attention (plan/run) --------*- C++ -*-===//
//
// The run half of plan/run for the split-KV kernels of a bundle: a split
// decode kernel (`<f>_decode_N`, partial states per chunk) or a tensor-core
// split prefill kernel (`<f>_prefill_N`, one CTA per chunk, q tile and head)
// and the merge kernel the manifest names for it: one workspace allocated for a
// declared capacity, per-step metadata staged in pinned memory and copied with
// one async copy, kernels launched with capacity-sized grids from fixed
// addresses — so one CUDA graph captured at capacity replays for any batch
// planned within it.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHIR_RUNTIME_SPLITKV_H
#define FLASHIR_RUNTIME_SPLITKV_H

#include "flashir/Runtime/Launcher.h"
#include "flashir/Runtime/Planner.h"

namespace flashir::runtime {

/// The metadata the split kernels read, padded to a capacity: requests
/// [batch, maxRequests] are empty and request `maxRequests` (the padding
/// request) owns the unused chunks [numChunks, maxChunks), all empty. Then
/// the chunk count C the kernels derive (the length of chunk_request, the
/// last chunk_indptr entry) is maxChunks whatever the batch.
struct StepMetadata {
  std::vector<int32_t> qoIndptr;    ///< maxRequests + 2
  std::vector<int32_t> kvIndptr;    ///< maxRequests + 2
  std::vector<int32_t> lastPageLen; ///< maxRequests + 1
  std::vector<int32_t> chunkIndptr; ///< maxRequests + 2
  std::vector<int32_t> chunkRequest, chunkStarts, chunkEnds; ///< maxChunks
  std::vector<int32_t> chunkOrder; ///< maxChunks: the plan's, then padding
};

/// The planner options for one step of a split-KV prefill kernel with
/// `qTokens` query rows per q tile: cost per key with alpha per CTA, and C
/// (options.numCtas, CTAs per grid head) divided by the step's key-weighted
/// q tiles per request (at least 1), so that the chunks' CTAs fill C.
PlannerOptions prefillPlannerOptions(const PlannerOptions &options,
                                     const BatchRef &batch, int64_t qTokens);

/// Fills `out` from a batch and its plan (queryTile = 0).
Status buildStepMetadata(const BatchRef &batch, const Plan &plan,
                         const PlanCapacity &capacity, StepMetadata &out);

class SplitKVRunner {
public:
  struct Config {
    std::string decodeKernel, mergeKernel;
    /// capacity.maxChunks <= 0: maxChunksFor(numCtas, maxRequests).
    PlanCapacity capacity;
    /// queryTile must be 0; numCtas <= 0: the partial-state kernel's
    /// resident CTAs on this device (occupancy x SMs) per head of its grid,
    /// the C of eq. (10) for a grid whose chunks each take one CTA per head.
    /// Prefill kernels plan each step with cost per key (a CTA serves one q
    /// tile of a chunk), alpha per CTA and C divided by the step's
    /// key-weighted q tiles per request.
    PlannerOptions options;
    /// Plan with the bundle's calibrated cost model of the decode kernel
    /// (manifest `cost`, see bench/gpu/calibrate.py) where it has one,
    /// instead of options.cost.
    bool useCalibratedCost = true;
  };
  /// Checks the kernels' ABI in the bundle and allocates the workspace
  /// (device) and the staging buffer (pinned host memory).
  static Status create(CudaDriver &driver, KernelBundle &bundle,
                       const Config &config,
                       std::unique_ptr<SplitKVRunner> &out);
  ~SplitKVRunner();

  /// Validates and plans `batch` (host arrays), writes the metadata to the
  /// staging buffer and enqueues its copy into the workspace on `stream`.
  /// The staging buffer is reused: synchronize `stream` before planning
  /// again.
  Status plan(const BatchRef &batch, void *stream);

  /// Device buffers of run(), at fixed addresses across steps for graphs.
  struct Buffers {
    void *q = nullptr, *kPool = nullptr, *vPool = nullptr, *indices = nullptr,
         *out = nullptr, *lse = nullptr;
    int64_t numPages = 0, numIndices = 0;
    /// Variant parameters in declaration order (see AttentionBuffers::Param).
    std::vector<AttentionBuffers::Param> params;
  };
  /// Launches the partial-state and merge kernels on `stream` (prefill:
  /// grid chunks x q tiles x heads). Fails, naming the size, unless
  /// `buffers` hold the page ids and the pool pages the last plan() names.
  /// `capacityGrids`: grids sized for the capacity (required inside a CUDA
  /// graph; unused CTAs find empty chunks, q tiles and requests), else for the
  /// planned batch. The pools' tensor maps are uploaded (async, from the
  /// staging buffer) when they differ from the last run's, after synchronizing
  /// `stream` — which a stream capture does not allow: capture with the pools
  /// of the eager runs before it.
  Status run(const Buffers &buffers, void *stream, bool capacityGrids = true);

  const Plan &lastPlan() const { return plan_; }
  /// The configuration in use (numCtas, maxChunks and the cost resolved).
  const Config &configuration() const { return config; }
  int64_t workspaceBytes() const { return workspaceBytes_; }

private:
  SplitKVRunner() = default;
  CudaDriver *driver = nullptr;
  KernelBundle *bundle = nullptr;
  Config config;
  int64_t numQoHeads = 0, numKvHeads = 0, headDim = 0, pageSize = 0;
  /// Heads of the partial-state kernel's grid; query rows per q tile of a
  /// split-KV prefill kernel (0: a decode kernel).
  int64_t gridHeads = 0, qTokens = 0;
  /// The planned batch's longest query (the q tiles of an eager launch).
  int64_t maxQoRows = 0;
  void *workspace = nullptr, *staging = nullptr;
  int64_t workspaceBytes_ = 0, metadataBytes = 0;
  int64_t partialOOffset = 0, partialLseOffset = 0;
  /// kv_maps in the workspace and in the staging buffer, and what the
  /// workspace holds.
  int64_t mapsOffset = 0, stagingMapsOffset = 0;
  KvMapsCache maps;
  Plan plan_;
  int64_t batch = 0;
  /// What the last plan() implies of run()'s buffers: page ids its page
  /// table names and the pool size they were validated against.
  int64_t plannedIndices = 0, plannedPoolPages = 0;
};

} // namespace flashir::runtime

#endif // FLASHIR_RUNTIME_SPLITKV_H
