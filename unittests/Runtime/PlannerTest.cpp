//===- PlannerTest.cpp - split-KV planner ---------------------------------===//

#include "flashir/Runtime/Planner.h"
#include "flashir/Runtime/SplitKV.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <queue>
#include <random>

using namespace flashir::runtime;

namespace {

/// A batch that owns its arrays: request b has qo[b] query rows and kv[b]
/// keys on shuffled pages.
struct OwnedBatch {
  std::vector<int32_t> qoIndptr{0}, indptr{0}, indices, last;
  int64_t pageSize = 16, numPages = 0;

  OwnedBatch(const std::vector<int64_t> &qo, const std::vector<int64_t> &kv,
             int64_t pageSize = 16, uint32_t seed = 1)
      : pageSize(pageSize) {
    for (size_t b = 0; b < qo.size(); ++b) {
      qoIndptr.push_back(int32_t(qoIndptr.back() + qo[b]));
      int64_t pages = (kv[b] + pageSize - 1) / pageSize;
      for (int64_t p = 0; p < pages; ++p)
        indices.push_back(int32_t(indices.size()));
      indptr.push_back(int32_t(indices.size()));
      last.push_back(int32_t(pages ? kv[b] - (pages - 1) * pageSize : 0));
    }
    numPages = int64_t(indices.size()) + 1;
    std::shuffle(indices.begin(), indices.end(), std::mt19937(seed));
  }

  BatchRef ref(int64_t hq = 32, int64_t hkv = 8) const {
    BatchRef batch;
    batch.table = {indptr.data(), indices.data(), last.data(),
                   int64_t(last.size())};
    batch.qoIndptr = qoIndptr.data();
    batch.numPages = numPages;
    batch.pageSize = pageSize;
    batch.numQoHeads = hq;
    batch.numKvHeads = hkv;
    return batch;
  }
};

PlanCapacity roomy() { return {1 << 16, 1 << 20, 1 << 12}; }

PlannerOptions withCtas(int64_t c) {
  PlannerOptions o;
  o.numCtas = c;
  return o;
}

/// Skewed decode batches: most requests short, a few long.
void randomBatch(std::mt19937 &rng, std::vector<int64_t> &qo,
                 std::vector<int64_t> &kv, int64_t maxQo = 1) {
  int64_t batch = 1 + rng() % 256;
  qo.clear();
  kv.clear();
  for (int64_t b = 0; b < batch; ++b) {
    qo.push_back(1 + int64_t(rng() % maxQo));
    bool longOne = rng() % 10 == 0;
    kv.push_back(longOne ? 1 + rng() % 32768 : rng() % 1025);
  }
}

} // namespace

TEST(Planner, WorkedExampleReachesTheLowerBound) {
  // Seed 000 sec. 6.2: total work 16 on 4 CTAs; one CTA per request takes
  // 8 units, chunks of at most W / C = 4 reach the bound.
  OwnedBatch batch({1, 1, 1, 1}, {8, 4, 2, 2}, 1);
  PlannerOptions options = withCtas(4);
  options.cost = {0.0, 1.0};
  options.minChunk = 1;
  Plan plan;
  ASSERT_TRUE(flashir::runtime::plan(batch.ref(), options, roomy(), plan));
  EXPECT_EQ(plan.work, 16);
  EXPECT_EQ(plan.chunkSize, 4);
  EXPECT_EQ(plan.items.size(), 5u);
  EXPECT_DOUBLE_EQ(plan.lowerBound, 4.0);
  EXPECT_DOUBLE_EQ(plan.makespan, 4.0);
  EXPECT_EQ(plan.chunkIndptr, (std::vector<int32_t>{0, 2, 3, 4, 5}));
  EXPECT_EQ(plan.chunkStarts, (std::vector<int32_t>{0, 4, 0, 0, 0}));
  EXPECT_EQ(plan.chunkEnds, (std::vector<int32_t>{4, 8, 4, 2, 2}));
}

TEST(Planner, CoversEveryQueryRowAndKeyExactlyOnce) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<int64_t> qo, kv;
    int64_t batchSize = 1 + rng() % 12;
    for (int64_t b = 0; b < batchSize; ++b) {
      qo.push_back(rng() % 5 == 0 ? 0 : 1 + rng() % 40);
      kv.push_back(rng() % 6 == 0 ? 0 : 1 + rng() % 3000);
    }
    OwnedBatch batch(qo, kv, 1 + rng() % 20, trial);
    PlannerOptions options = withCtas(1 + rng() % 300);
    options.queryTile = trial % 3 == 0 ? 16 : 0;
    options.fixedChunkSize = trial % 4 == 0 ? 1 + rng() % 200 : 0;
    Plan plan;
    ASSERT_TRUE(flashir::runtime::plan(batch.ref(), options, roomy(), plan));
    for (int64_t b = 0; b < batchSize; ++b) {
      std::vector<int> seen(qo[b] * kv[b], 0);
      for (const WorkItem &item : plan.items)
        if (item.request == b)
          for (int32_t i = item.qBegin; i < item.qEnd; ++i)
            for (int32_t k = item.kBegin; k < item.kEnd; ++k)
              ++seen[i * kv[b] + k];
      EXPECT_TRUE(
          std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }))
          << "trial " << trial << " request " << b;
    }
    // Every item is scheduled once; queues run in dispatch order.
    std::vector<int> scheduled(plan.items.size(), 0);
    std::vector<int32_t> position(plan.items.size(), -1);
    for (size_t p = 0; p < plan.chunkOrder.size(); ++p)
      position[plan.chunkOrder[p]] = int32_t(p);
    for (size_t c = 0; c + 1 < plan.ctaIndptr.size(); ++c)
      for (int32_t k = plan.ctaIndptr[c]; k < plan.ctaIndptr[c + 1]; ++k) {
        int32_t id = plan.ctaItems[k];
        ++scheduled[id];
        EXPECT_EQ(plan.items[id].cta, int32_t(c));
        if (k > plan.ctaIndptr[c]) {
          EXPECT_LT(position[plan.ctaItems[k - 1]], position[id]);
        }
      }
    EXPECT_TRUE(std::all_of(scheduled.begin(), scheduled.end(),
                            [](int n) { return n == 1; }));
  }
}

TEST(Planner, MergeListsAreOrderedAndComplete) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<int64_t> qo, kv;
    randomBatch(rng, qo, kv, trial % 2 ? 1 : 20);
    OwnedBatch batch(qo, kv, 16, trial);
    PlannerOptions options = withCtas(132);
    options.queryTile = trial % 2 ? 0 : 8;
    Plan plan;
    ASSERT_TRUE(flashir::runtime::plan(batch.ref(), options, roomy(), plan));
    // Output row groups in request order; each list walks its keys in order
    // without gaps, from 0 to the request's length.
    size_t group = 0;
    for (size_t b = 0; b < qo.size(); ++b) {
      int64_t tile = options.queryTile ? options.queryTile : qo[b];
      for (int64_t q0 = 0; q0 < qo[b]; q0 += tile, ++group) {
        ASSERT_LT(group + 1, plan.mergeIndptr.size());
        int32_t next = 0;
        for (int32_t m = plan.mergeIndptr[group];
             m < plan.mergeIndptr[group + 1]; ++m) {
          const WorkItem &item = plan.items[plan.mergeItems[m]];
          EXPECT_EQ(item.request, int32_t(b));
          EXPECT_EQ(item.qBegin, q0);
          EXPECT_EQ(item.kBegin, next);
          EXPECT_GT(item.kEnd, item.kBegin);
          next = item.kEnd;
        }
        EXPECT_EQ(next, kv[b]);
      }
    }
    EXPECT_EQ(group + 1, plan.mergeIndptr.size());
    if (options.queryTile == 0) {
      // The kernel arrays say the same.
      ASSERT_EQ(plan.chunkIndptr.size(), qo.size() + 1);
      for (size_t b = 0; b < qo.size(); ++b)
        for (int32_t c = plan.chunkIndptr[b]; c < plan.chunkIndptr[b + 1];
             ++c) {
          EXPECT_EQ(plan.chunkRequest[c], int32_t(b));
          EXPECT_EQ(plan.chunkStarts[c], plan.items[c].kBegin);
          EXPECT_EQ(plan.chunkEnds[c], plan.items[c].kEnd);
        }
    }
  }
}

namespace {
/// The paper's algorithm as an independent reference: chunks of at most
/// L = ceil(W / C) keys, longest first to the least-loaded CTA. Returns its
/// predicted makespan.
double lptMakespan(const std::vector<int64_t> &qo,
                   const std::vector<int64_t> &kv, int64_t ctas,
                   CostModel cost) {
  int64_t work = 0;
  for (size_t b = 0; b < kv.size(); ++b)
    work += qo[b] ? kv[b] : 0;
  int64_t bound = std::max<int64_t>(1, (work + ctas - 1) / ctas);
  std::vector<double> items;
  for (size_t b = 0; b < kv.size(); ++b) {
    if (!qo[b])
      continue;
    int64_t n = (kv[b] + bound - 1) / bound;
    for (int64_t k = 0; k < n; ++k)
      items.push_back(cost.alpha * qo[b] +
                      cost.beta * (kv[b] * (k + 1) / n - kv[b] * k / n));
  }
  std::sort(items.rbegin(), items.rend());
  std::vector<double> loads(ctas, 0.0);
  for (double t : items)
    *std::min_element(loads.begin(), loads.end()) += t;
  return *std::max_element(loads.begin(), loads.end());
}
} // namespace

TEST(Planner, MakespanWithinTenPercentOfTheLowerBound) {
  std::mt19937 rng(2026);
  double worstIdeal = 0.0, worstLpt = 0.0;
  for (int trial = 0; trial < 1000; ++trial) {
    std::vector<int64_t> qo, kv;
    randomBatch(rng, qo, kv, trial % 5 == 0 ? 4 : 1);
    OwnedBatch batch(qo, kv, 16, trial);
    static const int64_t kCtas[] = {132 * 3, 132, 66, 396 * 2};
    int64_t ctas = kCtas[trial % 4];
    Plan plan;
    ASSERT_TRUE(
        flashir::runtime::plan(batch.ref(), withCtas(ctas), roomy(), plan));
    ASSERT_GT(plan.lowerBound, 0.0);
    // Eq. (12) over the plan's chunks.
    EXPECT_LE(plan.makespan, 1.1 * plan.lowerBound)
        << "trial " << trial << ": makespan " << plan.makespan << ", bound "
        << plan.lowerBound << " (" << plan.items.size() << " chunks, C " << ctas
        << ")";
    // Never worse than the paper's LPT on ceil(W / C) chunks.
    double lpt = lptMakespan(qo, kv, ctas, CostModel());
    EXPECT_LE(plan.makespan, lpt + 1e-6) << "trial " << trial;
    worstLpt = std::max(worstLpt, lpt / plan.idealBound);
    // Eq. (12) for any chunking is looser: each chunk costs alpha, so a
    // batch whose W / C is a few alphas cannot reach it. Reported.
    EXPECT_LE(plan.idealBound, plan.lowerBound + 1e-9);
    worstIdeal = std::max(worstIdeal, plan.makespan / plan.idealBound);
  }
  RecordProperty("worst_makespan_over_ideal_bound", std::to_string(worstIdeal));
  RecordProperty("worst_lpt_makespan_over_ideal_bound",
                 std::to_string(worstLpt));
  std::printf("makespan / plan-independent bound: worst %.3f (LPT on "
              "ceil(W/C) chunks: %.3f)\n",
              worstIdeal, worstLpt);
}

TEST(Planner, DispatchOrderReplaysThePredictedMakespan) {
  // The GPU starts the grid's chunks in chunkOrder as CTAs free up: list
  // scheduling on C slots. Simulated independently here, it must end when
  // the plan says.
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<int64_t> qo, kv;
    randomBatch(rng, qo, kv);
    OwnedBatch batch(qo, kv, 16, trial);
    int64_t ctas = trial % 2 ? 33 : 132;
    Plan plan;
    ASSERT_TRUE(
        flashir::runtime::plan(batch.ref(), withCtas(ctas), roomy(), plan));
    std::vector<int32_t> sorted = plan.chunkOrder;
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 0; i < sorted.size(); ++i)
      ASSERT_EQ(sorted[i], int32_t(i)) << "chunkOrder is not a permutation";
    std::priority_queue<double, std::vector<double>, std::greater<double>> free;
    for (int64_t c = 0; c < ctas; ++c)
      free.push(0.0);
    double end = 0.0;
    for (int32_t id : plan.chunkOrder) {
      double start = free.top();
      free.pop();
      free.push(start + plan.items[id].cost);
      end = std::max(end, start + plan.items[id].cost);
    }
    EXPECT_NEAR(end, plan.makespan, 1e-6 * plan.makespan) << "trial " << trial;
  }
}

TEST(Planner, KeysPerQueryRowScalesTheKeyCost) {
  // Kernels that walk the keys once per query row: a 4-row request's keys
  // cost 4x, in the items' costs, in W and in the balance.
  OwnedBatch batch({4, 1, 1}, {1000, 1000, 1000}, 16);
  PlannerOptions options = withCtas(4);
  options.cost = {32.0, 1.0, /*keysPerQueryRow=*/true};
  Plan plan;
  ASSERT_TRUE(flashir::runtime::plan(batch.ref(), options, roomy(), plan));
  EXPECT_EQ(plan.work, 4 * 1000 + 1000 + 1000);
  double fourRowKeys = 0;
  for (const WorkItem &item : plan.items) {
    double rows = item.qEnd - item.qBegin, keys = item.kEnd - item.kBegin;
    EXPECT_DOUBLE_EQ(item.cost, 32.0 * rows + rows * keys);
    if (rows == 4)
      fourRowKeys = std::max(fourRowKeys, keys);
  }
  // The 4-row request is cut finer than its 1000 keys.
  EXPECT_LT(fourRowKeys, 1000);
  EXPECT_LE(plan.makespan, 1.1 * plan.lowerBound);
  std::mt19937 rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<int64_t> qo, kv;
    randomBatch(rng, qo, kv, /*maxQo=*/8);
    OwnedBatch random(qo, kv, 16, trial);
    Plan p;
    ASSERT_TRUE(flashir::runtime::plan(random.ref(), options, roomy(), p));
    EXPECT_LE(p.makespan, 1.1 * p.lowerBound) << "trial " << trial;
  }
}

TEST(Planner, FixedCostPerPieceSplitsManyRowRequests) {
  // The split-KV prefill kernel pays its fixed cost per CTA, not per row: a
  // 300-row request over 1000 keys charged alpha * rows (9600 keys' worth)
  // per piece is not worth splitting on 2 CTAs next to a 130-row request;
  // charged alpha per piece it is.
  OwnedBatch batch({300, 130}, {1000, 300}, 16);
  PlannerOptions options = withCtas(2);
  options.cost = {32.0, 1.0, /*keysPerQueryRow=*/false};
  Plan perRow;
  ASSERT_TRUE(flashir::runtime::plan(batch.ref(), options, roomy(), perRow));
  EXPECT_EQ(perRow.items.size(), 2u);
  options.cost.fixedPerRow = false;
  Plan perPiece;
  ASSERT_TRUE(flashir::runtime::plan(batch.ref(), options, roomy(), perPiece));
  EXPECT_GT(perPiece.items.size(), 2u);
  for (const WorkItem &item : perPiece.items)
    EXPECT_DOUBLE_EQ(item.cost, 32.0 + (item.kEnd - item.kBegin));
  EXPECT_LE(perPiece.makespan, 1.1 * perPiece.lowerBound);
}

TEST(Planner, PrefillOptionsSplitOnlyWhatQTilesLeaveIdle) {
  // The split-KV prefill runner's options (C = 8 CTAs per head, q tiles of
  // 128 rows): the steps of bench/gpu/probes/split_prefill.py, whose H200
  // runs chose 8, 8, 2 and 2 chunks.
  struct Step {
    std::vector<int64_t> qo, kv;
    size_t chunks;
    int64_t ctas;
  } steps[] = {{{128}, {32768}, 8, 8},
               {{128, 128, 128, 128}, {16384, 16384, 16384, 16384}, 8, 8},
               {{512, 512}, {8192, 8192}, 2, 2},
               {{4096, 4096}, {4096, 4096}, 2, 1}};
  for (const Step &step : steps) {
    OwnedBatch batch(step.qo, step.kv);
    PlannerOptions options =
        prefillPlannerOptions(withCtas(8), batch.ref(), /*qTokens=*/128);
    EXPECT_FALSE(options.cost.keysPerQueryRow);
    EXPECT_FALSE(options.cost.fixedPerRow);
    EXPECT_EQ(options.numCtas, step.ctas);
    Plan plan;
    ASSERT_TRUE(flashir::runtime::plan(batch.ref(), options, roomy(), plan));
    EXPECT_EQ(plan.items.size(), step.chunks) << step.qo.size() << " requests";
  }
  // Requests without rows or keys do not weigh in; C never drops below 1.
  OwnedBatch idle({0, 3000, 1}, {100000, 0, 64});
  EXPECT_EQ(prefillPlannerOptions(withCtas(8), idle.ref(), 128).numCtas, 8);
  OwnedBatch huge({1 << 12}, {1 << 12});
  EXPECT_EQ(prefillPlannerOptions(withCtas(8), huge.ref(), 16).numCtas, 1);
}

TEST(Planner, Deterministic) {
  std::mt19937 rng(3);
  std::vector<int64_t> qo, kv;
  randomBatch(rng, qo, kv);
  OwnedBatch batch(qo, kv);
  Plan a, b;
  ASSERT_TRUE(flashir::runtime::plan(batch.ref(), withCtas(396), roomy(), a));
  ASSERT_TRUE(flashir::runtime::plan(batch.ref(), withCtas(396), roomy(), b));
  ASSERT_EQ(a.items.size(), b.items.size());
  for (size_t i = 0; i < a.items.size(); ++i) {
    EXPECT_EQ(a.items[i].cta, b.items[i].cta);
    EXPECT_EQ(a.items[i].kBegin, b.items[i].kBegin);
    EXPECT_EQ(a.items[i].kEnd, b.items[i].kEnd);
  }
  EXPECT_EQ(a.ctaIndptr, b.ctaIndptr);
  EXPECT_EQ(a.ctaItems, b.ctaItems);
  EXPECT_EQ(a.chunkIndptr, b.chunkIndptr);
}

TEST(Planner, BatchInvariantModeChunksDependOnTheRequestAlone) {
  // With a fixed chunk size, request 0's chunks are the same in any batch.
  OwnedBatch alone({1}, {1000});
  OwnedBatch crowd({1, 1, 1}, {1000, 50000, 3});
  PlannerOptions options = withCtas(396);
  options.fixedChunkSize = 256;
  Plan a, b;
  ASSERT_TRUE(flashir::runtime::plan(alone.ref(), options, roomy(), a));
  ASSERT_TRUE(flashir::runtime::plan(crowd.ref(), options, roomy(), b));
  std::vector<int32_t> startsA(a.chunkStarts.begin(),
                               a.chunkStarts.begin() + a.chunkIndptr[1]);
  std::vector<int32_t> startsB(b.chunkStarts.begin(),
                               b.chunkStarts.begin() + b.chunkIndptr[1]);
  EXPECT_EQ(startsA, (std::vector<int32_t>{0, 256, 512, 768}));
  EXPECT_EQ(startsA, startsB);
  // Without it, the chunk bound follows the whole batch's work.
  Plan c, d;
  ASSERT_TRUE(flashir::runtime::plan(alone.ref(), withCtas(396), roomy(), c));
  ASSERT_TRUE(flashir::runtime::plan(crowd.ref(), withCtas(396), roomy(), d));
  EXPECT_NE(c.chunkSize, d.chunkSize);
}

TEST(Planner, WorkspaceOfTheCapacityHoldsEveryPlan) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<int64_t> qo, kv;
    randomBatch(rng, qo, kv, 4);
    OwnedBatch batch(qo, kv);
    int64_t ctas = 1 + rng() % 800;
    int64_t tiles = 0;
    for (size_t b = 0; b < qo.size(); ++b)
      tiles += kv[b] > 0;
    // Sized by the bound alone, the workspace is never exceeded.
    PlanCapacity capacity{256, maxChunksFor(ctas, tiles), 4};
    Plan plan;
    ASSERT_TRUE(
        flashir::runtime::plan(batch.ref(), withCtas(ctas), capacity, plan))
        << "trial " << trial;
    EXPECT_LE(int64_t(plan.items.size()), capacity.maxChunks);
    WorkspaceSize size = workspaceSize(capacity, 32, 128, 2);
    EXPECT_LE(plan.partialRows * 32 * 128 * 2, size.partialOutputBytes);
    EXPECT_LE(plan.partialRows * 32 * 4, size.partialLseBytes);
  }
  // 100 chunks x 16 rows x 32 heads x 128 dims of bf16 partial outputs
  // (f32 lse).
  WorkspaceSize size = workspaceSize({64, 100, 16}, 32, 128, 2);
  EXPECT_EQ(size.partialOutputBytes, 100 * 16 * 32 * 128 * 2);
  EXPECT_EQ(workspaceSize({64, 100, 16}, 32, 128, 4).partialOutputBytes,
            100 * 16 * 32 * 128 * 4);
  EXPECT_EQ(size.partialLseBytes, 100 * 16 * 32 * 4);
  EXPECT_EQ(size.metadataBytes, (4 * 64 + 7 + 4 * 100) * 4);
  EXPECT_EQ(size.kvMapsBytes, 2 * 128); // two CUtensorMaps
  EXPECT_EQ(size.total(), size.partialOutputBytes + size.partialLseBytes +
                              size.metadataBytes + size.kvMapsBytes);
}

namespace {
std::string planError(const OwnedBatch &batch, PlannerOptions options,
                      PlanCapacity capacity, int64_t hq = 32, int64_t hkv = 8) {
  Plan plan;
  plan.chunkSize = -7; // untouched on error
  Status s =
      flashir::runtime::plan(batch.ref(hq, hkv), options, capacity, plan);
  EXPECT_FALSE(s);
  EXPECT_EQ(plan.chunkSize, -7);
  return s.message();
}
} // namespace

TEST(Planner, ValidationErrorsNameTheInput) {
  OwnedBatch good({1, 2}, {40, 17});
  PlannerOptions o = withCtas(8);
  EXPECT_NE(planError(good, o, roomy(), 30, 8).find("multiple of num_kv_heads"),
            std::string::npos);
  EXPECT_NE(planError(good, withCtas(0), roomy()).find("numCtas"),
            std::string::npos);
  OwnedBatch badIndptr = good;
  badIndptr.indptr[1] = 5;
  badIndptr.indptr[2] = 3;
  EXPECT_NE(planError(badIndptr, o, roomy()).find("indptr decreases"),
            std::string::npos);
  OwnedBatch badPage = good;
  badPage.indices[0] = int32_t(good.numPages);
  EXPECT_NE(planError(badPage, o, roomy()).find("outside the page pool"),
            std::string::npos)
      << planError(badPage, o, roomy());
  OwnedBatch badLast = good;
  badLast.last[1] = 0;
  EXPECT_NE(planError(badLast, o, roomy()).find("last_page_len[1]"),
            std::string::npos);
  badLast.last[1] = 17;
  EXPECT_NE(planError(badLast, o, roomy()).find("last_page_len[1]"),
            std::string::npos);
  OwnedBatch badQo = good;
  badQo.qoIndptr[2] = 0;
  EXPECT_NE(planError(badQo, o, roomy()).find("qo_indptr decreases"),
            std::string::npos);
  badQo.qoIndptr[0] = 1;
  EXPECT_NE(planError(badQo, o, roomy()).find("qo_indptr[0]"),
            std::string::npos);
}

TEST(Planner, CapacityErrorsNameTheLimit) {
  OwnedBatch batch({1, 3, 1}, {4000, 10, 7});
  PlannerOptions o = withCtas(64);
  EXPECT_NE(planError(batch, o, {2, 1000, 4}).find("PlanCapacity::maxRequests"),
            std::string::npos);
  EXPECT_NE(planError(batch, o, {8, 1000, 2})
                .find("PlanCapacity::maxQueryRowsPerRequest"),
            std::string::npos);
  EXPECT_NE(planError(batch, o, {8, 10, 4}).find("PlanCapacity::maxChunks"),
            std::string::npos);
}

TEST(SplitDecode, StepMetadataIsPaddedToTheCapacity) {
  // Two real requests in a capacity of 4 requests and 16 chunks: requests
  // 2..4 are empty, request 4 (the padding request) owns the unused chunks,
  // and the chunk count the kernels derive is 16 for any batch.
  OwnedBatch batch({1, 1}, {100, 0});
  PlanCapacity capacity{4, 16, 1};
  Plan plan;
  ASSERT_TRUE(flashir::runtime::plan(batch.ref(), withCtas(4), capacity, plan));
  StepMetadata md;
  ASSERT_TRUE(buildStepMetadata(batch.ref(), plan, capacity, md));
  int32_t chunks = int32_t(plan.items.size());
  ASSERT_GE(chunks, 1);
  EXPECT_EQ(md.qoIndptr, (std::vector<int32_t>{0, 1, 2, 2, 2, 2}));
  EXPECT_EQ(md.kvIndptr.size(), 6u);
  EXPECT_EQ(md.kvIndptr[2], md.kvIndptr[5]);
  EXPECT_EQ(md.lastPageLen.size(), 5u);
  EXPECT_EQ(md.lastPageLen[4], 0);
  EXPECT_EQ(md.chunkIndptr,
            (std::vector<int32_t>{0, chunks, chunks, chunks, chunks, 16}));
  ASSERT_EQ(md.chunkRequest.size(), 16u);
  for (int32_t c = 0; c < 16; ++c) {
    EXPECT_EQ(md.chunkRequest[c], c < chunks ? 0 : 4);
    if (c >= chunks) {
      EXPECT_EQ(md.chunkStarts[c], md.chunkEnds[c]);
    }
  }
  // The plan's dispatch order, then the padding chunks in id order.
  ASSERT_EQ(md.chunkOrder.size(), 16u);
  for (int32_t p = 0; p < 16; ++p)
    EXPECT_EQ(md.chunkOrder[p], p < chunks ? plan.chunkOrder[p] : p);
  // workspaceSize() counts exactly the arrays SplitKVRunner copies.
  size_t words = md.qoIndptr.size() + md.kvIndptr.size() +
                 md.lastPageLen.size() + md.chunkIndptr.size() +
                 md.chunkRequest.size() + md.chunkStarts.size() +
                 md.chunkEnds.size() + md.chunkOrder.size();
  EXPECT_EQ(int64_t(words * 4), workspaceSize(capacity, 1, 1, 2).metadataBytes);
  // Plans with query tiles have no kernel arrays.
  PlannerOptions tiled = withCtas(4);
  tiled.queryTile = 8;
  Plan tiledPlan;
  ASSERT_TRUE(flashir::runtime::plan(batch.ref(), tiled, capacity, tiledPlan));
  EXPECT_FALSE(buildStepMetadata(batch.ref(), tiledPlan, capacity, md));
}
