//===- HookMath.cpp - cheaper variant-hook math inside decode kernels -----===//
//
// Variant hooks are written for clarity (`x / cap`, `math.tanh`); inside the
// key loop of a decode kernel every score pays for them, and the soft-cap
// hook alone (an IEEE division and libdevice's tanhf) costs about as many
// instructions per score as the rest of the tensor-core tile, and a RoPE
// key hook pays a sine and a cosine per key element.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Interfaces/LoopLikeInterface.h"

using namespace mlir;

namespace flashir::conversion::kernels {

/// Whether `v` is defined outside the innermost loop around `user`.
static bool isLoopInvariantFor(Value v, Operation *user) {
  auto loop = user->getParentOfType<LoopLikeOpInterface>();
  return loop && !loop->isAncestor(v.getParentRegion()->getParentOp());
}

void relaxHookMath(gpu::GPUFuncOp func) {
  SmallVector<arith::DivFOp> divisions;
  SmallVector<math::TanhOp> tanhs;
  SmallVector<Operation *> sines;
  func.walk([&](Operation *op) {
    if (isa<math::SinOp, math::CosOp>(op) &&
        op->getResult(0).getType().isF32()) {
      sines.push_back(op);
      return;
    }
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
  // sin / cos: the hardware approximations (absolute error about 2^-20.5
  // on [-pi, pi], growing with |x| like the argument's own rounding), as
  // FlashInfer's fused RoPE uses; an intrinsic, so LLVM may hoist or
  // combine it.
  for (Operation *op : sines) {
    OpBuilder b(op);
    StringRef name = isa<math::SinOp>(op) ? "llvm.nvvm.sin.approx.f"
                                          : "llvm.nvvm.cos.approx.f";
    auto approx = LLVM::CallIntrinsicOp::create(b, op->getLoc(), b.getF32Type(),
                                                b.getStringAttr(name),
                                                ValueRange{op->getOperand(0)});
    Value result = approx.getResult(0);
    op->getResult(0).replaceAllUsesWith(result);
    op->erase();
  }
}

} // namespace flashir::conversion::kernels
