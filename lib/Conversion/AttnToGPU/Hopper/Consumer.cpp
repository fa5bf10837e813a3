//===- Consumer.cpp - the wgmma prefill kernel's consumer warpgroups ------===//
//
// Consumer warpgroup c (wg = c + 1) owns rows 64c.. of the CTA's query
// tile. Its threads hold the accumulators of an m64 tile as WgmmaAtom lays
// them out: thread t's values i sit in row 16 (t / 32) + (t % 32) / 4 +
// 8 ((i / 2) % 2), so each thread keeps two rows' m and l, reduced over
// the row's four lanes (a quad) where a row statistic needs all of it.
// Per key tile: S = Q.K^T by D / 16 SS products (the first does not
// accumulate), waited for with the accumulators tied; K's slot released;
// keys past the end at -inf; the online softmax in base 2 (x * scale *
// log2(e) - m as one fma, ex2.approx); O rescaled; V's slot waited for;
// O += P.V by KV / 16 RS products whose A registers are P converted to the
// element type in accumulator order; V's slot released after the wait.
//
//===----------------------------------------------------------------------===//

#include "HopperPrefillBuilder.h"

#include "../Parts/AsyncProxy.h"

using namespace mlir;

namespace flashir::conversion::hopper {

/// Named barriers: 0 is the CTA's; consumer warpgroup wg's own is wg; the
/// consumers' together kConsumers + 1.
static void namedBarrier(LocBuilder &b, Value id, int64_t threads) {
  NVVM::BarrierOp::create(
      b, Type(), id,
      arith::ConstantOp::create(b, b.getI32IntegerAttr(
                                       static_cast<int32_t>(threads))),
      NVVM::BarrierReductionAttr(), Value());
}

/// Byte offset of 16-byte chunk `chunk` of row `row` in a 128-byte-swizzled
/// tile of `rows` rows (SwizzledTile's formula, in IR).
static Value swizzledChunk(LocBuilder &b, int64_t rows, Value row,
                           Value chunk) {
  Value box = arith::DivUIOp::create(b, chunk, cIndex(b, 8));
  Value inBox = arith::RemUIOp::create(b, chunk, cIndex(b, 8));
  Value phase = arith::RemUIOp::create(b, row, cIndex(b, 8));
  Value swizzled = arith::XOrIOp::create(b, inBox, phase);
  Value offset = arith::AddIOp::create(
      b, arith::MulIOp::create(b, box, cIndex(b, rows * 128)),
      arith::MulIOp::create(b, row, cIndex(b, 128)));
  return arith::AddIOp::create(
      b, offset, arith::MulIOp::create(b, swizzled, cIndex(b, 16)));
}

void HopperPrefillBuilder::loadQueryRows(LocBuilder &b) {
  // Thread u of the warpgroup copies 16-byte chunk u % (D / 8) of rows
  // u / (D / 8) + rowsPerPass * i; rows past the request hold zeros.
  int64_t chunksPerRow = D / kernels::kVec;
  int64_t rowsPerPass = parts::WgmmaAtom::kThreads / chunksPerRow;
  Value consumer = arith::SubIOp::create(b, wg, c1);
  Value chunk = arith::RemUIOp::create(b, wgThread, cIndex(b, chunksPerRow));
  Value firstRow = arith::AddIOp::create(
      b, arith::MulIOp::create(b, consumer, cIndex(b, kRowsPerConsumer)),
      arith::DivUIOp::create(b, wgThread, cIndex(b, chunksPerRow)));
  Value column = arith::MulIOp::create(b, chunk, cIndex(b, kernels::kVec));
  auto pieceType = VectorType::get({kernels::kVec}, s.element);
  Value zeros = arith::ConstantOp::create(
      b, DenseElementsAttr::get(pieceType, b.getZeroAttr(s.element)));
  for (int64_t i = 0; i < kRowsPerConsumer / rowsPerPass; ++i) {
    Value row = arith::AddIOp::create(b, firstRow, cIndex(b, rowsPerPass * i));
    Value token = arith::AddIOp::create(b, rowBase, row);
    Value valid =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, token, f.numQ);
    Value piece = buildIf(
        b, valid,
        [&](LocBuilder &b) -> SmallVector<Value> {
          Value q = arith::AddIOp::create(b, f.qBegin, token);
          return {k.loadRaw(b, f.q, ValueRange{q, head, column})};
        },
        [&](LocBuilder &) -> SmallVector<Value> { return {zeros}; })[0];
    Value offset = swizzledChunk(b, qRows, row, chunk);
    vector::StoreOp::create(
        b, piece, layout,
        ValueRange{arith::DivUIOp::create(b, offset, cIndex(b, elementBytes))},
        /*nontemporal=*/false, llvm::MaybeAlign(16));
  }
  // wgmma reads the tile through the async proxy.
  parts::fenceAsyncShared(b);
  namedBarrier(b, arith::IndexCastOp::create(b, b.getI32Type(), wg),
               parts::WgmmaAtom::kThreads);
}

void HopperPrefillBuilder::consume(LocBuilder &b) {
  loadQueryRows(b);
  SmallVector<Value> state(2, negInf(b));
  state.append(2, cF32(b, 0.0f));
  SmallVector<Value> zeros(outputAtom.accumulators(), cF32(b, 0.0f));
  state.push_back(outputMma.pack(b, zeros));
  ValueRange done = buildFor(
      b, c0, numTiles, state,
      [&](LocBuilder &b, Value it, ValueRange carried) {
        return keyTile(b, it, carried);
      });
  writeOutput(b, done);
}

SmallVector<Value> HopperPrefillBuilder::keyTile(LocBuilder &b, Value it,
                                                 ValueRange state) {
  Value slot, parity;
  std::tie(slot, parity) = slotAndParity(b, it);
  Value t0 = arith::AddIOp::create(
      b, f.kBegin, arith::MulIOp::create(b, it, cIndex(b, KV)));
  Value releaser =
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, wgThread, c0);
  auto release = [&](LocBuilder &b, Operand operand) {
    scf::IfOp::create(b, releaser, [&](OpBuilder &rb, Location loc) {
      LocBuilder b(loc, rb);
      parts::mbarrierArrive(b, barrier(b, operand, false, slot));
      scf::YieldOp::create(b);
    });
  };

  // S = Q.K^T.
  parts::mbarrierWait(b, barrier(b, Operand::K, true, slot), parity);
  Value consumer = arith::SubIOp::create(b, wg, c1);
  Value qAddress = sharedAddress(
      b, arith::MulIOp::create(b, consumer,
                               cIndex(b, kRowsPerConsumer * 128)));
  Value kAddress = sharedAddress(b, tileOffset(b, Operand::K, slot));
  parts::Wgmma::fence(b);
  Value acc = scoreMma.undefined(b);
  for (int64_t kk = 0; kk < D / parts::WgmmaAtom::k; ++kk) {
    Value descQ = parts::Wgmma::descriptor(
        b, qAddress, parts::WgmmaAtom::kMajor(0, qRows, kk));
    Value descK = parts::Wgmma::descriptor(
        b, kAddress, parts::WgmmaAtom::kMajor(0, KV, kk));
    acc = scoreMma.ss(b, acc, descQ, descK, /*accumulate=*/kk > 0);
  }
  parts::Wgmma::commit(b);
  acc = scoreMma.waitTied(b, 0, acc)[0];
  release(b, Operand::K);
  SmallVector<Value> x = maskedScores(b, t0, scoreMma.unpack(b, acc));

  // The online softmax of the thread's two rows h (accumulators i with
  // (i / 2) % 2 == h).
  auto rowOf = [](int64_t i) { return (i / 2) % 2; };
  SmallVector<Value> next(state.begin(), state.end());
  SmallVector<Value> o = outputMma.unpack(b, state[4]);
  SmallVector<Value> p(x.size());
  for (int64_t h = 0; h < 2; ++h) {
    Value mx;
    for (int64_t i = 0; i < static_cast<int64_t>(x.size()); ++i)
      if (rowOf(i) == h)
        mx = mx ? arith::MaxNumFOp::create(b, mx, x[i]).getResult() : x[i];
    for (int32_t offset : {1, 2})
      mx = arith::MaxNumFOp::create(b, mx, k.shuffleXor(b, mx, offset));
    Value m = state[h];
    Value mNew =
        arith::MaxNumFOp::create(b, m, arith::MulFOp::create(b, mx, cF32(b, factor)));
    // A row with no visible key yet keeps base 0 (no -inf - -inf).
    Value base = arith::SelectOp::create(b, isNegInf(b, mNew), cF32(b, 0.0f),
                                         mNew);
    Value alpha =
        kernels::exp2Ftz(b, arith::SubFOp::create(b, m, base));
    Value negBase = arith::NegFOp::create(b, base);
    Value sum;
    for (int64_t i = 0; i < static_cast<int64_t>(x.size()); ++i) {
      if (rowOf(i) != h)
        continue;
      p[i] = kernels::exp2Ftz(
          b, math::FmaOp::create(b, x[i], cF32(b, factor), negBase));
      sum = sum ? arith::AddFOp::create(b, sum, p[i]).getResult() : p[i];
    }
    next[h] = mNew;
    next[2 + h] = math::FmaOp::create(b, state[2 + h], alpha, sum);
    for (int64_t i = 0; i < static_cast<int64_t>(o.size()); ++i)
      if (rowOf(i) == h)
        o[i] = arith::MulFOp::create(b, o[i], alpha);
  }

  // O += P.V.
  parts::mbarrierWait(b, barrier(b, Operand::V, true, slot), parity);
  Value vOffset = tileOffset(b, Operand::V, slot);
  zeroTailRows(b, t0, vOffset);
  Value vAddress = sharedAddress(b, vOffset);
  Value out = outputMma.pack(b, o);
  parts::Wgmma::fence(b);
  for (int64_t kk = 0; kk < KV / parts::WgmmaAtom::k; ++kk) {
    Value descV = parts::Wgmma::descriptor(
        b, vAddress, parts::WgmmaAtom::mnMajor(0, KV, kk));
    out = outputMma.rs(b, out, scoreMma.registersA(b, p, kk), descV,
                       /*transB=*/true);
  }
  parts::Wgmma::commit(b);
  next[4] = outputMma.waitTied(b, 0, out)[0];
  release(b, Operand::V);
  return next;
}

SmallVector<Value> HopperPrefillBuilder::maskedScores(LocBuilder &b, Value t0,
                                                      ArrayRef<Value> scores) {
  // Only a tile that reaches past the end masks (uniform across the CTA).
  Value tileEnd = arith::AddIOp::create(b, t0, cIndex(b, KV));
  Value partial =
      arith::CmpIOp::create(b, arith::CmpIPredicate::ugt, tileEnd, f.kEnd);
  return buildIf(
      b, partial,
      [&](LocBuilder &b) -> SmallVector<Value> {
        // Accumulator i of the thread is column 8 (i / 4) + 2 (lane % 4) +
        // i % 2 of the tile.
        Value laneKey = arith::AddIOp::create(
            b, t0,
            arith::MulIOp::create(
                b, arith::RemUIOp::create(b, lane, cIndex(b, 4)),
                cIndex(b, 2)));
        SmallVector<Value> masked;
        for (auto [i, score] : llvm::enumerate(scores)) {
          int64_t col = 8 * (static_cast<int64_t>(i) / 4) + i % 2;
          Value key = arith::AddIOp::create(b, laneKey, cIndex(b, col));
          Value visible =
              arith::CmpIOp::create(b, arith::CmpIPredicate::ult, key, f.kEnd);
          masked.push_back(
              arith::SelectOp::create(b, visible, score, negInf(b)));
        }
        return masked;
      },
      [&](LocBuilder &) {
        return SmallVector<Value>(scores.begin(), scores.end());
      });
}

void HopperPrefillBuilder::zeroTailRows(LocBuilder &b, Value t0,
                                        Value vOffset) {
  Value tileEnd = arith::AddIOp::create(b, t0, cIndex(b, KV));
  Value partial =
      arith::CmpIOp::create(b, arith::CmpIPredicate::ugt, tileEnd, f.kEnd);
  scf::IfOp::create(b, partial, [&](OpBuilder &zb, Location loc) {
    LocBuilder b(loc, zb);
    // The consumers' threads u take chunks u, u + threads, ... of the
    // tile; a chunk of a row past the end becomes zeros.
    int64_t threads = kConsumers * parts::WgmmaAtom::kThreads;
    int64_t chunksPerRow = D / kernels::kVec;
    Value u = arith::SubIOp::create(
        b, tid, cIndex(b, parts::WgmmaAtom::kThreads));
    Value validRows = arith::SubIOp::create(b, f.kEnd, t0);
    auto pieceType = VectorType::get({kernels::kVec}, s.element);
    Value zeros = arith::ConstantOp::create(
        b, DenseElementsAttr::get(pieceType, b.getZeroAttr(s.element)));
    for (int64_t i = 0; i < KV * chunksPerRow / threads; ++i) {
      Value piece = arith::AddIOp::create(b, u, cIndex(b, threads * i));
      Value row = arith::DivUIOp::create(b, piece, cIndex(b, chunksPerRow));
      Value chunk = arith::RemUIOp::create(b, piece, cIndex(b, chunksPerRow));
      Value outside =
          arith::CmpIOp::create(b, arith::CmpIPredicate::uge, row, validRows);
      scf::IfOp::create(b, outside, [&](OpBuilder &sb, Location loc) {
        LocBuilder b(loc, sb);
        Value offset = arith::AddIOp::create(
            b, vOffset, swizzledChunk(b, KV, row, chunk));
        vector::StoreOp::create(
            b, zeros, layout,
            ValueRange{
                arith::DivUIOp::create(b, offset, cIndex(b, elementBytes))},
            /*nontemporal=*/false, llvm::MaybeAlign(16));
        scf::YieldOp::create(b);
      });
    }
    parts::fenceAsyncShared(b);
    namedBarrier(b,
                 arith::ConstantOp::create(
                     b, b.getI32IntegerAttr(
                            static_cast<int32_t>(kConsumers + 1))),
                 threads);
    scf::YieldOp::create(b);
  });
}

} // namespace flashir::conversion::hopper
