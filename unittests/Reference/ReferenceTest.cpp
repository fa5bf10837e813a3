//===- ReferenceTest.cpp - the float64 reference attention ----------------===//
//
// Checks the reference against hand-computed values and against small,
// naive, dense computations written out in this file (no max subtraction,
// one request at a time), plus its algebra: merge rules, split invariance,
// paged == ragged, and input validation.
//
//===----------------------------------------------------------------------===//

#include "flashir/Reference/Reference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

using namespace flashir::reference;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

struct Dims {
  int64_t hq = 1, hkv = 1, d = 2;
  double scale = 1.0;
};

/// One request in logical layout: q = [lq, Hq, D], k/v = [lkv, Hkv, D].
struct Dense {
  int64_t lq = 0, lkv = 0;
  std::vector<double> q, k, v;
};

std::vector<double> randomVector(std::mt19937_64 &rng, size_t n,
                                 double lo = -1.0, double hi = 1.0) {
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> x(n);
  for (double &e : x)
    e = dist(rng);
  return x;
}

std::vector<Dense> randomRequests(std::mt19937_64 &rng, const Dims &dims,
                                  const std::vector<int64_t> &lqs,
                                  const std::vector<int64_t> &lkvs) {
  std::vector<Dense> reqs(lqs.size());
  for (size_t b = 0; b < lqs.size(); ++b) {
    reqs[b].lq = lqs[b];
    reqs[b].lkv = lkvs[b];
    reqs[b].q = randomVector(rng, lqs[b] * dims.hq * dims.d);
    reqs[b].k = randomVector(rng, lkvs[b] * dims.hkv * dims.d);
    reqs[b].v = randomVector(rng, lkvs[b] * dims.hkv * dims.d);
  }
  return reqs;
}

Problem problemWithoutViews(const Dims &dims, const std::vector<Dense> &reqs) {
  Problem p;
  p.numQoHeads = dims.hq;
  p.numKvHeads = dims.hkv;
  p.headDim = dims.d;
  p.scale = dims.scale;
  p.qoIndptr = {0};
  for (const Dense &r : reqs) {
    p.qoIndptr.push_back(p.qoIndptr.back() + int32_t(r.lq));
    p.q.insert(p.q.end(), r.q.begin(), r.q.end());
  }
  return p;
}

RaggedView raggedView(const std::vector<Dense> &reqs) {
  RaggedView view;
  view.kvIndptr = {0};
  for (const Dense &r : reqs) {
    view.kvIndptr.push_back(view.kvIndptr.back() + int32_t(r.lkv));
    view.k.insert(view.k.end(), r.k.begin(), r.k.end());
    view.v.insert(view.v.end(), r.v.begin(), r.v.end());
  }
  return view;
}

/// The requests as ragged queries over one ragged KV view.
Problem raggedProblem(const Dims &dims, const std::vector<Dense> &reqs) {
  Problem p = problemWithoutViews(dims, reqs);
  p.views.push_back(raggedView(reqs));
  return p;
}

/// The requests' KV as a paged view: pages scattered over a shuffled pool
/// with garbage in the unused pages and slots. If shareA >= 0, request
/// shareB's first page *is* request shareA's first page (the caller made
/// their first pageSize tokens equal).
PagedView pagedView(std::mt19937_64 &rng, const Dims &dims,
                    const std::vector<Dense> &reqs, int64_t pageSize,
                    Layout layout, int shareA = -1, int shareB = -1) {
  std::vector<int64_t> pages(reqs.size());
  int64_t needed = 0;
  for (size_t b = 0; b < reqs.size(); ++b) {
    pages[b] = (reqs[b].lkv + pageSize - 1) / pageSize;
    needed += pages[b];
  }
  if (shareA >= 0)
    needed -= 1;
  PagedView view;
  view.pageSize = pageSize;
  view.layout = layout;
  view.numPages = needed + 3; // Three pages nobody uses.
  std::vector<int32_t> perm(view.numPages);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  size_t poolSize = view.numPages * pageSize * dims.hkv * dims.d;
  view.k = randomVector(rng, poolSize, -50, 50); // Garbage.
  view.v = randomVector(rng, poolSize, -50, 50);

  size_t next = 0;
  view.indptr = {0};
  for (size_t b = 0; b < reqs.size(); ++b) {
    for (int64_t p = 0; p < pages[b]; ++p) {
      int32_t page;
      if (int(b) == shareB && p == 0)
        page = view.indices[view.indptr[shareA]];
      else
        page = perm[next++];
      view.indices.push_back(page);
      for (int64_t slot = 0; slot < pageSize; ++slot) {
        int64_t t = p * pageSize + slot;
        if (t >= reqs[b].lkv)
          break;
        for (int64_t h = 0; h < dims.hkv; ++h)
          for (int64_t e = 0; e < dims.d; ++e) {
            int64_t at =
                layout == Layout::NHD
                    ? ((page * pageSize + slot) * dims.hkv + h) * dims.d + e
                    : ((page * dims.hkv + h) * pageSize + slot) * dims.d + e;
            view.k[at] = reqs[b].k[(t * dims.hkv + h) * dims.d + e];
            view.v[at] = reqs[b].v[(t * dims.hkv + h) * dims.d + e];
          }
      }
    }
    view.indptr.push_back(int32_t(view.indices.size()));
    view.lastPageLen.push_back(
        pages[b] ? int32_t(reqs[b].lkv - (pages[b] - 1) * pageSize) : 0);
  }
  return view;
}

/// Naive dense attention written out for the tests: per request, row and
/// query head, score every visible key with the plain formulas (e^s without
/// max subtraction, 1 / (1 + e^-s)).
struct DirectSpec {
  // visible(b, qpos, kpos, h); empty = every key.
  std::function<bool(int64_t, int64_t, int64_t, int64_t)> visible;
  // logits(b, s, qpos, kpos, h); empty = identity.
  std::function<double(int64_t, double, int64_t, int64_t, int64_t)> logits;
  bool sigmoid = false;
};

State direct(const Dims &dims, const std::vector<Dense> &reqs,
             const DirectSpec &spec) {
  int64_t totalQ = 0;
  for (const Dense &r : reqs)
    totalQ += r.lq;
  State out;
  out.rows = totalQ;
  out.heads = dims.hq;
  out.dim = dims.d;
  out.o.assign(totalQ * dims.hq * dims.d, 0.0);
  out.lse.assign(totalQ * dims.hq, -kInf);
  int64_t row = 0;
  for (size_t b = 0; b < reqs.size(); ++b) {
    const Dense &r = reqs[b];
    for (int64_t i = 0; i < r.lq; ++i, ++row) {
      int64_t qpos = i + r.lkv - r.lq;
      for (int64_t h = 0; h < dims.hq; ++h) {
        int64_t g = h / (dims.hq / dims.hkv);
        double z = 0;
        std::vector<double> num(dims.d, 0.0);
        bool any = false;
        for (int64_t kpos = 0; kpos < r.lkv; ++kpos) {
          if (spec.visible && !spec.visible(b, qpos, kpos, h))
            continue;
          any = true;
          double s = 0;
          for (int64_t e = 0; e < dims.d; ++e)
            s += r.q[(i * dims.hq + h) * dims.d + e] *
                 r.k[(kpos * dims.hkv + g) * dims.d + e];
          s *= dims.scale;
          if (spec.logits)
            s = spec.logits(b, s, qpos, kpos, h);
          double w = spec.sigmoid ? 1.0 / (1.0 + std::exp(-s)) : std::exp(s);
          z += w;
          for (int64_t e = 0; e < dims.d; ++e)
            num[e] += w * r.v[(kpos * dims.hkv + g) * dims.d + e];
        }
        if (!any)
          continue;
        for (int64_t e = 0; e < dims.d; ++e)
          out.o[(row * dims.hq + h) * dims.d + e] =
              spec.sigmoid ? num[e] : num[e] / z;
        out.lse[row * dims.hq + h] = std::log(z);
      }
    }
  }
  return out;
}

/// Same shape, and every element within `tol` (equal infinities match).
::testing::AssertionResult near(const State &expected, const State &actual,
                                double tol) {
  if (expected.rows != actual.rows || expected.heads != actual.heads ||
      expected.dim != actual.dim || expected.o.size() != actual.o.size() ||
      expected.lse.size() != actual.lse.size())
    return ::testing::AssertionFailure() << "shapes differ";
  auto close = [tol](double e, double a) {
    if (std::isinf(e) || std::isinf(a))
      return e == a;
    return std::fabs(e - a) <= tol; // false for NaN
  };
  for (size_t i = 0; i < expected.o.size(); ++i)
    if (!close(expected.o[i], actual.o[i]))
      return ::testing::AssertionFailure()
             << "o[" << i << "]: expected " << expected.o[i] << ", got "
             << actual.o[i];
  for (size_t i = 0; i < expected.lse.size(); ++i)
    if (!close(expected.lse[i], actual.lse[i]))
      return ::testing::AssertionFailure()
             << "lse[" << i << "]: expected " << expected.lse[i] << ", got "
             << actual.lse[i];
  return ::testing::AssertionSuccess();
}

bool anyNaN(const State &s) {
  for (double x : s.o)
    if (std::isnan(x))
      return true;
  for (double x : s.lse)
    if (std::isnan(x))
      return true;
  return false;
}

/// attention(), expected to succeed. On failure, a NaN state of the right
/// shape, so that the caller's checks fail instead of indexing out of range.
State run(const Problem &p, const Variant &v, bool finalize = true) {
  State out;
  Status s = attention(p, v, finalize, out);
  EXPECT_TRUE(s.isOk()) << s.message();
  if (!s.isOk()) {
    out = emptyState(p.qoIndptr.empty() ? 0 : p.qoIndptr.back(), p.numQoHeads,
                     p.headDim);
    std::fill(out.o.begin(), out.o.end(), std::nan(""));
    std::fill(out.lse.begin(), out.lse.end(), std::nan(""));
  }
  return out;
}

double maxAbsDiff(const State &a, const State &b) {
  double m = 0;
  for (size_t i = 0; i < a.o.size(); ++i)
    m = std::max(m, std::fabs(a.o[i] - b.o[i]));
  return m;
}

//===----------------------------------------------------------------------===//
// 1. Hand-computed
//===----------------------------------------------------------------------===//

// Scores log 1, log 2, log 3: weights 1/6, 2/6, 3/6.
TEST(Reference, HandComputedSoftmax) {
  Dims dims{1, 1, 2, 1.0};
  Dense r;
  r.lq = 1;
  r.lkv = 3;
  r.q = {1, 0};
  r.k = {std::log(1.0), 0, std::log(2.0), 0, std::log(3.0), 0};
  r.v = {10, 7, 20, 7, 0, 7};
  State s = run(raggedProblem(dims, {r}), plain());
  ASSERT_EQ(s.rows, 1);
  EXPECT_NEAR(s.o[0], 25.0 / 3.0, 1e-13);
  EXPECT_NEAR(s.o[1], 7.0, 1e-13);
  EXPECT_NEAR(s.lse[0], std::log(6.0), 1e-13);

  // Sigmoid of the same scores: sigma(log j) = j / (1 + j).
  Variant sig = sigmoid(0.0);
  State g = run(raggedProblem(dims, {r}), sig);
  double w1 = 0.5, w2 = 2.0 / 3.0, w3 = 0.75;
  EXPECT_NEAR(g.o[0], 10 * w1 + 20 * w2, 1e-13);
  EXPECT_NEAR(g.o[1], 7 * (w1 + w2 + w3), 1e-13);
  EXPECT_NEAR(g.lse[0], std::log(w1 + w2 + w3), 1e-13);
}

//===----------------------------------------------------------------------===//
// 2. The merge counter-example
//===----------------------------------------------------------------------===//

TEST(Reference, MergeCounterExample) {
  State a = emptyState(1, 1, 1), b = emptyState(1, 1, 1), m;
  a.o = {1};
  a.lse = {std::log(2.0)};
  b.o = {5};
  b.lse = {std::log(6.0)};
  ASSERT_TRUE(merge(a, b, Reduction::Softmax, m).isOk());
  EXPECT_NEAR(m.o[0], 4.0, 1e-14);         // (2 * 1 + 6 * 5) / 8
  EXPECT_GT(std::fabs(m.o[0] - 3.0), 0.5); // The naive average is wrong.
  EXPECT_NEAR(m.lse[0], std::log(8.0), 1e-14);

  // The same numbers out of attention: A has two keys of score 0 and value
  // 1 (Z = 2), B one key of score log 6 and value 5 (Z = 6).
  Dims dims{1, 1, 2, 1.0};
  Dense r;
  r.lq = 1;
  r.lkv = 3;
  r.q = {1, 0};
  r.k = {0, 0, 0, 0, std::log(6.0), 0};
  r.v = {1, 0, 1, 0, 5, 0};
  State full = run(raggedProblem(dims, {r}), plain());
  EXPECT_NEAR(full.o[0], 4.0, 1e-13);
  EXPECT_NEAR(full.lse[0], std::log(8.0), 1e-13);
}

//===----------------------------------------------------------------------===//
// 3. Split invariance
//===----------------------------------------------------------------------===//

/// Splits a paged view into the first cut[b] pages of each request and the
/// rest, both over the same pool.
std::pair<PagedView, PagedView> splitPaged(const PagedView &full,
                                           const std::vector<int64_t> &cut) {
  PagedView pre = full, suf = full;
  pre.indptr = {0};
  suf.indptr = {0};
  pre.indices.clear();
  suf.indices.clear();
  pre.lastPageLen.clear();
  suf.lastPageLen.clear();
  for (size_t b = 0; b < cut.size(); ++b) {
    int64_t begin = full.indptr[b], end = full.indptr[b + 1];
    int64_t n = end - begin;
    for (int64_t j = 0; j < n; ++j)
      (j < cut[b] ? pre : suf).indices.push_back(full.indices[begin + j]);
    pre.indptr.push_back(int32_t(pre.indices.size()));
    suf.indptr.push_back(int32_t(suf.indices.size()));
    pre.lastPageLen.push_back(cut[b] == n ? full.lastPageLen[b]
                                          : int32_t(full.pageSize));
    suf.lastPageLen.push_back(cut[b] == n ? 0 : full.lastPageLen[b]);
  }
  return {pre, suf};
}

TEST(Reference, SplitInvariance) {
  std::mt19937_64 rng(3);
  Dims dims{4, 2, 8, 0.5};
  std::vector<Dense> reqs =
      randomRequests(rng, dims, {3, 1, 2, 0, 4}, {13, 7, 4, 5, 16});
  PagedView full = pagedView(rng, dims, reqs, 4, Layout::NHD);
  // Cuts: some requests keep every page in the prefix, some none.
  std::vector<int64_t> cut = {2, 0, 1, 1, 4};
  auto [pre, suf] = splitPaged(full, cut);

  Problem pFull = problemWithoutViews(dims, reqs);
  Problem pPre = pFull, pSuf = pFull, pBoth = pFull;
  pFull.views = {full};
  pPre.views = {pre};
  pSuf.views = {suf};
  pBoth.views = {pre, suf};

  for (const Variant &v : {plain(), sigmoid(0.3)}) {
    SCOPED_TRACE(v.name);
    State whole = run(pFull, v, false);
    State a = run(pPre, v, false), b = run(pSuf, v, false), merged;
    ASSERT_TRUE(merge(a, b, v.reduction, merged).isOk());
    EXPECT_TRUE(near(whole, merged, 1e-12));
    // Both halves contribute: each differs from the whole.
    EXPECT_GT(maxAbsDiff(whole, a), 1e-3);
    EXPECT_GT(maxAbsDiff(whole, b), 1e-3);
    // Request 1 has all its keys in the suffix, request 4 in the prefix.
    EXPECT_EQ(a.lse[dims.hq * 3], -kInf); // Row 3 is request 1's only row.
  }

  // Two views in one problem are the concatenation: same positions, so
  // position-dependent variants agree with the unsplit view too.
  for (const Variant &v : {causal(), plain(), sigmoid(-0.2)})
    EXPECT_TRUE(near(run(pFull, v), run(pBoth, v), 1e-12)) << v.name;
}

//===----------------------------------------------------------------------===//
// 4. Merge algebra
//===----------------------------------------------------------------------===//

State randomState(std::mt19937_64 &rng, int64_t rows, int64_t heads,
                  int64_t dim) {
  State s = emptyState(rows, heads, dim);
  s.o = randomVector(rng, rows * heads * dim, -2, 2);
  s.lse = randomVector(rng, rows * heads, -4, 4);
  std::bernoulli_distribution empty(0.2);
  for (int64_t i = 0; i < rows * heads; ++i)
    if (empty(rng)) {
      s.lse[i] = -kInf;
      std::fill(s.o.begin() + i * dim, s.o.begin() + (i + 1) * dim, 0.0);
    }
  return s;
}

TEST(Reference, MergeAlgebra) {
  std::mt19937_64 rng(4);
  for (Reduction red : {Reduction::Softmax, Reduction::Sigmoid}) {
    SCOPED_TRACE(toString(red));
    State a = randomState(rng, 6, 3, 5), b = randomState(rng, 6, 3, 5),
          c = randomState(rng, 6, 3, 5), e = emptyState(6, 3, 5);
    State ab, ba, ab_c, bc, a_bc, ae, ea, ee, abc;
    ASSERT_TRUE(merge(a, b, red, ab).isOk());
    ASSERT_TRUE(merge(b, a, red, ba).isOk());
    ASSERT_TRUE(merge(ab, c, red, ab_c).isOk());
    ASSERT_TRUE(merge(b, c, red, bc).isOk());
    ASSERT_TRUE(merge(a, bc, red, a_bc).isOk());
    ASSERT_TRUE(merge(a, e, red, ae).isOk());
    ASSERT_TRUE(merge(e, a, red, ea).isOk());
    ASSERT_TRUE(merge(e, e, red, ee).isOk());
    ASSERT_TRUE(mergeAll({a, b, c}, red, abc).isOk());
    EXPECT_TRUE(near(ab, ba, 1e-12));
    EXPECT_TRUE(near(ab_c, a_bc, 1e-12));
    EXPECT_TRUE(near(ab_c, abc, 0.0));
    EXPECT_TRUE(near(a, ae, 0.0));
    EXPECT_TRUE(near(a, ea, 0.0));
    EXPECT_TRUE(near(e, ee, 0.0));
    EXPECT_GT(maxAbsDiff(ab, a), 1e-3); // Not trivially the identity.
  }
  // Sigmoid adds: spot-check one entry with both sides non-empty.
  State a = emptyState(1, 1, 2), b = emptyState(1, 1, 2), m;
  a.o = {1, 2};
  a.lse = {std::log(0.5)};
  b.o = {3, -1};
  b.lse = {std::log(1.5)};
  ASSERT_TRUE(merge(a, b, Reduction::Sigmoid, m).isOk());
  EXPECT_NEAR(m.o[0], 4, 1e-15);
  EXPECT_NEAR(m.o[1], 1, 1e-15);
  EXPECT_NEAR(m.lse[0], std::log(2.0), 1e-15);
}

//===----------------------------------------------------------------------===//
// 5. Causal, bottom-right aligned
//===----------------------------------------------------------------------===//

// q = 0: every visible key has score 0, so lse = log(#visible) and O is the
// mean of the visible values; v_j = j gives the mean visible position.
TEST(Reference, CausalBottomRight) {
  Dims dims{1, 1, 2, 1.0};
  Dense r;
  r.lq = 2;
  r.lkv = 5;
  r.q.assign(2 * 2, 0.0);
  r.k.assign(5 * 2, 0.5);
  for (int j = 0; j < 5; ++j)
    r.v.insert(r.v.end(), {double(j), 1.0});
  State s = run(raggedProblem(dims, {r}), causal());
  EXPECT_NEAR(s.lse[0], std::log(4.0), 1e-14); // Row 0 (qpos 3): keys 0..3.
  EXPECT_NEAR(s.o[0], 1.5, 1e-14);
  EXPECT_NEAR(s.lse[1], std::log(5.0), 1e-14); // Row 1 (qpos 4): keys 0..4.
  EXPECT_NEAR(s.o[2], 2.0, 1e-14);

  // More queries than keys: qpos = -1, 0, 1 sees 0, 1, 2 keys.
  r.lq = 3;
  r.lkv = 2;
  r.q.assign(3 * 2, 0.0);
  r.k.resize(2 * 2);
  r.v.resize(2 * 2);
  s = run(raggedProblem(dims, {r}), causal());
  EXPECT_EQ(s.lse[0], -kInf);
  EXPECT_EQ(s.o[0], 0.0);
  EXPECT_NEAR(s.lse[1], 0.0, 1e-14);
  EXPECT_NEAR(s.lse[2], std::log(2.0), 1e-14);
  EXPECT_NEAR(s.o[4], 0.5, 1e-14);
}

//===----------------------------------------------------------------------===//
// 6. Variants against the direct computation
//===----------------------------------------------------------------------===//

struct VariantFixture : ::testing::Test {
  std::mt19937_64 rng{6};
  Dims dims{4, 2, 6, 0.4};
  // Request 2 has more queries than keys (qpos -1, 0, 1).
  std::vector<Dense> reqs =
      randomRequests(rng, dims, {4, 1, 3, 5}, {9, 6, 2, 5});
  Problem problem = raggedProblem(dims, reqs);
  static bool causalVisible(int64_t, int64_t qpos, int64_t kpos, int64_t) {
    return kpos <= qpos;
  }
};

TEST_F(VariantFixture, Plain) {
  EXPECT_TRUE(near(direct(dims, reqs, {}), run(problem, plain()), 1e-13));
}

TEST_F(VariantFixture, Causal) {
  State s = run(problem, causal());
  EXPECT_TRUE(near(direct(dims, reqs, {causalVisible, {}}), s, 1e-13));
  EXPECT_GT(maxAbsDiff(s, run(problem, plain())), 1e-3);
}

TEST_F(VariantFixture, SlidingWindow) {
  std::vector<int32_t> w = {2, -1, 0, 1};
  DirectSpec spec;
  spec.visible = [&](int64_t b, int64_t qpos, int64_t kpos, int64_t) {
    return kpos <= qpos && (w[b] < 0 || kpos >= qpos - w[b]);
  };
  State s = run(problem, slidingWindow(w));
  EXPECT_TRUE(near(direct(dims, reqs, spec), s, 1e-13));
  EXPECT_GT(maxAbsDiff(s, run(problem, causal())), 1e-3);
  // Window 0: each query sees only itself, so O = v[qpos] exactly.
  int64_t row = 4 + 1 + 1; // Request 2, row 1: qpos 0.
  for (int64_t h = 0; h < dims.hq; ++h)
    for (int64_t e = 0; e < dims.d; ++e)
      EXPECT_NEAR(s.o[(row * dims.hq + h) * dims.d + e],
                  reqs[2].v[(0 * dims.hkv + h / 2) * dims.d + e], 1e-15);
}

TEST_F(VariantFixture, SoftCap) {
  problem.scale = dims.scale = 4.0; // Scores well beyond the cap.
  double cap = 1.5;
  DirectSpec spec;
  spec.visible = causalVisible;
  spec.logits = [&](int64_t, double s, int64_t, int64_t, int64_t) {
    return cap * std::tanh(s / cap);
  };
  State s = run(problem, softCap(cap));
  EXPECT_TRUE(near(direct(dims, reqs, spec), s, 1e-13));
  EXPECT_GT(maxAbsDiff(s, run(problem, causal())), 1e-2);
}

TEST_F(VariantFixture, Alibi) {
  std::vector<double> slopes = {0.5, -0.25, 1.0, 0.125};
  DirectSpec spec;
  spec.visible = causalVisible;
  spec.logits = [&](int64_t, double s, int64_t qpos, int64_t kpos, int64_t h) {
    return s + slopes[h] * (kpos - qpos);
  };
  State s = run(problem, alibi(slopes));
  EXPECT_TRUE(near(direct(dims, reqs, spec), s, 1e-13));
  EXPECT_GT(maxAbsDiff(s, run(problem, causal())), 1e-2);
}

TEST_F(VariantFixture, CustomMask) {
  std::bernoulli_distribution coin(0.5);
  std::vector<std::vector<uint8_t>> masks;
  std::vector<int64_t> lqs, lkvs;
  for (const Dense &r : reqs) {
    masks.emplace_back(r.lq * r.lkv);
    for (uint8_t &m : masks.back())
      m = coin(rng);
    lqs.push_back(r.lq);
    lkvs.push_back(r.lkv);
  }
  masks[0][0 * 9 + 0] = 1; // Make request 0 row 0 see exactly key 0 ...
  for (int j = 1; j < 9; ++j)
    masks[0][j] = 0;
  for (int j = 0; j < 9; ++j) // ... and row 1 nothing.
    masks[0][9 + j] = 0;
  CustomMaskParams params;
  ASSERT_TRUE(customMaskParams(masks, lqs, lkvs, params).isOk());
  DirectSpec spec;
  spec.visible = [&](int64_t b, int64_t qpos, int64_t kpos, int64_t) {
    int64_t i = qpos - (lkvs[b] - lqs[b]);
    return masks[b][i * lkvs[b] + kpos] != 0;
  };
  State s = run(problem, customMask(params.bits, params.row0, params.stride));
  EXPECT_TRUE(near(direct(dims, reqs, spec), s, 1e-13));
  for (int64_t e = 0; e < dims.d; ++e) // Row 0, head 0: O = v[key 0].
    EXPECT_NEAR(s.o[e], reqs[0].v[e], 1e-15);
  EXPECT_EQ(s.lse[1 * dims.hq], -kInf); // Row 1: fully masked.
}

TEST(Reference, CustomMaskPackingByHand) {
  // Request 0: 2 x 3 mask, request 1: 1 x 2 mask.
  std::vector<std::vector<uint8_t>> masks = {{1, 0, 1, 0, 1, 1}, {0, 1}};
  CustomMaskParams p;
  ASSERT_TRUE(customMaskParams(masks, {2, 1}, {3, 2}, p).isOk());
  // Bits 0..5 = 1,0,1,0,1,1 and bits 6..7 = 0,1: 0b10110101.
  EXPECT_EQ(p.bits, (std::vector<uint8_t>{0xB5}));
  EXPECT_EQ(p.row0, (std::vector<int64_t>{0 - (3 - 2) * 3, 6 - (2 - 1) * 2}));
  EXPECT_EQ(p.stride, (std::vector<int64_t>{3, 2}));
}

TEST_F(VariantFixture, Sigmoid) {
  double bias = -1.5;
  DirectSpec spec;
  spec.sigmoid = true;
  spec.logits = [&](int64_t, double s, int64_t, int64_t, int64_t) {
    return s + bias;
  };
  State s = run(problem, sigmoid(bias));
  EXPECT_TRUE(near(direct(dims, reqs, spec), s, 1e-13));
}

// The query/key hooks see x_rot = x[(d + D/2) % D], positions, the right
// head (query head for query, KV head for key) and the request; the output
// hook applies only when finalizing.
TEST_F(VariantFixture, QueryKeyOutputHooks) {
  const int64_t D = dims.d, half = D / 2;
  auto qHook = [](double x, double xr, int64_t d, int64_t qpos, int64_t h,
                  int64_t b) {
    return x - 0.7 * xr * (d < 3 ? 1 : -1) + 0.1 * h + 0.02 * qpos + 0.03 * b +
           0.01 * d;
  };
  auto kHook = [](double x, double xr, int64_t d, int64_t kpos, int64_t h,
                  int64_t b) {
    return x * (1 + 0.5 * h) + 0.3 * xr - 0.05 * kpos + 0.2 * b - 0.02 * d;
  };
  Variant v = causal();
  v.query = qHook;
  v.key = kHook;
  v.output = [](double o, int64_t d, int64_t h) { return 3 * o - d + 0.5 * h; };

  // Transform the dense requests by hand, then compute plainly.
  std::vector<Dense> t = reqs;
  for (size_t b = 0; b < reqs.size(); ++b) {
    const Dense &r = reqs[b];
    for (int64_t i = 0; i < r.lq; ++i)
      for (int64_t h = 0; h < dims.hq; ++h)
        for (int64_t d = 0; d < D; ++d) {
          const double *q = &r.q[(i * dims.hq + h) * D];
          t[b].q[(i * dims.hq + h) * D + d] =
              qHook(q[d], q[(d + half) % D], d, i + r.lkv - r.lq, h, b);
        }
    for (int64_t j = 0; j < r.lkv; ++j)
      for (int64_t h = 0; h < dims.hkv; ++h)
        for (int64_t d = 0; d < D; ++d) {
          const double *k = &r.k[(j * dims.hkv + h) * D];
          t[b].k[(j * dims.hkv + h) * D + d] =
              kHook(k[d], k[(d + half) % D], d, j, h, b);
        }
  }
  State expected = direct(dims, t, {causalVisible, {}});
  State unfinal = run(problem, v, false);
  EXPECT_TRUE(near(expected, unfinal, 1e-12));
  EXPECT_GT(maxAbsDiff(unfinal, run(problem, causal(), false)), 1e-2);

  for (int64_t r = 0; r < expected.rows; ++r)
    for (int64_t h = 0; h < dims.hq; ++h)
      for (int64_t d = 0; d < D; ++d) {
        double &o = expected.o[(r * dims.hq + h) * D + d];
        o = 3 * o - d + 0.5 * h; // Also on the empty row (qpos -1).
      }
  State fin = run(problem, v, true);
  EXPECT_TRUE(near(expected, fin, 1e-12));
  EXPECT_TRUE(near(expected, finalize(unfinal, v), 1e-12));
}

//===----------------------------------------------------------------------===//
// 7. Empty and fully masked rows; extreme logits
//===----------------------------------------------------------------------===//

TEST(Reference, EmptyAndFullyMasked) {
  std::mt19937_64 rng(7);
  Dims dims{2, 1, 4, 0.5};
  // 0: normal; 1: Lkv = 0 with queries; 2: Lq = 0; 3: normal, row 0 masked.
  std::vector<Dense> reqs =
      randomRequests(rng, dims, {2, 2, 0, 3}, {3, 0, 4, 5});
  Problem p = problemWithoutViews(dims, reqs);
  p.views = {pagedView(rng, dims, reqs, 2, Layout::HND)};
  ASSERT_EQ(std::get<PagedView>(p.views[0]).indptr[2],
            std::get<PagedView>(p.views[0]).indptr[1]); // No pages.

  Variant drop = plain(); // Request 3 row 0 (qpos 2) sees nothing.
  drop.mask = [](int64_t qpos, int64_t, int64_t, int64_t b) {
    return !(b == 3 && qpos == 2);
  };
  for (Reduction red :
       {Reduction::Softmax, Reduction::Sigmoid, Reduction::Sparsemax}) {
    SCOPED_TRACE(toString(red));
    drop.reduction = red;
    State s = run(p, drop);
    ASSERT_EQ(s.rows, 7);
    EXPECT_FALSE(anyNaN(s));
    for (int64_t row : {2, 3, 4}) // Request 1's rows, request 3's row 0.
      for (int64_t h = 0; h < 2; ++h) {
        EXPECT_EQ(s.lse[row * 2 + h], -kInf) << row;
        for (int64_t e = 0; e < 4; ++e)
          EXPECT_EQ(s.o[(row * 2 + h) * 4 + e], 0.0);
      }
    for (int64_t row : {0, 1, 5, 6})
      EXPECT_TRUE(std::isfinite(s.lse[row * 2]));
  }

  // A problem with no views at all: every row empty.
  Problem none = problemWithoutViews(dims, reqs);
  State s = run(none, causal());
  EXPECT_FALSE(anyNaN(s));
  for (double l : s.lse)
    EXPECT_EQ(l, -kInf);
  // An empty batch.
  Problem empty = problemWithoutViews(dims, {});
  s = run(empty, plain());
  EXPECT_EQ(s.rows, 0);
}

TEST(Reference, ExtremeLogitsStayFinite) {
  std::mt19937_64 rng(8);
  Dims dims{2, 2, 4, 1.0};
  std::vector<Dense> reqs = randomRequests(rng, dims, {3, 1}, {6, 4});
  Problem p = raggedProblem(dims, reqs);
  State base = run(p, causal());
  for (double shift : {1000.0, -1000.0}) {
    Variant v = causal();
    v.logits = [shift](double s, int64_t, int64_t, int64_t, int64_t) {
      return s + shift;
    };
    State s = run(p, v);
    EXPECT_FALSE(anyNaN(s));
    for (size_t i = 0; i < s.o.size(); ++i)
      EXPECT_NEAR(s.o[i], base.o[i], 1e-12);
    for (size_t i = 0; i < s.lse.size(); ++i) {
      EXPECT_TRUE(std::isfinite(s.lse[i]));
      EXPECT_NEAR(s.lse[i], base.lse[i] + shift, 1e-9);
    }
  }
  // Sigmoid of very negative scores: the weights underflow, the lse is the
  // log of a tiny positive sum (finite), log sum e^s - 1000.
  State g = run(p, sigmoid(-1000.0));
  EXPECT_FALSE(anyNaN(g));
  State plainLse = run(p, plain());
  for (size_t i = 0; i < g.lse.size(); ++i)
    EXPECT_NEAR(g.lse[i], plainLse.lse[i] - 1000.0, 1e-9);
  // All visible scores -inf: an empty result, not NaN.
  Variant negInf = plain();
  negInf.logits = [](double, int64_t, int64_t, int64_t, int64_t) {
    return -kInf;
  };
  for (Reduction red :
       {Reduction::Softmax, Reduction::Sigmoid, Reduction::Sparsemax}) {
    negInf.reduction = red;
    State s = run(p, negInf);
    EXPECT_FALSE(anyNaN(s));
    for (double l : s.lse)
      EXPECT_EQ(l, -kInf);
  }
  // A +inf or NaN score is a broken hook: that (row, head) becomes NaN (so
  // a comparison flags it), the others are unaffected.
  for (double bad : {kInf, std::nan("")}) {
    Variant v = causal();
    v.logits = [bad](double s, int64_t qpos, int64_t kpos, int64_t h,
                     int64_t b) {
      return b == 0 && qpos == 5 && kpos == 1 && h == 1 ? bad : s;
    };
    State s = run(p, v);
    int64_t row = 2, h = 1; // Request 0, row 2: qpos 5.
    EXPECT_TRUE(std::isnan(s.lse[row * 2 + h]));
    EXPECT_TRUE(std::isnan(s.o[(row * 2 + h) * 4]));
    s.lse[row * 2 + h] = base.lse[row * 2 + h];
    std::copy(&base.o[(row * 2 + h) * 4], &base.o[(row * 2 + h) * 4] + 4,
              &s.o[(row * 2 + h) * 4]);
    EXPECT_TRUE(near(base, s, 0.0));
  }
}

//===----------------------------------------------------------------------===//
// 8. Paged == ragged
//===----------------------------------------------------------------------===//

TEST(Reference, PagedEqualsRagged) {
  std::mt19937_64 rng(9);
  Dims dims{6, 3, 4, 0.7};
  std::vector<Dense> reqs =
      randomRequests(rng, dims, {1, 4, 2, 3, 3}, {5, 17, 0, 33, 3});
  for (int64_t ps : {1, 3, 16}) {
    // Requests 1 and 3 share their first page: same first ps tokens.
    std::vector<Dense> r = reqs;
    for (int64_t t = 0; t < ps * dims.hkv * dims.d; ++t) {
      r[3].k[t] = r[1].k[t];
      r[3].v[t] = r[1].v[t];
    }
    Problem ragged = raggedProblem(dims, r);
    for (Layout layout : {Layout::NHD, Layout::HND}) {
      SCOPED_TRACE("page size " + std::to_string(ps) +
                   (layout == Layout::NHD ? " NHD" : " HND"));
      PagedView view = pagedView(rng, dims, r, ps, layout, 1, 3);
      EXPECT_EQ(view.indices[view.indptr[1]], view.indices[view.indptr[3]]);
      Problem paged = problemWithoutViews(dims, r);
      paged.views = {view};
      for (const Variant &v : {causal(), plain(), sigmoid(0.1)}) {
        State a = run(ragged, v), b = run(paged, v);
        EXPECT_TRUE(near(a, b, 0.0)) << v.name;
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// 9. Sparsemax
//===----------------------------------------------------------------------===//

TEST(Reference, SparsemaxByHand) {
  // Scores 1, 0.5, -3 -> tau = 0.25, weights 0.75, 0.25, 0; v_j = e_j.
  Dims dims{1, 1, 4, 1.0};
  Dense r;
  r.lq = 1;
  r.lkv = 3;
  r.q = {1, 0, 0, 0};
  r.k = {1, 0, 0, 0, 0.5, 0, 0, 0, -3, 0, 0, 0};
  r.v = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0};
  Variant sm = plain();
  sm.reduction = Reduction::Sparsemax;
  Problem p = raggedProblem(dims, {r});
  State s = run(p, sm);
  EXPECT_NEAR(s.o[0], 0.75, 1e-15);
  EXPECT_NEAR(s.o[1], 0.25, 1e-15);
  EXPECT_EQ(s.o[2], 0.0);
  EXPECT_EQ(s.o[3], 0.0);
  EXPECT_EQ(s.lse[0], 0.0);

  // A dominant score takes all the weight: scores 3, 0.5, -3 -> 1, 0, 0.
  std::get<RaggedView>(p.views[0]).k[0] = 3;
  s = run(p, sm);
  EXPECT_NEAR(s.o[0], 1.0, 1e-15);
  EXPECT_EQ(s.o[1], 0.0);

  // Equal scores: uniform weights. Masking key 2 leaves two keys.
  std::get<RaggedView>(p.views[0]).k = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  s = run(p, sm);
  for (int e = 0; e < 3; ++e)
    EXPECT_NEAR(s.o[e], 1.0 / 3.0, 1e-15);
  sm.mask = [](int64_t, int64_t kpos, int64_t, int64_t) { return kpos != 2; };
  s = run(p, sm);
  EXPECT_NEAR(s.o[0], 0.5, 1e-15);
  EXPECT_NEAR(s.o[1], 0.5, 1e-15);
  EXPECT_EQ(s.o[2], 0.0);

  // Random scores: the weights sum to 1 (v = all ones gives O = 1).
  std::mt19937_64 rng(10);
  Dims big{2, 1, 4, 3.0};
  std::vector<Dense> reqs = randomRequests(rng, big, {3}, {20});
  std::fill(reqs[0].v.begin(), reqs[0].v.end(), 1.0);
  Variant sm2 = plain();
  sm2.reduction = Reduction::Sparsemax;
  s = run(raggedProblem(big, reqs), sm2);
  for (double o : s.o)
    EXPECT_NEAR(o, 1.0, 1e-12);

  // No state for sparsemax.
  State st;
  Status err = attention(p, sm, /*finalize=*/false, st);
  EXPECT_FALSE(err.isOk());
  EXPECT_NE(err.message().find("no merge rule"), std::string::npos);
}

//===----------------------------------------------------------------------===//
// 10. Validation
//===----------------------------------------------------------------------===//

struct ValidationFixture : ::testing::Test {
  std::mt19937_64 rng{11};
  Dims dims{4, 2, 4, 1.0};
  std::vector<Dense> reqs = randomRequests(rng, dims, {2, 1}, {5, 3});
  Problem base() {
    Problem p = problemWithoutViews(dims, reqs);
    p.views = {pagedView(rng, dims, reqs, 2, Layout::NHD), raggedView(reqs)};
    return p;
  }
  PagedView &paged(Problem &p) { return std::get<PagedView>(p.views[0]); }
  RaggedView &ragged(Problem &p) { return std::get<RaggedView>(p.views[1]); }

  // attention() fails, names the problem, and leaves `out` untouched.
  void expectError(const Problem &p, const Variant &v,
                   const std::string &needle, bool finalize = true) {
    State out = emptyState(1, 1, 1);
    out.o[0] = 42;
    Status s = attention(p, v, finalize, out);
    ASSERT_FALSE(s.isOk()) << "expected an error mentioning '" << needle << "'";
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
    EXPECT_EQ(out.o.size(), 1u);
    EXPECT_EQ(out.o[0], 42);
  }
};

TEST_F(ValidationFixture, BaseIsValid) {
  Problem p = base();
  ProblemShape shape;
  ASSERT_TRUE(validate(p, &shape).isOk());
  EXPECT_EQ(shape.kvLens, (std::vector<int64_t>{10, 6}));
  EXPECT_EQ(shape.qoLens, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(shape.totalQ, 3);
}

TEST_F(ValidationFixture, Problems) {
  Variant v = plain();
  Problem p;
  p = base();
  p.numKvHeads = 3;
  expectError(p, v, "not a multiple of the number of KV heads");
  p = base();
  p.numKvHeads = 0;
  expectError(p, v, "number of KV heads must be >= 1");
  p = base();
  p.headDim = 3;
  expectError(p, v, "head dim must be even");
  p = base();
  p.scale = std::nan("");
  expectError(p, v, "scale must be finite");
  p = base();
  p.q.pop_back();
  expectError(p, v, "q has 47 elements, expected qoIndptr[B] * Hq * D = 48");
  p = base();
  p.qoIndptr.clear();
  expectError(p, v, "qoIndptr is empty");
  p = base();
  p.qoIndptr = {0, 3, 2};
  p.q.resize(2 * 4 * 4);
  expectError(p, v, "qoIndptr decreases at request 1");
  p = base();
  p.qoIndptr = {1, 2, 3};
  expectError(p, v, "qoIndptr[0] must be 0");
  p = base();
  p.qoIndptr = {0, 3}; // Batch 1 against views of batch 2.
  expectError(p, v,
              "view 0 (paged) has batch size 2, but qoIndptr has batch "
              "size 1");
  // Paged view.
  p = base();
  paged(p).indices[1] = int32_t(paged(p).numPages);
  expectError(p, v, "view 0 (paged): page id indices[1] = ");
  p = base();
  paged(p).indices[0] = -1;
  expectError(p, v, "indices[0] = -1 is outside the page pool");
  p = base();
  paged(p).lastPageLen[1] = 0;
  expectError(p, v, "lastPageLen[1] = 0 is outside 1..2");
  p = base();
  paged(p).lastPageLen[0] = 3;
  expectError(p, v, "lastPageLen[0] = 3 is outside 1..2");
  p = base();
  paged(p).lastPageLen.pop_back();
  expectError(p, v, "lastPageLen has 1 entries, expected batch size 2");
  p = base();
  paged(p).indices.pop_back();
  expectError(p, v, "indices has 4 entries, expected indptr[B] = 5");
  p = base();
  paged(p).indptr = {0, 4, 3};
  expectError(p, v, "view 0 (paged): indptr decreases at request 1");
  p = base();
  paged(p).k.pop_back();
  expectError(p, v, "view 0 (paged): K has");
  p = base();
  paged(p).v.push_back(0);
  expectError(p, v, "view 0 (paged): V has");
  p = base();
  paged(p).numPages += 1;
  expectError(p, v, "expected numPages * pageSize * Hkv * D (NHD)");
  p = base();
  paged(p).pageSize = 0;
  expectError(p, v, "page size must be >= 1");
  // Ragged view.
  p = base();
  ragged(p).kvIndptr = {0, 6, 3};
  expectError(p, v, "view 1 (ragged): kvIndptr decreases at request 1");
  p = base();
  ragged(p).k.pop_back();
  expectError(p, v, "view 1 (ragged): K has");
  p = base();
  ragged(p).kvIndptr.pop_back();
  expectError(p, v, "view 1 (ragged) has batch size 1");
  // An empty request's lastPageLen is ignored.
  p = base();
  paged(p).indptr = {0, 5, 5};
  paged(p).lastPageLen = {2, 0};
  EXPECT_TRUE(validate(p).isOk());
}

TEST_F(ValidationFixture, VariantParameters) {
  Problem p = base();
  expectError(p, slidingWindow({1}),
              "variant 'sliding_window': windowLeft has 1 entries, expected "
              "one per request (2)");
  expectError(p, alibi({1, 2}),
              "slopes has 2 entries, expected one per "
              "query head (4)");
  expectError(p, softCap(0.0), "soft-cap must be finite and non-zero");
  expectError(p, customMask({0xff}, {0, 0}, {1, 1}),
              "outside the mask's 8 "
              "bits");
  expectError(p, customMask({0xff}, {0}, {1, 1}), "row0 has 1 entries");
  // The exact bound: one request, Lq = 1, Lkv = 8 reads bits
  // row0 + 7 * 8 + 0..7, i.e. 0..7 for row0 = -56, 1..8 for row0 = -55.
  std::vector<Dense> one = randomRequests(rng, dims, {1}, {8});
  Problem small = raggedProblem(dims, one);
  State out;
  EXPECT_TRUE(
      attention(small, customMask({0x01}, {-56}, {8}), true, out).isOk());
  for (int64_t e = 0; e < dims.d; ++e) // Exactly key 0 is visible.
    EXPECT_NEAR(out.o[e], one[0].v[e], 1e-15);
  expectError(small, customMask({0xff}, {-55}, {8}),
              "request 0 reads bit 8 (qpos 7, kpos 7) outside the mask's 8 "
              "bits");
  expectError(small, customMask({0xff}, {-57}, {8}),
              "request 0 reads bit -1 (qpos 7, kpos 0)");
  Variant sm = plain();
  sm.reduction = Reduction::Sparsemax;
  expectError(p, sm, "no merge rule", /*finalize=*/false);
  // The right sizes pass.
  EXPECT_TRUE(attention(p, slidingWindow({1, 2}), true, out).isOk());
  EXPECT_TRUE(attention(p, alibi({1, 2, 3, 4}), true, out).isOk());

  CustomMaskParams params;
  Status s = customMaskParams({{1, 0}}, {1}, {3}, params);
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("expected Lq * Lkv = 3"), std::string::npos)
      << s.message();
  s = customMaskParams({{1, 0}}, {1, 1}, {2}, params);
  EXPECT_FALSE(s.isOk());
}

TEST(Reference, MergeErrors) {
  State a = emptyState(2, 1, 3), b = emptyState(2, 2, 3), m;
  Status s = merge(a, b, Reduction::Softmax, m);
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("shapes [2, 1, 3] and [2, 2, 3]"),
            std::string::npos)
      << s.message();
  s = merge(a, a, Reduction::Sparsemax, m);
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("sparsemax has no merge rule"), std::string::npos);
  State bad = a;
  bad.o.pop_back();
  EXPECT_FALSE(merge(bad, a, Reduction::Sigmoid, m).isOk());
  EXPECT_FALSE(mergeAll({}, Reduction::Softmax, m).isOk());
}

//===----------------------------------------------------------------------===//
// The comparison helper
//===----------------------------------------------------------------------===//

TEST(Reference, Compare) {
  const double nan = std::nan("");
  std::vector<double> e = {1.0, -2.0, -kInf, 0.0, 1e-6, 100.0};
  std::vector<float> a = {1.0f, -2.001f, -INFINITY, 0.0f, 2e-6f, 100.0f};
  Errors r = compare(e.data(), a.data(), e.size());
  EXPECT_EQ(r.count, 6u);
  EXPECT_NEAR(r.maxAbs, 0.001, 1e-6);
  EXPECT_EQ(r.maxAbsIndex, 1u);
  // |2e-6 - 1e-6| / max(1e-6, floor 1e-3) = 1e-3; at [1]: 0.001 / 2.
  EXPECT_NEAR(r.maxRel, 1e-3, 1e-6);
  EXPECT_EQ(r.maxRelIndex, 4u);
  EXPECT_EQ(r.nonFiniteMismatches, 0u); // -inf vs -inf matches.
  EXPECT_EQ(r.outOfTolerance, 1u);      // 0.001 > 1e-5 + 1e-4 * 2.
  EXPECT_FALSE(r.ok());

  // Non-finite mismatches: NaN / inf where finite is expected, finite where
  // -inf is expected, +inf vs -inf. NaN vs NaN matches.
  std::vector<double> e2 = {1.0, 1.0, -kInf, -kInf, nan, 3.0};
  std::vector<float> a2 = {NAN, INFINITY, -5.0f, INFINITY, NAN, 3.0f};
  r = compare(e2.data(), a2.data(), e2.size());
  EXPECT_EQ(r.nonFiniteMismatches, 4u);
  EXPECT_EQ(r.firstNonFiniteMismatch, 0u);
  EXPECT_EQ(r.outOfTolerance, 4u);
  EXPECT_EQ(r.maxAbs, 0.0); // Only [5] is finite on both sides.

  // Custom floor and tolerance; the double overload.
  std::vector<double> e3 = {0.5, 2.0}, a3 = {0.6, 2.0};
  CompareOptions opts;
  opts.relFloor = 1.0;
  opts.atol = 0.2;
  r = compare(e3.data(), a3.data(), 2, opts);
  EXPECT_NEAR(r.maxRel, 0.1, 1e-12); // 0.1 / max(0.5, 1.0)
  EXPECT_TRUE(r.ok());
  EXPECT_NE(r.summary().find("max abs 0.1"), std::string::npos) << r.summary();
}

//===----------------------------------------------------------------------===//
// Size: the reference must stay usable for realistic shapes.
//===----------------------------------------------------------------------===//

TEST(Reference, RealisticSize) {
  std::mt19937_64 rng(12);
  Dims dims{8, 8, 256, 1.0 / 16};
  std::vector<Dense> reqs = randomRequests(rng, dims, {128}, {1000});
  Problem p = problemWithoutViews(dims, reqs);
  p.views = {pagedView(rng, dims, reqs, 16, Layout::NHD)};
  auto start = std::chrono::steady_clock::now();
  State s = run(p, causal());
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  RecordProperty("seconds", std::to_string(seconds));
  std::printf("128 x 1000 x 8 heads x d=256, causal: %.3f s\n", seconds);
  EXPECT_FALSE(anyNaN(s));
  // Row i sees 873 + i keys of score ~0: lse close to log(873 + i).
  EXPECT_NEAR(s.lse[0], std::log(873.0), 0.5);
  EXPECT_NEAR(s.lse[127 * 8], std::log(1000.0), 0.5);
}

} // namespace
