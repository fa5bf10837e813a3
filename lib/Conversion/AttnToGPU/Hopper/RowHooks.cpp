//===- RowHooks.cpp - query and key hooks in the wgmma prefill kernel -----===//
//
// A variant's query and key hooks transform whole rows of Q and K (each
// column with its partner D / 2 away, as RoPE's rotate-half reads it)
// before the products read them. Q rows are transformed as the consumers
// load them into the swizzled Q tile. A K tile is transformed in place in
// its ring slot once it has landed, by both consumer warpgroups (a pair of
// 16-byte chunks per thread and pass), which then pass a consumer barrier:
// each K tile is hooked once, not once per consumer, and the producer,
// which holds few registers, only copies.
//
//===----------------------------------------------------------------------===//

#include "HopperPrefillBuilder.h"

#include "../Parts/AsyncProxy.h"

using namespace mlir;

namespace flashir::conversion::hopper {

Value HopperPrefillBuilder::hookedQueryPiece(LocBuilder &b, Value q,
                                             Value token, Value qHead,
                                             Value column) {
  auto read = [&](LocBuilder &b, Value col, int64_t width) {
    return k.loadColumns(b, f.q, {q, qHead}, col, width);
  };
  Value x = read(b, column, kernels::kVec);
  Value xRot = k.loadRotated(b, column, read);
  Value qpos = k.hookPosition(b, keyPosition(b, token), f.keysTotal);
  SmallVector<Value> headParams = k.paramValues(b, f, qHead);
  return k.applyRowHook(b, /*isKey=*/false, x, xRot, column, qpos, qHead,
                        headParams);
}

void HopperPrefillBuilder::hookKeyTile(LocBuilder &b, Value it) {
  if (!k.hooks.hasKey())
    return;
  // Unit u: key row u / chunksPerHalf, chunk c = u % chunksPerHalf of the
  // row's first half and its partner c + chunksPerHalf (each the other's
  // x_rot). Head dims 64, 128 and 256 have whole chunks per half.
  int64_t chunksPerHalf = D / 2 / kernels::kVec;
  int64_t threads = consumers * parts::WgmmaAtom::kThreads;
  int64_t units = KV * chunksPerHalf;
  assert(units % threads == 0 && "every consumer thread takes whole units");
  Value kOffset = tileOffset(b, Operand::K, slotAndParity(b, it).first);
  Value t0 = tileStart(b, it);
  Value first =
      arith::SubIOp::create(b, tid, cIndex(b, parts::WgmmaAtom::kThreads));
  auto elementAt = [&](LocBuilder &b, Value row, Value chunk) {
    Value offset = arith::AddIOp::create(
        b, kOffset, swizzledChunk(b, ringImage, row, chunk));
    return arith::DivUIOp::create(b, offset, cIndex(b, elementBytes));
  };
  // A loop rather than unrolled passes: one unit's hook temporaries at a
  // time beside O and P.
  Value end = cIndex(b, units);
  Value step = cIndex(b, threads);
  buildForStep(
      b, first, end, step, ValueRange{},
      [&](LocBuilder &b, Value unit, ValueRange) {
        Value row = arith::DivUIOp::create(b, unit, cIndex(b, chunksPerHalf));
        Value chunk = arith::RemUIOp::create(b, unit, cIndex(b, chunksPerHalf));
        Value partner =
            arith::AddIOp::create(b, chunk, cIndex(b, chunksPerHalf));
        Value col = arith::MulIOp::create(b, chunk, cIndex(b, kernels::kVec));
        Value partnerCol = arith::AddIOp::create(b, col, cIndex(b, D / 2));
        Value kpos = k.hookKeyPosition(b, f, arith::AddIOp::create(b, t0, row));
        Value at = elementAt(b, row, chunk);
        Value partnerAt = elementAt(b, row, partner);
        Value x = k.loadRaw(b, layout, ValueRange{at});
        Value xRot = k.loadRaw(b, layout, ValueRange{partnerAt});
        Value y = k.applyRowHook(b, /*isKey=*/true, x, xRot, col, kpos,
                                 f.kvHead, params[0]);
        Value yRot = k.applyRowHook(b, /*isKey=*/true, xRot, x, partnerCol,
                                    kpos, f.kvHead, params[0]);
        for (auto [value, index] :
             {std::pair(y, at), std::pair(yRot, partnerAt)})
          vector::StoreOp::create(b, value, layout, ValueRange{index},
                                  /*nontemporal=*/false, llvm::MaybeAlign(16));
        return SmallVector<Value>();
      });
  // wgmma reads the tile through the async proxy, after both warpgroups'
  // writes.
  parts::fenceAsyncShared(b);
  namedBarrier(b,
               arith::ConstantOp::create(
                   b, b.getI32IntegerAttr(static_cast<int32_t>(consumers + 1))),
               threads);
}

} // namespace flashir::conversion::hopper
