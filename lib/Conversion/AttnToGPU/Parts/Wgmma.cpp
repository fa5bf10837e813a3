//===- Wgmma.cpp - warpgroup MMA products of a wgmma atom in NVVM ---------===//

#include "Wgmma.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <string>

using namespace mlir;

namespace flashir::conversion::parts {

Type Wgmma::accumulatorType(MLIRContext *ctx) const {
  SmallVector<Type> fields(atom.accumulators(), Float32Type::get(ctx));
  return LLVM::LLVMStructType::getLiteral(ctx, fields);
}

Value Wgmma::undefined(LocBuilder &b) const {
  return LLVM::UndefOp::create(b, accumulatorType(b.getContext()));
}

SmallVector<Value> Wgmma::unpack(LocBuilder &b, Value acc) const {
  SmallVector<Value> values;
  for (int64_t i = 0; i < atom.accumulators(); ++i)
    values.push_back(LLVM::ExtractValueOp::create(b, acc, i));
  return values;
}

Value Wgmma::pack(LocBuilder &b, ArrayRef<Value> values) const {
  assert(static_cast<int64_t>(values.size()) == atom.accumulators());
  Value acc = undefined(b);
  for (auto [i, v] : llvm::enumerate(values))
    acc = LLVM::InsertValueOp::create(b, acc, v, i);
  return acc;
}

Value Wgmma::descriptor(LocBuilder &b, Value address,
                        const WgmmaDescriptor &fields) {
  WgmmaDescriptor constant = fields;
  constant.address = 0;
  // The 14-bit address field never carries: shared-window addresses stay
  // below 256 KB.
  Value offset =
      arith::ConstantOp::create(b, b.getI64IntegerAttr(fields.address));
  Value byteAddress = arith::AddIOp::create(b, address, offset);
  Value four = arith::ConstantOp::create(b, b.getI64IntegerAttr(4));
  Value units = arith::ShRUIOp::create(b, byteAddress, four);
  Value mask = arith::ConstantOp::create(b, b.getI64IntegerAttr(0x3FFF));
  Value start = arith::AndIOp::create(b, units, mask);
  Value bits = arith::ConstantOp::create(
      b, b.getI64IntegerAttr(static_cast<int64_t>(constant.encode())));
  return arith::OrIOp::create(b, start, bits);
}

void Wgmma::fence(LocBuilder &b) { NVVM::WgmmaFenceAlignedOp::create(b); }

SmallVector<Value> Wgmma::pinOperands(LocBuilder &b, ValueRange values) {
  MLIRContext *ctx = b.getContext();
  std::string constraints;
  SmallVector<Type> types;
  for (Value v : values) {
    constraints += v.getType().isF32() ? "=f," : "=r,";
    types.push_back(v.getType());
  }
  for (size_t i = 0; i < values.size(); ++i)
    constraints += std::to_string(i) + (i + 1 < values.size() ? "," : "");
  auto type = LLVM::LLVMStructType::getLiteral(ctx, types);
  auto pin = LLVM::InlineAsmOp::create(
      b, type, values, b.getStringAttr(""), b.getStringAttr(constraints),
      b.getUnitAttr(), /*is_align_stack=*/nullptr,
      LLVM::TailCallKindAttr::get(ctx, LLVM::TailCallKind::None),
      LLVM::AsmDialectAttr::get(ctx, LLVM::AsmDialect::AD_ATT),
      /*operand_attrs=*/nullptr);
  SmallVector<Value> pinned;
  for (size_t i = 0; i < values.size(); ++i)
    pinned.push_back(LLVM::ExtractValueOp::create(b, pin.getResult(0), i));
  return pinned;
}

void Wgmma::commit(LocBuilder &b) { NVVM::WgmmaGroupSyncAlignedOp::create(b); }

SmallVector<Value> Wgmma::waitTied(LocBuilder &b, int64_t pending,
                                   ArrayRef<Value> accs) const {
  MLIRContext *ctx = b.getContext();
  SmallVector<Value> operands;
  for (Value acc : accs)
    llvm::append_range(operands, unpack(b, acc));
  // "=f" per value, then each input tied to its output.
  std::string constraints;
  for (size_t i = 0; i < operands.size(); ++i)
    constraints += "=f,";
  for (size_t i = 0; i < operands.size(); ++i)
    constraints += std::to_string(i) + (i + 1 < operands.size() ? "," : "");
  SmallVector<Type> fields(operands.size(), Float32Type::get(ctx));
  auto type = LLVM::LLVMStructType::getLiteral(ctx, fields);
  auto wait = LLVM::InlineAsmOp::create(
      b, type, operands,
      b.getStringAttr("wgmma.wait_group.sync.aligned " +
                      std::to_string(pending) + ";"),
      b.getStringAttr(constraints), b.getUnitAttr(),
      /*is_align_stack=*/nullptr,
      LLVM::TailCallKindAttr::get(ctx, LLVM::TailCallKind::None),
      LLVM::AsmDialectAttr::get(ctx, LLVM::AsmDialect::AD_ATT),
      /*operand_attrs=*/nullptr);
  SmallVector<Value> results;
  int64_t n = atom.accumulators();
  for (size_t a = 0; a < accs.size(); ++a) {
    SmallVector<Value> values;
    for (int64_t i = 0; i < n; ++i)
      values.push_back(
          LLVM::ExtractValueOp::create(b, wait.getResult(0), a * n + i));
    results.push_back(pack(b, values));
  }
  return results;
}

static NVVM::WGMMATypes wgmmaType(Type element) {
  return element.isBF16() ? NVVM::WGMMATypes::bf16 : NVVM::WGMMATypes::f16;
}

Value Wgmma::ss(LocBuilder &b, Value acc, Value descA, Value descB,
                bool accumulate) const {
  MLIRContext *ctx = b.getContext();
  auto shape = NVVM::MMAShapeAttr::get(ctx, WgmmaAtom::m, atom.n, WgmmaAtom::k);
  return NVVM::WgmmaMmaAsyncOp::create(
      b, accumulatorType(ctx), acc, descA, descB, shape, wgmmaType(element),
      wgmmaType(element), NVVM::WGMMATypes::f32,
      accumulate ? NVVM::WGMMAScaleOut::one : NVVM::WGMMAScaleOut::zero,
      NVVM::WGMMAScaleIn::one, NVVM::WGMMAScaleIn::one, NVVM::MMALayout::row,
      NVVM::MMALayout::col, /*satfinite=*/nullptr);
}

Value Wgmma::rs(LocBuilder &b, Value acc, ArrayRef<Value> a, Value descB,
                bool transB) const {
  MLIRContext *ctx = b.getContext();
  int64_t n = atom.accumulators();
  assert(a.size() == 4 && "four A registers per k-step");
  // Operands: the four A registers, the descriptor, scale-d (1:
  // accumulate), then the accumulators tied to the outputs $0..$n-1;
  // scale-a and scale-b 1, tnspB `transB`.
  std::string outputs;
  for (int64_t i = 0; i < n; ++i)
    outputs += (i ? ", $" : "$") + std::to_string(i);
  std::string type = element.isBF16() ? "bf16" : "f16";
  auto arg = [](int64_t i) { return "$" + std::to_string(i); };
  // scale-d is a predicate: set from the immediate operand n + 5.
  std::string ptx = "{\n.reg .pred p;\nsetp.ne.b32 p, " + arg(n + 5) +
                    ", 0;\nwgmma.mma_async.sync.aligned.m64n" +
                    std::to_string(atom.n) + "k16.f32." + type + "." + type +
                    " {" + outputs + "}, {" + arg(n) + ", " + arg(n + 1) +
                    ", " + arg(n + 2) + ", " + arg(n + 3) + "}, " + arg(n + 4) +
                    ", p, 1, 1, " + (transB ? "1" : "0") + ";\n}";
  std::string constraints;
  for (int64_t i = 0; i < n; ++i)
    constraints += "=f,";
  constraints += "r,r,r,r,l,n";
  for (int64_t i = 0; i < n; ++i)
    constraints += "," + std::to_string(i);
  SmallVector<Value> operands(a.begin(), a.end());
  operands.push_back(descB);
  operands.push_back(arith::ConstantOp::create(b, b.getI32IntegerAttr(1)));
  llvm::append_range(operands, unpack(b, acc));
  auto product = LLVM::InlineAsmOp::create(
      b, accumulatorType(ctx), operands, b.getStringAttr(ptx),
      b.getStringAttr(constraints), b.getUnitAttr(),
      /*is_align_stack=*/nullptr,
      LLVM::TailCallKindAttr::get(ctx, LLVM::TailCallKind::None),
      LLVM::AsmDialectAttr::get(ctx, LLVM::AsmDialect::AD_ATT),
      /*operand_attrs=*/nullptr);
  return product.getResult(0);
}

SmallVector<Value> Wgmma::registersA(LocBuilder &b, ArrayRef<Value> acc,
                                     int64_t kk) const {
  auto pairType = VectorType::get({2}, element);
  auto f32Pair = VectorType::get({2}, b.getF32Type());
  SmallVector<Value> regs;
  for (int64_t r = 0; r < 4; ++r) {
    auto [lo, hi] = WgmmaAtom::registerAFromAccumulators(kk, r);
    Value pair = vector::FromElementsOp::create(b, f32Pair,
                                                ValueRange{acc[lo], acc[hi]});
    Value narrow = arith::TruncFOp::create(b, pairType, pair);
    regs.push_back(LLVM::BitcastOp::create(b, b.getI32Type(), narrow));
  }
  return regs;
}

} // namespace flashir::conversion::parts
