//===- Reference.h - float64 reference attention ----------------*- C++ -*-===//
//
// An independent, deliberately simple float64 implementation of paged/ragged
// batched attention with variant hooks and mergeable (O, lse) states. It is
// the oracle that compiled CPU code (JIT tests) and GPU kernels are compared
// against, so it shares no code with the compiler: plain C++17, no LLVM/MLIR,
// plain loops, a two-pass softmax (never the online algorithm).
//
// Semantics (the design notes' conventions, pinned here):
//
//  * Queries: q = [totalQ, Hq, D] row-major; request b owns rows
//    qoIndptr[b] .. qoIndptr[b+1].
//  * Keys: the keys of request b are the concatenation, over the problem's
//    views in order, of b's keys in each view. Key positions kpos run
//    0 .. Lkv-1 over that concatenation (Lkv = sum of b's lengths).
//      - Paged view: page pools K, V with layout NHD = [numPages, pageSize,
//        Hkv, D] or HND = [numPages, Hkv, pageSize, D]; request b owns pages
//        indices[indptr[b] .. indptr[b+1]) (ids may repeat / be shared) and
//        has length (pages - 1) * pageSize + lastPageLen[b], or 0 without
//        pages. Logical token t is slot t % pageSize of page
//        indices[indptr[b] + t / pageSize].
//      - Ragged view: K, V = [totalKv, Hkv, D]; request b owns rows
//        kvIndptr[b] .. kvIndptr[b+1].
//  * Query row i (0-based in request b, which has Lq rows) sits at
//    qpos = i + Lkv - Lq (signed: qpos < 0 when Lq > Lkv). GQA: query head h
//    reads KV head h / (Hq / Hkv).
//  * Per (row, query head h), for every key:
//      q'[d] = query(q[d], q[(d + D/2) % D], d, qpos, h, b)
//      k'[d] = key(k[d], k[(d + D/2) % D], d, kpos, hkv, b)   (hkv: KV head)
//      s     = logits(scale * sum_d q'[d] k'[d], qpos, kpos, h, b)
//      the key takes part iff mask(qpos, kpos, h, b).
//    Masked keys are excluded (not given a large negative score). Empty hooks
//    are the identity / "every key visible".
//  * Reductions over the visible keys j:
//      Softmax:   O = sum e^s_j v_j / sum e^s_j,  lse = log sum e^s_j
//      Sigmoid:   O = sum sigmoid(s_j) v_j (unnormalised),
//                 lse = log sum sigmoid(s_j)
//      Sparsemax: p_j = max(s_j - tau, 0) with sum p_j = 1 (exact, sorted),
//                 O = sum p_j v_j, lse = 0 (log of the normaliser 1).
//    No visible key (also: an empty request, or Lq rows with Lkv = 0), or
//    every visible score -inf: O = 0, lse = -inf, for every reduction.
//    A visible score that is NaN or +inf makes that (row, head) NaN (O and
//    lse): hooks are expected to produce finite scores or -inf.
//  * Finalizing applies o = output(o, d, h) to every element of O (including
//    the zero rows of empty (row, head)s); lse is unchanged. Unfinalized
//    results (states) skip the output hook.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHIR_REFERENCE_REFERENCE_H
#define FLASHIR_REFERENCE_REFERENCE_H

#include "flashir/Runtime/Status.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <variant>
#include <vector>

namespace flashir::reference {

using runtime::Status;
using runtime::StatusCode;

//===----------------------------------------------------------------------===//
// Problems
//===----------------------------------------------------------------------===//

enum class Layout { NHD, HND };

/// A paged KV view. Pools are [numPages, pageSize, Hkv, D] (NHD) or
/// [numPages, Hkv, pageSize, D] (HND), row-major.
struct PagedView {
  int64_t pageSize = 1;
  Layout layout = Layout::NHD;
  int64_t numPages = 0;
  std::vector<double> k, v;         // [numPages * pageSize * Hkv * D] each
  std::vector<int32_t> indptr;      // [B + 1], indptr[0] = 0, non-decreasing
  std::vector<int32_t> indices;     // [indptr[B]], page ids in [0, numPages)
  std::vector<int32_t> lastPageLen; // [B], 1..pageSize for non-empty requests
};

/// A ragged KV view: K, V = [kvIndptr[B], Hkv, D] row-major.
struct RaggedView {
  std::vector<double> k, v;
  std::vector<int32_t> kvIndptr; // [B + 1], kvIndptr[0] = 0, non-decreasing
};

using View = std::variant<PagedView, RaggedView>;

/// One batched attention: ragged queries against the concatenation of views.
struct Problem {
  int64_t numQoHeads = 1;        // Hq
  int64_t numKvHeads = 1;        // Hkv, divides Hq
  int64_t headDim = 2;           // D, even (the hooks read x[(d + D/2) % D])
  double scale = 1.0;            // finite
  std::vector<int32_t> qoIndptr; // [B + 1], qoIndptr[0] = 0, non-decreasing
  std::vector<double> q;         // [qoIndptr[B], Hq, D]
  std::vector<View> views;       // zero or more, each with batch size B
};

/// What validate() derives from a valid problem.
struct ProblemShape {
  int64_t batch = 0, numQoHeads = 0, numKvHeads = 0, headDim = 0;
  int64_t totalQ = 0;
  std::vector<int64_t> qoLens; // Lq per request
  std::vector<int64_t> kvLens; // Lkv per request (summed over the views)
};

/// Checks every invariant listed above (head counts, D even, array sizes,
/// monotone indptrs starting at 0, page ids in range, lastPageLen in
/// 1..pageSize for non-empty requests, equal batch sizes). On success fills
/// `shape` if given. The message names the view, request or index at fault.
Status validate(const Problem &problem, ProblemShape *shape = nullptr);

//===----------------------------------------------------------------------===//
// Variants
//===----------------------------------------------------------------------===//

enum class Reduction { Softmax, Sigmoid, Sparsemax };

const char *toString(Reduction reduction);

/// query(x, xRot, dim, qpos, qoHead, request) -> x'
using QueryHook =
    std::function<double(double x, double xRot, int64_t dim, int64_t qpos,
                         int64_t head, int64_t request)>;
/// key(x, xRot, dim, kpos, kvHead, request) -> x'
using KeyHook =
    std::function<double(double x, double xRot, int64_t dim, int64_t kpos,
                         int64_t kvHead, int64_t request)>;
/// logits(s, qpos, kpos, qoHead, request) -> s'
using LogitsHook = std::function<double(double s, int64_t qpos, int64_t kpos,
                                        int64_t head, int64_t request)>;
/// mask(qpos, kpos, qoHead, request) -> visible
using MaskHook = std::function<bool(int64_t qpos, int64_t kpos, int64_t head,
                                    int64_t request)>;
/// output(o, dim, qoHead) -> o' (as in the dialect: no request parameters)
using OutputHook = std::function<double(double o, int64_t dim, int64_t head)>;
/// Checks the variant's captured parameters against a valid problem (e.g.
/// one window per request); called by attention() after validate().
using ParamCheck = std::function<Status(const ProblemShape &shape)>;

/// An attention variant: a reduction and optional hooks (empty = identity /
/// every key visible / no check).
struct Variant {
  std::string name = "custom";
  Reduction reduction = Reduction::Softmax;
  QueryHook query;
  KeyHook key;
  LogitsHook logits;
  MaskHook mask;
  OutputHook output;
  ParamCheck check;
};

/// The standard variants (lib/Dialect/Attn/IR/StandardVariants.mlir).
Variant plain();  // softmax over every key
Variant causal(); // kpos <= qpos
/// Causal and kpos >= qpos - windowLeft[b]; windowLeft[b] < 0: plain causal.
Variant slidingWindow(std::vector<int32_t> windowLeft);
/// Causal; logits cap * tanh(s / cap). cap must be finite and non-zero.
Variant softCap(double cap);
/// Causal; logits s + slopes[h] * (kpos - qpos), one slope per query head.
Variant alibi(std::vector<double> slopes);
/// Key visible iff bit (row0[b] + qpos * stride[b] + kpos) of `bits` is set
/// (little bit order: byte idx >> 3, bit idx & 7). attention() fails if a
/// request would read a bit outside `bits`.
Variant customMask(std::vector<uint8_t> bits, std::vector<int64_t> row0,
                   std::vector<int64_t> stride);
/// Sigmoid reduction, logits s + bias, no mask.
Variant sigmoid(double bias);

/// Parameters of customMask() packed from dense per-request masks.
struct CustomMaskParams {
  std::vector<uint8_t> bits;
  std::vector<int64_t> row0, stride;
};

/// Packs masks[b] (dense [qoLens[b] x kvLens[b]], row-major, nonzero =
/// visible) one after another into little-order bits; request b starts at bit
/// offset_b = sum_{c<b} qoLens[c] * kvLens[c], with stride[b] = kvLens[b] and
/// row0[b] = offset_b - (kvLens[b] - qoLens[b]) * kvLens[b], so that bit
/// row0 + qpos * stride + kpos is masks[b][i * kvLens[b] + kpos].
Status customMaskParams(const std::vector<std::vector<uint8_t>> &masks,
                        const std::vector<int64_t> &qoLens,
                        const std::vector<int64_t> &kvLens,
                        CustomMaskParams &out);

//===----------------------------------------------------------------------===//
// States and attention
//===----------------------------------------------------------------------===//

/// An attention result: o = [rows, heads, dim], lse = [rows, heads].
struct State {
  std::vector<double> o;
  std::vector<double> lse;
  int64_t rows = 0, heads = 0, dim = 0;
};

/// o = 0, lse = -inf: the identity of merge().
State emptyState(int64_t rows, int64_t heads, int64_t dim);

/// Computes the attention of `problem` under `variant` into `out`
/// (rows = totalQ, heads = Hq, dim = D). With `finalize`, applies the output
/// hook; without, `out` is a mergeable state (an error for Sparsemax, which
/// has no merge rule). Invalid inputs give a non-ok Status, `out` untouched.
Status attention(const Problem &problem, const Variant &variant, bool finalize,
                 State &out);

/// Merges the states of two disjoint key sets, per (row, head):
///  Softmax: an entry with lse = -inf is the identity; otherwise
///           m = max(la, lb), wa = e^(la-m), wb = e^(lb-m),
///           o = (wa oa + wb ob) / (wa + wb), lse = m + log(wa + wb).
///  Sigmoid: o = oa + ob, lse = log(e^la + e^lb) (-inf is the identity).
///  Sparsemax: no merge rule: an error.
/// Shapes must agree.
Status merge(const State &a, const State &b, Reduction reduction, State &out);

/// Ordered left fold of merge() over `states` (at least one).
Status mergeAll(const std::vector<State> &states, Reduction reduction,
                State &out);

/// Applies the variant's output hook to every element of `state.o`.
State finalize(State state, const Variant &variant);

//===----------------------------------------------------------------------===//
// Comparison
//===----------------------------------------------------------------------===//

struct CompareOptions {
  /// Relative errors are |actual - expected| / max(|expected|, relFloor).
  double relFloor = 1e-3;
  /// An element is out of tolerance iff it is a non-finite mismatch or
  /// |actual - expected| > atol + rtol * |expected|.
  double atol = 1e-5;
  double rtol = 1e-4;
};

/// Errors of `actual` against `expected`. Two values match as non-finite iff
/// both are NaN, or both are the same infinity (e.g. lse = -inf of an empty
/// row). Any other pairing with a non-finite value (an actual NaN/inf where a
/// finite value is expected, a finite actual where -inf is expected, ...) is
/// a non-finite mismatch; it is counted in `nonFiniteMismatches` and kept out
/// of maxAbs / maxRel, which cover only the pairs where both are finite.
struct Errors {
  size_t count = 0;               // elements compared
  double maxAbs = 0;              // max |actual - expected|
  double maxRel = 0;              // max |actual - expected| / max(|e|, floor)
  size_t maxAbsIndex = 0;         // where maxAbs occurs
  size_t maxRelIndex = 0;         // where maxRel occurs
  size_t nonFiniteMismatches = 0; // see above
  size_t firstNonFiniteMismatch = 0; // valid if nonFiniteMismatches > 0
  size_t outOfTolerance = 0;         // see CompareOptions
  bool ok() const { return outOfTolerance == 0; }
  /// "n=..., max abs ... at [i], max rel ... at [i], non-finite mismatches
  /// ..., out of tolerance ...".
  std::string summary() const;
};

Errors compare(const double *expected, const float *actual, size_t n,
               const CompareOptions &options = {});
Errors compare(const double *expected, const double *actual, size_t n,
               const CompareOptions &options = {});

} // namespace flashir::reference

#endif // FLASHIR_REFERENCE_REFERENCE_H
