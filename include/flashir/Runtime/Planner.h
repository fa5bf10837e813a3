//===- Planner.h - per-step work split for split-KV kernels -----*- C++ -*-===//
//
// The "plan" half of plan/run (seed 000, sec. 6): each generation step, the
// host splits the batch's attention work into chunks and balances them over
// the CTAs that run at once; the compiled kernels read the result (chunk
// arrays) from fixed addresses. No LLVM/MLIR or CUDA dependency.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHIR_RUNTIME_PLANNER_H
#define FLASHIR_RUNTIME_PLANNER_H

#include "flashir/Runtime/PageTable.h"
#include "flashir/Runtime/Status.h"

#include <cstdint>
#include <vector>

namespace flashir::runtime {

/// Predicted cost of a work item, eq. (11): alpha * query rows + beta * keys
/// (alpha also stands for a CTA's fixed overhead). Calibrated per kernel.
struct CostModel {
  double alpha = 32.0;
  double beta = 1.0;
  /// The kernel walks an item's keys once per query row (the decode
  /// kernels): beta * rows * keys instead of beta * keys, and the work W of
  /// eq. (10) counts rows * keys. The same for one-row items.
  bool keysPerQueryRow = false;
  /// A piece's fixed cost is alpha * rows (a kernel that pays it per row);
  /// false: alpha per piece (a kernel that pays it per CTA, e.g. the
  /// split-KV prefill kernel, which serves a q tile's rows together).
  bool fixedPerRow = true;
};

struct PlannerOptions {
  /// C: CTAs the GPU runs at once for this kernel (occupancy x SMs), > 0.
  int64_t numCtas = 0;
  /// Tq: query rows per work item; 0 = a request's rows stay together (the
  /// decode kernels loop over them).
  int64_t queryTile = 0;
  /// > 0: batch-invariant mode, chunks of exactly this many keys (the last
  /// one shorter), longest first to the least-loaded CTA (min-heap): a
  /// request's chunks, hence its result bits, do not depend on the rest of
  /// the batch. 0: balanced mode (water-filling, see plan()).
  int64_t fixedChunkSize = 0;
  /// Balanced mode cuts no chunk shorter than this many keys.
  int64_t minChunk = 16;
  CostModel cost;
};

/// What the workspace was sized for; plan() refuses batches beyond it.
struct PlanCapacity {
  int64_t maxRequests = 0;
  /// Work items (chunks) of one step.
  int64_t maxChunks = 0;
  /// Query rows of one request (partial states are per chunk and row).
  int64_t maxQueryRowsPerRequest = 1;
};

/// The batch to plan: ragged queries over a paged KV cache.
struct BatchRef {
  PageTableRef table;
  const int32_t *qoIndptr = nullptr; ///< [batchSize + 1]
  int64_t numPages = 0;
  int64_t pageSize = 0;
  int64_t numQoHeads = 0;
  int64_t numKvHeads = 0;
};

/// Query rows [qBegin, qEnd) of `request` against its keys [kBegin, kEnd).
struct WorkItem {
  int32_t request, qBegin, qEnd, kBegin, kEnd;
  int32_t cta; ///< CTA (virtual; one per KV head in the grid) it runs on
  double cost; ///< eq. (11)
};

struct Plan {
  /// Work items in stable order: by request, query tile, then keys. Item i
  /// is chunk i of the split-KV kernels.
  std::vector<WorkItem> items;
  /// Kernel arrays (queryTile = 0): request b's chunks are
  /// [chunkIndptr[b], chunkIndptr[b+1]), in key order; that order is the
  /// merge order.
  std::vector<int32_t> chunkIndptr, chunkRequest, chunkStarts, chunkEnds;
  /// Dispatch order: position p of the kernel grid runs chunk chunkOrder[p]
  /// (longest first). The GPU starts a grid's CTAs in order as earlier ones
  /// finish, so this order is the list schedule the makespan predicts.
  std::vector<int32_t> chunkOrder;
  /// Item ids per CTA slot in execution order (longest first), as the list
  /// schedule of chunkOrder places them: slot c runs
  /// ctaItems[ctaIndptr[c] .. ctaIndptr[c+1]).
  std::vector<int32_t> ctaIndptr, ctaItems;
  /// Per output row group (request, query tile): its items in key order
  /// (the ordered merge list); [mergeIndptr[t], mergeIndptr[t+1]) of
  /// mergeItems, tiles numbered in request order.
  std::vector<int32_t> mergeIndptr, mergeItems;
  int64_t chunkSize = 0;   ///< L
  int64_t work = 0;        ///< W, eq. (10)
  double makespan = 0.0;   ///< predicted: the most loaded CTA
  double lowerBound = 0.0; ///< eq. (12): max(sum of costs / C, max cost)
  /// Eq. (12) for any chunking: every query tile's work uncut (one chunk
  /// overhead each) spread over C, or the smallest piece of the largest
  /// tile. A plan-independent bound on the makespan.
  double idealBound = 0.0;
  int64_t partialRows = 0; ///< rows of partial_o / partial_lse written
};

/// Workspace of a capacity, in bytes (partial states of `numQoHeads` heads
/// of `headDim`: O of `outputElementBytes` per element, f32 lse; and the
/// int32 chunk arrays).
struct WorkspaceSize {
  int64_t partialOutputBytes = 0;
  int64_t partialLseBytes = 0;
  int64_t metadataBytes = 0;
  /// The decode kernel's K and V tensor maps (kv_maps).
  int64_t kvMapsBytes = 256;
  int64_t total() const {
    return partialOutputBytes + partialLseBytes + metadataBytes + kvMapsBytes;
  }
};
WorkspaceSize workspaceSize(const PlanCapacity &capacity, int64_t numQoHeads,
                            int64_t headDim, int64_t outputElementBytes);

/// Most chunks a plan of `numTiles` query tiles (with keys) can have when
/// the chunk bound comes from C (fixedChunkSize = 0): every tile's
/// ceil(Lkv / L) <= Lkv / L + 1 and L >= W / C, so at most C + numTiles —
/// the analogue of eq. (13) for sizing a workspace.
int64_t maxChunksFor(int64_t numCtas, int64_t numTiles);

/// Validates the batch (indptr monotone, page ids in range, last_page_len in
/// 1..page_size, Hq % Hkv = 0, ...) and plans it. Errors name the offending
/// input or the capacity limit; nothing is written to `plan` on error.
///
/// Balanced mode: W (eq. 10) gives the chunk bound L = max(1, ceil(W / C)).
/// The kernels run one CTA per chunk (and KV head), started in dispatch
/// order as earlier ones finish: list scheduling, which the plan predicts
/// with the longest chunks first (LPT). Candidate chunkings, each judged by
/// that makespan (cost model eq. 11), the best kept: a water-fill (the query
/// tiles' key ranges, longest first, fill C CTAs up to a common load T, cut
/// where one is full; T the smallest that fits, by binary search), even cuts
/// of at most ceil(W / kC) keys for k = 1, 2, 4 (k = 1 is the paper's
/// algorithm), and the longest tile cut into n = 1..4 pieces (uniform
/// batches then fill whole waves). Candidates beyond maxChunks are skipped.
Status plan(const BatchRef &batch, const PlannerOptions &options,
            const PlanCapacity &capacity, Plan &plan);

} // namespace flashir::runtime

#endif // FLASHIR_RUNTIME_PLANNER_H
