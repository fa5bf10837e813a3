//===- PackedBitMask.cpp - masks read from a bit-packed buffer ------------===//

#include "PackedBitMask.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;

namespace flashir::conversion::parts {

namespace {

bool isConstant(Value v, int64_t expected) {
  APInt value;
  return matchPattern(v, m_ConstantInt(&value)) &&
         value.getSExtValue() == expected;
}

/// `op`'s operand other than one that `isThat` accepts, or null.
template <typename BinaryOp, typename Pred>
Value otherOperand(BinaryOp op, Pred isThat) {
  if (isThat(op.getLhs()))
    return op.getRhs();
  if (isThat(op.getRhs()))
    return op.getLhs();
  return Value();
}

/// Whether `v` is computed (in its block) without `arg`.
bool independentOf(Value v, Value arg) {
  SmallVector<Value> work{v};
  DenseSet<Value> seen;
  while (!work.empty()) {
    Value x = work.pop_back_val();
    if (x == arg)
      return false;
    if (!seen.insert(x).second)
      continue;
    if (Operation *def = x.getDefiningOp()) {
      if (def->getNumRegions() != 0)
        return false;
      llvm::append_range(work, def->getOperands());
    }
  }
  return true;
}

/// The `bit` of `trunci (andi bit, 7)`, or null.
Value bitOfShift(Value amount) {
  auto trunc = amount.getDefiningOp<arith::TruncIOp>();
  if (!trunc)
    return Value();
  auto low = trunc.getIn().getDefiningOp<arith::AndIOp>();
  if (!low)
    return Value();
  return otherOperand(low, [](Value v) { return isConstant(v, 7); });
}

/// The `bit` of `index_cast (shrui bit, 3)`, or null.
Value bitOfByteIndex(Value index) {
  auto cast = index.getDefiningOp<arith::IndexCastOp>();
  if (!cast)
    return Value();
  auto shift = cast.getIn().getDefiningOp<arith::ShRUIOp>();
  if (!shift || !isConstant(shift.getRhs(), 3))
    return Value();
  return shift.getLhs();
}

} // namespace

std::optional<PackedBitMask> matchPackedBitMask(Region &mask) {
  if (mask.empty() || mask.front().getNumArguments() < 4)
    return std::nullopt;
  Block &block = mask.front();
  Value kpos = block.getArgument(1);
  Value keep = block.getTerminator()->getOperand(0);
  auto toBit = keep.getDefiningOp<arith::TruncIOp>();
  if (!toBit || !toBit.getType().isInteger(1))
    return std::nullopt;
  auto shifted = toBit.getIn().getDefiningOp<arith::ShRUIOp>();
  if (!shifted)
    return std::nullopt;
  auto extract = shifted.getLhs().getDefiningOp<tensor::ExtractOp>();
  if (!extract || extract.getIndices().size() != 1 ||
      !extract.getType().isInteger(8))
    return std::nullopt;
  auto buffer = dyn_cast<BlockArgument>(extract.getTensor());
  if (!buffer || buffer.getOwner() != &block || buffer.getArgNumber() < 3)
    return std::nullopt;
  Value bit = bitOfShift(shifted.getRhs());
  if (!bit || bit != bitOfByteIndex(extract.getIndices().front()) ||
      !bit.getType().isInteger(64))
    return std::nullopt;
  auto sum = bit.getDefiningOp<arith::AddIOp>();
  if (!sum)
    return std::nullopt;
  Value rowBit = otherOperand(sum, [&](Value v) {
    auto cast = v.getDefiningOp<arith::IndexCastOp>();
    return cast && cast.getIn() == kpos;
  });
  if (!rowBit || !independentOf(rowBit, kpos))
    return std::nullopt;
  return PackedBitMask{buffer.getArgNumber() - 3, rowBit};
}

static Value cI64(LocBuilder &b, int64_t v) {
  return arith::ConstantOp::create(b, b.getI64IntegerAttr(v));
}

static Value cI32(LocBuilder &b, int32_t v) {
  return arith::ConstantOp::create(b, b.getI32IntegerAttr(v));
}

/// 0 <= v and `v pred bound` (i64 values).
static Value inRange(LocBuilder &b, Value v, arith::CmpIPredicate pred,
                     Value bound, Value zero) {
  Value above = arith::CmpIOp::create(b, arith::CmpIPredicate::sge, v, zero);
  Value below = arith::CmpIOp::create(b, pred, v, bound);
  return arith::AndIOp::create(b, above, below);
}

// Values are built in statements: sibling builder calls as arguments would
// order the IR by the host compiler's evaluation order.
BitWindows::BitWindows(LocBuilder &b, Value bits) : bits(bits) {
  Type i64 = b.getI64Type();
  Value pointer = memref::ExtractAlignedPointerAsIndexOp::create(b, bits);
  address = arith::IndexCastOp::create(b, i64, pointer);
  Value size = memref::DimOp::create(b, bits, cIndex(b, 0));
  bytes = arith::IndexCastOp::create(b, i64, size);
  Value three = cI64(b, 3);
  Value low = arith::AndIOp::create(b, address, three);
  Value zero = cI64(b, 0);
  aligned = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, low, zero);
}

SmallVector<Value> BitWindows::wordLoads(LocBuilder &b, Value byte0) const {
  auto globalPtr = LLVM::LLVMPointerType::get(b.getContext(), /*global=*/1);
  Value start = arith::AddIOp::create(b, address, byte0);
  Value ptr = LLVM::IntToPtrOp::create(b, globalPtr, start);
  SmallVector<Value> words;
  for (int32_t w = 0; w < 3; ++w) {
    Value at = LLVM::GEPOp::create(b, globalPtr, b.getI32Type(), ptr,
                                   ArrayRef<LLVM::GEPArg>{w});
    words.push_back(LLVM::LoadOp::create(b, b.getI32Type(), at, /*align=*/4));
  }
  return words;
}

SmallVector<Value> BitWindows::byteLoads(LocBuilder &b, Value byte0) const {
  Type i32 = b.getI32Type();
  Value zero = cI32(b, 0);
  Value zero64 = cI64(b, 0);
  Value one64 = cI64(b, 1);
  Value last = arith::SubIOp::create(b, bytes, one64);
  SmallVector<Value> words(3, zero);
  for (int64_t j = 0; j < 12; ++j) {
    Value offset = cI64(b, j);
    Value at = arith::AddIOp::create(b, byte0, offset);
    Value inside = inRange(b, at, arith::CmpIPredicate::slt, bytes, zero64);
    Value atLeast0 = arith::MaxSIOp::create(b, at, zero64);
    Value clamped = arith::MinSIOp::create(b, atLeast0, last);
    Value index = arith::IndexCastOp::create(b, b.getIndexType(), clamped);
    Value byte = memref::LoadOp::create(b, bits, ValueRange{index});
    Value wide = arith::ExtUIOp::create(b, i32, byte);
    wide = arith::SelectOp::create(b, inside, wide, zero);
    Value shift = cI32(b, static_cast<int32_t>(8 * (j % 4)));
    Value placed = arith::ShLIOp::create(b, wide, shift);
    words[j / 4] = arith::OrIOp::create(b, words[j / 4], placed);
  }
  return words;
}

BitWindows::Place BitWindows::place(LocBuilder &b, Value bit) const {
  // The window starts `offset` bits into the 4-byte group at byte0; three
  // groups hold it.
  Value five = cI64(b, 5);
  Value group = arith::ShRSIOp::create(b, bit, five);
  Value two = cI64(b, 2);
  Value byte0 = arith::ShLIOp::create(b, group, two);
  Value bit32 = arith::TruncIOp::create(b, b.getI32Type(), bit);
  Value lowMask = cI32(b, 31);
  Value offset = arith::AndIOp::create(b, bit32, lowMask);
  Value zero64 = cI64(b, 0);
  Value twelve = cI64(b, 12);
  Value lastGroup = arith::SubIOp::create(b, bytes, twelve);
  Value inside =
      inRange(b, byte0, arith::CmpIPredicate::sle, lastGroup, zero64);
  return {byte0, offset, inside};
}

SmallVector<Value> BitWindows::slowWords(LocBuilder &b, Value byte0) const {
  // No byte is read from an empty buffer.
  Value zero64 = cI64(b, 0);
  Value any =
      arith::CmpIOp::create(b, arith::CmpIPredicate::sgt, bytes, zero64);
  return llvm::to_vector(buildIf(
      b, any, [&](LocBuilder &b) { return byteLoads(b, byte0); },
      [&](LocBuilder &b) { return SmallVector<Value>(3, cI32(b, 0)); }));
}

std::pair<Value, Value> BitWindows::align(LocBuilder &b, ArrayRef<Value> words,
                                          Value offset) {
  Value low = LLVM::FshrOp::create(b, words[1], words[0], offset);
  Value high = LLVM::FshrOp::create(b, words[2], words[1], offset);
  return {low, high};
}

SmallVector<std::pair<Value, Value>>
BitWindows::loadAll(LocBuilder &b, ArrayRef<Value> bits) const {
  SmallVector<Place> places;
  for (Value bit : bits)
    places.push_back(place(b, bit));
  // Every window's word loads go out before any is used, so their
  // latencies overlap: at clamped addresses (the buffer is aligned and holds
  // 12 bytes), replaced by the byte loads where a window leaves the buffer.
  Value twelve = cI64(b, 12);
  Value holdsGroup =
      arith::CmpIOp::create(b, arith::CmpIPredicate::sge, bytes, twelve);
  Value wordsFit = arith::AndIOp::create(b, aligned, holdsGroup);
  auto batched = [&](LocBuilder &b) {
    Value zero64 = cI64(b, 0);
    Value lastByte0 = arith::SubIOp::create(b, bytes, twelve);
    Value groupMask = cI64(b, ~int64_t(3));
    Value lastGroup = arith::AndIOp::create(b, lastByte0, groupMask);
    SmallVector<SmallVector<Value>> loaded;
    for (const Place &at : places) {
      Value atLeast0 = arith::MaxSIOp::create(b, at.byte0, zero64);
      Value clamped = arith::MinSIOp::create(b, atLeast0, lastGroup);
      loaded.push_back(wordLoads(b, clamped));
    }
    SmallVector<Value> flat;
    for (size_t i = 0; i < places.size(); ++i) {
      const Place &at = places[i];
      SmallVector<Value> chosen = llvm::to_vector(buildIf(
          b, at.inside, [&](LocBuilder &) { return loaded[i]; },
          [&](LocBuilder &b) { return slowWords(b, at.byte0); }));
      std::pair<Value, Value> window = align(b, chosen, at.offset);
      flat.append({window.first, window.second});
    }
    return flat;
  };
  auto oneByOne = [&](LocBuilder &b) {
    SmallVector<Value> flat;
    for (const Place &at : places) {
      SmallVector<Value> words = slowWords(b, at.byte0);
      std::pair<Value, Value> window = align(b, words, at.offset);
      flat.append({window.first, window.second});
    }
    return flat;
  };
  ValueRange flat = buildIf(b, wordsFit, batched, oneByOne);
  SmallVector<std::pair<Value, Value>> windows;
  for (size_t i = 0; i < places.size(); ++i)
    windows.push_back({flat[2 * i], flat[2 * i + 1]});
  return windows;
}

Value BitWindows::test(LocBuilder &b, std::pair<Value, Value> window,
                       int64_t index) {
  Value word = index < 32 ? window.first : window.second;
  Value bit = cI32(b, static_cast<int32_t>(1u << (index % 32)));
  Value set = arith::AndIOp::create(b, word, bit);
  Value zero = cI32(b, 0);
  return arith::CmpIOp::create(b, arith::CmpIPredicate::ne, set, zero);
}

} // namespace flashir::conversion::parts
