//===- Inputs.cpp - the generated batch and parameters --------------------===//
//
// Generates a batch: ragged queries, paged or ragged KV with shuffled,
// non-contiguous and optionally shared pages (NaN in every slot no request
// reads), a shared prefix, the variant's parameters and the reference's view
// of all of them; also the one-request slices and random chunks some checks
// run with.
//
//===----------------------------------------------------------------------===//

#include "Runner.h"

#include "flashir/Runtime/Float16.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace mlir;

namespace flashir::run {

using runtime::fromBF16;
using runtime::fromF16;
using runtime::toBF16;
using runtime::toF16;

//===----------------------------------------------------------------------===//
// Host tensors
//===----------------------------------------------------------------------===//

HostTensor makeFloat(DType t, std::vector<int64_t> shape,
                     const std::vector<float> &data) {
  HostTensor h;
  h.shape = std::move(shape);
  h.elemSize = t == DType::F32 ? 4 : 2;
  h.bytes.resize(data.size() * h.elemSize);
  h.value.resize(data.size());
  for (size_t i = 0; i < data.size(); ++i) {
    if (t == DType::F32) {
      std::memcpy(&h.bytes[4 * i], &data[i], 4);
      h.value[i] = data[i];
    } else {
      uint16_t bits = t == DType::F16 ? toF16(data[i]) : toBF16(data[i]);
      std::memcpy(&h.bytes[2 * i], &bits, 2);
      h.value[i] = t == DType::F16 ? fromF16(bits) : fromBF16(bits);
    }
  }
  return h;
}

std::vector<float> readFloat(DType t, const HostTensor &h) {
  std::vector<float> out(h.numel());
  for (size_t i = 0; i < out.size(); ++i) {
    if (t == DType::F32) {
      std::memcpy(&out[i], &h.bytes[4 * i], 4);
    } else {
      uint16_t bits;
      std::memcpy(&bits, &h.bytes[2 * i], 2);
      out[i] = t == DType::F16 ? fromF16(bits) : fromBF16(bits);
    }
  }
  return out;
}

//===----------------------------------------------------------------------===//
// The batch
//===----------------------------------------------------------------------===//

/// Builds view `part` of `count` for each request: a page-aligned slice of
/// its keys, in a pool of shuffled pages with NaN in every unused slot.
static Batch::ViewData makeView(std::mt19937 &rng, DType t,
                                const std::vector<int64_t> &lens, bool paged,
                                bool hnd, int64_t P, int64_t Hkv, int64_t D,
                                bool share) {
  Batch::ViewData view;
  view.lens = lens;
  int64_t B = lens.size();
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  if (!paged) {
    std::vector<int32_t> indptr(1, 0);
    for (int64_t l : lens)
      indptr.push_back(indptr.back() + int32_t(l));
    int64_t total = indptr.back();
    std::vector<float> k(total * Hkv * D), v(k.size());
    for (auto &x : k)
      x = uni(rng);
    for (auto &x : v)
      x = uni(rng);
    view.k = makeFloat(t, {total, Hkv, D}, k);
    view.v = makeFloat(t, {total, Hkv, D}, v);
    view.kvIndptr = makeInt<int32_t>({B + 1}, indptr);
    ref::RaggedView r;
    r.k = view.k.value;
    r.v = view.v.value;
    r.kvIndptr = indptr;
    view.reference = r;
    return view;
  }
  std::vector<int64_t> pagesPer(B);
  int64_t needed = 0;
  for (int64_t b = 0; b < B; ++b) {
    pagesPer[b] = (lens[b] + P - 1) / P;
    needed += pagesPer[b];
  }
  int64_t numPages = needed + 3; // spare pages the table never names
  std::vector<int32_t> perm(numPages);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  std::vector<int32_t> indptr(1, 0), indices, last;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t p = 0; p < pagesPer[b]; ++p)
      indices.push_back(perm[indices.size()]);
    indptr.push_back(int32_t(indices.size()));
    last.push_back(pagesPer[b] ? int32_t(lens[b] - (pagesPer[b] - 1) * P) : 0);
  }
  // Shared physical pages: every later request whose first page is full
  // reuses request 0's first page (if that one is full too).
  if (share && B > 1 && pagesPer[0] > 0 && lens[0] >= P)
    for (int64_t b = 1; b < B; ++b)
      if (pagesPer[b] > 0 && lens[b] >= P)
        indices[indptr[b]] = indices[0];
  // Fill the pool: NaN everywhere, then random values in every slot a
  // request reads.
  std::vector<float> k(numPages * P * Hkv * D, nan), v(k.size(), nan);
  auto offset = [&](int64_t page, int64_t slot, int64_t h) {
    return hnd ? ((page * Hkv + h) * P + slot) * D
               : ((page * P + slot) * Hkv + h) * D;
  };
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < lens[b]; ++t) {
      int64_t page = indices[indptr[b] + t / P], slot = t % P;
      for (int64_t h = 0; h < Hkv; ++h)
        for (int64_t d = 0; d < D; ++d) {
          int64_t o = offset(page, slot, h) + d;
          if (std::isnan(k[o])) { // a shared slot keeps its first value
            k[o] = uni(rng);
            v[o] = uni(rng);
          }
        }
    }
  std::vector<int64_t> poolShape =
      hnd ? std::vector<int64_t>{numPages, Hkv, P, D}
          : std::vector<int64_t>{numPages, P, Hkv, D};
  view.k = makeFloat(t, poolShape, k);
  view.v = makeFloat(t, poolShape, v);
  view.indptr = makeInt<int32_t>({B + 1}, indptr);
  view.indices = makeInt<int32_t>({int64_t(indices.size())}, indices);
  view.last = makeInt<int32_t>({B}, last);
  ref::PagedView r;
  r.pageSize = P;
  r.layout = hnd ? ref::Layout::HND : ref::Layout::NHD;
  r.numPages = numPages;
  r.k = view.k.value;
  r.v = view.v.value;
  r.indptr = indptr;
  r.indices = indices;
  r.lastPageLen = last;
  view.reference = r;
  return view;
}

Batch makeBatch(std::mt19937 &rng, const Options &opts,
                std::vector<int32_t> &qoIndptr) {
  DType t = opts.dtype;
  int64_t D = opts.headDim, Hq = opts.numQoHeads, Hkv = opts.numKvHeads,
          P = opts.pageSize, numViews = opts.numViews;
  bool paged = opts.paged, hnd = opts.hnd;
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  Batch batch;
  batch.B = opts.qoLens.size();
  batch.qo.assign(opts.qoLens.begin(), opts.qoLens.end());
  batch.kv.assign(opts.kvLens.begin(), opts.kvLens.end());
  qoIndptr.assign(1, 0);
  for (int64_t l : batch.qo)
    qoIndptr.push_back(qoIndptr.back() + int32_t(l));
  int64_t totalQ = qoIndptr.back();
  std::vector<float> qData(totalQ * Hq * D);
  for (auto &x : qData)
    x = uni(rng);
  batch.q = makeFloat(t, {totalQ, Hq, D}, qData);
  batch.qoIndptr = makeInt<int32_t>({batch.B + 1}, qoIndptr);
  if (opts.hasPrefix) {
    if (!paged)
      usage("--prefix-len needs a paged --layout");
    Batch::ViewData shared =
        makeView(rng, t, {opts.prefixLen}, true, hnd, P, Hkv, D, false);
    batch.hasPrefix = true;
    batch.prefixLen = opts.prefixLen;
    batch.prefixK = shared.k;
    batch.prefixV = shared.v;
    batch.prefixIndices = shared.indices;
    batch.prefixLenTensor =
        makeInt<int32_t>({1}, std::vector<int32_t>{int32_t(opts.prefixLen)});
    // The reference sees it as a paged view whose rows all name the same
    // pages.
    auto &r = std::get<ref::PagedView>(shared.reference);
    ref::PagedView all = r;
    all.indptr = {0};
    all.indices.clear();
    all.lastPageLen.clear();
    for (int64_t b = 0; b < batch.B; ++b) {
      all.indices.insert(all.indices.end(), r.indices.begin(), r.indices.end());
      all.indptr.push_back(int32_t(all.indices.size()));
      all.lastPageLen.push_back(r.lastPageLen[0]);
    }
    batch.prefixReference = all;
  }
  // Split each request's keys into numViews page-aligned consecutive parts.
  std::vector<std::vector<int64_t>> partLens(numViews,
                                             std::vector<int64_t>(batch.B));
  for (int64_t b = 0; b < batch.B; ++b) {
    int64_t left = batch.kv[b], unit = paged ? P : 1;
    int64_t units = (left + unit - 1) / unit;
    for (int64_t v = 0; v < numViews; ++v) {
      int64_t share =
          v + 1 == numViews ? left : std::min(left, (units / numViews) * unit);
      partLens[v][b] = share;
      left -= share;
    }
  }
  for (int64_t v = 0; v < numViews; ++v)
    batch.views.push_back(makeView(rng, t, partLens[v], paged, hnd, P, Hkv, D,
                                   opts.sharedPages && v == 0));
  return batch;
}

//===----------------------------------------------------------------------===//
// Variant parameters
//===----------------------------------------------------------------------===//

std::vector<ParamData> makeParams(std::mt19937 &rng, const Options &opts,
                                  attn::VariantOp variant, bool standard,
                                  const Batch &batch,
                                  ref::Variant &refVariant) {
  const std::string &variantName = opts.variantName;
  int64_t Hq = opts.numQoHeads;
  // Per-request key counts the variant parameters see include the prefix.
  std::vector<int64_t> totalKv(batch.kv);
  for (auto &n : totalKv)
    n += batch.prefixLen;

  std::vector<ParamData> params;
  for (attn::VariantParamAttr decl : variant.getParamList()) {
    ParamData p;
    p.kind = decl.getKind();
    p.type = decl.getType();
    if (auto tensor = dyn_cast<RankedTensorType>(p.type))
      p.type = tensor.getElementType();
    int64_t n = p.kind == attn::ParamKind::PerRequest ? batch.B
                : p.kind == attn::ParamKind::PerHead  ? Hq
                                                      : 1;
    bool isFloat = isa<FloatType>(p.type);
    StringRef name = decl.getName();
    if (standard && name == "window_left") {
      for (int64_t b = 0; b < batch.B; ++b)
        p.i.push_back(std::uniform_int_distribution<int64_t>(
            -1, std::max<int64_t>(totalKv[b], 1))(rng));
    } else if (standard && name == "cap") {
      p.f.push_back(opts.cap);
    } else if (standard && name == "bias") {
      p.f.push_back(opts.bias);
    } else if (standard && name == "slope") {
      for (int64_t h = 0; h < Hq; ++h)
        p.f.push_back(std::exp2(-8.0 * double(h + 1) / double(Hq)));
    } else if (standard &&
               (name == "bits" || name == "row0" || name == "stride")) {
      // Filled together below.
    } else if (p.kind == attn::ParamKind::Buffer) {
      for (int i = 0; i < 4096; ++i)
        p.i.push_back(std::uniform_int_distribution<int>(-128, 127)(rng));
    } else {
      for (int64_t i = 0; i < n; ++i) {
        if (isFloat)
          p.f.push_back(std::uniform_real_distribution<double>(0.5, 1.5)(rng));
        else
          p.i.push_back(std::uniform_int_distribution<int64_t>(0, 8)(rng));
      }
    }
    params.push_back(std::move(p));
  }
  if (standard && variantName == "custom_mask") {
    std::vector<std::vector<uint8_t>> masks(batch.B);
    for (int64_t b = 0; b < batch.B; ++b)
      for (int64_t i = 0; i < batch.qo[b] * totalKv[b]; ++i)
        masks[b].push_back(std::uniform_int_distribution<int>(0, 1)(rng));
    ref::CustomMaskParams cm;
    if (ref::Status s = ref::customMaskParams(masks, batch.qo, totalKv, cm); !s)
      usage(s.message());
    if (cm.bits.empty())
      cm.bits.push_back(0); // a zero-sized buffer is still a buffer
    params[0].i.assign(cm.bits.begin(), cm.bits.end());
    for (auto &x : params[0].i)
      x = int8_t(uint8_t(x));
    params[1].i = cm.row0;
    params[2].i = cm.stride;
    refVariant = ref::customMask(cm.bits, cm.row0, cm.stride);
  } else if (standard) {
    if (variantName == "plain")
      refVariant = ref::plain();
    else if (variantName == "causal")
      refVariant = ref::causal();
    else if (variantName == "sliding_window")
      refVariant = ref::slidingWindow(
          std::vector<int32_t>(params[0].i.begin(), params[0].i.end()));
    else if (variantName == "soft_cap")
      refVariant = ref::softCap(params[0].f[0]);
    else if (variantName == "alibi")
      refVariant = ref::alibi(params[0].f);
    else if (variantName == "sigmoid")
      refVariant = ref::sigmoid(params[0].f[0]);
    else
      usage("no reference for standard variant '" + variantName + "'");
  } else if (runtime::Status s = interpretVariant(variant, params, refVariant);
             !s) {
    usage(s.message());
  }
  return params;
}

//===----------------------------------------------------------------------===//
// Slices and chunks
//===----------------------------------------------------------------------===//

Batch sliceRequest(const Batch &full, int64_t b, ArrayRef<ParamData> params,
                   DType t) {
  Batch one;
  one.B = 1;
  one.qo = {full.qo[b]};
  one.kv = {full.kv[b]};
  int32_t q0 = ((const int32_t *)full.qoIndptr.bytes.data())[b];
  int64_t rowBytes =
      full.q.numel() / std::max<int64_t>(full.q.shape[0], 1) * full.q.elemSize;
  one.q = full.q;
  one.q.shape[0] = full.qo[b];
  one.q.bytes.assign(full.q.bytes.begin() + q0 * rowBytes,
                     full.q.bytes.begin() + (q0 + full.qo[b]) * rowBytes);
  one.qoIndptr =
      makeInt<int32_t>({2}, std::vector<int32_t>{0, int32_t(full.qo[b])});
  for (const Batch::ViewData &v : full.views) {
    Batch::ViewData w;
    w.lens = {v.lens[b]};
    if (!v.kvIndptr.bytes.empty()) {
      auto *ip = (const int32_t *)v.kvIndptr.bytes.data();
      int64_t tokenBytes =
          v.k.numel() / std::max<int64_t>(v.k.shape[0], 1) * v.k.elemSize;
      w.k = v.k;
      w.v = v.v;
      w.k.shape[0] = w.v.shape[0] = ip[b + 1] - ip[b];
      w.k.bytes.assign(v.k.bytes.begin() + ip[b] * tokenBytes,
                       v.k.bytes.begin() + ip[b + 1] * tokenBytes);
      w.v.bytes.assign(v.v.bytes.begin() + ip[b] * tokenBytes,
                       v.v.bytes.begin() + ip[b + 1] * tokenBytes);
      w.kvIndptr =
          makeInt<int32_t>({2}, std::vector<int32_t>{0, ip[b + 1] - ip[b]});
    } else {
      auto *ip = (const int32_t *)v.indptr.bytes.data();
      auto *ix = (const int32_t *)v.indices.bytes.data();
      auto *last = (const int32_t *)v.last.bytes.data();
      w.k = v.k;
      w.v = v.v;
      w.indptr =
          makeInt<int32_t>({2}, std::vector<int32_t>{0, ip[b + 1] - ip[b]});
      w.indices =
          makeInt<int32_t>({ip[b + 1] - ip[b]},
                           std::vector<int32_t>(ix + ip[b], ix + ip[b + 1]));
      w.last = makeInt<int32_t>({1}, std::vector<int32_t>{last[b]});
    }
    one.views.push_back(std::move(w));
  }
  one.hasPrefix = full.hasPrefix;
  one.prefixLen = full.prefixLen;
  one.prefixK = full.prefixK;
  one.prefixV = full.prefixV;
  one.prefixIndices = full.prefixIndices;
  one.prefixLenTensor = full.prefixLenTensor;
  one.scalarParams = full.scalarParams;
  size_t tensorIndex = 0;
  for (const ParamData &p : params) {
    if (p.kind == attn::ParamKind::Scalar)
      continue;
    HostTensor h = full.paramTensors[tensorIndex++];
    if (p.kind == attn::ParamKind::PerRequest) {
      std::vector<uint8_t> bytes(h.bytes.begin() + b * h.elemSize,
                                 h.bytes.begin() + (b + 1) * h.elemSize);
      h.bytes = bytes;
      h.shape = {1};
    }
    one.paramTensors.push_back(std::move(h));
  }
  for (const HostTensor &o : full.outs) {
    HostTensor h = o;
    h.shape[0] = full.qo[b];
    h.bytes.assign(h.numel() * h.elemSize, 0xff);
    one.outs.push_back(std::move(h));
  }
  (void)t;
  return one;
}

std::vector<uint8_t> rowBytes(const HostTensor &h, int64_t r0, int64_t n) {
  int64_t row = h.numel() / std::max<int64_t>(h.shape[0], 1) * h.elemSize;
  return std::vector<uint8_t>(h.bytes.begin() + r0 * row,
                              h.bytes.begin() + (r0 + n) * row);
}

std::vector<HostTensor> randomChunks(std::mt19937 &rng, const Batch &batch) {
  std::vector<int32_t> indptr(1, 0), starts, ends;
  for (int64_t b = 0; b < batch.B; ++b) {
    int64_t n = batch.kv[b] + batch.prefixLen;
    std::vector<int64_t> cuts = {0, n};
    int extra = std::uniform_int_distribution<int>(0, 3)(rng);
    for (int c = 0; c < extra && n > 1; ++c)
      cuts.push_back(std::uniform_int_distribution<int64_t>(1, n - 1)(rng));
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    for (size_t c = 0; c + 1 < cuts.size(); ++c) {
      starts.push_back(int32_t(cuts[c]));
      ends.push_back(int32_t(cuts[c + 1]));
    }
    indptr.push_back(int32_t(starts.size()));
  }
  return {makeInt<int32_t>({batch.B + 1}, indptr),
          makeInt<int32_t>({int64_t(starts.size())}, starts),
          makeInt<int32_t>({int64_t(ends.size())}, ends)};
}

} // namespace flashir::run
