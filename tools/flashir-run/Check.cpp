//===- Check.cpp - outputs against the float64 reference ------------------===//
//
// The independent float64 reference (lib/Reference) for the batch, and the
// checks of the kernel's outputs against it, of a transformed program
// against the program as written, and of batched rows against each request
// run alone.
//
//===----------------------------------------------------------------------===//

#include "Runner.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>

using namespace mlir;

namespace flashir::run {

Expected computeReference(const Options &opts, const Batch &batch,
                          const std::vector<int32_t> &qoIndptr,
                          const ref::Variant &refVariant) {
  ref::Problem problem;
  problem.numQoHeads = opts.numQoHeads;
  problem.numKvHeads = opts.numKvHeads;
  problem.headDim = opts.headDim;
  problem.scale = double(float(opts.scale)); // the kernel's f32 scale
  problem.qoIndptr = qoIndptr;
  problem.q = batch.q.value;
  if (opts.hasPrefix)
    problem.views.push_back(batch.prefixReference);
  Expected expected;
  if (!opts.mergeMode) {
    for (auto &vd : batch.views)
      problem.views.push_back(vd.reference);
    if (ref::Status s =
            ref::attention(problem, refVariant, true, expected.state);
        !s)
      usage("reference: " + s.message());
  } else {
    std::vector<ref::State> parts;
    for (auto &vd : batch.views) {
      ref::Problem one = problem;
      one.views = {vd.reference};
      ref::State s;
      if (ref::Status st = ref::attention(one, refVariant, false, s); !st)
        usage("reference: " + st.message());
      parts.push_back(std::move(s));
    }
    ref::State merged;
    if (ref::Status s = ref::mergeAll(parts, refVariant.reduction, merged); !s)
      usage("reference: " + s.message());
    expected.state = ref::finalize(merged, refVariant);
  }
  // The kernel writes outputs in the storage type: compare against the
  // reference rounded the same way, so the tolerance measures computation.
  std::vector<float> f(expected.state.o.begin(), expected.state.o.end());
  expected.o = makeFloat(opts.dtype, {int64_t(f.size())}, f).value;
  return expected;
}

bool checkOutputs(const Options &opts, const Batch &batch,
                  const Expected &expected, ArrayRef<std::string> resultLabels,
                  const std::string &prefix) {
  ref::CompareOptions copts;
  copts.rtol = opts.rtol;
  copts.atol = opts.atol;
  bool ok = true;
  for (size_t i = 0; i < resultLabels.size(); ++i) {
    std::vector<float> o = readFloat(opts.dtype, batch.outs[2 * i]);
    std::vector<float> l = readFloat(DType::F32, batch.outs[2 * i + 1]);
    ref::Errors eo = ref::compare(expected.o.data(), o.data(), o.size(), copts);
    ref::Errors el =
        ref::compare(expected.state.lse.data(), l.data(), l.size(), copts);
    llvm::outs() << prefix << resultLabels[i] << ": output " << eo.summary()
                 << "\n"
                 << prefix << resultLabels[i] << ": lse    " << el.summary()
                 << "\n";
    ok &= eo.ok() && el.ok();
  }
  return ok;
}

void compareTransformed(const Options &opts, const Batch &batch,
                        const Batch &transformed) {
  // Both f32-accumulated.
  double maxDiff = 0;
  bool bitwise = true;
  for (size_t i = 0; i < batch.outs.size(); ++i) {
    bitwise &= batch.outs[i].bytes == transformed.outs[i].bytes;
    DType t = i % 2 ? DType::F32 : opts.dtype;
    std::vector<float> a = readFloat(t, batch.outs[i]);
    std::vector<float> c = readFloat(t, transformed.outs[i]);
    for (size_t j = 0; j < a.size(); ++j)
      if (std::isfinite(a[j]) && std::isfinite(c[j]))
        maxDiff = std::max(maxDiff, double(std::fabs(a[j] - c[j])));
  }
  llvm::outs() << llvm::format("transformed vs untransformed: max abs diff "
                               "%.3g, bitwise identical: %s\n",
                               maxDiff, bitwise ? "yes" : "no");
}

bool checkBatchInvariance(const Options &opts, ExecutionEngine &engine,
                          ArrayRef<Slot> slots, const Batch &full,
                          ArrayRef<ParamData> params,
                          const std::vector<int32_t> &qoIndptr) {
  bool invariant = true;
  for (int64_t b = 0; b < full.B; ++b) {
    Batch one = sliceRequest(full, b, params, opts.dtype);
    invoke(engine, slots, one);
    for (size_t i = 0; i < full.outs.size(); ++i)
      invariant &=
          one.outs[i].bytes == rowBytes(full.outs[i], qoIndptr[b], full.qo[b]);
  }
  return invariant;
}

} // namespace flashir::run
