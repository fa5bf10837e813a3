//===- Cascade.cpp - shared-prefix (cascade) decode -----------------------===//

#include "flashir/Runtime/Cascade.h"
#include "Internal.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <tuple>

using namespace flashir::runtime;
using detail::alignUp;
using detail::invalid;

namespace {

/// The metadata arrays in one int32 region, in CascadeMetadata's order.
struct CascadeLayout {
  /// (offset, entries) of each array.
  std::vector<std::pair<int64_t, int64_t>> at;
  int64_t total = 0;
  CascadeLayout(int64_t chunks, int64_t maxRequests) {
    int64_t c = chunks, r = maxRequests;
    for (int64_t n :
         {int64_t(3), int64_t(3), int64_t(2), int64_t(3), c, c, c, c, r + 2,
          r + 2, r + 1, r + 2, c * r, c * r, c * r, c * r}) {
      at.push_back({total, n});
      total += n;
    }
  }
};

std::vector<const std::vector<int32_t> *> arraysOf(const CascadeMetadata &m) {
  return {&m.prefixQo,
          &m.prefixKvIndptr,
          &m.prefixLast,
          &m.prefixChunkIndptr,
          &m.prefixRequest,
          &m.prefixStarts,
          &m.prefixEnds,
          &m.prefixOrder,
          &m.qo,
          &m.kvIndptr,
          &m.last,
          &m.chunkIndptr,
          &m.request,
          &m.starts,
          &m.ends,
          &m.order};
}

/// ceil(len / minChunkKeys) (minChunkKeys < 1 acts as 1, len < 0 as 0).
int64_t chunksOfKeys(int64_t len, int64_t minChunkKeys) {
  int64_t keys = std::max<int64_t>(1, minChunkKeys),
          n = std::max<int64_t>(0, len);
  return n / keys + (n % keys != 0);
}

} // namespace

int64_t flashir::runtime::cascadePrefixChunks(int64_t prefixLen,
                                              int64_t minChunkKeys,
                                              int64_t capacityChunks) {
  return std::max<int64_t>(
      2, std::min(chunksOfKeys(prefixLen, minChunkKeys), capacityChunks));
}

int64_t flashir::runtime::cascadeSuffixChunks(int64_t longestSuffix,
                                              int64_t minChunkKeys,
                                              int64_t capacityChunks) {
  return std::clamp<int64_t>(chunksOfKeys(longestSuffix, minChunkKeys), 1,
                             std::max<int64_t>(1, capacityChunks));
}

Status flashir::runtime::buildCascadeMetadata(
    int64_t prefixLen, int64_t numPrefixPages, const CascadeChunks &chunks,
    const PageTableRef &suffixes, int64_t pageSize, int64_t maxRequests,
    CascadeMetadata &out) {
  int64_t b = suffixes.batchSize, cp = chunks.prefix, sc = chunks.suffix,
          c = cp + sc, r = maxRequests;
  int64_t cpMax = chunks.prefixCapacity > 0 ? chunks.prefixCapacity : cp;
  int64_t scMax = chunks.suffixCapacity > 0 ? chunks.suffixCapacity : sc;
  int64_t cMax = cpMax + scMax;
  if (cp < 2)
    return invalid("a shared prefix needs >= 2 chunks (one would be written "
                   "to the output directly), got " +
                   std::to_string(cp));
  if (cp > cpMax)
    return invalid("the step's " + std::to_string(cp) +
                   " prefix chunks exceed the capacity's " +
                   std::to_string(cpMax));
  if (sc < 1)
    return invalid("a suffix needs >= 1 chunk, got " + std::to_string(sc));
  if (sc > scMax)
    return invalid("the step's " + std::to_string(sc) +
                   " chunks per suffix are outside 1.." +
                   std::to_string(scMax) + " (the capacity)");
  if (pageSize < 1 || prefixLen < 1 ||
      numPrefixPages != (prefixLen + pageSize - 1) / pageSize)
    return invalid(
        "a prefix of " + std::to_string(prefixLen) + " tokens takes " +
        std::to_string(pageSize < 1 ? 0
                                    : (prefixLen + pageSize - 1) / pageSize) +
        " pages of " + std::to_string(pageSize) + ", got " +
        std::to_string(numPrefixPages));
  if (b < 1 || b > r)
    return invalid("the step has " + std::to_string(b) +
                   " requests; the runner takes 1.." + std::to_string(r) +
                   " (maxRequests)");
  if (int64_t(INT32_MAX) / cMax < r || prefixLen > INT32_MAX)
    return invalid("chunk ids or prefix positions exceed int32");
  CascadeMetadata m;
  m.prefixChunks = cp;
  m.suffixChunks = sc;
  m.batch = b;
  int32_t rows = int32_t(b), pages = int32_t(numPrefixPages);
  m.prefixQo = {0, rows, rows};
  m.prefixKvIndptr = {0, pages, pages};
  m.prefixLast = {int32_t(prefixLen - (numPrefixPages - 1) * pageSize), 0};
  m.prefixChunkIndptr = {0, int32_t(cp), int32_t(c)};
  int64_t per = (prefixLen + cp - 1) / cp;
  // Grid positions past the step's chunks (capacity grids) run the padding
  // request's first chunk, Cp: no rows, no state.
  for (int64_t k = 0; k < cMax; ++k) {
    bool pad = k >= cp;
    m.prefixRequest.push_back(pad ? 1 : 0);
    m.prefixStarts.push_back(pad ? 0 : int32_t(std::min(prefixLen, k * per)));
    m.prefixEnds.push_back(pad ? 0
                               : int32_t(std::min(prefixLen, (k + 1) * per)));
    m.prefixOrder.push_back(int32_t(std::min(k, cp)));
  }
  std::vector<int64_t> lens = kvLengths(suffixes, pageSize);
  for (int64_t n : lens)
    if (n > INT32_MAX)
      return invalid("a suffix of " + std::to_string(n) +
                     " tokens exceeds int32 positions");
  for (int64_t i = 0; i <= r + 1; ++i) {
    m.qo.push_back(int32_t(std::min(i, b)));
    m.kvIndptr.push_back(suffixes.indptr[std::min(i, b)]);
    m.chunkIndptr.push_back(int32_t(c * (i <= r ? std::min(i, b) : r)));
  }
  for (int64_t i = 0; i <= r; ++i)
    m.last.push_back(i < b ? suffixes.lastPageLen[i] : 0);
  for (int64_t k = 0; k < cMax * r; ++k) {
    int64_t owner = k / c, t = k % c - cp;
    bool suffix = owner < b && t >= 0;
    m.request.push_back(int32_t(owner < b ? owner : r));
    m.starts.push_back(suffix ? int32_t(lens[owner] * t / sc) : 0);
    m.ends.push_back(suffix ? int32_t(lens[owner] * (t + 1) / sc) : 0);
  }
  for (int64_t i = 0; i < b; ++i)
    for (int64_t t = 0; t < sc; ++t)
      m.order.push_back(int32_t(c * i + cp + t));
  for (int64_t k = c * b; k < cMax * r; ++k)
    m.order.push_back(int32_t(k));
  for (int64_t k = 0; k < c * b; ++k)
    if (k % c < cp)
      m.order.push_back(int32_t(k));
  out = std::move(m);
  return Status::ok();
}

Status CascadeDecodeRunner::create(CudaDriver &driver,
                                   KernelBundle &prefillBundle,
                                   KernelBundle &decodeBundle,
                                   const Config &config,
                                   std::unique_ptr<CascadeDecodeRunner> &out) {
  const KernelInfo *pk = prefillBundle.find(config.prefillKernel);
  const KernelInfo *dk = decodeBundle.find(config.decodeKernel);
  const KernelInfo *mk = decodeBundle.find(config.mergeKernel);
  if (!pk || !dk || !mk)
    return invalid("the bundles have no kernels " + config.prefillKernel +
                   " (prefill) and " + config.decodeKernel + " / " +
                   config.mergeKernel + " (decode)");
  // Split kernels whose parameters hold for every query row alike (the
  // prefix kernel's rows are every request's): scalars and per-head ones.
  auto splitAbi = [](const KernelInfo *k, KernelKind kind) {
    if (k->kind != kind || !k->split())
      return false;
    for (const KernelArg &a : k->args)
      if (a.role == ArgRole::Param && a.paramKind != abi::ParamKind::Scalar &&
          a.paramKind != abi::ParamKind::PerHead)
        return false;
    return true;
  };
  if (pk->ragged || dk->ragged)
    return invalid("a cascade reads paged views; " +
                   (pk->ragged ? config.prefillKernel : config.decodeKernel) +
                   " reads a ragged one");
  if (!splitAbi(pk, KernelKind::Prefill))
    return invalid(config.prefillKernel +
                   " is not a split-KV prefill kernel (flashir-bundle "
                   "--split-prefill) with only scalar and per-head variant "
                   "parameters");
  // Decode queries see the whole prefix: a mask (e.g. causal, which would
  // line row i up with key prefixLen - B + i) would drop prefix keys, and
  // position hooks would see the prefix kernel's positions, not theirs.
  if (!pk->positionFree)
    return invalid(config.prefillKernel + " has variant '" + pk->variant +
                   "', which masks or reads positions; the prefix needs a "
                   "position-free one (e.g. 'plain', a soft-cap without a "
                   "mask)");
  if (!splitAbi(dk, KernelKind::Decode) || dk->mergeKernel != mk->name)
    return invalid(config.decodeKernel + " / " + config.mergeKernel +
                   " are not a split-KV decode kernel with only scalar and "
                   "per-head variant parameters and its merge kernel");
  // One set of parameters serves both kernels.
  if (pk->variant != dk->variant || pk->numParams() != dk->numParams())
    return invalid(config.prefillKernel + " and " + config.decodeKernel +
                   " attend different variants ('" + pk->variant + "', '" +
                   dk->variant + "')");
  // Same q, pools and states on both sides.
  const KernelArg *pPartial = pk->arg(ArgRole::PartialO),
                  *mPartial = mk->arg(ArgRole::PartialO);
  if (pk->arg(ArgRole::Q)->shape != dk->arg(ArgRole::Q)->shape ||
      pk->element() != dk->element() || pk->hnd != dk->hnd ||
      pk->arg(ArgRole::KPool)->shape != dk->arg(ArgRole::KPool)->shape ||
      pPartial->shape != mPartial->shape ||
      pPartial->element != mPartial->element ||
      elementBytes(mPartial->element) == 0)
    return invalid(
        config.prefillKernel + " and " + config.decodeKernel +
        " differ in heads, head dim, page size, KV layout or element type");
  if (config.maxRequests < 1)
    return invalid("maxRequests must be >= 1");
  if (config.suffixChunks < 1)
    return invalid("suffixChunks must be >= 1, got " +
                   std::to_string(config.suffixChunks));
  std::unique_ptr<CascadeDecodeRunner> runner(new CascadeDecodeRunner());
  CascadeDecodeRunner &rn = *runner;
  rn.driver = &driver;
  rn.prefill = &prefillBundle;
  rn.decode = &decodeBundle;
  rn.config = config;
  rn.hq = dk->numQoHeads();
  rn.d = dk->headDim();
  rn.page = dk->pageSize();
  rn.hkv = dk->numKvHeads();
  rn.qTokens = pk->qTokens;
  rn.gridHeads = detail::gridHeads(*pk);
  int64_t r = config.maxRequests;
  int64_t qTiles = (r + rn.qTokens - 1) / rn.qTokens;
  rn.prefixChunks_ = config.prefixChunks;
  if (rn.prefixChunks_ <= 0) {
    // One wave of the prefill kernel: resident CTAs over its CTAs per chunk.
    int64_t resident = 0;
    if (Status s = prefillBundle.residentCtas(config.prefillKernel, resident);
        !s)
      return s;
    rn.prefixChunks_ = std::max<int64_t>(2, resident / (qTiles * rn.gridHeads));
  }
  if (rn.prefixChunks_ < 2)
    return invalid("prefixChunks must be >= 2, got " +
                   std::to_string(rn.prefixChunks_));
  int64_t c = rn.capacityChunks();
  if (int64_t(INT32_MAX) / c < r)
    return invalid("the capacity's chunk ids (" + std::to_string(c) + " x " +
                   std::to_string(r) + " requests) exceed int32");
  CascadeLayout layout(c, r);
  rn.metadataBytes = layout.total * 4;
  // The partial states of CMax chunks x r one-row requests, sized as the
  // split-KV workspace's.
  WorkspaceSize states = workspaceSize(PlanCapacity{r, c * r, 1}, rn.hq, rn.d,
                                       elementBytes(mPartial->element));
  rn.partialOOffset = alignUp(rn.metadataBytes, 256);
  rn.partialLseOffset =
      alignUp(rn.partialOOffset + states.partialOutputBytes, 256);
  rn.mapsOffset = alignUp(rn.partialLseOffset + states.partialLseBytes, 256);
  // Two sets of tensor maps: the decode kernel's and the prefill kernel's
  // (the wgmma prefill kernels read theirs; others get the decode's).
  if (Status s = driver.alloc(rn.mapsOffset + 2 * int64_t(kKvMapsBytes),
                              &rn.workspace);
      !s)
    return s;
  if (Status s = driver.allocHost(alignUp(rn.metadataBytes, 256) +
                                      2 * int64_t(kKvMapsBytes),
                                  &rn.staging);
      !s)
    return s;
  if (Status s = driver.createStream(&rn.side); !s)
    return s;
  if (Status s = driver.createEvent(&rn.fork, /*timing=*/false); !s)
    return s;
  if (Status s = driver.createEvent(&rn.join, /*timing=*/false); !s)
    return s;
  out = std::move(runner);
  return Status::ok();
}

CascadeDecodeRunner::~CascadeDecodeRunner() {
  if (workspace)
    (void)driver->free(workspace);
  if (staging)
    (void)driver->freeHost(staging);
  if (join)
    (void)driver->destroyEvent(join);
  if (fork)
    (void)driver->destroyEvent(fork);
  if (side)
    (void)driver->destroyStream(side);
}

Status CascadeDecodeRunner::plan(const int32_t *prefixIndices,
                                 int64_t numPrefixPages, int64_t prefixLen,
                                 const PageTableRef &suffixes, int64_t numPages,
                                 void *stream) {
  if (!prefixIndices && numPrefixPages > 0)
    return invalid("no prefix page ids");
  for (int64_t i = 0; i < numPrefixPages; ++i)
    if (prefixIndices[i] < 0 || prefixIndices[i] >= numPages)
      return invalid("prefix page id [" + std::to_string(i) +
                     "] = " + std::to_string(prefixIndices[i]) +
                     " is outside the page pool [0, " +
                     std::to_string(numPages) + ")");
  if (Status s = validatePageTable(suffixes, numPages, page); !s)
    return s;
  // An explicit chunk count is every step's; by default short prefixes
  // take fewer chunks (the rest of the capacity's are padding).
  int64_t chunks =
      config.prefixChunks > 0
          ? prefixChunks_
          : cascadePrefixChunks(prefixLen, config.minChunkKeys, prefixChunks_);
  std::vector<int64_t> lens = kvLengths(suffixes, page);
  int64_t longest =
      lens.empty() ? 0 : *std::max_element(lens.begin(), lens.end());
  CascadeChunks split{chunks,
                      cascadeSuffixChunks(longest, config.minSuffixChunkKeys,
                                          config.suffixChunks),
                      prefixChunks_, config.suffixChunks};
  CascadeMetadata m;
  if (Status s = buildCascadeMetadata(prefixLen, numPrefixPages, split,
                                      suffixes, page, config.maxRequests, m);
      !s)
    return s;
  CascadeLayout layout(capacityChunks(), config.maxRequests);
  auto *dst = static_cast<int32_t *>(staging);
  std::vector<const std::vector<int32_t> *> arrays = arraysOf(m);
  for (size_t i = 0; i < arrays.size(); ++i) {
    if (int64_t(arrays[i]->size()) != layout.at[i].second)
      return Status::error(StatusCode::InvalidArgument,
                           "internal: cascade metadata array " +
                               std::to_string(i) + " has the wrong size");
    std::memcpy(dst + layout.at[i].first, arrays[i]->data(),
                size_t(layout.at[i].second) * 4);
  }
  if (Status s =
          driver->copyToDeviceAsync(workspace, staging, metadataBytes, stream);
      !s)
    return s;
  batch = m.batch;
  plannedPrefix = chunks;
  plannedSuffix = split.suffix;
  plannedPrefixPages = numPrefixPages;
  plannedSuffixPages = suffixes.indptr[suffixes.batchSize];
  plannedPoolPages = numPages;
  return Status::ok();
}

Status CascadeDecodeRunner::run(const Buffers &buffers, void *stream,
                                bool capacityGrids) {
  if (batch < 1)
    return invalid("run() before plan()");
  if (buffers.numPages < 1 || buffers.numPrefixIndices < plannedPrefixPages ||
      buffers.numSuffixIndices < std::max<int64_t>(plannedSuffixPages, 1))
    return invalid("run() needs a page pool and the planned page ids (" +
                   std::to_string(plannedPrefixPages) + " of the prefix, " +
                   std::to_string(plannedSuffixPages) +
                   " of the suffixes), got " +
                   std::to_string(buffers.numPrefixIndices) + " and " +
                   std::to_string(buffers.numSuffixIndices));
  if (Status s = detail::checkPlannedPool(buffers.numPages, plannedPoolPages);
      !s)
    return s;
  if (const KernelInfo *k = prefill->find(config.prefillKernel))
    if (Status s = checkPoolRows(*k, buffers.numPages); !s)
      return s;
  if (Status s = checkParams(*decode->find(config.decodeKernel), buffers.params,
                             batch);
      !s)
    return s;
  auto *base = static_cast<char *>(workspace);
  // Each kernel's tensor maps (all zeros for one that reads none), each in
  // its own staging bytes: the uploads are asynchronous.
  char *stagedMaps = static_cast<char *>(staging) + alignUp(metadataBytes, 256);
  if (Status s = decode->refreshKvMaps(
          maps, config.decodeKernel, buffers.kPool, buffers.vPool,
          buffers.numPages,
          detail::kvMapsUpload(*driver, stream, stagedMaps, base + mapsOffset));
      !s)
    return s;
  if (Status s = prefill->refreshKvMaps(
          prefillMaps, config.prefillKernel, buffers.kPool, buffers.vPool,
          buffers.numPages,
          detail::kvMapsUpload(*driver, stream, stagedMaps + kKvMapsBytes,
                               base + mapsOffset + kKvMapsBytes));
      !s)
    return s;
  int64_t c = capacityChunks(), r = config.maxRequests;
  CascadeLayout layout(c, r);
  auto meta = [&](size_t i) {
    return KernelBundle::Arg::memref(base + layout.at[i].first * 4,
                                     {layout.at[i].second});
  };

  auto memref = KernelBundle::Arg::memref;
  KernelBundle::Arg q = memref(buffers.q, {r, hq, d});
  KernelBundle::Arg kPool =
      memref(buffers.kPool, {buffers.numPages, page, hkv, d});
  KernelBundle::Arg vPool =
      memref(buffers.vPool, {buffers.numPages, page, hkv, d});
  KernelBundle::Arg partialO = memref(base + partialOOffset, {c * r, hq, d});
  KernelBundle::Arg partialLse = memref(base + partialLseOffset, {c * r, hq});
  KernelBundle::Arg out = memref(buffers.out, {r, hq, d});
  KernelBundle::Arg lse = memref(buffers.lse, {r, hq});
  KernelBundle::Arg kvMaps = memref(base + mapsOffset, {2, 16});
  KernelBundle::Arg prefillKvMaps =
      memref(base + mapsOffset + kKvMapsBytes, {2, 16});
  // Both kernels take the split-KV ABI: metadata arrays first .. first + 7
  // (qo, kv indptr, last page lengths, chunk indptr, chunk requests, starts,
  // ends, order) around their page ids. The prefill kernel never writes
  // `out` / `lse` (its one request has Cp >= 2 chunks): they are passed for
  // the ABI only.
  auto splitArgs = [&](size_t first, void *indices, int64_t numIndices,
                       const KernelBundle::Arg &maps) {
    return KernelBundle::RoleArgs{
        {ArgRole::Q, q},
        {ArgRole::QoIndptr, meta(first)},
        {ArgRole::KPool, kPool},
        {ArgRole::VPool, vPool},
        {ArgRole::KvIndptr, meta(first + 1)},
        {ArgRole::KvIndices, memref(indices, {numIndices})},
        {ArgRole::LastPageLen, meta(first + 2)},
        {ArgRole::ChunkIndptr, meta(first + 3)},
        {ArgRole::ChunkRequest, meta(first + 4)},
        {ArgRole::ChunkStarts, meta(first + 5)},
        {ArgRole::ChunkEnds, meta(first + 6)},
        {ArgRole::ChunkOrder, meta(first + 7)},
        {ArgRole::PartialO, partialO},
        {ArgRole::PartialLse, partialLse},
        {ArgRole::Out, out},
        {ArgRole::Lse, lse},
        {ArgRole::KvMaps, maps}};
  };
  // The merge reads the suffix's (decode side's) qo and chunk indptr.
  KernelBundle::RoleArgs suffix =
      splitArgs(8, buffers.suffixIndices, buffers.numSuffixIndices, kvMaps);
  std::vector<KernelBundle::Arg> prefillArgs, decodeArgs, mergeArgs;
  std::vector<KernelBundle::Arg> params =
      KernelBundle::paramArgs(buffers.params);
  for (auto [bundle, kernel, roles, args, variantArgs] :
       {std::tuple{prefill, &config.prefillKernel,
                   splitArgs(0, buffers.prefixIndices, buffers.numPrefixIndices,
                             prefillKvMaps),
                   &prefillArgs, params},
        std::tuple{decode, &config.decodeKernel, suffix, &decodeArgs, params},
        std::tuple{decode, &config.mergeKernel, suffix, &mergeArgs,
                   std::vector<KernelBundle::Arg>{}}})
    if (Status s = bundle->arrange(*kernel, roles, variantArgs, *args); !s)
      return s;
  int64_t rows = capacityGrids ? r : batch;
  // The decode kernel's positions: each request's suffix chunks.
  unsigned suffixPositions =
      unsigned(capacityGrids ? r * config.suffixChunks : batch * plannedSuffix);
  auto launchPrefix = [&] {
    return prefill->launchArgs(
        config.prefillKernel, prefillArgs,
        unsigned(capacityGrids ? prefixChunks_ : plannedPrefix),
        unsigned((rows + qTokens - 1) / qTokens), stream, unsigned(gridHeads));
  };
  // sm_90 bundles: one stream. The suffix decode goes behind the prefix
  // kernel with programmatic serialization (it reads nothing the prefix
  // kernel writes): its CTAs start once the prefix kernel's have and take
  // the slots that kernel leaves and those its retiring CTAs free; its last
  // CTA waits for the prefix kernel, so the merge, launched behind it the
  // same way (and waiting for it), sees both kernels' states.
  if (chained()) {
    if (Status s = launchPrefix(); !s)
      return s;
    if (Status s = decode->launchBehind(config.decodeKernel, decodeArgs,
                                        suffixPositions, unsigned(hkv), stream);
        !s)
      return s;
    return decode->launchArgs(config.mergeKernel, mergeArgs, unsigned(rows),
                              unsigned(hq), stream, 1, /*programmatic=*/true);
  }
  // Otherwise the suffix decode runs on the second stream next to the
  // prefix kernel (they write disjoint states), to the same end.
  if (Status s = driver->recordEvent(fork, stream); !s)
    return s;
  if (Status s = driver->waitEvent(side, fork); !s)
    return s;
  // Once forked, the side stream is joined back even when a launch fails
  // (an unjoined stream would break a graph capture around this call).
  Status launched = decode->launchArgs(config.decodeKernel, decodeArgs,
                                       suffixPositions, unsigned(hkv), side);
  Status joined = driver->recordEvent(join, side);
  if (launched)
    launched = launchPrefix();
  if (joined)
    joined = driver->waitEvent(stream, join);
  if (!launched)
    return launched;
  if (!joined)
    return joined;
  // A plain launch: the merge's predecessor on `stream` is the prefix
  // kernel, but it also reads the decode kernel's states (the join).
  return decode->launchArgs(config.mergeKernel, mergeArgs, unsigned(rows),
                            unsigned(hq), stream, 1, /*programmatic=*/false);
}
