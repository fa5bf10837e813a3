//===- VariantHooks.h - a variant's hooks, inlined by every lowering -*- C++
//-*-===//
//
// The one place that knows each hook's block arguments (docs/
// WritingVariants.md) and inlines it: convert-attn-to-loops and every GPU
// kernel family call these stages instead of building argument lists
// themselves. On the GPU a `buffer` parameter is a memref while the hook
// reads a tensor: its tensor.extract / tensor.dim become memref.load /
// memref.dim (the only uses a kernel accepts, see bufferUseReason).
//
//===----------------------------------------------------------------------===//

#ifndef FLASHIR_LIB_CONVERSION_VARIANTHOOKS_H
#define FLASHIR_LIB_CONVERSION_VARIANTHOOKS_H

#include "BuilderUtils.h"

#include "flashir/Dialect/Attn/IR/Attn.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <string>

namespace flashir::conversion {

class VariantHooks {
public:
  /// With `contract`, the inlined floating-point arithmetic may contract
  /// (a * b + c as one fma): the GPU kernels' choice, where a rounding less
  /// is within every tolerance and an instruction less per element counts.
  explicit VariantHooks(attn::VariantOp variant, bool contract = false)
      : variant(variant), contract(contract) {}

  bool hasQuery() { return !variant.getQuery().empty(); }
  bool hasKey() { return !variant.getKey().empty(); }
  bool hasLogits() { return !variant.getLogits().empty(); }
  bool hasMask() { return !variant.getMask().empty(); }
  bool hasOutput() { return !variant.getOutput().empty(); }
  /// Whether a hook may read memory: the variant has buffer parameters.
  bool readsBuffers() {
    return llvm::any_of(variant.getParamList(),
                        [](attn::VariantParamAttr param) {
                          return param.getKind() == attn::ParamKind::Buffer;
                        });
  }
  /// Sigmoid reduction: O = sum sigmoid(s) v, lse = log sum sigmoid(s).
  bool sigmoid() {
    return variant.getReduction() == attn::ReductionKind::Sigmoid;
  }

  /// q' = query(x, x_rot, dim, qpos, head, params...).
  Value query(LocBuilder &b, Value x, Value xRot, Value dim, Value qpos,
              Value head, ValueRange params) {
    return inlineWith(b, variant.getQuery(), {x, xRot, dim, qpos, head},
                      params);
  }
  /// k' = key(x, x_rot, dim, kpos, kv_head, params...).
  Value key(LocBuilder &b, Value x, Value xRot, Value dim, Value kpos,
            Value kvHead, ValueRange params) {
    return inlineWith(b, variant.getKey(), {x, xRot, dim, kpos, kvHead},
                      params);
  }
  /// logits(s, qpos, kpos, head, params...), or `s` without the hook.
  Value logits(LocBuilder &b, Value s, Value qpos, Value kpos, Value head,
               ValueRange params) {
    if (!hasLogits())
      return s;
    return inlineWith(b, variant.getLogits(), {s, qpos, kpos, head}, params);
  }
  /// mask(qpos, kpos, head, params...), or a null value without the hook
  /// (every key kept).
  Value mask(LocBuilder &b, Value qpos, Value kpos, Value head,
             ValueRange params) {
    if (!hasMask())
      return Value();
    return inlineWith(b, variant.getMask(), {qpos, kpos, head}, params);
  }
  /// The value `inMask` of the mask hook's block for (qpos, kpos, head,
  /// params...): only the operations it depends on are inlined.
  Value maskTerm(LocBuilder &b, Value inMask, Value qpos, Value kpos,
                 Value head, ValueRange params) {
    return inlineWith(b, variant.getMask(), {qpos, kpos, head}, params, inMask);
  }
  /// output(o, dim, head) (no parameters), or `o` without the hook.
  Value output(LocBuilder &b, Value o, Value dim, Value head) {
    if (!hasOutput())
      return o;
    return inlineWith(b, variant.getOutput(), {o, dim, head}, {});
  }

  /// Why a kernel cannot pass the buffer parameters as memrefs: a hook uses
  /// one other than through tensor.extract or tensor.dim. Empty if none.
  std::string bufferUseReason() {
    for (Region *hook :
         {&variant.getQuery(), &variant.getKey(), &variant.getLogits(),
          &variant.getMask(), &variant.getOutput()}) {
      if (hook->empty())
        continue;
      for (BlockArgument arg : hook->front().getArguments()) {
        if (!isa<TensorType>(arg.getType()))
          continue;
        for (Operation *user : arg.getUsers())
          if (!isa<tensor::ExtractOp, tensor::DimOp>(user))
            return "buffer parameters read by tensor.extract or tensor.dim "
                   "only (a hook applies " +
                   user->getName().getStringRef().str() + " to one)";
      }
    }
    return "";
  }

private:
  /// Inlines `hook` with `fixed` and `params` for its block arguments and
  /// returns its yield, or with `only`, just the operations `only` depends
  /// on and `only`; a tensor argument bound to a memref is read with memref
  /// ops.
  Value inlineWith(LocBuilder &b, Region &hook, ArrayRef<Value> fixed,
                   ValueRange params, Value only = Value()) {
    Block &block = hook.front();
    IRMapping map;
    SmallVector<Value> args(fixed);
    args.append(params.begin(), params.end());
    for (auto [arg, value] : llvm::zip_equal(block.getArguments(), args))
      map.map(arg, value);
    DenseSet<Operation *> needed;
    if (only)
      collectDefs(only, needed);
    for (Operation &op : block.without_terminator())
      if (!only || needed.contains(&op))
        cloneHookOp(b, op, map);
    if (only)
      return map.lookupOrDefault(only);
    auto yield = cast<attn::YieldOp>(block.getTerminator());
    return map.lookupOrDefault(yield.getValues().front());
  }

  /// The operations of `value`'s block that it depends on.
  static void collectDefs(Value value, DenseSet<Operation *> &defs) {
    SmallVector<Value> work{value};
    while (!work.empty()) {
      Operation *def = work.pop_back_val().getDefiningOp();
      if (def && defs.insert(def).second)
        llvm::append_range(work, def->getOperands());
    }
  }

  void cloneHookOp(LocBuilder &b, Operation &op, IRMapping &map) {
    auto isMemref = [&](Value tensor) {
      return isa<MemRefType>(map.lookupOrDefault(tensor).getType());
    };
    if (auto extract = dyn_cast<tensor::ExtractOp>(op);
        extract && isMemref(extract.getTensor())) {
      SmallVector<Value> indices;
      for (Value index : extract.getIndices())
        indices.push_back(map.lookupOrDefault(index));
      Value source = map.lookupOrDefault(extract.getTensor());
      map.map(extract.getResult(),
              memref::LoadOp::create(b, source, indices).getResult());
      return;
    }
    if (auto dim = dyn_cast<tensor::DimOp>(op);
        dim && isMemref(dim.getSource())) {
      Value source = map.lookupOrDefault(dim.getSource());
      Value index = map.lookupOrDefault(dim.getIndex());
      map.map(dim.getResult(),
              memref::DimOp::create(b, source, index).getResult());
      return;
    }
    Operation *clone = b.clone(op, map);
    if (auto math = dyn_cast<arith::ArithFastMathInterface>(clone);
        contract && math)
      clone->setAttr(
          math.getFastMathAttrName(),
          arith::FastMathFlagsAttr::get(b.getContext(),
                                        math.getFastMathFlagsAttr().getValue() |
                                            arith::FastMathFlags::contract));
  }

  attn::VariantOp variant;
  bool contract;
};

} // namespace flashir::conversion

#endif // FLASHIR_LIB_CONVERSION_VARIANTHOOKS_H
