//===- decode_launch.cpp - the C++ runtime launching a bundle -------------===//
//
// flashir-decode-check BUNDLE CHIP[:ptx]: loads the bundle through the
// runtime's launcher (CUDA driver loaded at run time), runs every bf16 kernel
// whose variant has no parameters (plain, causal) on fresh random paged
// batches — decode kernels with one query row per request, prefill kernels
// (launchPrefill) with 1..150 — and compares with the float64 reference
// library (ragged views as one-token pages in order). No PyTorch, no MLIR.
// Exit status: 0 all within tolerance, 1 a mismatch, 2 no GPU / bad bundle.
//
//===----------------------------------------------------------------------===//

#include "flashir/Reference/Reference.h"
#include "flashir/Runtime/Float16.h"
#include "flashir/Runtime/Launcher.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>

using namespace flashir;
namespace ref = flashir::reference;

namespace {

using runtime::fromBF16;
using runtime::toBF16;

int fail(const runtime::Status &s) {
  std::fprintf(stderr, "flashir-decode-check: %s\n", s.message().c_str());
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: flashir-decode-check BUNDLE CHIP\n");
    return 2;
  }
  std::unique_ptr<runtime::CudaDriver> driver;
  if (auto s = runtime::CudaDriver::open(0, driver); !s)
    return fail(s);
  // CHIP or CHIP:ptx (load the PTX, compiled by the driver, not the cubin).
  std::string chip = argv[2];
  bool ptx = chip.size() > 4 && chip.compare(chip.size() - 4, 4, ":ptx") == 0;
  if (ptx)
    chip.resize(chip.size() - 4);
  std::unique_ptr<runtime::KernelBundle> launcher;
  if (auto s =
          runtime::KernelBundle::open(*driver, argv[1], chip, launcher, ptx);
      !s)
    return fail(s);

  std::mt19937 rng(2026);
  std::normal_distribution<float> normal;
  int failures = 0, checked = 0;
  for (const runtime::KernelInfo &k : launcher->kernels()) {
    // Decode kernels (one query row per request here) and prefill kernels
    // (ragged query rows, launched over q tiles).
    bool prefill = k.kind == runtime::KernelKind::Prefill;
    if (k.kind == runtime::KernelKind::Merge || k.split() ||
        k.numParams() != 0 || (k.variant != "plain" && k.variant != "causal") ||
        k.element() != "bf16")
      continue;
    int64_t hq = k.numQoHeads(), d = k.headDim();
    int64_t page = k.pageSize(), hkv = k.numKvHeads();
    if (page > 256) // one-page-per-request benchmark kernels: pools of GBs
      continue;
    for (int trial = 0; trial < 3; ++trial) {
      int64_t batch = 1 + int64_t(rng() % 48);
      std::vector<int32_t> qo(1, 0), kvIndptr(1, 0), indices, last;
      std::vector<int64_t> kvLens;
      for (int64_t b = 0; b < batch; ++b) {
        int64_t n = b == 0 ? 0 : int64_t(rng() % 700); // one empty request
        int64_t pages = (n + page - 1) / page;
        kvLens.push_back(n);
        // Prefill: 1..150 query rows (more than keys in some requests).
        qo.push_back(qo.back() + (prefill ? 1 + int32_t(rng() % 150) : 1));
        for (int64_t p = 0; p < pages; ++p)
          indices.push_back(0); // filled below
        kvIndptr.push_back(int32_t(indices.size()));
        last.push_back(pages ? int32_t(n - (pages - 1) * page) : 0);
      }
      int64_t numPages = int64_t(indices.size()) + 5;
      std::vector<int32_t> perm(numPages);
      std::iota(perm.begin(), perm.end(), 0);
      // A ragged view's keys are the pool's rows in order (one-token pages,
      // no page table): the reference reads them through identity indices.
      if (!k.ragged)
        std::shuffle(perm.begin(), perm.end(), rng);
      for (size_t i = 0; i < indices.size(); ++i)
        indices[i] = perm[i];
      if (indices.empty())
        indices.push_back(0);
      int64_t totalQ = qo.back(), maxQo = 0;
      for (int64_t b = 0; b < batch; ++b)
        maxQo = std::max<int64_t>(maxQo, qo[b + 1] - qo[b]);
      size_t poolElems = size_t(numPages * page * hkv * d);
      std::vector<uint16_t> kBits(poolElems), vBits(poolElems),
          qBits(size_t(totalQ * hq * d));
      ref::PagedView view;
      view.pageSize = page;
      view.numPages = numPages;
      // HND kernels read the same bytes as [pages, Hkv, page, D].
      view.layout = k.hnd ? ref::Layout::HND : ref::Layout::NHD;
      view.indptr = kvIndptr;
      view.indices.assign(indices.begin(), indices.begin() + kvIndptr.back());
      view.lastPageLen = last;
      view.k.resize(poolElems);
      view.v.resize(poolElems);
      for (size_t i = 0; i < poolElems; ++i) {
        kBits[i] = toBF16(normal(rng));
        vBits[i] = toBF16(normal(rng));
        view.k[i] = fromBF16(kBits[i]);
        view.v[i] = fromBF16(vBits[i]);
      }
      ref::Problem problem;
      problem.numQoHeads = hq;
      problem.numKvHeads = hkv;
      problem.headDim = d;
      problem.scale = double(float(1.0 / std::sqrt(double(d))));
      problem.qoIndptr = qo;
      problem.q.resize(qBits.size());
      for (size_t i = 0; i < qBits.size(); ++i) {
        qBits[i] = toBF16(normal(rng));
        problem.q[i] = fromBF16(qBits[i]);
      }
      problem.views.push_back(view);
      ref::State expected;
      if (auto s = ref::attention(
              problem, k.variant == "causal" ? ref::causal() : ref::plain(),
              true, expected);
          !s)
        return fail(s);

      // Device buffers.
      runtime::AttentionBuffers buf;
      auto upload = [&](const void *host, size_t bytes, void **dev) {
        if (auto s = driver->alloc(bytes, dev); !s)
          return s;
        return driver->copyToDevice(*dev, host, bytes);
      };
      std::vector<uint16_t> outBits(qBits.size(), 0xffff);
      std::vector<float> lse(size_t(totalQ * hq), NAN);
      bool ok = upload(qBits.data(), qBits.size() * 2, &buf.q) &&
                upload(qo.data(), qo.size() * 4, &buf.qoIndptr) &&
                upload(kBits.data(), poolElems * 2, &buf.kPool) &&
                upload(vBits.data(), poolElems * 2, &buf.vPool) &&
                upload(kvIndptr.data(), kvIndptr.size() * 4, &buf.indptr) &&
                upload(indices.data(), indices.size() * 4, &buf.indices) &&
                upload(last.data(), last.size() * 4, &buf.lastPageLen) &&
                upload(outBits.data(), outBits.size() * 2, &buf.out) &&
                upload(lse.data(), lse.size() * 4, &buf.lse);
      if (!ok)
        return fail(runtime::Status::error(runtime::StatusCode::InvalidArgument,
                                           "device allocation or copy failed"));
      buf.totalQ = totalQ;
      buf.batch = batch;
      buf.numPages = numPages;
      buf.numIndices = int64_t(indices.size());
      if (auto s = prefill ? launcher->launchPrefill(k.name, buf, maxQo)
                           : launcher->launchDecode(k.name, buf);
          !s)
        return fail(s);
      if (auto s = driver->synchronize(); !s)
        return fail(s);
      if (auto s =
              driver->copyToHost(outBits.data(), buf.out, outBits.size() * 2);
          !s)
        return fail(s);
      if (auto s = driver->copyToHost(lse.data(), buf.lse, lse.size() * 4); !s)
        return fail(s);
      for (void *p : {buf.q, buf.qoIndptr, buf.kPool, buf.vPool, buf.indptr,
                      buf.indices, buf.lastPageLen, buf.out, buf.lse})
        (void)driver->free(p);

      double num = 0, den = 0, lseErr = 0;
      bool nonFinite = false;
      for (size_t i = 0; i < outBits.size(); ++i) {
        double o = fromBF16(outBits[i]);
        nonFinite |= !std::isfinite(o);
        num += (o - expected.o[i]) * (o - expected.o[i]);
        den += expected.o[i] * expected.o[i];
      }
      for (size_t i = 0; i < lse.size(); ++i) {
        if (std::isinf(expected.lse[i]))
          nonFinite |= lse[i] != expected.lse[i];
        else
          lseErr = std::max(lseErr, std::fabs(lse[i] - expected.lse[i]));
      }
      double rel = std::sqrt(num / std::max(den, 1e-300));
      bool pass = rel <= 1e-2 && lseErr <= 1e-2 && !nonFinite;
      failures += !pass;
      ++checked;
      std::printf("%s %s %s B=%lld rel_err=%.2e lse_err=%.2e\n",
                  pass ? "PASS" : "FAIL", argv[2], k.name.c_str(),
                  (long long)batch, rel, lseErr);
    }
  }
  std::printf("%d passed, %d failed\n", checked - failures, failures);
  return failures ? 1 : (checked ? 0 : 2);
}
