//===- CausalMask.cpp - how a mask hook relates to causality -------------===//

#include "CausalMask.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

#include <functional>

using namespace mlir;

namespace flashir::conversion::parts {

/// Signed predicates only: a query row with fewer keys than rows before it
/// has a negative qpos.
CausalMask classifyMask(Region &mask) {
  if (mask.empty() || mask.front().getNumArguments() < 2)
    return CausalMask::None;
  Block &block = mask.front();
  Value qpos = block.getArgument(0), kpos = block.getArgument(1);
  auto isCausalTerm = [&](Value v) {
    auto cmp = v.getDefiningOp<arith::CmpIOp>();
    return cmp && ((cmp.getPredicate() == arith::CmpIPredicate::sle &&
                    cmp.getLhs() == kpos && cmp.getRhs() == qpos) ||
                   (cmp.getPredicate() == arith::CmpIPredicate::sge &&
                    cmp.getLhs() == qpos && cmp.getRhs() == kpos));
  };
  std::function<bool(Value)> implies = [&](Value v) {
    if (isCausalTerm(v))
      return true;
    if (auto conj = v.getDefiningOp<arith::AndIOp>())
      return implies(conj.getLhs()) || implies(conj.getRhs());
    return false;
  };
  Value kept = block.getTerminator()->getOperand(0);
  if (isCausalTerm(kept))
    return CausalMask::Exact;
  return implies(kept) ? CausalMask::Implied : CausalMask::None;
}

} // namespace flashir::conversion::parts
