//===- Variants.cpp - the standard variants in plain C++ ------------------===//
//
// Written from the semantics in Reference.h, not from the compiler's
// StandardVariants.mlir. Positions are signed: a query row at qpos < 0 (more
// queries than keys) sees no key under a causal mask.
//
//===----------------------------------------------------------------------===//

#include "flashir/Reference/Reference.h"

#include <cmath>
#include <string>

namespace flashir::reference {

namespace {

Status invalid(std::string message) {
  return Status::error(StatusCode::InvalidArgument, std::move(message));
}

bool causalVisible(int64_t qpos, int64_t kpos) { return kpos <= qpos; }

MaskHook causalMask() {
  return [](int64_t qpos, int64_t kpos, int64_t, int64_t) {
    return causalVisible(qpos, kpos);
  };
}

/// A check that `n` values were given, one per request.
ParamCheck onePerRequest(size_t n, std::string what) {
  return [n, what](const ProblemShape &shape) -> Status {
    if (static_cast<int64_t>(n) != shape.batch)
      return invalid(what + " has " + std::to_string(n) +
                     " entries, expected one per request (" +
                     std::to_string(shape.batch) + ")");
    return Status::ok();
  };
}

} // namespace

Variant plain() {
  Variant v;
  v.name = "plain";
  return v;
}

Variant causal() {
  Variant v;
  v.name = "causal";
  v.mask = causalMask();
  return v;
}

Variant slidingWindow(std::vector<int32_t> windowLeft) {
  Variant v;
  v.name = "sliding_window";
  v.check = onePerRequest(windowLeft.size(), "windowLeft");
  v.mask = [w = std::move(windowLeft)](int64_t qpos, int64_t kpos, int64_t,
                                       int64_t b) {
    if (!causalVisible(qpos, kpos))
      return false;
    return w[b] < 0 || kpos >= qpos - int64_t(w[b]);
  };
  return v;
}

Variant softCap(double cap) {
  Variant v;
  v.name = "soft_cap";
  v.check = [cap](const ProblemShape &) -> Status {
    if (!std::isfinite(cap) || cap == 0)
      return invalid("soft-cap must be finite and non-zero, got " +
                     std::to_string(cap));
    return Status::ok();
  };
  v.logits = [cap](double s, int64_t, int64_t, int64_t, int64_t) {
    return cap * std::tanh(s / cap);
  };
  v.mask = causalMask();
  return v;
}

Variant alibi(std::vector<double> slopes) {
  Variant v;
  v.name = "alibi";
  size_t n = slopes.size();
  v.check = [n](const ProblemShape &shape) -> Status {
    if (static_cast<int64_t>(n) != shape.numQoHeads)
      return invalid("slopes has " + std::to_string(n) +
                     " entries, expected one per query head (" +
                     std::to_string(shape.numQoHeads) + ")");
    return Status::ok();
  };
  v.logits = [slopes = std::move(slopes)](double s, int64_t qpos, int64_t kpos,
                                          int64_t h, int64_t) {
    return s + slopes[h] * double(kpos - qpos);
  };
  v.mask = causalMask();
  return v;
}

Variant customMask(std::vector<uint8_t> bits, std::vector<int64_t> row0,
                   std::vector<int64_t> stride) {
  Variant v;
  v.name = "custom_mask";
  // Every bit a request can read lies in bits: the index is affine in qpos
  // and kpos, so its extremes are at the corners of the request's rectangle.
  v.check = [numBits = int64_t(bits.size()) * 8, row0,
             stride](const ProblemShape &shape) -> Status {
    if (static_cast<int64_t>(row0.size()) != shape.batch)
      return invalid("row0 has " + std::to_string(row0.size()) +
                     " entries, expected one per request (" +
                     std::to_string(shape.batch) + ")");
    if (static_cast<int64_t>(stride.size()) != shape.batch)
      return invalid("stride has " + std::to_string(stride.size()) +
                     " entries, expected one per request (" +
                     std::to_string(shape.batch) + ")");
    for (int64_t b = 0; b < shape.batch; ++b) {
      int64_t lq = shape.qoLens[b], lkv = shape.kvLens[b];
      if (lq == 0 || lkv == 0)
        continue;
      int64_t qFirst = lkv - lq, qLast = lkv - 1;
      for (int64_t qpos : {qFirst, qLast})
        for (int64_t kpos : {int64_t(0), lkv - 1}) {
          int64_t bit = row0[b] + qpos * stride[b] + kpos;
          if (bit < 0 || bit >= numBits)
            return invalid("request " + std::to_string(b) + " reads bit " +
                           std::to_string(bit) + " (qpos " +
                           std::to_string(qpos) + ", kpos " +
                           std::to_string(kpos) + ") outside the mask's " +
                           std::to_string(numBits) + " bits");
        }
    }
    return Status::ok();
  };
  v.mask = [bits = std::move(bits), row0 = std::move(row0),
            stride = std::move(stride)](int64_t qpos, int64_t kpos, int64_t,
                                        int64_t b) {
    int64_t bit = row0[b] + qpos * stride[b] + kpos;
    if (bit < 0 || bit >= int64_t(bits.size()) * 8)
      return false; // Unreachable after the check.
    return ((bits[bit >> 3] >> (bit & 7)) & 1) != 0;
  };
  return v;
}

Variant sigmoid(double bias) {
  Variant v;
  v.name = "sigmoid";
  v.reduction = Reduction::Sigmoid;
  v.logits = [bias](double s, int64_t, int64_t, int64_t, int64_t) {
    return s + bias;
  };
  return v;
}

Status customMaskParams(const std::vector<std::vector<uint8_t>> &masks,
                        const std::vector<int64_t> &qoLens,
                        const std::vector<int64_t> &kvLens,
                        CustomMaskParams &out) {
  if (masks.size() != qoLens.size() || masks.size() != kvLens.size())
    return invalid("customMaskParams: " + std::to_string(masks.size()) +
                   " masks, " + std::to_string(qoLens.size()) +
                   " query lengths and " + std::to_string(kvLens.size()) +
                   " KV lengths; expected one of each per request");
  CustomMaskParams p;
  int64_t offset = 0;
  for (size_t b = 0; b < masks.size(); ++b) {
    int64_t lq = qoLens[b], lkv = kvLens[b];
    if (lq < 0 || lkv < 0)
      return invalid("customMaskParams: request " + std::to_string(b) +
                     " has a negative length");
    if (static_cast<int64_t>(masks[b].size()) != lq * lkv)
      return invalid(
          "customMaskParams: mask of request " + std::to_string(b) + " has " +
          std::to_string(masks[b].size()) +
          " entries, expected Lq * Lkv = " + std::to_string(lq * lkv));
    p.row0.push_back(offset - (lkv - lq) * lkv);
    p.stride.push_back(lkv);
    for (int64_t j = 0; j < lq * lkv; ++j) {
      int64_t bit = offset + j;
      if (size_t(bit >> 3) >= p.bits.size())
        p.bits.resize(size_t(bit >> 3) + 1, 0);
      if (masks[b][j])
        p.bits[bit >> 3] |= uint8_t(1u << (bit & 7));
    }
    offset += lq * lkv;
  }
  p.bits.resize(size_t((offset + 7) / 8), 0);
  out = std::move(p);
  return Status::ok();
}

} // namespace flashir::reference
