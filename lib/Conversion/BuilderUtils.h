//===- BuilderUtils.h - IR building helpers for the lowerings ---*- C++ -*-===//
//
// Loop/if builders with implicit locations and hook inlining, shared by the
// CPU loop lowering and the GPU kernel generator.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHIR_LIB_CONVERSION_BUILDERUTILS_H
#define FLASHIR_LIB_CONVERSION_BUILDERUTILS_H

#include "flashir/Dialect/Attn/IR/Attn.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <limits>

namespace flashir::conversion {
using namespace mlir;

using LocBuilder = ImplicitLocOpBuilder;
using BodyFn =
    function_ref<SmallVector<Value>(LocBuilder &, Value, ValueRange)>;

//===----------------------------------------------------------------------===//
// Small IR-building helpers
//===----------------------------------------------------------------------===//

inline Value cIndex(LocBuilder &b, int64_t v) {
  return arith::ConstantIndexOp::create(b, v);
}
inline Value cF32(LocBuilder &b, float v) {
  return arith::ConstantOp::create(b, b.getF32FloatAttr(v));
}
inline Value negInf(LocBuilder &b) {
  return cF32(b, -std::numeric_limits<float>::infinity());
}

/// scf.for %iv = lb to ub step `step` iter_args(inits); `body` returns the
/// yield.
inline ValueRange buildForStep(LocBuilder &b, Value lb, Value ub, Value step,
                               ValueRange inits, BodyFn body) {
  auto loop = scf::ForOp::create(
      b, lb, ub, step, inits,
      [&](OpBuilder &ob, Location loc, Value iv, ValueRange args) {
        LocBuilder nb(loc, ob);
        scf::YieldOp::create(nb, body(nb, iv, args));
      });
  return loop.getResults();
}

/// scf.for %iv = lb to ub step 1 iter_args(inits); `body` returns the yield.
inline ValueRange buildFor(LocBuilder &b, Value lb, Value ub, ValueRange inits,
                           BodyFn body) {
  return buildForStep(b, lb, ub, cIndex(b, 1), inits, body);
}

/// A loop without loop-carried values.
inline void buildFor(LocBuilder &b, Value lb, Value ub,
                     function_ref<void(LocBuilder &, Value)> body) {
  buildFor(b, lb, ub, {}, [&](LocBuilder &nb, Value iv, ValueRange) {
    body(nb, iv);
    return SmallVector<Value>();
  });
}

/// scf.if with results; both branches return the values to yield.
inline ValueRange
buildIf(LocBuilder &b, Value cond,
        function_ref<SmallVector<Value>(LocBuilder &)> thenFn,
        function_ref<SmallVector<Value>(LocBuilder &)> elseFn) {
  auto ifOp = scf::IfOp::create(
      b, cond,
      [&](OpBuilder &ob, Location loc) {
        LocBuilder nb(loc, ob);
        scf::YieldOp::create(nb, thenFn(nb));
      },
      [&](OpBuilder &ob, Location loc) {
        LocBuilder nb(loc, ob);
        scf::YieldOp::create(nb, elseFn(nb));
      });
  return ifOp.getResults();
}

inline Value isNegInf(LocBuilder &b, Value v) {
  return arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, v, negInf(b));
}

} // namespace flashir::conversion

#endif // FLASHIR_LIB_CONVERSION_BUILDERUTILS_H
