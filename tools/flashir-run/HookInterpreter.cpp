//===- HookInterpreter.cpp - float64 evaluation of variant hooks ----------===//

#include "HookInterpreter.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

using namespace mlir;
using namespace flashir;
using namespace flashir::run;
using runtime::Status;
using runtime::StatusCode;

namespace {

/// A scalar during interpretation: floats in double, integers (any width,
/// i1, index) as their sign-extended value; buffers by reference.
struct Val {
  double f = 0;
  int64_t i = 0;
  const std::vector<int64_t> *buffer = nullptr;
};

unsigned widthOf(Type type) {
  if (type.isIndex())
    return 64;
  return type.getIntOrFloatBitWidth();
}

/// Sign-extends the low `bits` of `v`: the canonical form of an iN value.
int64_t wrap(int64_t v, unsigned bits) {
  if (bits >= 64)
    return v;
  uint64_t mask = (uint64_t(1) << bits) - 1;
  uint64_t u = uint64_t(v) & mask;
  if (bits > 1 && (u >> (bits - 1)))
    u |= ~mask;
  if (bits == 1)
    return u ? 1 : 0; // i1 is a boolean, 0 or 1.
  return int64_t(u);
}

/// The signed value of a canonical iN value (only i1 differs: true is -1).
int64_t signedValue(int64_t v, unsigned bits) {
  return bits == 1 ? -v : v;
}

uint64_t asUnsigned(int64_t v, unsigned bits) {
  if (bits >= 64)
    return uint64_t(v);
  return uint64_t(v) & ((uint64_t(1) << bits) - 1);
}

bool cmpf(arith::CmpFPredicate p, double a, double b) {
  bool unordered = std::isnan(a) || std::isnan(b);
  using P = arith::CmpFPredicate;
  switch (p) {
  case P::AlwaysFalse:
    return false;
  case P::OEQ:
    return !unordered && a == b;
  case P::OGT:
    return !unordered && a > b;
  case P::OGE:
    return !unordered && a >= b;
  case P::OLT:
    return !unordered && a < b;
  case P::OLE:
    return !unordered && a <= b;
  case P::ONE:
    return !unordered && a != b;
  case P::ORD:
    return !unordered;
  case P::UEQ:
    return unordered || a == b;
  case P::UGT:
    return unordered || a > b;
  case P::UGE:
    return unordered || a >= b;
  case P::ULT:
    return unordered || a < b;
  case P::ULE:
    return unordered || a <= b;
  case P::UNE:
    return unordered || a != b;
  case P::UNO:
    return unordered;
  case P::AlwaysTrue:
    return true;
  }
  return false;
}

bool cmpi(arith::CmpIPredicate p, int64_t a, int64_t b, unsigned bits) {
  uint64_t ua = asUnsigned(a, bits), ub = asUnsigned(b, bits);
  using P = arith::CmpIPredicate;
  switch (p) {
  case P::eq:
    return a == b;
  case P::ne:
    return a != b;
  case P::slt:
    return a < b;
  case P::sle:
    return a <= b;
  case P::sgt:
    return a > b;
  case P::sge:
    return a >= b;
  case P::ult:
    return ua < ub;
  case P::ule:
    return ua <= ub;
  case P::ugt:
    return ua > ub;
  case P::uge:
    return ua >= ub;
  }
  return false;
}

/// Evaluates the single block of `region`; returns the yielded value.
class Evaluator {
public:
  explicit Evaluator(Region &region) : block(region.front()) {}

  /// Whether every op of the block is one the evaluator knows.
  Status check() const {
    for (Operation &op : block) {
      if (isa<attn::YieldOp, arith::ConstantOp, arith::AddFOp, arith::SubFOp,
              arith::MulFOp, arith::DivFOp, arith::NegFOp, arith::MaximumFOp,
              arith::MinimumFOp, arith::MaxNumFOp, arith::MinNumFOp,
              arith::CmpFOp, arith::CmpIOp, arith::SelectOp, arith::AddIOp,
              arith::SubIOp, arith::MulIOp, arith::DivSIOp, arith::DivUIOp,
              arith::RemSIOp, arith::RemUIOp, arith::AndIOp, arith::OrIOp,
              arith::XOrIOp, arith::ShLIOp, arith::ShRUIOp, arith::ShRSIOp,
              arith::IndexCastOp, arith::IndexCastUIOp, arith::SIToFPOp,
              arith::UIToFPOp, arith::FPToSIOp, arith::ExtSIOp, arith::ExtUIOp,
              arith::TruncIOp, arith::ExtFOp, arith::TruncFOp, math::TanhOp,
              math::ExpOp, math::Exp2Op, math::LogOp, math::Log2Op,
              math::SqrtOp, math::RsqrtOp, math::AbsFOp, math::PowFOp,
              math::SinOp, math::CosOp, tensor::ExtractOp>(op))
        continue;
      return Status::error(StatusCode::InvalidArgument,
                           "the reference interpreter does not support '" +
                               op.getName().getStringRef().str() +
                               "' in a variant hook");
    }
    return Status::ok();
  }

  Val run(ArrayRef<Val> args) const {
    llvm::SmallDenseMap<Value, Val, 32> env;
    for (auto [arg, v] : llvm::zip_equal(block.getArguments(), args))
      env[arg] = v;
    auto get = [&](Value v) { return env.lookup(v); };
    for (Operation &op : block) {
      if (auto yield = dyn_cast<attn::YieldOp>(op))
        return get(yield.getValues().front());
      Val r;
      Type type = op.getNumResults() ? op.getResult(0).getType() : Type();
      unsigned bits = type && !isa<FloatType>(type) && type.isIntOrIndex()
                          ? widthOf(type)
                          : 64;
      auto a = [&](unsigned n) { return get(op.getOperand(n)); };
      llvm::TypeSwitch<Operation *>(&op)
          .Case([&](arith::ConstantOp c) {
            if (auto fa = dyn_cast<FloatAttr>(c.getValue()))
              r.f = fa.getValueAsDouble();
            else if (auto ia = dyn_cast<IntegerAttr>(c.getValue()))
              r.i = wrap(ia.getValue().getSExtValue(), bits);
          })
          .Case([&](arith::AddFOp) { r.f = a(0).f + a(1).f; })
          .Case([&](arith::SubFOp) { r.f = a(0).f - a(1).f; })
          .Case([&](arith::MulFOp) { r.f = a(0).f * a(1).f; })
          .Case([&](arith::DivFOp) { r.f = a(0).f / a(1).f; })
          .Case([&](arith::NegFOp) { r.f = -a(0).f; })
          .Case([&](arith::MaximumFOp) {
            double x = a(0).f, y = a(1).f;
            r.f = std::isnan(x) || std::isnan(y) ? NAN : std::max(x, y);
          })
          .Case([&](arith::MinimumFOp) {
            double x = a(0).f, y = a(1).f;
            r.f = std::isnan(x) || std::isnan(y) ? NAN : std::min(x, y);
          })
          .Case([&](arith::MaxNumFOp) { r.f = std::fmax(a(0).f, a(1).f); })
          .Case([&](arith::MinNumFOp) { r.f = std::fmin(a(0).f, a(1).f); })
          .Case([&](arith::CmpFOp c) {
            r.i = cmpf(c.getPredicate(), a(0).f, a(1).f);
          })
          .Case([&](arith::CmpIOp c) {
            r.i = cmpi(c.getPredicate(), a(0).i, a(1).i,
                       widthOf(c.getLhs().getType()));
          })
          .Case([&](arith::SelectOp) { r = a(0).i ? a(1) : a(2); })
          .Case([&](arith::AddIOp) { r.i = wrap(a(0).i + a(1).i, bits); })
          .Case([&](arith::SubIOp) { r.i = wrap(a(0).i - a(1).i, bits); })
          .Case([&](arith::MulIOp) {
            r.i = wrap(int64_t(uint64_t(a(0).i) * uint64_t(a(1).i)), bits);
          })
          .Case([&](arith::DivSIOp) {
            r.i = a(1).i ? wrap(a(0).i / a(1).i, bits) : 0;
          })
          .Case([&](arith::DivUIOp) {
            uint64_t d = asUnsigned(a(1).i, bits);
            r.i = d ? wrap(int64_t(asUnsigned(a(0).i, bits) / d), bits) : 0;
          })
          .Case([&](arith::RemSIOp) {
            r.i = a(1).i ? wrap(a(0).i % a(1).i, bits) : 0;
          })
          .Case([&](arith::RemUIOp) {
            uint64_t d = asUnsigned(a(1).i, bits);
            r.i = d ? wrap(int64_t(asUnsigned(a(0).i, bits) % d), bits) : 0;
          })
          .Case([&](arith::AndIOp) { r.i = wrap(a(0).i & a(1).i, bits); })
          .Case([&](arith::OrIOp) { r.i = wrap(a(0).i | a(1).i, bits); })
          .Case([&](arith::XOrIOp) { r.i = wrap(a(0).i ^ a(1).i, bits); })
          .Case([&](arith::ShLIOp) {
            uint64_t s = asUnsigned(a(1).i, bits);
            r.i = s >= bits ? 0 : wrap(int64_t(uint64_t(a(0).i) << s), bits);
          })
          .Case([&](arith::ShRUIOp) {
            uint64_t s = asUnsigned(a(1).i, bits);
            r.i = s >= bits
                      ? 0
                      : wrap(int64_t(asUnsigned(a(0).i, bits) >> s), bits);
          })
          .Case([&](arith::ShRSIOp) {
            uint64_t s = asUnsigned(a(1).i, bits);
            r.i = s >= bits ? (a(0).i < 0 ? -1 : 0) : wrap(a(0).i >> s, bits);
          })
          .Case([&](arith::IndexCastOp) { r.i = wrap(a(0).i, bits); })
          .Case([&](arith::IndexCastUIOp c) {
            r.i =
                wrap(int64_t(asUnsigned(a(0).i, widthOf(c.getIn().getType()))),
                     bits);
          })
          // i1 is stored as 0/1; as a signed value a true i1 is -1.
          .Case([&](arith::SIToFPOp c) {
            r.f = double(signedValue(a(0).i, widthOf(c.getIn().getType())));
          })
          .Case([&](arith::UIToFPOp c) {
            r.f = double(asUnsigned(a(0).i, widthOf(c.getIn().getType())));
          })
          .Case([&](arith::FPToSIOp) {
            double f = a(0).f;
            // Out-of-range and NaN conversions are poison in arith; keep
            // the interpreter defined.
            if (std::isnan(f))
              f = 0;
            f = std::clamp(f, -9.2e18, 9.2e18);
            r.i = wrap(int64_t(f), bits);
          })
          .Case([&](arith::ExtSIOp c) {
            r.i = wrap(signedValue(a(0).i, widthOf(c.getIn().getType())), bits);
          })
          .Case([&](arith::ExtUIOp c) {
            r.i = int64_t(asUnsigned(a(0).i, widthOf(c.getIn().getType())));
          })
          .Case([&](arith::TruncIOp) { r.i = wrap(a(0).i, bits); })
          .Case([&](arith::ExtFOp) { r.f = a(0).f; })
          .Case([&](arith::TruncFOp) { r.f = double(float(a(0).f)); })
          .Case([&](math::TanhOp) { r.f = std::tanh(a(0).f); })
          .Case([&](math::ExpOp) { r.f = std::exp(a(0).f); })
          .Case([&](math::Exp2Op) { r.f = std::exp2(a(0).f); })
          .Case([&](math::LogOp) { r.f = std::log(a(0).f); })
          .Case([&](math::Log2Op) { r.f = std::log2(a(0).f); })
          .Case([&](math::SqrtOp) { r.f = std::sqrt(a(0).f); })
          .Case([&](math::RsqrtOp) { r.f = 1.0 / std::sqrt(a(0).f); })
          .Case([&](math::AbsFOp) { r.f = std::fabs(a(0).f); })
          .Case([&](math::PowFOp) { r.f = std::pow(a(0).f, a(1).f); })
          .Case([&](math::SinOp) { r.f = std::sin(a(0).f); })
          .Case([&](math::CosOp) { r.f = std::cos(a(0).f); })
          .Case([&](tensor::ExtractOp e) {
            const std::vector<int64_t> *buf = a(0).buffer;
            int64_t idx = get(e.getIndices().front()).i;
            // Out of range reads are undefined in the IR; make them visible.
            r.i =
                buf && idx >= 0 && size_t(idx) < buf->size() ? (*buf)[idx] : 0;
            r.f = double(r.i);
          });
      env[op.getResult(0)] = r;
    }
    return Val();
  }

private:
  Block &block;
};

} // namespace

Status flashir::run::interpretVariant(attn::VariantOp variant,
                                      const std::vector<ParamData> &params,
                                      reference::Variant &out) {
  out = reference::Variant();
  out.name = variant.getSymName().str();
  switch (variant.getReduction()) {
  case attn::ReductionKind::Softmax:
    out.reduction = reference::Reduction::Softmax;
    break;
  case attn::ReductionKind::Sigmoid:
    out.reduction = reference::Reduction::Sigmoid;
    break;
  case attn::ReductionKind::Sparsemax:
    out.reduction = reference::Reduction::Sparsemax;
    break;
  }

  // Shared across the hooks; the std::functions keep them alive.
  auto shared = std::make_shared<std::vector<ParamData>>(params);
  auto paramVals = [shared](int64_t request, int64_t head) {
    SmallVector<Val, 4> vals;
    for (const ParamData &p : *shared) {
      Val v;
      bool isFloat = isa<FloatType>(p.type);
      size_t index = 0;
      if (p.kind == attn::ParamKind::PerRequest)
        index = size_t(request);
      else if (p.kind == attn::ParamKind::PerHead)
        index = size_t(head);
      if (p.kind == attn::ParamKind::Buffer)
        v.buffer = &p.i;
      else if (isFloat)
        v.f = p.f[index];
      else
        v.i = p.i[index];
      vals.push_back(v);
    }
    return vals;
  };

  for (auto [index, region] : llvm::enumerate(variant->getRegions())) {
    if (region.empty())
      continue;
    auto eval = std::make_shared<Evaluator>(region);
    if (Status s = eval->check(); !s)
      return s;
    auto iv = [](int64_t i) {
      Val v;
      v.i = i;
      return v;
    };
    auto fv = [](double f) {
      Val v;
      v.f = f;
      return v;
    };
    switch (index) {
    case 0:
      out.query = [=](double x, double xr, int64_t d, int64_t pos, int64_t h,
                      int64_t b) {
        SmallVector<Val, 8> args = {fv(x), fv(xr), iv(d), iv(pos), iv(h)};
        args.append(paramVals(b, h));
        return eval->run(args).f;
      };
      break;
    case 1:
      // The reference's key hook sees the KV head only, so it cannot pick
      // a per-query-head parameter: such variants are not supported here.
      for (const ParamData &p : params)
        if (p.kind == attn::ParamKind::PerHead)
          return Status::error(StatusCode::InvalidArgument,
                               "the runner does not support per_head "
                               "parameters with a key hook");
      out.key = [=](double x, double xr, int64_t d, int64_t pos, int64_t h,
                    int64_t b) {
        SmallVector<Val, 8> args = {fv(x), fv(xr), iv(d), iv(pos), iv(h)};
        args.append(paramVals(b, 0));
        return eval->run(args).f;
      };
      break;
    case 2:
      out.logits = [=](double s, int64_t qpos, int64_t kpos, int64_t h,
                       int64_t b) {
        SmallVector<Val, 8> args = {fv(s), iv(qpos), iv(kpos), iv(h)};
        args.append(paramVals(b, h));
        return eval->run(args).f;
      };
      break;
    case 3:
      out.mask = [=](int64_t qpos, int64_t kpos, int64_t h, int64_t b) {
        SmallVector<Val, 8> args = {iv(qpos), iv(kpos), iv(h)};
        args.append(paramVals(b, h));
        return eval->run(args).i != 0;
      };
      break;
    default:
      out.output = [=](double o, int64_t d, int64_t h) {
        return eval->run({fv(o), iv(d), iv(h)}).f;
      };
      break;
    }
  }
  return Status::ok();
}
