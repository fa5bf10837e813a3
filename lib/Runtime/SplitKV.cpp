//===- SplitKV.cpp - planned split-KV attention (plan/run) ----------------===//

#include "flashir/Runtime/SplitKV.h"
#include "Internal.h"

#include <cstring>

using namespace flashir::runtime;
using detail::alignUp;
using detail::invalid;

namespace {

/// Element offsets of the metadata arrays in the (int32) metadata region.
struct MetadataLayout {
  int64_t qo, kv, last, chunkIndptr, request, starts, ends, order, total;
  explicit MetadataLayout(const PlanCapacity &c) {
    int64_t r = c.maxRequests, m = c.maxChunks;
    qo = 0;
    kv = qo + r + 2;
    last = kv + r + 2;
    chunkIndptr = last + r + 1;
    request = chunkIndptr + r + 2;
    starts = request + m;
    ends = starts + m;
    order = ends + m;
    total = order + m;
  }
};

} // namespace

Status flashir::runtime::buildStepMetadata(const BatchRef &batch,
                                           const Plan &plan,
                                           const PlanCapacity &capacity,
                                           StepMetadata &out) {
  int64_t b = batch.table.batchSize, r = capacity.maxRequests,
          m = capacity.maxChunks, chunks = int64_t(plan.chunkRequest.size());
  if (plan.chunkIndptr.size() != size_t(b + 1))
    return invalid("the plan has no chunk arrays for this batch (plan with "
                   "queryTile = 0)");
  if (b > r || chunks > m)
    return invalid("the plan exceeds the capacity");
  StepMetadata md;
  md.qoIndptr.assign(batch.qoIndptr, batch.qoIndptr + b + 1);
  md.qoIndptr.resize(r + 2, md.qoIndptr.back());
  md.kvIndptr.assign(batch.table.indptr, batch.table.indptr + b + 1);
  md.kvIndptr.resize(r + 2, md.kvIndptr.back());
  md.lastPageLen.assign(batch.table.lastPageLen, batch.table.lastPageLen + b);
  md.lastPageLen.resize(r + 1, 0);
  md.chunkIndptr = plan.chunkIndptr;
  md.chunkIndptr.resize(r + 1, int32_t(chunks));
  md.chunkIndptr.push_back(int32_t(m)); // the padding request's chunks
  md.chunkRequest = plan.chunkRequest;
  md.chunkRequest.resize(m, int32_t(r));
  md.chunkStarts = plan.chunkStarts;
  md.chunkStarts.resize(m, 0);
  md.chunkEnds = plan.chunkEnds;
  md.chunkEnds.resize(m, 0);
  // Padding chunks (empty) run after the plan's, in id order.
  md.chunkOrder = plan.chunkOrder;
  for (int64_t c = chunks; c < m; ++c)
    md.chunkOrder.push_back(int32_t(c));
  out = std::move(md);
  return Status::ok();
}

PlannerOptions flashir::runtime::prefillPlannerOptions(
    const PlannerOptions &options, const BatchRef &batch, int64_t qTokens) {
  // A prefill CTA serves one q tile of a chunk: its time follows the
  // chunk's keys, not the request's rows, and each chunk takes the
  // request's q tiles in CTAs. So cost per key only, and C divided by the
  // key-weighted mean q tiles: the chunks' CTAs then fill the C slots, and
  // steps whose q tiles fill the GPU already are not split.
  PlannerOptions out = options;
  out.cost.keysPerQueryRow = false;
  out.cost.fixedPerRow = false;
  double keys = 0, tileKeys = 0;
  std::vector<int64_t> kvLens = kvLengths(batch.table, batch.pageSize);
  for (int64_t r = 0; r < batch.table.batchSize; ++r) {
    int64_t rows = batch.qoIndptr[r + 1] - batch.qoIndptr[r];
    if (rows < 1 || kvLens[r] < 1)
      continue; // no CTA work (plan() rejects malformed tables)
    keys += double(kvLens[r]);
    tileKeys += double((rows + qTokens - 1) / qTokens) * double(kvLens[r]);
  }
  if (keys > 0 && tileKeys >= keys)
    out.numCtas = std::max<int64_t>(
        1, int64_t(double(options.numCtas) * keys / tileKeys));
  return out;
}

Status SplitKVRunner::create(CudaDriver &driver, KernelBundle &bundle,
                             const Config &config,
                             std::unique_ptr<SplitKVRunner> &out) {
  const KernelInfo *decode = bundle.find(config.decodeKernel);
  const KernelInfo *merge = bundle.find(config.mergeKernel);
  if (!decode || !merge)
    return invalid("the bundle has no kernels " + config.decodeKernel +
                   " and " + config.mergeKernel);
  // Split-KV prefill kernels share the ABI; their grid adds the request's
  // q tiles (y) and runs per query head or per KV head (fused head groups).
  if (!decode->split())
    return invalid(config.decodeKernel + " (grid '" + decode->grid.str() +
                   "') is not a split-KV decode or prefill kernel");
  if (decode->mergeKernel != config.mergeKernel)
    return invalid(config.decodeKernel + "'s merge kernel is '" +
                   decode->mergeKernel + "', not " + config.mergeKernel);
  if (decode->ragged)
    return invalid(config.decodeKernel +
                   " reads a ragged view (no page table); the split runner "
                   "plans paged batches: launch it with launchDecode or "
                   "launchPrefill");
  bool prefill = decode->kind == KernelKind::Prefill;
  if (config.options.queryTile != 0)
    return invalid("split decode kernels take whole requests (queryTile 0)");
  Config resolved = config;
  // The heads of the grid (z for prefill, y for decode).
  int64_t gridHeads = detail::gridHeads(*decode);
  if (gridHeads < 1 || decode->headDim() < 1 || decode->pageSize() < 1)
    return invalid(config.decodeKernel + ": the manifest gives no head "
                                         "counts, head dim or page size");
  if (resolved.options.numCtas <= 0) {
    // Per head of the grid. A prefill chunk takes one CTA per q tile too,
    // so long prompts get fewer, longer chunks (they fill the GPU with q
    // tiles already).
    int64_t resident = 0;
    if (Status s = bundle.residentCtas(config.decodeKernel, resident); !s)
      return s;
    resolved.options.numCtas = std::max<int64_t>(1, resident / gridHeads);
  }
  if (resolved.capacity.maxChunks <= 0)
    resolved.capacity.maxChunks =
        maxChunksFor(resolved.options.numCtas, resolved.capacity.maxRequests);
  const PlanCapacity &c = resolved.capacity;
  if (c.maxRequests < 1 || c.maxChunks < 1 || c.maxQueryRowsPerRequest < 1)
    return invalid("capacity needs maxRequests, maxChunks and "
                   "maxQueryRowsPerRequest >= 1");
  std::unique_ptr<SplitKVRunner> runner(new SplitKVRunner());
  runner->driver = &driver;
  runner->bundle = &bundle;
  runner->config = resolved;
  if (config.useCalibratedCost)
    if (std::optional<CostModel> cost =
            bundle.calibratedCost(config.decodeKernel))
      runner->config.options.cost = *cost;
  // The decode kernels walk a chunk's keys once per query row.
  runner->config.options.cost.keysPerQueryRow = true;
  runner->numQoHeads = decode->numQoHeads();
  runner->headDim = decode->headDim();
  runner->pageSize = decode->pageSize();
  runner->numKvHeads = decode->numKvHeads();
  runner->gridHeads = gridHeads;
  runner->qTokens = prefill ? decode->qTokens : 0;
  MetadataLayout layout(c);
  runner->metadataBytes = layout.total * 4;
  WorkspaceSize size =
      workspaceSize(c, runner->numQoHeads, runner->headDim,
                    elementBytes(decode->arg(ArgRole::PartialO)->element));
  runner->partialOOffset = alignUp(runner->metadataBytes, 256);
  runner->partialLseOffset =
      alignUp(runner->partialOOffset + size.partialOutputBytes, 256);
  runner->mapsOffset =
      alignUp(runner->partialLseOffset + size.partialLseBytes, 256);
  runner->workspaceBytes_ = runner->mapsOffset + size.kvMapsBytes;
  if (Status s = driver.alloc(runner->workspaceBytes_, &runner->workspace); !s)
    return s;
  runner->stagingMapsOffset = alignUp(runner->metadataBytes, 256);
  if (Status s = driver.allocHost(runner->stagingMapsOffset + size.kvMapsBytes,
                                  &runner->staging);
      !s)
    return s;
  out = std::move(runner);
  return Status::ok();
}

SplitKVRunner::~SplitKVRunner() {
  if (workspace)
    (void)driver->free(workspace);
  if (staging)
    (void)driver->freeHost(staging);
}

Status SplitKVRunner::plan(const BatchRef &batch, void *stream) {
  if (batch.numQoHeads != numQoHeads || batch.numKvHeads != numKvHeads ||
      batch.pageSize != pageSize)
    return invalid("the batch has " + std::to_string(batch.numQoHeads) + "/" +
                   std::to_string(batch.numKvHeads) + " heads and page size " +
                   std::to_string(batch.pageSize) + "; the kernels take " +
                   std::to_string(numQoHeads) + "/" +
                   std::to_string(numKvHeads) + " and " +
                   std::to_string(pageSize));
  PlannerOptions options =
      qTokens ? prefillPlannerOptions(config.options, batch, qTokens)
              : config.options;
  Plan p;
  if (Status s = flashir::runtime::plan(batch, options, config.capacity, p); !s)
    return s;
  StepMetadata md;
  if (Status s = buildStepMetadata(batch, p, config.capacity, md); !s)
    return s;
  MetadataLayout layout(config.capacity);
  auto *dst = static_cast<int32_t *>(staging);
  auto put = [&](int64_t offset, const std::vector<int32_t> &v) {
    std::memcpy(dst + offset, v.data(), v.size() * 4);
  };
  put(layout.qo, md.qoIndptr);
  put(layout.kv, md.kvIndptr);
  put(layout.last, md.lastPageLen);
  put(layout.chunkIndptr, md.chunkIndptr);
  put(layout.request, md.chunkRequest);
  put(layout.starts, md.chunkStarts);
  put(layout.ends, md.chunkEnds);
  put(layout.order, md.chunkOrder);
  if (Status s =
          driver->copyToDeviceAsync(workspace, staging, metadataBytes, stream);
      !s)
    return s;
  plan_ = std::move(p);
  this->batch = batch.table.batchSize;
  plannedIndices = batch.table.indptr[batch.table.batchSize];
  plannedPoolPages = batch.numPages;
  maxQoRows = 0;
  for (int64_t r = 0; r < batch.table.batchSize; ++r)
    maxQoRows =
        std::max<int64_t>(maxQoRows, batch.qoIndptr[r + 1] - batch.qoIndptr[r]);
  return Status::ok();
}

Status SplitKVRunner::run(const Buffers &buffers, void *stream,
                          bool capacityGrids) {
  const PlanCapacity &c = config.capacity;
  // create() found the kernel. Per-request parameters are read for every
  // planned request.
  const KernelInfo &kernel = *bundle->find(config.decodeKernel);
  if (Status s = checkParams(kernel, buffers.params, batch); !s)
    return s;
  if (plannedPoolPages < 1)
    return invalid("run() before plan()");
  if (buffers.numPages < 1 || buffers.numIndices < 1)
    return invalid("run() needs a page pool and an indices array");
  // The kernels read as many page ids, from pages of a pool as large, as the
  // plan's page table names.
  if (buffers.numIndices < plannedIndices)
    return invalid("kv_indices holds " + std::to_string(buffers.numIndices) +
                   " entries; the planned page table names " +
                   std::to_string(plannedIndices) + " page ids");
  if (Status s = detail::checkPlannedPool(buffers.numPages, plannedPoolPages);
      !s)
    return s;
  if (Status s = checkPoolRows(kernel, buffers.numPages); !s)
    return s;
  MetadataLayout layout(c);
  auto *base = static_cast<char *>(workspace);
  if (Status s = bundle->refreshKvMaps(
          maps, config.decodeKernel, buffers.kPool, buffers.vPool,
          buffers.numPages,
          detail::kvMapsUpload(*driver, stream,
                               static_cast<char *>(staging) + stagingMapsOffset,
                               base + mapsOffset));
      !s)
    return s;
  auto meta = [&](int64_t offset, int64_t size) {
    return KernelBundle::Arg::memref(base + offset * 4, {size});
  };
  auto memref = KernelBundle::Arg::memref;
  int64_t rows = c.maxRequests * c.maxQueryRowsPerRequest;
  int64_t partialRows = c.maxChunks * c.maxQueryRowsPerRequest;
  int64_t r = c.maxRequests, m = c.maxChunks;
  KernelBundle::Arg qo = meta(layout.qo, r + 2),
                    chunkIndptr = meta(layout.chunkIndptr, r + 2);
  KernelBundle::Arg partialO =
      memref(base + partialOOffset, {partialRows, numQoHeads, headDim});
  KernelBundle::Arg partialLse =
      memref(base + partialLseOffset, {partialRows, numQoHeads});
  // A request's only chunk writes its rows of out / lse directly.
  KernelBundle::Arg out = memref(buffers.out, {rows, numQoHeads, headDim}),
                    lse = memref(buffers.lse, {rows, numQoHeads});
  KernelBundle::RoleArgs fixed = {
      {ArgRole::Q, memref(buffers.q, {rows, numQoHeads, headDim})},
      {ArgRole::QoIndptr, qo},
      {ArgRole::KPool, memref(buffers.kPool, {buffers.numPages, pageSize,
                                              numKvHeads, headDim})},
      {ArgRole::VPool, memref(buffers.vPool, {buffers.numPages, pageSize,
                                              numKvHeads, headDim})},
      {ArgRole::KvIndptr, meta(layout.kv, r + 2)},
      {ArgRole::KvIndices, memref(buffers.indices, {buffers.numIndices})},
      {ArgRole::LastPageLen, meta(layout.last, r + 1)},
      {ArgRole::ChunkIndptr, chunkIndptr},
      {ArgRole::ChunkRequest, meta(layout.request, m)},
      {ArgRole::ChunkStarts, meta(layout.starts, m)},
      {ArgRole::ChunkEnds, meta(layout.ends, m)},
      {ArgRole::ChunkOrder, meta(layout.order, m)},
      {ArgRole::PartialO, partialO},
      {ArgRole::PartialLse, partialLse},
      {ArgRole::Out, out},
      {ArgRole::Lse, lse},
      {ArgRole::KvMaps, memref(base + mapsOffset, {2, 16})}};
  std::vector<KernelBundle::Arg> args, mergeArgs;
  if (Status s = bundle->arrange(config.decodeKernel, fixed,
                                 KernelBundle::paramArgs(buffers.params), args);
      !s)
    return s;
  if (Status s = bundle->arrange(config.mergeKernel, fixed, {}, mergeArgs); !s)
    return s;
  unsigned chunkGrid =
      unsigned(capacityGrids ? m : std::max<size_t>(plan_.items.size(), 1));
  unsigned requestGrid =
      unsigned(capacityGrids ? r : std::max<int64_t>(batch, 1));
  // Prefill: one CTA per (chunk, q tile, head) (a persistent kernel: one
  // per SM walking them, launchedZ); q tiles of the longest query the
  // capacity (or the batch) allows.
  int64_t rowsForGrid = capacityGrids ? c.maxQueryRowsPerRequest
                                      : std::max<int64_t>(maxQoRows, 1);
  Status launched =
      qTokens
          ? bundle->launchArgs(config.decodeKernel, args, chunkGrid,
                               unsigned((rowsForGrid + qTokens - 1) / qTokens),
                               stream, unsigned(gridHeads))
          : bundle->launchArgs(config.decodeKernel, args, chunkGrid,
                               unsigned(gridHeads), stream);
  if (!launched)
    return launched;
  return bundle->launchArgs(config.mergeKernel, mergeArgs, requestGrid,
                            unsigned(numQoHeads), stream);
}
