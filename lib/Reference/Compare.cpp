//===- Compare.cpp - error statistics against the reference --------------===//

#include "flashir/Reference/Reference.h"

#include <cmath>
#include <cstdio>
#include <string>

namespace flashir::reference {

namespace {

/// Both NaN, or the same infinity.
bool sameNonFinite(double e, double a) {
  if (std::isnan(e) || std::isnan(a))
    return std::isnan(e) && std::isnan(a);
  return std::isinf(e) && std::isinf(a) && e == a;
}

template <typename T>
Errors compareImpl(const double *expected, const T *actual, size_t n,
                   const CompareOptions &options) {
  Errors r;
  r.count = n;
  for (size_t i = 0; i < n; ++i) {
    const double e = expected[i], a = static_cast<double>(actual[i]);
    if (!std::isfinite(e) || !std::isfinite(a)) {
      if (!sameNonFinite(e, a)) {
        if (r.nonFiniteMismatches++ == 0)
          r.firstNonFiniteMismatch = i;
        ++r.outOfTolerance;
      }
      continue;
    }
    const double abs = std::fabs(a - e);
    const double rel = abs / std::fmax(std::fabs(e), options.relFloor);
    if (abs > r.maxAbs) {
      r.maxAbs = abs;
      r.maxAbsIndex = i;
    }
    if (rel > r.maxRel) {
      r.maxRel = rel;
      r.maxRelIndex = i;
    }
    if (abs > options.atol + options.rtol * std::fabs(e))
      ++r.outOfTolerance;
  }
  return r;
}

} // namespace

std::string Errors::summary() const {
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "n=%zu, max abs %.3g at [%zu], max rel %.3g at [%zu], "
                "non-finite mismatches %zu, out of tolerance %zu",
                count, maxAbs, maxAbsIndex, maxRel, maxRelIndex,
                nonFiniteMismatches, outOfTolerance);
  std::string s = buf;
  if (nonFiniteMismatches > 0)
    s += " (first non-finite mismatch at [" +
         std::to_string(firstNonFiniteMismatch) + "])";
  return s;
}

Errors compare(const double *expected, const float *actual, size_t n,
               const CompareOptions &options) {
  return compareImpl(expected, actual, n, options);
}

Errors compare(const double *expected, const double *actual, size_t n,
               const CompareOptions &options) {
  return compareImpl(expected, actual, n, options);
}

} // namespace flashir::reference
