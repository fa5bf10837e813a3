//===- MmaSync.cpp - mma.sync products of an MMA atom in NVVM -------------===//

#include "MmaSync.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

namespace flashir::conversion::parts {

MmaAtom MmaSync::atomFor(Type element, bool turing) {
  if (turing)
    return MmaAtom::m16n8k8Pair();
  return MmaAtom::m16n8k16(element.isBF16() ? MmaType::bf16 : MmaType::f16);
}

MmaSync::LaneBase MmaSync::laneBase(LocBuilder &b, Value lane,
                                    const FragmentLayout &layout) {
  LaneBase base;
  base.gid = arith::DivUIOp::create(b, lane, cIndex(b, 4));
  base.tig = arith::RemUIOp::create(b, lane, cIndex(b, 4));
  // perGroup * gid + perThread * tig, without the terms that vanish.
  auto affine = [&](int64_t perGroup, int64_t perThread) {
    Value sum;
    for (auto [coefficient, v] :
         {std::pair(perGroup, base.gid), std::pair(perThread, base.tig)}) {
      if (coefficient == 0)
        continue;
      Value term = v;
      if (coefficient != 1)
        term = arith::MulIOp::create(b, v, cIndex(b, coefficient));
      sum = sum ? arith::AddIOp::create(b, sum, term).getResult() : term;
    }
    return sum ? sum : cIndex(b, 0);
  };
  base.row = affine(layout.rowPerGroup, layout.rowPerThread);
  base.col = affine(layout.colPerGroup, layout.colPerThread);
  return base;
}

Value MmaSync::operand(LocBuilder &b, Value pair) const {
  if (!element.isBF16())
    return pair;
  Value word =
      vector::BitCastOp::create(b, VectorType::get({1}, b.getI32Type()), pair);
  return vector::ExtractOp::create(b, word, 0);
}

Value MmaSync::wordOperand(LocBuilder &b, Value word) const {
  if (element.isBF16())
    return word;
  Value v = vector::BroadcastOp::create(b, VectorType::get({1}, b.getI32Type()),
                                        word);
  return vector::BitCastOp::create(b, VectorType::get({2}, element), v);
}

std::array<Value, 4> MmaSync::loadMatrixX4(LocBuilder &b, Value ptr,
                                           bool transpose) const {
  MLIRContext *ctx = b.getContext();
  Type i32 = b.getI32Type();
  Value result = NVVM::LdMatrixOp::create(
      b, LLVM::LLVMStructType::getLiteral(ctx, {i32, i32, i32, i32}), ptr,
      /*num=*/4, transpose ? NVVM::MMALayout::col : NVVM::MMALayout::row,
      NVVM::LdStMatrixShapeAttr::get(ctx, 8, 8), NVVM::LdStMatrixEltType::B16);
  std::array<Value, 4> words;
  for (int64_t e = 0; e < 4; ++e)
    words[e] = wordOperand(
        b, LLVM::ExtractValueOp::create(b, result, ArrayRef<int64_t>{e}));
  return words;
}

void MmaSync::build(LocBuilder &b, ArrayRef<Value> a, ArrayRef<Value> bRegs,
                    MutableArrayRef<Value> acc) const {
  Type f32 = b.getF32Type();
  SmallVector<Type> accTypes(acc.size(), f32);
  auto structType = LLVM::LLVMStructType::getLiteral(b.getContext(), accTypes);
  NVVM::MMATypes ptxType = atom.element == MmaType::bf16 ? NVVM::MMATypes::bf16
                                                         : NVVM::MMATypes::f16;
  for (int64_t j = 0; j < atom.instructions(); ++j) {
    auto [aFirst, aCount] = atom.instructionRegisters(MmaOperand::A, j);
    auto [bFirst, bCount] = atom.instructionRegisters(MmaOperand::B, j);
    Value result = NVVM::MmaOp::create(
        b, structType, a.slice(aFirst, aCount), bRegs.slice(bFirst, bCount),
        acc, ArrayRef<int64_t>{atom.m, atom.n, atom.instructionK}, std::nullopt,
        std::nullopt, std::array<NVVM::MMATypes, 2>{ptxType, ptxType},
        std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                       NVVM::MMALayout::col});
    for (int64_t e = 0; e < static_cast<int64_t>(acc.size()); ++e)
      acc[e] = LLVM::ExtractValueOp::create(b, result, ArrayRef<int64_t>{e});
  }
}

} // namespace flashir::conversion::parts
