//===- HookMath.cpp - cheaper variant-hook math inside decode kernels -----===//
//
// Variant hooks are written for clarity (`x / cap`, `math.tanh`); inside the
// key loop of a decode kernel every score pays for them, and the soft-cap
// hook alone (an IEEE division and libdevice's tanhf) costs about as many
// instructions per score as the rest of the tensor-core tile.
//
//===----------------------------------------------------------------------===//

#include "DecodeKernel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Interfaces/LoopLikeInterface.h"

using namespace mlir;

namespace flashir::conversion::decode {

/// Whether `v` is defined outside the innermost loop around `user`.
static bool isLoopInvariantFor(Value v, Operation *user) {
  auto loop = user->getParentOfType<LoopLikeOpInterface>();
  return loop && !loop->isAncestor(v.getParentRegion()->getParentOp());
}

void relaxHookMath(gpu::GPUFuncOp func) {
  SmallVector<arith::DivFOp> divisions;
  SmallVector<math::TanhOp> tanhs;
  func.walk([&](Operation *op) {
    if (auto div = dyn_cast<arith::DivFOp>(op)) {
      if (div.getType().isF32() && isLoopInvariantFor(div.getRhs(), div))
        divisions.push_back(div);
    } else if (auto tanh = dyn_cast<math::TanhOp>(op)) {
      if (tanh.getType().isF32())
        tanhs.push_back(tanh);
    }
  });
  // x / c with c loop-invariant: x * (1 / c), the reciprocal computed once
  // where c is defined (within ~1 ulp of the quotient).
  DenseMap<Value, Value> reciprocals;
  for (arith::DivFOp div : divisions) {
    Value c = div.getRhs();
    Value &r = reciprocals[c];
    if (!r) {
      OpBuilder b(div.getContext());
      if (Operation *def = c.getDefiningOp())
        b.setInsertionPointAfter(def);
      else
        b.setInsertionPointToStart(cast<BlockArgument>(c).getOwner());
      r = arith::DivFOp::create(
          b, div.getLoc(),
          arith::ConstantOp::create(b, div.getLoc(), b.getF32FloatAttr(1.0f)),
          c);
    }
    OpBuilder b(div);
    div.replaceAllUsesWith(
        arith::MulFOp::create(b, div.getLoc(), div.getLhs(), r).getResult());
    div.erase();
  }
  // tanh: the hardware approximation (sm_75+, PTX ISA 7.0; relative error
  // about 2^-11, as FlashAttention's soft-cap uses) instead of libdevice's
  // ~20-instruction tanhf. Pure, so LLVM may still schedule or fold it.
  for (math::TanhOp tanh : tanhs) {
    OpBuilder b(tanh);
    auto approx = LLVM::InlineAsmOp::create(
        b, tanh.getLoc(), b.getF32Type(), ValueRange{tanh.getOperand()},
        b.getStringAttr("tanh.approx.f32 $0, $1;"), b.getStringAttr("=f,f"),
        /*has_side_effects=*/nullptr, /*is_align_stack=*/nullptr,
        LLVM::TailCallKindAttr::get(b.getContext(), LLVM::TailCallKind::None),
        LLVM::AsmDialectAttr::get(b.getContext(), LLVM::AsmDialect::AD_ATT),
        /*operand_attrs=*/nullptr);
    tanh.replaceAllUsesWith(approx.getResult(0));
    tanh.erase();
  }
}

} // namespace flashir::conversion::decode
