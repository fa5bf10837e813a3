//===- Cascade.h - shared-prefix (cascade) decode --------------*- C++ -*-===//
//
// Decoding B one-row requests that share a prefix: the split-KV prefill
// kernel attends all B query rows to the prefix once (in Cp chunks), the
// split-KV decode kernel each request's own suffix (in S chunks), and the
// decode kernel's merge kernel merges each request's Cp + S states. Nothing
// is copied: the chunk metadata places every state where the merge reads it
// (the kernels' partial row `c + C * i`; docs/NVIDIA.md, "composition
// through chunk metadata").
//
//===----------------------------------------------------------------------===//

#ifndef FLASHIR_RUNTIME_CASCADE_H
#define FLASHIR_RUNTIME_CASCADE_H

#include "flashir/Runtime/Launcher.h"
#include "flashir/Runtime/PageTable.h"

namespace flashir::runtime {

/// The chunks of a step: Cp of the prefix, S of each suffix; and the
/// runner's capacity for them (0: the step's own), which sizes the arrays.
struct CascadeChunks {
  int64_t prefix = 0, suffix = 1;
  int64_t prefixCapacity = 0, suffixCapacity = 0;
};

/// The metadata of both kernels for one step, C = Cp + S chunks per
/// request, each array padded to the runner's capacity (CMax = the
/// capacities' sum: entries past the step's are the padding request's).
struct CascadeMetadata {
  /// Prefill side: request 0 is the B query rows over the prefix, request 1
  /// pads. Chunks [0, Cp) cut the prefix; chunks [Cp, C) (request 1) are
  /// empty (no rows: a capacity grid's positions past Cp run chunk Cp and
  /// exit), so row i's chunk-k state lands at partial row k + C i.
  std::vector<int32_t> prefixQo, prefixKvIndptr, prefixLast;    ///< 3, 3, 2
  std::vector<int32_t> prefixChunkIndptr;                       ///< 3
  std::vector<int32_t> prefixRequest, prefixStarts, prefixEnds; ///< CMax
  std::vector<int32_t> prefixOrder;                             ///< CMax
  /// Decode side, padded to maxRequests: request r < B owns chunks
  /// [C r, C r + C) -- its Cp prefix states, then its suffix chunks
  /// C r + Cp + t, t < S (keys [n t / S, n (t + 1) / S) of its n; a suffix
  /// shorter than S has empty ones), whose one-row states land at those
  /// partial rows. A suffix chunk is one CTA walking its keys tile by tile,
  /// so S > 1 shortens the decode kernel's longest CTA. The padding request
  /// (index maxRequests, no rows) owns chunks [C B, C maxRequests) by
  /// chunkIndptr, and the arrays' entries up to CMax maxRequests. `order`
  /// lists the suffix chunks first (request-major), then those ids past
  /// C B, so a capacity grid of SMax maxRequests positions never runs a
  /// prefix chunk id.
  std::vector<int32_t> qo, kvIndptr;                 ///< maxRequests + 2
  std::vector<int32_t> last;                         ///< maxRequests + 1
  std::vector<int32_t> chunkIndptr;                  ///< maxRequests + 2
  std::vector<int32_t> request, starts, ends, order; ///< CMax maxRequests
  int64_t prefixChunks = 0, suffixChunks = 1, batch = 0;
};

/// Builds the metadata of a step: a prefix of `prefixLen` tokens on
/// `numPrefixPages` pages cut into `chunks.prefix` (2 .. its capacity)
/// chunks, and the requests' suffixes (`suffixes`, already validated; empty
/// suffixes are allowed) into `chunks.suffix` (1 .. its capacity) each;
/// arrays sized for the capacities. Errors name the bad input.
Status buildCascadeMetadata(int64_t prefixLen, int64_t numPrefixPages,
                            const CascadeChunks &chunks,
                            const PageTableRef &suffixes, int64_t pageSize,
                            int64_t maxRequests, CascadeMetadata &out);

/// Prefix chunks of a step: ceil(prefixLen / minChunkKeys), clamped to
/// [2, capacityChunks] -- a chunk of fewer keys spends more on its CTA's
/// start and its state than on attention.
int64_t cascadePrefixChunks(int64_t prefixLen, int64_t minChunkKeys,
                            int64_t capacityChunks);
/// Suffix chunks of a step: ceil(longest suffix / minChunkKeys), clamped to
/// [1, capacityChunks].
int64_t cascadeSuffixChunks(int64_t longestSuffix, int64_t minChunkKeys,
                            int64_t capacityChunks);

class CascadeDecodeRunner {
public:
  struct Config {
    /// `<f>_prefill_N` of a split-KV prefill bundle (a non-causal variant:
    /// decode queries see the whole prefix) and `<g>_decode_N` /
    /// `<g>_merge_N` of a split-KV decode bundle, for the same heads, head
    /// dim, page size and element type; no variant parameters.
    std::string prefillKernel, decodeKernel, mergeKernel;
    int64_t maxRequests = 0;
    /// Cp; <= 0: the prefill kernel's resident CTAs over its CTAs per chunk
    /// (q tiles of maxRequests rows x heads), at least 2, as the capacity,
    /// and per step ceil(prefix tokens / minChunkKeys) chunks within it.
    int64_t prefixChunks = 0;
    int64_t minChunkKeys = 256;
    /// S's capacity (>= 1); per step ceil(longest suffix /
    /// minSuffixChunkKeys) chunks within it, for every request alike (a
    /// shorter suffix's extra chunks are empty: their CTAs exit, the merge
    /// weighs their states 0). 64 keys a chunk was measured best at 128-key
    /// suffixes (bench/results, "suffix chunks").
    int64_t suffixChunks = 4;
    int64_t minSuffixChunkKeys = 64;
  };
  static Status create(CudaDriver &driver, KernelBundle &prefillBundle,
                       KernelBundle &decodeBundle, const Config &config,
                       std::unique_ptr<CascadeDecodeRunner> &out);
  ~CascadeDecodeRunner();

  /// Validates the prefix page ids (host, numPrefixPages of them, in
  /// [0, numPages)) and the suffix page table, builds the metadata and
  /// enqueues its copy on `stream` (synchronize `stream` before planning
  /// again: the staging buffer is reused).
  Status plan(const int32_t *prefixIndices, int64_t numPrefixPages,
              int64_t prefixLen, const PageTableRef &suffixes, int64_t numPages,
              void *stream);

  struct Buffers {
    /// q [B, Hq, D] (or more rows: the kernels touch rows < B only), pools
    /// [numPages, page, Hkv, D], int32 page ids of the prefix and of the
    /// suffixes, out [B, Hq, D] and lse [B, Hq] f32 (or more rows).
    void *q = nullptr, *kPool = nullptr, *vPool = nullptr,
         *prefixIndices = nullptr, *suffixIndices = nullptr, *out = nullptr,
         *lse = nullptr;
    int64_t numPages = 0, numPrefixIndices = 0, numSuffixIndices = 0;
    /// The variant's parameters (scalars and per-head tensors), passed to
    /// the prefix and suffix kernels alike.
    std::vector<AttentionBuffers::Param> params;
  };
  /// Launches the prefill, decode and merge kernels on `stream`, the decode
  /// and merge kernels behind the prefill kernel with programmatic stream
  /// serialization where the decode bundle's manifest allows (sm_90: the
  /// decode kernel `completes_after_predecessor`, the merge
  /// `programmatic_wait`); otherwise the decode kernel on the runner's
  /// second stream, forked from and joined back to `stream` by events. The
  /// prefill kernel goes behind whatever precedes it on `stream` the same
  /// way where its manifest marks it `programmatic_wait` (sm_90: every CTA
  /// waits for that grid before its first access).
  /// Either way capturable into a CUDA graph; `capacityGrids` as
  /// SplitKVRunner::run (required in a CUDA graph).
  Status run(const Buffers &buffers, void *stream, bool capacityGrids = true);
  /// Whether run() chains the kernels on one stream (see run()).
  bool chained() const {
    return decode->completesAfterPredecessor(config.decodeKernel) &&
           decode->waitsForPredecessor(config.mergeKernel);
  }

  /// The capacity's prefix chunks; plannedPrefixChunks(): the last plan's.
  int64_t prefixChunks() const { return prefixChunks_; }
  int64_t plannedPrefixChunks() const { return plannedPrefix; }
  /// The last plan's chunks per suffix.
  int64_t plannedSuffixChunks() const { return plannedSuffix; }
  int64_t numQoHeads() const { return hq; }
  int64_t numKvHeads() const { return hkv; }
  int64_t headDim() const { return d; }
  int64_t pageSize() const { return page; }

private:
  CascadeDecodeRunner() = default;
  /// CMax: the capacity's chunks per request.
  int64_t capacityChunks() const { return prefixChunks_ + config.suffixChunks; }
  CudaDriver *driver = nullptr;
  KernelBundle *prefill = nullptr, *decode = nullptr;
  Config config;
  int64_t hq = 0, hkv = 0, d = 0, page = 0, qTokens = 0, gridHeads = 0;
  int64_t prefixChunks_ = 0, plannedPrefix = 0, plannedSuffix = 1, batch = 0;
  /// Page ids the planned step reads (run() checks the arrays hold them).
  int64_t plannedPrefixPages = 0, plannedSuffixPages = 0;
  /// The pool's pages plan() checked the page ids against.
  int64_t plannedPoolPages = 0;
  void *workspace = nullptr, *staging = nullptr;
  /// The decode kernel's stream and the events that fork it from and join
  /// it to run()'s stream.
  void *side = nullptr, *fork = nullptr, *join = nullptr;
  /// Tensor maps: the decode kernel's at mapsOffset, the prefill kernel's
  /// (where it reads any) right after; each cache remembers its upload.
  int64_t metadataBytes = 0, partialOOffset = 0, partialLseOffset = 0,
          mapsOffset = 0;
  KvMapsCache maps, prefillMaps;
};

} // namespace flashir::runtime

#endif // FLASHIR_RUNTIME_CASCADE_H
