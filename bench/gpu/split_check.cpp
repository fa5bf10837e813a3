//===- split_check.cpp - planned split-KV decode on the GPU ---------------===//
//
// flashir-split-check SPLIT_BUNDLE PLAIN_BUNDLE: the runtime's plan/run path
// (Planner + SplitKVRunner, CUDA driver loaded at run time) on the
// bf16 Hq 32 / Hkv 8 / d 128 / page 16 kernels of
// bench/gpu/decode_kernels.mlir:
//  1. eager runs of random skewed batches vs the float64 reference;
//  2. one CUDA graph captured at capacity, replayed for 100 random batch
//     compositions: bitwise equal to the eager run, every 10th also vs
//     float64;
//  3. step latency, graph replay vs eager launches, B = 1 and B = 64;
//  4. planned (split) vs unplanned (one CTA per request and KV head, the
//     plain bundle) kernel time on 1 x 32768 + 63 x 512 and B16 L32768.
// Prints one JSON object per result line. Exit status: 0 all checks pass,
// 1 a mismatch, 2 no GPU / bad bundle.
//
//===----------------------------------------------------------------------===//

#include "flashir/Reference/Reference.h"
#include "flashir/Runtime/Float16.h"
#include "flashir/Runtime/SplitKV.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>

using namespace flashir;
using namespace flashir::runtime;
namespace ref = flashir::reference;

namespace {

constexpr int64_t kHq = 32, kHkv = 8, kD = 128, kPage = 16;
constexpr const char *kDecode = "plain_h32_p16_decode_0";
constexpr const char *kMerge = "plain_h32_p16_merge_0";

int fail(const Status &s) {
  std::fprintf(stderr, "flashir-split-check: %s\n", s.message().c_str());
  return 2;
}

#define TRY(expr)                                                              \
  do {                                                                         \
    if (Status s_ = (expr); !s_)                                               \
      return fail(s_);                                                         \
  } while (0)

/// A host batch: page table over a pool of `poolPages` pages.
struct HostBatch {
  std::vector<int32_t> qo{0}, indptr{0}, indices, last;
  std::vector<int64_t> kvLens;
  int64_t totalKeys = 0;

  HostBatch(const std::vector<int64_t> &lens, int64_t poolPages,
            std::mt19937 &rng) {
    std::vector<int32_t> perm(poolPages);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    for (int64_t n : lens) {
      int64_t pages = (n + kPage - 1) / kPage;
      for (int64_t p = 0; p < pages; ++p)
        indices.push_back(perm[indices.size() % poolPages]);
      indptr.push_back(int32_t(indices.size()));
      last.push_back(pages ? int32_t(n - (pages - 1) * kPage) : 0);
      qo.push_back(qo.back() + 1);
      kvLens.push_back(n);
      totalKeys += n;
    }
    if (indices.empty())
      indices.push_back(0);
  }
  BatchRef ref(int64_t poolPages) const {
    BatchRef b;
    b.table = {indptr.data(), indices.data(), last.data(),
               int64_t(last.size())};
    b.qoIndptr = qo.data();
    b.numPages = poolPages;
    b.pageSize = kPage;
    b.numQoHeads = kHq;
    b.numKvHeads = kHkv;
    return b;
  }
};

std::vector<int64_t> skewedLens(std::mt19937 &rng, int64_t maxBatch,
                                int64_t maxLen) {
  int64_t batch = 1 + rng() % maxBatch;
  std::vector<int64_t> lens;
  for (int64_t b = 0; b < batch; ++b)
    lens.push_back(b == 1 ? 0 // an empty request
                   : rng() % 8 == 0
                       ? 1 + rng() % maxLen
                       : 1 + rng() % std::max<int64_t>(1, maxLen / 16));
  return lens;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr,
                 "usage: flashir-split-check SPLIT_BUNDLE PLAIN_BUNDLE\n");
    return 2;
  }
  std::unique_ptr<CudaDriver> driver;
  TRY(CudaDriver::open(0, driver));
  std::unique_ptr<KernelBundle> split, plain;
  TRY(KernelBundle::open(*driver, argv[1], "sm_90a", split));
  TRY(KernelBundle::open(*driver, argv[2], "sm_90a", plain));
  void *stream = nullptr;
  TRY(driver->createStream(&stream));
  std::mt19937 rng(2026);

  // Pools: a small one the float64 reference can read, a large one for
  // timing (a repeated random block: values do not matter there).
  const int64_t smallPages = 1024, largePages = 34000;
  const size_t pageElems = size_t(kPage * kHkv * kD);
  std::normal_distribution<float> normal;
  std::vector<uint16_t> kSmall(smallPages * pageElems),
      vSmall(smallPages * pageElems);
  for (size_t i = 0; i < kSmall.size(); ++i) {
    kSmall[i] = toBF16(normal(rng));
    vSmall[i] = toBF16(normal(rng));
  }
  void *kPool = nullptr, *vPool = nullptr, *kLarge = nullptr, *vLarge = nullptr;
  TRY(driver->alloc(kSmall.size() * 2, &kPool));
  TRY(driver->alloc(vSmall.size() * 2, &vPool));
  TRY(driver->copyToDevice(kPool, kSmall.data(), kSmall.size() * 2));
  TRY(driver->copyToDevice(vPool, vSmall.data(), vSmall.size() * 2));
  TRY(driver->alloc(largePages * pageElems * 2, &kLarge));
  TRY(driver->alloc(largePages * pageElems * 2, &vLarge));
  for (int64_t p = 0; p < largePages; p += smallPages) {
    size_t n = size_t(std::min(smallPages, largePages - p)) * pageElems * 2;
    TRY(driver->copyToDevice(static_cast<char *>(kLarge) + p * pageElems * 2,
                             kSmall.data(), n));
    TRY(driver->copyToDevice(static_cast<char *>(vLarge) + p * pageElems * 2,
                             vSmall.data(), n));
  }
  ref::PagedView smallView;
  smallView.pageSize = kPage;
  smallView.numPages = smallPages;
  smallView.k.assign(kSmall.size(), 0.0);
  smallView.v.assign(vSmall.size(), 0.0);
  for (size_t i = 0; i < kSmall.size(); ++i) {
    smallView.k[i] = fromBF16(kSmall[i]);
    smallView.v[i] = fromBF16(vSmall[i]);
  }

  // Capacity and the runner. numCtas and maxChunks from the decode kernel's
  // occupancy on this GPU (resident CTAs / KV heads).
  const int64_t maxRequests = 128, maxIndices = 40000;
  SplitKVRunner::Config config;
  config.decodeKernel = kDecode;
  config.mergeKernel = kMerge;
  config.options.numCtas = 0;
  config.capacity = {maxRequests, 0, 1};
  std::unique_ptr<SplitKVRunner> runner;
  TRY(SplitKVRunner::create(*driver, *split, config, runner));
  std::printf("{\"num_ctas_per_kv_head\": %lld, \"max_chunks\": %lld, "
              "\"alpha\": %.1f, \"beta\": %.1f}\n",
              (long long)runner->configuration().options.numCtas,
              (long long)runner->configuration().capacity.maxChunks,
              runner->configuration().options.cost.alpha,
              runner->configuration().options.cost.beta);

  const size_t rowElems = size_t(kHq * kD);
  void *q = nullptr, *out = nullptr, *lse = nullptr, *out2 = nullptr,
       *lse2 = nullptr, *indices = nullptr;
  TRY(driver->alloc(maxRequests * rowElems * 2, &q));
  TRY(driver->alloc(maxRequests * rowElems * 2, &out));
  TRY(driver->alloc(maxRequests * rowElems * 2, &out2));
  TRY(driver->alloc(maxRequests * kHq * 4, &lse));
  TRY(driver->alloc(maxRequests * kHq * 4, &lse2));
  TRY(driver->alloc(maxIndices * 4, &indices));
  std::vector<uint16_t> qBits(maxRequests * rowElems);
  for (uint16_t &x : qBits)
    x = toBF16(normal(rng));
  TRY(driver->copyToDevice(q, qBits.data(), qBits.size() * 2));

  SplitKVRunner::Buffers buffers;
  buffers.q = q;
  buffers.kPool = kPool;
  buffers.vPool = vPool;
  buffers.indices = indices;
  buffers.out = out;
  buffers.lse = lse;
  buffers.numPages = smallPages;
  buffers.numIndices = maxIndices;

  // Planning a batch: page ids into the fixed indices buffer, then plan()
  // (metadata staged and copied on the stream).
  auto stage = [&](const HostBatch &hb, int64_t poolPages) -> Status {
    if (hb.indices.size() > size_t(maxIndices))
      return Status::error(StatusCode::CapacityExceeded, "indices");
    if (Status s = driver->synchronizeStream(stream); !s)
      return s;
    if (Status s = driver->copyToDevice(indices, hb.indices.data(),
                                        hb.indices.size() * 4);
        !s)
      return s;
    return runner->plan(hb.ref(poolPages), stream);
  };
  auto readOut = [&](void *o, void *l, size_t rows, std::vector<uint16_t> &ob,
                     std::vector<float> &lb) -> Status {
    ob.resize(rows * rowElems);
    lb.resize(rows * kHq);
    if (Status s = driver->synchronizeStream(stream); !s)
      return s;
    if (Status s = driver->copyToHost(ob.data(), o, ob.size() * 2); !s)
      return s;
    return driver->copyToHost(lb.data(), l, lb.size() * 4);
  };
  // float64 reference of a small-pool batch: relative error of out, max
  // abs error of lse; -inf must match exactly.
  auto compare = [&](const HostBatch &hb, const std::vector<uint16_t> &ob,
                     const std::vector<float> &lb, double &rel,
                     double &lseErr) -> Status {
    ref::Problem problem;
    problem.numQoHeads = kHq;
    problem.numKvHeads = kHkv;
    problem.headDim = kD;
    problem.scale = double(float(1.0 / std::sqrt(double(kD))));
    problem.qoIndptr = hb.qo;
    size_t rows = hb.qo.back();
    problem.q.resize(rows * rowElems);
    for (size_t i = 0; i < problem.q.size(); ++i)
      problem.q[i] = fromBF16(qBits[i]);
    ref::PagedView view = smallView;
    view.indptr = hb.indptr;
    view.indices.assign(hb.indices.begin(),
                        hb.indices.begin() + hb.indptr.back());
    view.lastPageLen = hb.last;
    problem.views.push_back(std::move(view));
    ref::State expected;
    if (Status s = ref::attention(problem, ref::plain(), true, expected); !s)
      return s;
    double num = 0, den = 0;
    lseErr = 0;
    bool bad = false;
    for (size_t i = 0; i < rows * rowElems; ++i) {
      double o = fromBF16(ob[i]);
      bad |= !std::isfinite(o);
      num += (o - expected.o[i]) * (o - expected.o[i]);
      den += expected.o[i] * expected.o[i];
    }
    for (size_t i = 0; i < rows * kHq; ++i) {
      if (std::isinf(expected.lse[i]))
        bad |= lb[i] != float(expected.lse[i]);
      else
        lseErr = std::max(lseErr, std::fabs(lb[i] - expected.lse[i]));
    }
    rel = bad ? INFINITY : std::sqrt(num / std::max(den, 1e-300));
    return Status::ok();
  };

  int failures = 0, checks = 0;
  // 1. Eager runs.
  for (int trial = 0; trial < 10; ++trial) {
    HostBatch hb(skewedLens(rng, 48, 4000), smallPages, rng);
    TRY(stage(hb, smallPages));
    TRY(runner->run(buffers, stream, /*capacityGrids=*/trial % 2 == 0));
    std::vector<uint16_t> ob;
    std::vector<float> lb;
    TRY(readOut(out, lse, hb.qo.back(), ob, lb));
    double rel = 0, lseErr = 0;
    TRY(compare(hb, ob, lb, rel, lseErr));
    bool ok = rel <= 1e-2 && lseErr <= 1e-2;
    failures += !ok;
    ++checks;
    std::printf("{\"check\": \"eager\", \"batch\": %zu, \"chunks\": %zu, "
                "\"capacity_grids\": %s, \"rel_err\": %.3e, \"lse_err\": %.3e, "
                "\"ok\": %s}\n",
                hb.kvLens.size(), runner->lastPlan().items.size(),
                trial % 2 == 0 ? "true" : "false", rel, lseErr,
                ok ? "true" : "false");
  }

  // 1b. run() refuses buffers shorter than the plan implies (the kernel
  // would read past them): one page id for the planned table, and a pool
  // smaller than the one plan() checked the page ids against.
  {
    HostBatch hb(std::vector<int64_t>(8, 3000), smallPages, rng);
    TRY(stage(hb, smallPages));
    SplitKVRunner::Buffers shortIndices = buffers, smallPool = buffers;
    shortIndices.numIndices = 1;
    smallPool.numPages = smallPages / 2;
    Status a = runner->run(shortIndices, stream, true);
    Status b = runner->run(smallPool, stream, true);
    bool ok = !a && a.message().find("page ids") != std::string::npos && !b &&
              b.message().find("pages") != std::string::npos;
    failures += !ok;
    ++checks;
    std::printf("{\"check\": \"run_checks_plan_sizes\", \"short_indices\": "
                "\"%s\", \"small_pool\": \"%s\", \"ok\": %s}\n",
                a.message().c_str(), b.message().c_str(),
                ok ? "true" : "false");
  }

  // 2. One graph at capacity, replayed for 100 compositions.
  void *graph = nullptr;
  {
    HostBatch hb(skewedLens(rng, 48, 4000), smallPages, rng);
    TRY(stage(hb, smallPages));
    TRY(driver->synchronizeStream(stream));
    TRY(driver->captureGraph(
        stream, [&] { return runner->run(buffers, stream, true); }, &graph));
  }
  int graphEqual = 0, graphRef = 0, graphRefOk = 0;
  for (int trial = 0; trial < 100; ++trial) {
    HostBatch hb(skewedLens(rng, maxRequests, 2000), smallPages, rng);
    // Eager into out2/lse2, then the graph into out/lse.
    TRY(stage(hb, smallPages));
    SplitKVRunner::Buffers eager = buffers;
    eager.out = out2;
    eager.lse = lse2;
    TRY(runner->run(eager, stream, false));
    TRY(driver->launchGraph(graph, stream));
    std::vector<uint16_t> ob, ob2;
    std::vector<float> lb, lb2;
    size_t rows = hb.qo.back();
    TRY(readOut(out, lse, rows, ob, lb));
    TRY(readOut(out2, lse2, rows, ob2, lb2));
    bool equal = ob == ob2 && std::equal(lb.begin(), lb.end(), lb2.begin(),
                                         [](float a, float b) {
                                           return std::memcmp(&a, &b, 4) == 0;
                                         });
    graphEqual += equal;
    if (trial % 10 == 0) {
      double rel = 0, lseErr = 0;
      TRY(compare(hb, ob, lb, rel, lseErr));
      ++graphRef;
      graphRefOk += rel <= 1e-2 && lseErr <= 1e-2;
    }
  }
  failures += (graphEqual != 100) + (graphRefOk != graphRef);
  checks += 2;
  std::printf(
      "{\"check\": \"graph\", \"replays\": 100, \"bitwise_equal_to_eager\": "
      "%d, \"float64_checked\": %d, \"float64_ok\": %d}\n",
      graphEqual, graphRef, graphRefOk);

  // 3. Step latency: graph replay vs eager launches (kernels only; the
  // metadata copy is the same for both).
  void *e0 = nullptr, *e1 = nullptr;
  TRY(driver->createEvent(&e0));
  TRY(driver->createEvent(&e1));
  for (int64_t b : {int64_t(1), int64_t(64)}) {
    HostBatch hb(std::vector<int64_t>(b, 1024), smallPages, rng);
    TRY(stage(hb, smallPages));
    TRY(driver->synchronizeStream(stream));
    const int reps = 200;
    float eagerMs = 0, graphMs = 0, capEagerMs = 0;
    TRY(driver->recordEvent(e0, stream));
    for (int i = 0; i < reps; ++i)
      TRY(runner->run(buffers, stream, false));
    TRY(driver->recordEvent(e1, stream));
    TRY(driver->elapsedMs(e0, e1, eagerMs));
    TRY(driver->recordEvent(e0, stream));
    for (int i = 0; i < reps; ++i)
      TRY(runner->run(buffers, stream, true));
    TRY(driver->recordEvent(e1, stream));
    TRY(driver->elapsedMs(e0, e1, capEagerMs));
    TRY(driver->recordEvent(e0, stream));
    for (int i = 0; i < reps; ++i)
      TRY(driver->launchGraph(graph, stream));
    TRY(driver->recordEvent(e1, stream));
    TRY(driver->elapsedMs(e0, e1, graphMs));
    std::printf(
        "{\"latency\": \"B%lld L1024\", \"eager_us\": %.2f, "
        "\"eager_capacity_grids_us\": %.2f, \"graph_replay_us\": %.2f}\n",
        (long long)b, eagerMs * 1e3 / reps, capEagerMs * 1e3 / reps,
        graphMs * 1e3 / reps);
  }

  // 4. Planned vs unplanned on skewed / long batches (large pool).
  buffers.kPool = kLarge;
  buffers.vPool = vLarge;
  buffers.numPages = largePages;
  struct Case {
    const char *name;
    std::vector<int64_t> lens;
  };
  std::vector<int64_t> skewed(64, 512);
  skewed[0] = 32768;
  for (const Case &c : {Case{"1x32768 + 63x512", skewed},
                        Case{"B16 L32768", std::vector<int64_t>(16, 32768)}}) {
    HostBatch hb(c.lens, largePages, rng);
    auto t0 = std::chrono::steady_clock::now();
    TRY(stage(hb, largePages));
    double planUs = std::chrono::duration<double, std::micro>(
                        std::chrono::steady_clock::now() - t0)
                        .count();
    TRY(driver->synchronizeStream(stream));
    auto timeIt = [&](const std::function<Status()> &launch, float &ms) {
      std::vector<float> times;
      for (int i = 0; i < 33; ++i) {
        if (Status s = driver->recordEvent(e0, stream); !s)
          return s;
        if (Status s = launch(); !s)
          return s;
        if (Status s = driver->recordEvent(e1, stream); !s)
          return s;
        float t = 0;
        if (Status s = driver->elapsedMs(e0, e1, t); !s)
          return s;
        if (i >= 3)
          times.push_back(t);
      }
      std::sort(times.begin(), times.end());
      ms = times[times.size() / 2];
      return Status::ok();
    };
    float plannedMs = 0, unplannedMs = 0;
    TRY(timeIt([&] { return runner->run(buffers, stream, false); }, plannedMs));
    // Unplanned: one CTA per (request, KV head), the plain bundle's kernel.
    AttentionBuffers db;
    std::vector<int32_t> lastCopy = hb.last;
    void *qoDev = nullptr, *indptrDev = nullptr, *lastDev = nullptr;
    TRY(driver->alloc(hb.qo.size() * 4, &qoDev));
    TRY(driver->alloc(hb.indptr.size() * 4, &indptrDev));
    TRY(driver->alloc(hb.last.size() * 4, &lastDev));
    TRY(driver->copyToDevice(qoDev, hb.qo.data(), hb.qo.size() * 4));
    TRY(driver->copyToDevice(indptrDev, hb.indptr.data(),
                             hb.indptr.size() * 4));
    TRY(driver->copyToDevice(lastDev, hb.last.data(), hb.last.size() * 4));
    db.q = q;
    db.qoIndptr = qoDev;
    db.kPool = kLarge;
    db.vPool = vLarge;
    db.indptr = indptrDev;
    db.indices = indices;
    db.lastPageLen = lastDev;
    db.out = out2;
    db.lse = lse2;
    db.totalQ = hb.qo.back();
    db.batch = int64_t(hb.kvLens.size());
    db.numPages = largePages;
    db.numIndices = int64_t(hb.indices.size());
    TRY(timeIt([&] { return plain->launchDecode(kDecode, db, stream); },
               unplannedMs));
    // Same answer both ways (bf16 rounding apart).
    std::vector<uint16_t> ob, ob2;
    std::vector<float> lb, lb2;
    TRY(runner->run(buffers, stream, false));
    TRY(readOut(out, lse, hb.qo.back(), ob, lb));
    TRY(readOut(out2, lse2, hb.qo.back(), ob2, lb2));
    double num = 0, den = 0;
    for (size_t i = 0; i < ob.size(); ++i) {
      double a = fromBF16(ob[i]), b = fromBF16(ob2[i]);
      num += (a - b) * (a - b);
      den += b * b;
    }
    double rel = std::sqrt(num / std::max(den, 1e-300));
    bool ok = rel <= 1e-2;
    failures += !ok;
    ++checks;
    double bytes = double(hb.totalKeys) * kHkv * kD * 2 * 2;
    std::printf(
        "{\"case\": \"%s\", \"chunks\": %zu, \"plan_and_stage_us\": %.1f, "
        "\"planned_ms\": %.4f, \"unplanned_ms\": %.4f, \"speedup\": %.2f, "
        "\"planned_TBps\": %.3f, \"unplanned_TBps\": %.3f, "
        "\"planned_vs_unplanned_rel\": %.2e, \"ok\": %s}\n",
        c.name, runner->lastPlan().items.size(), planUs, plannedMs, unplannedMs,
        unplannedMs / plannedMs, bytes / plannedMs / 1e9,
        bytes / unplannedMs / 1e9, rel, ok ? "true" : "false");
    for (void *p : {qoDev, indptrDev, lastDev})
      (void)driver->free(p);
  }
  (void)driver->destroyGraph(graph);
  std::printf("%d passed, %d failed\n", checks - failures, failures);
  return failures ? 1 : 0;
}
