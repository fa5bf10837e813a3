//===- State.cpp - mergeable attention states -----------------------------===//
//
// The merge rules of (O, lse) states (seed 000 eq. 6 for softmax, a sum for
// sigmoid) and finalization (the output hook).
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

Status invalid(std::string message) {
  return Status::error(StatusCode::InvalidArgument, std::move(message));
}

std::string shapeOf(const State &s) {
  return "[" + std::to_string(s.rows) + ", " + std::to_string(s.heads) + ", " +
         std::to_string(s.dim) + "]";
}

Status checkState(const State &s, const char *which) {
  if (s.rows < 0 || s.heads < 0 || s.dim < 0)
    return invalid(std::string("state ") + which + " has a negative extent " +
                   shapeOf(s));
  if (s.o.size() != size_t(s.rows * s.heads * s.dim) ||
      s.lse.size() != size_t(s.rows * s.heads))
    return invalid(std::string("state ") + which + " of shape " + shapeOf(s) +
                   " has " + std::to_string(s.o.size()) + " outputs and " +
                   std::to_string(s.lse.size()) + " lse values");
  return Status::ok();
}

/// log(e^a + e^b), with -inf as the identity.
double logAddExp(double a, double b) {
  if (a == kNegInf)
    return b;
  if (b == kNegInf)
    return a;
  double m = std::max(a, b);
  return m + std::log(std::exp(a - m) + std::exp(b - m));
}

} // namespace

State emptyState(int64_t rows, int64_t heads, int64_t dim) {
  State s;
  s.rows = rows;
  s.heads = heads;
  s.dim = dim;
  s.o.assign(size_t(rows * heads * dim), 0.0);
  s.lse.assign(size_t(rows * heads), kNegInf);
  return s;
}

Status merge(const State &a, const State &b, Reduction reduction, State &out) {
  if (reduction == Reduction::Sparsemax)
    return invalid("sparsemax has no merge rule: its states cannot be merged");
  if (reduction != Reduction::Softmax && reduction != Reduction::Sigmoid)
    return invalid("unknown reduction");
  if (Status s = checkState(a, "a"); !s)
    return s;
  if (Status s = checkState(b, "b"); !s)
    return s;
  if (a.rows != b.rows || a.heads != b.heads || a.dim != b.dim)
    return invalid("cannot merge states of shapes " + shapeOf(a) + " and " +
                   shapeOf(b));

  State r = emptyState(a.rows, a.heads, a.dim);
  const int64_t d = a.dim;
  for (int64_t i = 0; i < a.rows * a.heads; ++i) {
    const double la = a.lse[i], lb = b.lse[i];
    const double *oa = &a.o[i * d], *ob = &b.o[i * d];
    double *o = &r.o[i * d];
    if (reduction == Reduction::Sigmoid) {
      // Unnormalised sums: outputs add, normalisers add.
      for (int64_t e = 0; e < d; ++e)
        o[e] = oa[e] + ob[e];
      r.lse[i] = logAddExp(la, lb);
      continue;
    }
    // Softmax, eq. 6. An empty side is the identity.
    if (la == kNegInf) {
      std::copy(ob, ob + d, o);
      r.lse[i] = lb;
      continue;
    }
    if (lb == kNegInf) {
      std::copy(oa, oa + d, o);
      r.lse[i] = la;
      continue;
    }
    const double m = std::max(la, lb);
    const double wa = std::exp(la - m), wb = std::exp(lb - m);
    for (int64_t e = 0; e < d; ++e)
      o[e] = (wa * oa[e] + wb * ob[e]) / (wa + wb);
    r.lse[i] = m + std::log(wa + wb);
  }
  out = std::move(r);
  return Status::ok();
}

Status mergeAll(const std::vector<State> &states, Reduction reduction,
                State &out) {
  if (states.empty())
    return invalid("mergeAll needs at least one state");
  State acc = states.front();
  if (Status s = checkState(acc, "0"); !s)
    return s;
  for (size_t i = 1; i < states.size(); ++i)
    if (Status s = merge(acc, states[i], reduction, acc); !s)
      return Status::error(s.code(), "merging state " + std::to_string(i) +
                                         ": " + s.message());
  out = std::move(acc);
  return Status::ok();
}

State finalize(State state, const Variant &variant) {
  if (!variant.output)
    return state;
  for (int64_t i = 0; i < state.rows; ++i)
    for (int64_t h = 0; h < state.heads; ++h)
      for (int64_t e = 0; e < state.dim; ++e) {
        double &o = state.o[(i * state.heads + h) * state.dim + e];
        o = variant.output(o, e, h);
      }
  return state;
}

} // namespace flashir::reference
