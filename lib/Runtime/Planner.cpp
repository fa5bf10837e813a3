//===- Planner.cpp - per-step work split for split-KV kernels -------------===//

#include "flashir/Runtime/Planner.h"
#include "Internal.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <queue>
#include <string>

using namespace flashir::runtime;
using detail::alignUp;
using detail::invalid;

namespace {

Status overCapacity(const std::string &what, int64_t need, int64_t limit,
                    const char *field) {
  return Status::error(StatusCode::CapacityExceeded,
                       "the batch needs " + std::to_string(need) + " " + what +
                           ", more than the workspace capacity of " +
                           std::to_string(limit) + " (PlanCapacity::" + field +
                           ")");
}

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

} // namespace

WorkspaceSize flashir::runtime::workspaceSize(const PlanCapacity &capacity,
                                              int64_t numQoHeads,
                                              int64_t headDim,
                                              int64_t outputElementBytes) {
  int64_t rows = capacity.maxChunks * capacity.maxQueryRowsPerRequest;
  WorkspaceSize size;
  size.partialOutputBytes = rows * numQoHeads * headDim * outputElementBytes;
  size.partialLseBytes = rows * numQoHeads * 4;
  // SplitKVRunner's padded arrays (StepMetadata): qo_indptr, kv indptr,
  // chunk_indptr (maxRequests + 2 each), last_page_len (maxRequests + 1),
  // chunk_request / starts / ends / order (maxChunks each).
  size.metadataBytes =
      (4 * capacity.maxRequests + 7 + 4 * capacity.maxChunks) * 4;
  return size;
}

int64_t flashir::runtime::maxChunksFor(int64_t numCtas, int64_t numTiles) {
  return numCtas + numTiles;
}

Status flashir::runtime::plan(const BatchRef &batch,
                              const PlannerOptions &options,
                              const PlanCapacity &capacity, Plan &result) {
  // Inputs first: nothing reaches a kernel unless the batch is valid.
  if (batch.numQoHeads < 1 || batch.numKvHeads < 1 ||
      batch.numQoHeads % batch.numKvHeads != 0)
    return invalid("num_qo_heads (" + std::to_string(batch.numQoHeads) +
                   ") must be a positive multiple of num_kv_heads (" +
                   std::to_string(batch.numKvHeads) + ")");
  if (options.numCtas < 1)
    return invalid("numCtas must be >= 1, got " +
                   std::to_string(options.numCtas));
  if (options.queryTile < 0 || options.fixedChunkSize < 0 ||
      options.minChunk < 0)
    return invalid("queryTile, fixedChunkSize and minChunk must be >= 0");
  if (!(options.cost.alpha >= 0.0) || !(options.cost.beta > 0.0))
    return invalid("cost model needs alpha >= 0 and beta > 0");
  if (Status s = validatePageTable(batch.table, batch.numPages, batch.pageSize);
      !s)
    return s;
  int64_t batchSize = batch.table.batchSize;
  if (!batch.qoIndptr)
    return invalid("qo_indptr is null");
  if (batch.qoIndptr[0] != 0)
    return invalid("qo_indptr[0] must be 0, got " +
                   std::to_string(batch.qoIndptr[0]));
  int64_t maxRows = 0;
  for (int64_t b = 0; b < batchSize; ++b) {
    int64_t rows = int64_t(batch.qoIndptr[b + 1]) - batch.qoIndptr[b];
    if (rows < 0)
      return invalid("qo_indptr decreases at request " + std::to_string(b) +
                     " (" + std::to_string(batch.qoIndptr[b]) + " -> " +
                     std::to_string(batch.qoIndptr[b + 1]) + ")");
    maxRows = std::max(maxRows, rows);
  }
  if (batchSize > capacity.maxRequests)
    return overCapacity("requests", batchSize, capacity.maxRequests,
                        "maxRequests");
  if (maxRows > capacity.maxQueryRowsPerRequest)
    return overCapacity("query rows in one request", maxRows,
                        capacity.maxQueryRowsPerRequest,
                        "maxQueryRowsPerRequest");

  // Eq. (10): W = sum over query tiles of the tile's KV length.
  std::vector<int64_t> kvLens = kvLengths(batch.table, batch.pageSize);
  struct Stream {
    int32_t request, qBegin, qEnd;
    int64_t keys;
    /// alpha * rows (fixed cost of a piece) and cost per key.
    double fixed, slope;
  };
  const double alpha = options.cost.alpha, beta = options.cost.beta;
  std::vector<Stream> streams;
  streams.reserve(batchSize);
  int64_t work = 0;
  for (int64_t b = 0; b < batchSize; ++b) {
    int64_t rows = batch.qoIndptr[b + 1] - batch.qoIndptr[b];
    int64_t tile = options.queryTile ? options.queryTile : rows;
    for (int64_t q0 = 0; q0 < rows; q0 += tile) {
      int64_t q1 = std::min(rows, q0 + tile);
      int64_t perKey = options.cost.keysPerQueryRow ? q1 - q0 : 1;
      streams.push_back({int32_t(b), int32_t(q0), int32_t(q1), kvLens[b],
                         alpha * double(options.cost.fixedPerRow ? q1 - q0 : 1),
                         beta * double(perKey)});
      work += kvLens[b] * perKey;
    }
  }
  auto costOf = [](const Stream &st, int64_t keys) {
    return st.fixed + st.slope * double(keys);
  };

  Plan plan;
  plan.work = work;
  plan.chunkSize = std::max<int64_t>(1, ceilDiv(work, options.numCtas));
  int64_t numCtas = options.numCtas;

  // Pieces of each stream: (first key, last key, CTA), in stream order.
  struct Piece {
    size_t stream;
    int64_t k0, k1;
    int32_t cta;
    /// Position in the dispatch order (set by assignLpt).
    int32_t rank = -1;
  };
  std::vector<Piece> pieces;
  // Longest piece first to the least-loaded CTA (min-heap, lowest id among
  // equals); returns the predicted makespan.
  auto assignLpt = [&](std::vector<Piece> &ps) {
    // Cost descending, index ascending. Costs are positive doubles, whose
    // bit patterns order like their values: one integer key per piece, the
    // complemented cost bits above the index (costs equal to 2^-28 relative
    // tie), sorts about twice as fast as (cost, index) pairs.
    std::vector<int32_t> order(ps.size());
    std::vector<double> costs(ps.size());
    for (size_t i = 0; i < ps.size(); ++i)
      costs[i] = costOf(streams[ps[i].stream], ps[i].k1 - ps[i].k0);
    constexpr int kIndexBits = 24;
    if (ps.size() < (size_t(1) << kIndexBits)) {
      std::vector<uint64_t> keys(ps.size());
      for (size_t i = 0; i < ps.size(); ++i) {
        uint64_t bits;
        std::memcpy(&bits, &costs[i], sizeof bits);
        keys[i] = (~bits & ~((uint64_t(1) << kIndexBits) - 1)) | i;
      }
      std::sort(keys.begin(), keys.end());
      for (size_t i = 0; i < ps.size(); ++i)
        order[i] = int32_t(keys[i] & ((uint64_t(1) << kIndexBits) - 1));
    } else {
      std::vector<std::pair<double, int32_t>> byCost(ps.size());
      for (size_t i = 0; i < ps.size(); ++i)
        byCost[i] = {-costs[i], int32_t(i)};
      std::sort(byCost.begin(), byCost.end());
      for (size_t i = 0; i < ps.size(); ++i)
        order[i] = byCost[i].second;
    }
    // Min-heap of (load, CTA); all CTAs start empty, so the first C pieces
    // go to CTAs 0, 1, ... in order.
    using Load = std::pair<double, int32_t>;
    std::vector<Load> heap;
    heap.reserve(numCtas);
    size_t i = 0;
    for (size_t r = 0; r < order.size(); ++r)
      ps[order[r]].rank = int32_t(r);
    for (; i < order.size() && int64_t(i) < numCtas; ++i) {
      ps[order[i]].cta = int32_t(i);
      heap.push_back({costs[order[i]], int32_t(i)});
    }
    auto greater = std::greater<Load>();
    std::make_heap(heap.begin(), heap.end(), greater);
    for (; i < order.size(); ++i) {
      std::pop_heap(heap.begin(), heap.end(), greater);
      Load &least = heap.back();
      ps[order[i]].cta = least.second;
      least.first += costs[order[i]];
      std::push_heap(heap.begin(), heap.end(), greater);
    }
    double makespan = 0.0;
    for (const Load &load : heap)
      makespan = std::max(makespan, load.first);
    return makespan;
  };
  // Pieces of at most `bound` keys per stream: fixed boundaries, or
  // balanced lengths (differing by at most one key).
  auto cutEvenly = [&](int64_t bound, bool fixed) {
    std::vector<Piece> ps;
    for (size_t t = 0; t < streams.size(); ++t) {
      int64_t keys = streams[t].keys, n = ceilDiv(keys, bound);
      for (int64_t k = 0; k < n; ++k)
        ps.push_back(
            {t, fixed ? k * bound : keys * k / n,
             fixed ? std::min(keys, (k + 1) * bound) : keys * (k + 1) / n, -1,
             -1});
    }
    return ps;
  };
  if (options.fixedChunkSize) {
    // Batch-invariant: fixed boundaries, LPT.
    pieces = cutEvenly(options.fixedChunkSize, true);
    assignLpt(pieces);
  } else {
    // Water-filling: streams, longest first, fill CTA after CTA up to a
    // load T; a stream is cut where a CTA is full (no piece shorter than
    // minChunk keys is cut off). The smallest T whose fill fits in C CTAs
    // (binary search) makes every CTA but the last nearly full, so the
    // predicted makespan stays close to eq. (12)'s bound. Chunks are at most
    // about T long: the eq. (10) bound W / C plus the overheads.
    const int64_t kMinPiece = std::max<int64_t>(1, options.minChunk);
    std::vector<size_t> order(streams.size());
    std::iota(order.begin(), order.end(), size_t(0));
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return streams[a].keys != streams[b].keys
                 ? streams[a].keys > streams[b].keys
                 : a < b;
    });
    auto fill = [&](double target, std::vector<Piece> *out) {
      int64_t cta = 0;
      double load = 0.0;
      for (size_t t : order) {
        const Stream &st = streams[t];
        int64_t k = 0;
        while (k < st.keys) {
          int64_t left = st.keys - k;
          // Feasibility only: the full CTAs a long stream fills from a
          // fresh CTA, all at once (the same decisions as one at a time
          // below: a piece of `cap` keys each while at least cap + kMinPiece
          // keys are left).
          if (!out && load == 0.0) {
            double room0 = target - costOf(st, 0);
            int64_t cap = room0 >= 0.0 ? int64_t(room0 / st.slope) : 0;
            if (cap >= kMinPiece && left >= cap + kMinPiece) {
              int64_t n = (left - kMinPiece) / cap;
              if (cta + n >= numCtas)
                return false;
              cta += n;
              k += n * cap;
              continue;
            }
          }
          double room = target - load - costOf(st, 0);
          int64_t fits = room >= 0.0
                             ? std::min<int64_t>(left, int64_t(room / st.slope))
                             : 0;
          if (fits < left && (fits < kMinPiece || left - fits < kMinPiece) &&
              load > 0.0) {
            // Too small a cut: this stream starts on the next CTA.
            if (++cta >= numCtas)
              return false;
            load = 0.0;
            continue;
          }
          int64_t take = std::max<int64_t>(fits, std::min(left, kMinPiece));
          if (take < left && left - take < kMinPiece)
            take = left; // no tiny tail either
          if (out)
            out->push_back({t, k, k + take, int32_t(cta), -1});
          load += costOf(st, take);
          k += take;
          if (k < st.keys || load >= target) {
            if (k < st.keys && ++cta >= numCtas)
              return false;
            if (k < st.keys)
              load = 0.0;
          }
        }
      }
      return true;
    };
    double total = 0.0, largest = 0.0, smallest = 0.0;
    for (const Stream &st : streams) {
      total += costOf(st, st.keys);
      largest = std::max(largest, costOf(st, std::min(st.keys, kMinPiece)));
      smallest = std::max(smallest, costOf(st, std::min<int64_t>(st.keys, 1)));
    }
    // Bracket: no fill beats lo; every cut adds at most one chunk overhead
    // and there are at most C - 1 cuts, so hi usually fits already.
    double maxOverhead = 0.0;
    for (const Stream &st : streams)
      maxOverhead = std::max(maxOverhead, costOf(st, kMinPiece));
    double lo = std::max(total / double(numCtas), largest);
    double hi = lo + maxOverhead;
    plan.idealBound = std::max(total / double(numCtas), smallest);
    // The paper's algorithm first: where its LPT schedule already ends
    // within the search tolerance of lo, which no fill beats, the fill and
    // the other candidates have nothing to gain (typical of large batches).
    constexpr double kTolerance = 5e-3;
    std::vector<Piece> paper = cutEvenly(plan.chunkSize, false);
    bool paperFits = int64_t(paper.size()) <= capacity.maxChunks;
    double paperMakespan = paperFits ? assignLpt(paper) : 0.0;
    bool settled = paperFits && paperMakespan <= (1.0 + kTolerance) * lo;
    if (settled) {
      pieces = std::move(paper);
    } else {
      while (!fill(hi, nullptr))
        hi *= 2.0;
      for (int iter = 0; iter < 40 && hi - lo > kTolerance * lo; ++iter) {
        double mid = 0.5 * (lo + hi);
        (fill(mid, nullptr) ? hi : lo) = mid;
      }
      fill(hi, &pieces);
      // The kernel grid has one CTA (per KV head) per chunk, and the GPU
      // starts them in dispatch order (chunkOrder) as earlier ones finish:
      // list scheduling. Dispatching the fill's pieces by planned start time
      // (CTA id among equals) replays its CTA queues: whenever a CTA's piece
      // ends, the next piece in line is one planned to start then.
      // The fill emits CTA after CTA, so each CTA's first piece (start 0)
      // comes in CTA order and only the later pieces need sorting, by (start,
      // index) = (start, CTA).
      std::vector<double> fillLoads(numCtas, 0.0);
      std::vector<std::pair<double, int32_t>> later;
      int32_t rank = 0;
      for (size_t i = 0; i < pieces.size(); ++i) {
        Piece &piece = pieces[i];
        if (fillLoads[piece.cta] == 0.0)
          piece.rank = rank++;
        else
          later.push_back({fillLoads[piece.cta], int32_t(i)});
        fillLoads[piece.cta] +=
            costOf(streams[piece.stream], piece.k1 - piece.k0);
      }
      std::sort(later.begin(), later.end());
      for (const auto &entry : later)
        pieces[entry.second].rank = rank++;
      double best = *std::max_element(fillLoads.begin(), fillLoads.end());
      // Other candidates, dispatched longest first (LPT): even cuts of at most
      // ceil(W / kC) keys (k = 1 is the paper's algorithm) and of the longest
      // stream into n pieces (uniform batches then fill whole waves).
      int64_t longest = 0;
      for (const Stream &st : streams)
        longest = std::max(longest, st.keys);
      // Each stream's piece count falls as the bound grows, so two bounds with
      // the same total piece count cut every stream alike: judged once. The
      // paper's chunks (the k = 1 cut below) are judged already.
      std::vector<int64_t> judged;
      if (paperFits) {
        judged.push_back(int64_t(paper.size()));
        if (paperMakespan < best) {
          best = paperMakespan;
          pieces = std::move(paper);
        }
      }
      auto consider = [&](int64_t bound) {
        bound = std::max<int64_t>(bound, 1);
        // Eq. (12) over these chunks bounds their LPT makespan from below.
        // Both terms only grow over the streams: stop once either reaches
        // the best makespan so far.
        double lptTotal = 0.0, lptLargest = 0.0, totalLimit = best * numCtas;
        int64_t chunks = 0;
        for (const Stream &st : streams) {
          int64_t n = ceilDiv(st.keys, bound);
          chunks += n;
          lptTotal += double(n) * costOf(st, 0) + st.slope * double(st.keys);
          if (n)
            lptLargest = std::max(lptLargest, costOf(st, ceilDiv(st.keys, n)));
          if (lptTotal >= totalLimit || lptLargest >= best)
            return;
        }
        if (chunks > capacity.maxChunks ||
            std::find(judged.begin(), judged.end(), chunks) != judged.end())
          return;
        judged.push_back(chunks);
        std::vector<Piece> lpt = cutEvenly(bound, false);
        double makespan = assignLpt(lpt);
        if (makespan < best) {
          best = makespan;
          pieces = std::move(lpt);
        }
      };
      for (int64_t k : {1, 2, 3, 4, 8})
        consider(ceilDiv(work, k * numCtas));
      for (int64_t n = 1; n <= 4; ++n)
        consider(ceilDiv(longest, n));
    }
    // Stable order: by stream (request, query tile), then keys. A stream's
    // pieces come out of the fill together and in key order, so a counting
    // sort by stream keeps them right.
    std::vector<int64_t> start(streams.size() + 1, 0);
    for (const Piece &piece : pieces)
      ++start[piece.stream + 1];
    for (size_t t = 0; t < streams.size(); ++t)
      start[t + 1] += start[t];
    std::vector<Piece> sorted(pieces.size());
    for (const Piece &piece : pieces)
      sorted[start[piece.stream]++] = piece;
    pieces = std::move(sorted);
  }
  int64_t numItems = pieces.size();
  if (numItems > capacity.maxChunks)
    return overCapacity("chunks", numItems, capacity.maxChunks, "maxChunks");

  plan.items.reserve(pieces.size());
  plan.chunkOrder.resize(pieces.size());
  plan.mergeItems.reserve(pieces.size());
  plan.mergeIndptr.reserve(streams.size() + 1);
  plan.chunkIndptr.reserve(batchSize + 1);
  plan.chunkIndptr.push_back(0);
  plan.mergeIndptr.push_back(0);
  int64_t maxItemRows = 0;
  size_t p = 0;
  for (size_t t = 0; t < streams.size(); ++t) {
    const Stream &st = streams[t];
    for (; p < pieces.size() && pieces[p].stream == t; ++p) {
      plan.chunkOrder[pieces[p].rank] = int32_t(plan.items.size());
      plan.mergeItems.push_back(int32_t(plan.items.size()));
      plan.items.push_back({st.request, st.qBegin, st.qEnd,
                            int32_t(pieces[p].k0), int32_t(pieces[p].k1),
                            pieces[p].cta,
                            costOf(st, pieces[p].k1 - pieces[p].k0)});
    }
    plan.mergeIndptr.push_back(int32_t(plan.mergeItems.size()));
    maxItemRows = std::max<int64_t>(maxItemRows, st.qEnd - st.qBegin);
  }
  if (options.queryTile == 0) {
    for (int64_t b = 0, t = 0; b < batchSize; ++b) {
      for (; t < int64_t(streams.size()) && streams[t].request == b; ++t)
        ;
      plan.chunkIndptr.push_back(int32_t(t < int64_t(streams.size())
                                             ? plan.mergeIndptr[t]
                                             : plan.items.size()));
    }
    plan.chunkRequest.reserve(plan.items.size());
    plan.chunkStarts.reserve(plan.items.size());
    plan.chunkEnds.reserve(plan.items.size());
    for (const WorkItem &item : plan.items) {
      plan.chunkRequest.push_back(item.request);
      plan.chunkStarts.push_back(item.kBegin);
      plan.chunkEnds.push_back(item.kEnd);
    }
  } else {
    plan.chunkIndptr.clear(); // the decode kernels need whole requests
  }
  plan.partialRows = numItems * maxItemRows;

  // Per-slot queues in execution order (dispatch order: CSR by slot filled
  // along chunkOrder); the predicted makespan and eq. (12).
  plan.ctaIndptr.assign(numCtas + 1, 0);
  std::vector<double> loads(numCtas, 0.0);
  double total = 0.0, largest = 0.0;
  for (const WorkItem &item : plan.items) {
    ++plan.ctaIndptr[item.cta + 1];
    loads[item.cta] += item.cost;
    total += item.cost;
    largest = std::max(largest, item.cost);
  }
  for (int64_t c = 0; c < numCtas; ++c)
    plan.ctaIndptr[c + 1] += plan.ctaIndptr[c];
  plan.ctaItems.resize(plan.items.size());
  std::vector<int32_t> next(plan.ctaIndptr.begin(), plan.ctaIndptr.end() - 1);
  for (int32_t id : plan.chunkOrder)
    plan.ctaItems[next[plan.items[id].cta]++] = id;
  plan.makespan = *std::max_element(loads.begin(), loads.end());
  plan.lowerBound = std::max(total / double(numCtas), largest);
  if (options.fixedChunkSize)
    plan.idealBound = plan.lowerBound;
  result = std::move(plan);
  return Status::ok();
}
