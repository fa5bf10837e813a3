//===- plan_bench.cpp - plan() time (Google Benchmark) --------------------===//
//
// CPU time of one plan() call for decode batches of 64 and 1024 requests
// (skewed lengths: most short, a few long), balanced and batch-invariant
// modes. Targets (issue 6): < 20 us for 64 requests, < 200 us for 1024;
// reported, not asserted.
//
//===----------------------------------------------------------------------===//

#include "flashir/Runtime/Planner.h"

#include <benchmark/benchmark.h>

#include <random>

using namespace flashir::runtime;

namespace {

struct Batch {
  std::vector<int32_t> qo{0}, indptr{0}, indices, last;
  int64_t numPages = 1;

  explicit Batch(int64_t requests) {
    std::mt19937 rng{static_cast<uint32_t>(requests)};
    for (int64_t b = 0; b < requests; ++b) {
      int64_t keys = rng() % 10 == 0 ? 1 + rng() % 32768 : 1 + rng() % 1024;
      int64_t pages = (keys + 15) / 16;
      for (int64_t p = 0; p < pages; ++p)
        indices.push_back(int32_t(indices.size()));
      indptr.push_back(int32_t(indices.size()));
      last.push_back(int32_t(keys - (pages - 1) * 16));
      qo.push_back(qo.back() + 1);
    }
    numPages = int64_t(indices.size());
  }
  BatchRef ref() const {
    BatchRef batch;
    batch.table = {indptr.data(), indices.data(), last.data(),
                   int64_t(last.size())};
    batch.qoIndptr = qo.data();
    batch.numPages = numPages;
    batch.pageSize = 16;
    batch.numQoHeads = 32;
    batch.numKvHeads = 8;
    return batch;
  }
};

void BM_Plan(benchmark::State &state) {
  Batch batch(state.range(0));
  PlannerOptions options;
  // C per KV head as SplitKVRunner derives it on the H200: 132 SMs x 2
  // resident tensor-core decode CTAs (occupancy) / 8 KV heads.
  options.numCtas = 132 * 2 / 8;
  options.fixedChunkSize = state.range(1);
  PlanCapacity capacity{4096, 1 << 16, 1};
  Plan plan;
  for (auto _ : state) {
    Status s = flashir::runtime::plan(batch.ref(), options, capacity, plan);
    if (!s)
      state.SkipWithError(s.message().c_str());
    benchmark::DoNotOptimize(plan.items.data());
  }
  state.counters["chunks"] = double(plan.items.size());
  state.counters["makespan_over_bound"] = plan.makespan / plan.lowerBound;
}

} // namespace

BENCHMARK(BM_Plan)
    ->ArgNames({"requests", "fixed_chunk"})
    ->Args({64, 0})
    ->Args({1024, 0})
    ->Args({64, 256})
    ->Args({1024, 256})
    ->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
