//===- Float16.h - f16 / bf16 conversions on the host -----------*- C++ -*-===//
//
// Round-to-nearest-even conversions between float and the 16-bit storage
// types, for host code that fills or reads device buffers (no dependency).
//
//===----------------------------------------------------------------------===//

#ifndef FLASHIR_RUNTIME_FLOAT16_H
#define FLASHIR_RUNTIME_FLOAT16_H

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace flashir::runtime {

inline uint16_t toBF16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffff) > 0x7f800000)
    return 0x7fc0;               // NaN
  u += 0x7fff + ((u >> 16) & 1); // round to nearest even
  return uint16_t(u >> 16);
}
inline float fromBF16(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline float fromF16(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  int exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  float f;
  if (exp == 0) {
    f = std::ldexp(float(mant), -24);
  } else if (exp == 31) {
    f = mant ? NAN : INFINITY;
  } else {
    f = std::ldexp(float(mant | 0x400), exp - 25);
  }
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u |= sign;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint16_t toF16(float f) {
  if (std::isnan(f))
    return 0x7e00;
  uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  float a = std::fabs(f);
  if (a >= 65520.0f)
    return sign | 0x7c00;
  if (a < std::ldexp(1.0f, -25))
    return sign;
  int e;
  std::frexp(a, &e); // a = m * 2^e, m in [0.5, 1)
  int exp = std::max(e - 1, -14);
  // Quantum at this exponent: 2^(exp-10); round to nearest even.
  float q = std::nearbyint(std::ldexp(a, 10 - exp));
  uint32_t m = uint32_t(q);
  if (m >= 2048) { // rounded up into the next binade
    m >>= 1;
    ++exp;
  }
  if (exp > 15)
    return sign | 0x7c00;
  if (m < 1024) // subnormal
    return sign | uint16_t(m);
  return sign | uint16_t(((exp + 15) << 10) | (m & 0x3ff));
}

} // namespace flashir::runtime

#endif // FLASHIR_RUNTIME_FLOAT16_H
