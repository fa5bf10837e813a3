//===- Attention.cpp - float64 reference attention ------------------------===//
//
// Validation of a Problem and the attention itself: for every request, gather
// its keys from the views in order, then for every (query row, head) score
// every visible key and reduce with a plain two-pass algorithm.
//
//===----------------------------------------------------------------------===//

#include "flashir/Reference/Reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace flashir::reference {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Status invalid(std::string message) {
  return Status::error(StatusCode::InvalidArgument, std::move(message));
}

std::string str(int64_t x) { return std::to_string(x); }

/// out = a * b * ..., false on overflow or a negative factor.
bool product(std::initializer_list<int64_t> factors, int64_t &out) {
  int64_t p = 1;
  for (int64_t f : factors) {
    if (f < 0)
      return false;
    if (f != 0 && p > std::numeric_limits<int64_t>::max() / f)
      return false;
    p *= f;
  }
  out = p;
  return true;
}

/// Checks an indptr of `batch + 1` entries: starts at 0, never decreases.
/// `where` prefixes the message ("view 2 (paged): "), `name` is the array.
Status checkIndptr(const std::vector<int32_t> &indptr, int64_t batch,
                   const std::string &where, const std::string &name) {
  if (static_cast<int64_t>(indptr.size()) != batch + 1)
    return invalid(where + name + " has " + str(indptr.size()) +
                   " entries, expected batch size + 1 = " + str(batch + 1));
  if (indptr[0] != 0)
    return invalid(where + name + "[0] must be 0, got " + str(indptr[0]));
  for (int64_t b = 0; b < batch; ++b)
    if (indptr[b + 1] < indptr[b])
      return invalid(where + name + " decreases at request " + str(b) + ": " +
                     name + "[" + str(b) + "] = " + str(indptr[b]) + " > " +
                     name + "[" + str(b + 1) + "] = " + str(indptr[b + 1]));
  return Status::ok();
}

/// Checks a pool of `k`/`v` against the expected element count.
Status checkPool(const std::vector<double> &k, const std::vector<double> &v,
                 int64_t expected, const std::string &where,
                 const std::string &shape) {
  if (static_cast<int64_t>(k.size()) != expected)
    return invalid(where + ": K has " + str(k.size()) + " elements, expected " +
                   shape + " = " + str(expected));
  if (static_cast<int64_t>(v.size()) != expected)
    return invalid(where + ": V has " + str(v.size()) + " elements, expected " +
                   shape + " = " + str(expected));
  return Status::ok();
}

/// Length of request b in a validated paged view.
int64_t pagedLength(const PagedView &view, int64_t b) {
  int64_t pages = int64_t(view.indptr[b + 1]) - view.indptr[b];
  if (pages == 0)
    return 0;
  return (pages - 1) * view.pageSize + view.lastPageLen[b];
}

/// Length of request b in a validated ragged view.
int64_t raggedLength(const RaggedView &view, int64_t b) {
  return int64_t(view.kvIndptr[b + 1]) - view.kvIndptr[b];
}

int64_t viewLength(const View &view, int64_t b) {
  if (const auto *paged = std::get_if<PagedView>(&view))
    return pagedLength(*paged, b);
  return raggedLength(std::get<RaggedView>(view), b);
}

Status validatePaged(const PagedView &view, int64_t batch, int64_t hkv,
                     int64_t d, const std::string &where) {
  if (view.pageSize < 1)
    return invalid(where + ": page size must be >= 1, got " +
                   str(view.pageSize));
  if (view.numPages < 0)
    return invalid(where + ": number of pages must be >= 0, got " +
                   str(view.numPages));
  if (view.layout != Layout::NHD && view.layout != Layout::HND)
    return invalid(where + ": unknown layout");
  int64_t poolSize = 0;
  if (!product({view.numPages, view.pageSize, hkv, d}, poolSize))
    return invalid(where + ": page pool size overflows");
  const char *shape = view.layout == Layout::NHD
                          ? "numPages * pageSize * Hkv * D (NHD)"
                          : "numPages * Hkv * pageSize * D (HND)";
  if (Status s = checkPool(view.k, view.v, poolSize, where, shape); !s)
    return s;
  if (Status s = checkIndptr(view.indptr, batch, where + ": ", "indptr"); !s)
    return s;
  if (static_cast<int64_t>(view.indices.size()) != view.indptr[batch])
    return invalid(where + ": indices has " + str(view.indices.size()) +
                   " entries, expected indptr[B] = " + str(view.indptr[batch]));
  for (size_t j = 0; j < view.indices.size(); ++j)
    if (view.indices[j] < 0 || view.indices[j] >= view.numPages)
      return invalid(where + ": page id indices[" + str(j) + "] = " +
                     str(view.indices[j]) + " is outside the page pool [0, " +
                     str(view.numPages) + ")");
  if (static_cast<int64_t>(view.lastPageLen.size()) != batch)
    return invalid(where + ": lastPageLen has " + str(view.lastPageLen.size()) +
                   " entries, expected batch size " + str(batch));
  for (int64_t b = 0; b < batch; ++b) {
    if (view.indptr[b + 1] == view.indptr[b])
      continue; // An empty request's lastPageLen is ignored.
    int32_t last = view.lastPageLen[b];
    if (last < 1 || last > view.pageSize)
      return invalid(where + ": lastPageLen[" + str(b) + "] = " + str(last) +
                     " is outside 1.." + str(view.pageSize) +
                     " for a request with pages");
  }
  return Status::ok();
}

Status validateRagged(const RaggedView &view, int64_t batch, int64_t hkv,
                      int64_t d, const std::string &where) {
  if (Status s = checkIndptr(view.kvIndptr, batch, where + ": ", "kvIndptr");
      !s)
    return s;
  int64_t size = 0;
  if (!product({view.kvIndptr[batch], hkv, d}, size))
    return invalid(where + ": KV size overflows");
  return checkPool(view.k, view.v, size, where, "kvIndptr[B] * Hkv * D");
}

//===----------------------------------------------------------------------===//
// Reductions: from the scores of the visible keys to their weights and lse.
//===----------------------------------------------------------------------===//

struct Reduced {
  std::vector<double> weights; // One per visible key; O = sum w_j v_j.
  double lse = kNegInf;
  bool nan = false; // O and lse are NaN.
};

double sigmoidOf(double s) {
  if (s >= 0)
    return 1.0 / (1.0 + std::exp(-s));
  double e = std::exp(s);
  return e / (1.0 + e);
}

/// log(sigmoid(s)) without underflow: -log(1 + e^-s).
double logSigmoidOf(double s) {
  if (s >= 0)
    return -std::log1p(std::exp(-s));
  return s - std::log1p(std::exp(s));
}

/// log(sum_j e^x_j), -inf for no terms or all terms -inf.
double logSumExp(const std::vector<double> &x) {
  double m = kNegInf;
  for (double v : x)
    m = std::max(m, v);
  if (m == kNegInf)
    return kNegInf;
  double sum = 0;
  for (double v : x)
    sum += std::exp(v - m);
  return m + std::log(sum);
}

Reduced reduceSoftmax(const std::vector<double> &scores) {
  Reduced r;
  r.weights.assign(scores.size(), 0.0);
  // Pass 1: the maximum.
  double m = kNegInf;
  for (double s : scores)
    m = std::max(m, s);
  if (m == kNegInf)
    return r; // No visible key, or every score -inf.
  // Pass 2: the normaliser and the weights.
  double sum = 0;
  for (size_t j = 0; j < scores.size(); ++j) {
    r.weights[j] = std::exp(scores[j] - m);
    sum += r.weights[j];
  }
  for (double &w : r.weights)
    w /= sum;
  r.lse = m + std::log(sum);
  return r;
}

Reduced reduceSigmoid(const std::vector<double> &scores) {
  Reduced r;
  r.weights.resize(scores.size());
  std::vector<double> logWeights(scores.size());
  for (size_t j = 0; j < scores.size(); ++j) {
    r.weights[j] = sigmoidOf(scores[j]);
    logWeights[j] = logSigmoidOf(scores[j]);
  }
  r.lse = logSumExp(logWeights);
  if (r.lse == kNegInf)
    std::fill(r.weights.begin(), r.weights.end(), 0.0);
  return r;
}

Reduced reduceSparsemax(const std::vector<double> &scores) {
  Reduced r;
  r.weights.assign(scores.size(), 0.0);
  // -inf scores never enter the support.
  std::vector<double> z;
  for (double s : scores)
    if (s != kNegInf)
      z.push_back(s);
  if (z.empty())
    return r;
  // Sort descending; the support is the largest k with
  // 1 + k * z_(k) > sum_{i <= k} z_(i); tau = (sum_{i <= k} z_(i) - 1) / k.
  std::sort(z.begin(), z.end(), [](double a, double b) { return a > b; });
  double cum = 0, cumAtK = 0;
  size_t k = 0;
  for (size_t i = 1; i <= z.size(); ++i) {
    cum += z[i - 1];
    if (1.0 + double(i) * z[i - 1] > cum) {
      k = i;
      cumAtK = cum;
    }
  }
  double tau = (cumAtK - 1.0) / double(k); // k >= 1: i = 1 always qualifies.
  for (size_t j = 0; j < scores.size(); ++j)
    r.weights[j] = std::max(scores[j] - tau, 0.0);
  r.lse = 0.0;
  return r;
}

Reduced reduce(const std::vector<double> &scores, Reduction reduction) {
  for (double s : scores) {
    if (std::isnan(s) || s == -kNegInf) {
      Reduced r;
      r.nan = true;
      return r;
    }
  }
  switch (reduction) {
  case Reduction::Softmax:
    return reduceSoftmax(scores);
  case Reduction::Sigmoid:
    return reduceSigmoid(scores);
  case Reduction::Sparsemax:
    return reduceSparsemax(scores);
  }
  Reduced r;
  r.nan = true;
  return r;
}

/// sum_e a[e] * b[e]. Four interleaved partial sums (combined in a fixed
/// order, so results are deterministic) let the compiler vectorize: a
/// single running sum is a serial chain the compiler may not reorder.
double dot(const double *a, const double *b, int64_t n) {
  double acc[4] = {0, 0, 0, 0};
  int64_t e = 0;
  for (; e + 4 <= n; e += 4)
    for (int64_t l = 0; l < 4; ++l)
      acc[l] += a[e + l] * b[e + l];
  for (; e < n; ++e)
    acc[0] += a[e] * b[e];
  return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

//===----------------------------------------------------------------------===//
// Gathering a request's keys.
//===----------------------------------------------------------------------===//

/// Offset of (token t of request b, KV head h, dim 0) in a paged view's pool.
int64_t pagedOffset(const PagedView &view, int64_t b, int64_t t, int64_t h,
                    int64_t hkv, int64_t d) {
  int64_t page = view.indices[view.indptr[b] + t / view.pageSize];
  int64_t slot = t % view.pageSize;
  if (view.layout == Layout::NHD)
    return ((page * view.pageSize + slot) * hkv + h) * d;
  return ((page * hkv + h) * view.pageSize + slot) * d;
}

/// Appends request b's keys and values of `view`, KV head by KV head:
/// k[g] and v[g] are [*, D] for KV head g.
void gather(const View &view, int64_t b, int64_t hkv, int64_t d,
            std::vector<std::vector<double>> &k,
            std::vector<std::vector<double>> &v) {
  int64_t length = viewLength(view, b);
  for (int64_t t = 0; t < length; ++t) {
    for (int64_t g = 0; g < hkv; ++g) {
      int64_t offset;
      const std::vector<double> *kPool, *vPool;
      if (const auto *paged = std::get_if<PagedView>(&view)) {
        offset = pagedOffset(*paged, b, t, g, hkv, d);
        kPool = &paged->k;
        vPool = &paged->v;
      } else {
        const auto &ragged = std::get<RaggedView>(view);
        offset = ((ragged.kvIndptr[b] + t) * hkv + g) * d;
        kPool = &ragged.k;
        vPool = &ragged.v;
      }
      k[g].insert(k[g].end(), kPool->begin() + offset,
                  kPool->begin() + offset + d);
      v[g].insert(v[g].end(), vPool->begin() + offset,
                  vPool->begin() + offset + d);
    }
  }
}

} // namespace

const char *toString(Reduction reduction) {
  switch (reduction) {
  case Reduction::Softmax:
    return "softmax";
  case Reduction::Sigmoid:
    return "sigmoid";
  case Reduction::Sparsemax:
    return "sparsemax";
  }
  return "unknown";
}

Status validate(const Problem &p, ProblemShape *shape) {
  if (p.numQoHeads < 1)
    return invalid("number of query heads must be >= 1, got " +
                   str(p.numQoHeads));
  if (p.numKvHeads < 1)
    return invalid("number of KV heads must be >= 1, got " + str(p.numKvHeads));
  if (p.numQoHeads % p.numKvHeads != 0)
    return invalid("number of query heads (" + str(p.numQoHeads) +
                   ") is not a multiple of the number of KV heads (" +
                   str(p.numKvHeads) + ")");
  if (p.headDim < 2 || p.headDim % 2 != 0)
    return invalid("head dim must be even and >= 2, got " + str(p.headDim));
  if (!std::isfinite(p.scale))
    return invalid("scale must be finite, got " + std::to_string(p.scale));
  if (p.qoIndptr.empty())
    return invalid("qoIndptr is empty; it needs batch size + 1 entries");
  int64_t batch = static_cast<int64_t>(p.qoIndptr.size()) - 1;
  if (Status s = checkIndptr(p.qoIndptr, batch, "", "qoIndptr"); !s)
    return s;
  int64_t qSize = 0;
  if (!product({p.qoIndptr[batch], p.numQoHeads, p.headDim}, qSize))
    return invalid("query size overflows");
  if (static_cast<int64_t>(p.q.size()) != qSize)
    return invalid("q has " + str(p.q.size()) +
                   " elements, expected qoIndptr[B] * Hq * D = " + str(qSize));

  std::vector<int64_t> kvLens(batch, 0);
  for (size_t i = 0; i < p.views.size(); ++i) {
    const View &view = p.views[i];
    bool paged = std::holds_alternative<PagedView>(view);
    std::string where = "view " + str(i) + (paged ? " (paged)" : " (ragged)");
    const std::vector<int32_t> &indptr =
        paged ? std::get<PagedView>(view).indptr
              : std::get<RaggedView>(view).kvIndptr;
    if (static_cast<int64_t>(indptr.size()) != batch + 1)
      return invalid(where + " has batch size " +
                     str(static_cast<int64_t>(indptr.size()) - 1) +
                     ", but qoIndptr has batch size " + str(batch));
    Status s = paged ? validatePaged(std::get<PagedView>(view), batch,
                                     p.numKvHeads, p.headDim, where)
                     : validateRagged(std::get<RaggedView>(view), batch,
                                      p.numKvHeads, p.headDim, where);
    if (!s)
      return s;
    for (int64_t b = 0; b < batch; ++b)
      kvLens[b] += viewLength(view, b);
  }

  if (shape) {
    shape->batch = batch;
    shape->numQoHeads = p.numQoHeads;
    shape->numKvHeads = p.numKvHeads;
    shape->headDim = p.headDim;
    shape->totalQ = p.qoIndptr[batch];
    shape->qoLens.resize(batch);
    for (int64_t b = 0; b < batch; ++b)
      shape->qoLens[b] = int64_t(p.qoIndptr[b + 1]) - p.qoIndptr[b];
    shape->kvLens = std::move(kvLens);
  }
  return Status::ok();
}

Status attention(const Problem &p, const Variant &variant, bool finalizeIt,
                 State &out) {
  ProblemShape shape;
  if (Status s = validate(p, &shape); !s)
    return s;
  if (variant.reduction != Reduction::Softmax &&
      variant.reduction != Reduction::Sigmoid &&
      variant.reduction != Reduction::Sparsemax)
    return invalid("variant '" + variant.name + "' has an unknown reduction");
  if (!finalizeIt && variant.reduction == Reduction::Sparsemax)
    return invalid("variant '" + variant.name +
                   "': a sparsemax reduction has no merge rule and never "
                   "returns a state; finalize it");
  if (variant.check) {
    if (Status s = variant.check(shape); !s)
      return Status::error(s.code(),
                           "variant '" + variant.name + "': " + s.message());
  }

  const int64_t hq = p.numQoHeads, hkv = p.numKvHeads, d = p.headDim;
  const int64_t group = hq / hkv, half = d / 2;
  State result = emptyState(shape.totalQ, hq, d);

  // The current request's keys (after the key hook) and values, per KV
  // head g: keys[g], vals[g] = [Lkv, D], the views concatenated.
  std::vector<std::vector<double>> keys(hkv), vals(hkv);
  std::vector<double> raw(d);
  // Per (request, query head): transformed queries qT = [Lq, D], visibility
  // vis = [Lq, Lkv], scores then weights w = [Lq, Lkv] (0 for masked keys).
  std::vector<double> qT, w, rowScores;
  std::vector<uint8_t> vis;
  for (int64_t b = 0; b < shape.batch; ++b) {
    const int64_t lq = shape.qoLens[b], lkv = shape.kvLens[b];
    const int64_t row0 = p.qoIndptr[b];
    if (lq == 0)
      continue;

    for (int64_t g = 0; g < hkv; ++g) {
      keys[g].clear();
      vals[g].clear();
      keys[g].reserve(lkv * d);
      vals[g].reserve(lkv * d);
    }
    for (const View &view : p.views)
      gather(view, b, hkv, d, keys, vals);

    // k' = key(k, k_rot, d, kpos, g, b).
    if (variant.key)
      for (int64_t g = 0; g < hkv; ++g)
        for (int64_t kpos = 0; kpos < lkv; ++kpos) {
          double *k = &keys[g][kpos * d];
          std::copy(k, k + d, raw.begin());
          for (int64_t e = 0; e < d; ++e)
            k[e] = variant.key(raw[e], raw[(e + half) % d], e, kpos, g, b);
        }

    for (int64_t h = 0; h < hq; ++h) {
      const int64_t g = h / group; // The KV head query head h reads.
      auto qposOf = [&](int64_t i) { return i + lkv - lq; };

      // q' = query(q, q_rot, d, qpos, h, b) for every row.
      qT.assign(lq * d, 0.0);
      for (int64_t i = 0; i < lq; ++i) {
        const double *q = &p.q[((row0 + i) * hq + h) * d];
        for (int64_t e = 0; e < d; ++e)
          qT[i * d + e] = variant.query ? variant.query(q[e], q[(e + half) % d],
                                                        e, qposOf(i), h, b)
                                        : q[e];
      }

      // Scores of the visible keys: s = logits(scale * <q', k'>). Keys
      // outer, rows inner (each key is read once).
      vis.assign(lq * lkv, 0);
      w.assign(lq * lkv, 0.0);
      for (int64_t kpos = 0; kpos < lkv; ++kpos) {
        const double *k = &keys[g][kpos * d];
        for (int64_t i = 0; i < lq; ++i) {
          const int64_t qpos = qposOf(i);
          if (variant.mask && !variant.mask(qpos, kpos, h, b))
            continue;
          double s = p.scale * dot(&qT[i * d], k, d);
          if (variant.logits)
            s = variant.logits(s, qpos, kpos, h, b);
          vis[i * lkv + kpos] = 1;
          w[i * lkv + kpos] = s;
        }
      }

      // Reduce each row over its visible keys: scores -> weights, lse.
      for (int64_t i = 0; i < lq; ++i) {
        // data() + offset: with no keys the rows are empty (w[0] would be
        // out of range).
        double *wi = w.data() + i * lkv;
        const uint8_t *visi = vis.data() + i * lkv;
        rowScores.clear();
        for (int64_t kpos = 0; kpos < lkv; ++kpos)
          if (visi[kpos])
            rowScores.push_back(wi[kpos]);
        Reduced r = reduce(rowScores, variant.reduction);
        const int64_t at = (row0 + i) * hq + h;
        if (r.nan) {
          result.lse[at] = kNaN;
          std::fill(&result.o[at * d], &result.o[at * d] + d, kNaN);
          std::fill(wi, wi + lkv, 0.0);
          continue;
        }
        result.lse[at] = r.lse;
        // Weights back in key order; 0 for masked keys (and for every key
        // of an empty row, whose O stays 0).
        size_t j = 0;
        for (int64_t kpos = 0; kpos < lkv; ++kpos)
          wi[kpos] = visi[kpos] ? r.weights[j++] : 0.0;
      }

      // O = sum_j w_ij v_j: keys outer (each value read once), rows inner;
      // per row the sum still runs over j in increasing order. Keys of
      // weight 0 (masked, outside sparsemax's support, underflowed; every
      // key of an empty or NaN row) are not read.
      for (int64_t kpos = 0; kpos < lkv; ++kpos) {
        const double *v = &vals[g][kpos * d];
        for (int64_t i = 0; i < lq; ++i) {
          const double wij = w[i * lkv + kpos];
          if (wij == 0)
            continue;
          double *o = &result.o[((row0 + i) * hq + h) * d];
          for (int64_t e = 0; e < d; ++e)
            o[e] += wij * v[e];
        }
      }
    }
  }

  out = finalizeIt ? finalize(std::move(result), variant) : std::move(result);
  return Status::ok();
}

} // namespace flashir::reference
