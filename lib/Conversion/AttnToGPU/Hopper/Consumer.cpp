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
// log2(e) - m as one fma, ex2.approx; above head dim 128 with lazy maxima:
// a row's moves only when it grows by a factor over 2^8, so once they settle
// most tiles skip O's rescale); V's slot waited for;
// O += P.V by KV / 16 RS products whose A registers are P converted to the
// element type in accumulator order; V's slot released after the wait.
// A key hook transforms each K tile in its slot before Q.K^T reads it
// (RowHooks.cpp); sigmoid weighs scores by 1 / (1 + 2^-x) with m = 0 and no
// rescale.
//
//===----------------------------------------------------------------------===//

#include "HopperPrefillBuilder.h"

#include "../Parts/AsyncProxy.h"

using namespace mlir;

namespace flashir::conversion::hopper {

void namedBarrier(LocBuilder &b, Value id, int64_t threads) {
  NVVM::BarrierOp::create(
      b, Type(), id,
      arith::ConstantOp::create(
          b, b.getI32IntegerAttr(static_cast<int32_t>(threads))),
      NVVM::BarrierReductionAttr(), Value());
}

Value swizzledChunk(LocBuilder &b, const parts::SwizzledTile &tile, Value row,
                    Value chunk) {
  assert(tile.swizzle == parts::SmemSwizzle::B128 && "8 chunks per row");
  Value box = arith::DivUIOp::create(b, chunk, cIndex(b, 8));
  Value inBox = arith::RemUIOp::create(b, chunk, cIndex(b, 8));
  Value phase = arith::RemUIOp::create(b, row, cIndex(b, 8));
  Value swizzled = arith::XOrIOp::create(b, inBox, phase);
  Value boxStart = arith::MulIOp::create(b, box, cIndex(b, tile.boxStride()));
  // Box-major: rows 128 bytes apart; group-major: 8-row groups
  // groupStride apart.
  Value rowStart;
  if (tile.groupMajor) {
    Value group = arith::DivUIOp::create(b, row, cIndex(b, 8));
    Value groupStart =
        arith::MulIOp::create(b, group, cIndex(b, tile.groupStride()));
    Value inGroup = arith::MulIOp::create(b, phase, cIndex(b, 128));
    rowStart = arith::AddIOp::create(b, groupStart, inGroup);
  } else {
    rowStart = arith::MulIOp::create(b, row, cIndex(b, 128));
  }
  Value offset = arith::AddIOp::create(b, boxStart, rowStart);
  Value chunkStart = arith::MulIOp::create(b, swizzled, cIndex(b, 16));
  return arith::AddIOp::create(b, offset, chunkStart);
}

HopperPrefillBuilder::RowPieces HopperPrefillBuilder::rowPieces(LocBuilder &b) {
  int64_t chunksPerRow = D / kernels::kVec;
  Value consumer = arith::SubIOp::create(b, wg, c1);
  Value chunk = arith::RemUIOp::create(b, wgThread, cIndex(b, chunksPerRow));
  Value consumerRow =
      arith::MulIOp::create(b, consumer, cIndex(b, kRowsPerConsumer));
  Value passRow = arith::DivUIOp::create(b, wgThread, cIndex(b, chunksPerRow));
  Value firstRow = arith::AddIOp::create(b, consumerRow, passRow);
  return {parts::WgmmaAtom::kThreads / chunksPerRow, chunk, firstRow};
}

void HopperPrefillBuilder::loadQueryRows(LocBuilder &b) {
  // Thread u of the warpgroup copies 16-byte chunk u % (D / 8) of rows
  // u / (D / 8) + rowsPerPass * i; rows past the request hold zeros.
  RowPieces pieces = rowPieces(b);
  int64_t rowsPerPass = pieces.rowsPerPass;
  Value chunk = pieces.chunk, firstRow = pieces.firstRow;
  Value column = arith::MulIOp::create(b, chunk, cIndex(b, kernels::kVec));
  auto pieceType = VectorType::get({kernels::kVec}, s.element);
  Value zeros = arith::ConstantOp::create(
      b, DenseElementsAttr::get(pieceType, b.getZeroAttr(s.element)));
  for (int64_t i = 0; i < kRowsPerConsumer / rowsPerPass; ++i) {
    Value row = arith::AddIOp::create(b, firstRow, cIndex(b, rowsPerPass * i));
    Value token, qHead;
    std::tie(token, qHead) = tokenAndHead(b, row);
    Value valid =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, token, f.numQ);
    Value piece = buildIf(
        b, valid,
        [&](LocBuilder &b) -> SmallVector<Value> {
          Value q = arith::AddIOp::create(b, f.qBegin, token);
          if (k.hooks.hasQuery())
            return {hookedQueryPiece(b, q, token, qHead, column)};
          return {k.loadRaw(b, f.q, ValueRange{q, qHead, column})};
        },
        [&](LocBuilder &) -> SmallVector<Value> { return {zeros}; })[0];
    Value offset = swizzledChunk(b, qImage(), row, chunk);
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

Value HopperPrefillBuilder::threadRow(LocBuilder &b) {
  // Row 16 (t / 32) + (t % 32) / 4 of the warpgroup's 64 (WgmmaAtom).
  Value consumer = arith::SubIOp::create(b, wg, c1);
  Value consumerRow =
      arith::MulIOp::create(b, consumer, cIndex(b, kRowsPerConsumer));
  Value warpRow = arith::MulIOp::create(b, warpInWg, cIndex(b, 16));
  Value laneRow = arith::DivUIOp::create(b, lane, cIndex(b, 4));
  Value row = arith::AddIOp::create(b, consumerRow, warpRow);
  return arith::AddIOp::create(b, row, laneRow);
}

void HopperPrefillBuilder::consume(LocBuilder &b) {
  loadQueryRows(b);
  if (warpgroupMasks)
    planMaskedTiles(b);
  // The thread's rows (WgmmaAtom's accumulator layout), their positions
  // and heads.
  Value firstRow = threadRow(b);
  for (int64_t h = 0; h < 2; ++h) {
    Value row = arith::AddIOp::create(b, firstRow, cIndex(b, 8 * h));
    Value token;
    std::tie(token, rowHead[h]) = tokenAndHead(b, row);
    Value qpos = keyPosition(b, token);
    // Hooks that read buffers see rows past the request clamped.
    hookQpos[h] = k.hookPosition(b, qpos, f.keysTotal);
    // The row's visible keys end at kEnd or (exactly causal) after its
    // position; split, as a count from kBegin: a masked tile then compares
    // each key once.
    Value end = causal ? causalEnd(b, qpos) : f.kEnd;
    rowKeyBound[h] = s.chunked
                         ? arith::MaxSIOp::create(
                               b, arith::SubIOp::create(b, end, f.kBegin), c0)
                               .getResult()
                         : end;
  }
  // Without fused head groups both rows are of the CTA's head.
  params[0] = k.paramValues(b, f, rowHead[0]);
  params[1] = fused ? k.paramValues(b, f, rowHead[1]) : params[0];
  RowState init;
  for (int64_t h = 0; h < 2; ++h) {
    // Sigmoid keeps m = 0 (its states merge by sums).
    init.m[h] = k.hooks.sigmoid() ? cF32(b, 0.0f) : negInf(b);
    init.l[h] = cF32(b, 0.0f);
  }
  SmallVector<Value> zeros(outputAtom.accumulators(), cF32(b, 0.0f));
  init.o = outputMma.pack(b, zeros);
  auto flat = [](const RowState &st) {
    return SmallVector<Value>{st.m[0], st.m[1], st.l[0], st.l[1], st.o};
  };
  auto unflat = [](ValueRange v) {
    RowState st;
    st.m[0] = v[0];
    st.m[1] = v[1];
    st.l[0] = v[2];
    st.l[1] = v[3];
    st.o = v[4];
    return st;
  };
  Value any = arith::CmpIOp::create(b, arith::CmpIPredicate::ugt, numTiles, c0);
  SmallVector<Value> done = buildIf(
      b, any, [&](LocBuilder &b) { return flat(keyLoop(b, init)); },
      [&](LocBuilder &) { return flat(init); });
  writeOutput(b, unflat(done));
}

void HopperPrefillBuilder::planMaskedTiles(LocBuilder &b) {
  // Exactly causal, keys up to the warpgroup's first row's position are
  // visible to each of its rows: at 64-key tiles the second warpgroup of a
  // 128-row CTA masks one tile of the diagonal instead of two.
  Value consumer = arith::SubIOp::create(b, wg, c1);
  Value rowsEach = cIndex(b, kRowsPerConsumer);
  Value firstRow = arith::MulIOp::create(b, consumer, rowsEach);
  Value token = tokenAndHead(b, firstRow).first;
  Value maskEnd = causalEnd(b, keyPosition(b, token));
  // The tiles wholly before maskEnd stay unmasked; the next is the first
  // that ends past it.
  maskFrom = tilesUpTo(b, maskEnd, /*partial=*/false);
}

HopperPrefillBuilder::RowState HopperPrefillBuilder::keyLoop(LocBuilder &b,
                                                             RowState init) {
  // Tile 0: S, its weights; O is still zero (nothing to rescale).
  waitTile(b, Operand::K, c0);
  hookKeyTile(b, c0);
  Value s0 = issueScores(b, c0);
  s0 = scoreMma.waitTied(b, 0, s0)[0];
  release(b, Operand::K, c0);
  Weights first = softmax(b, maskedScores(b, c0, s0), init);
  // Tiles 1..n-1: S_j's products are issued, then P_{j-1}.V_{j-1}'s; the
  // softmax of S_j needs only the first group.
  SmallVector<Value> carried = {first.state.m[0], first.state.m[1],
                                first.state.l[0], first.state.l[1],
                                first.state.o};
  llvm::append_range(carried, first.registers);
  ValueRange loop = buildFor(
      b, c1, numTiles, carried,
      [&](LocBuilder &b, Value it, ValueRange c) -> SmallVector<Value> {
        RowState st;
        st.m[0] = c[0];
        st.m[1] = c[1];
        st.l[0] = c[2];
        st.l[1] = c[3];
        Value previous = arith::SubIOp::create(b, it, c1);
        // Q.K^T goes out as soon as K lands, before V's wait.
        waitTile(b, Operand::K, it);
        hookKeyTile(b, it);
        Value scores = issueScores(b, it);
        waitTile(b, Operand::V, previous);
        Value o = issueOutput(b, previous, c[4], c.drop_front(5));
        scores = scoreMma.waitTied(b, 1, scores)[0];
        release(b, Operand::K, it);
        Weights w = softmax(b, maskedScores(b, it, scores), st);
        o = outputMma.waitTied(b, 0, o)[0];
        release(b, Operand::V, previous);
        SmallVector<Value> next = {w.state.m[0], w.state.m[1], w.state.l[0],
                                   w.state.l[1], rescale(b, o, w)};
        llvm::append_range(next, w.registers);
        return next;
      });
  // The last tile's P.V; only it may hold keys past the end (every tile
  // before it ends at or before kLoopEnd <= kEnd).
  Value last = arith::SubIOp::create(b, numTiles, c1);
  waitTile(b, Operand::V, last);
  // The gather zero-fills rows past the end itself.
  if (!gather)
    zeroTailRows(b, last);
  Value o = issueOutput(b, last, loop[4], loop.drop_front(5));
  RowState done;
  done.m[0] = loop[0];
  done.m[1] = loop[1];
  done.l[0] = loop[2];
  done.l[1] = loop[3];
  done.o = outputMma.waitTied(b, 0, o)[0];
  release(b, Operand::V, last);
  return done;
}

void HopperPrefillBuilder::waitTile(LocBuilder &b, Operand operand, Value it) {
  Value slot, parity;
  std::tie(slot, parity) = slotAndParity(b, it);
  parts::mbarrierWait(b, barrier(b, operand, true, slot), parity);
  // Gathered tiles were written through the generic proxy.
  if (gather)
    parts::fenceAsyncShared(b);
}

Value HopperPrefillBuilder::issueScores(LocBuilder &b, Value it) {
  Value slot = slotAndParity(b, it).first;
  Value consumer = arith::SubIOp::create(b, wg, c1);
  Value qAddress = sharedAddress(
      b, arith::MulIOp::create(b, consumer, cIndex(b, kRowsPerConsumer * 128)));
  Value kAddress = sharedAddress(b, tileOffset(b, Operand::K, slot));
  parts::Wgmma::fence(b);
  Value acc = scoreMma.undefined(b);
  for (int64_t kk = 0; kk < D / parts::WgmmaAtom::k; ++kk) {
    Value descQ = parts::Wgmma::descriptor(
        b, qAddress, parts::WgmmaAtom::kMajor(0, qImage(), kk));
    Value descK = parts::Wgmma::descriptor(
        b, kAddress, parts::WgmmaAtom::kMajor(0, ringImage, kk));
    acc = scoreMma.ss(b, acc, descQ, descK, /*accumulate=*/kk > 0);
  }
  parts::Wgmma::commit(b);
  return acc;
}

Value HopperPrefillBuilder::issueOutput(LocBuilder &b, Value it, Value o,
                                        ValueRange weights) {
  Value slot = slotAndParity(b, it).first;
  Value vAddress = sharedAddress(b, tileOffset(b, Operand::V, slot));
  // O's rescale and P's conversion complete before the fence.
  SmallVector<Value> operands = outputMma.unpack(b, o);
  llvm::append_range(operands, weights);
  operands = parts::Wgmma::pinOperands(b, operands);
  int64_t n = outputAtom.accumulators();
  o = outputMma.pack(b, ArrayRef<Value>(operands).take_front(n));
  SmallVector<Value> registers(operands.begin() + n, operands.end());
  parts::Wgmma::fence(b);
  for (int64_t kk = 0; kk < KV / parts::WgmmaAtom::k; ++kk) {
    Value descV = parts::Wgmma::descriptor(
        b, vAddress, parts::WgmmaAtom::mnMajor(0, ringImage, kk));
    SmallVector<Value> a(ArrayRef<Value>(registers).slice(4 * kk, 4));
    o = outputMma.rs(b, o, a, descV, /*transB=*/true);
  }
  parts::Wgmma::commit(b);
  return o;
}

void HopperPrefillBuilder::release(LocBuilder &b, Operand operand, Value it) {
  Value slot = slotAndParity(b, it).first;
  Value releaser =
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, wgThread, c0);
  scf::IfOp::create(b, releaser, [&](OpBuilder &rb, Location loc) {
    LocBuilder b(loc, rb);
    parts::mbarrierArrive(b, barrier(b, operand, false, slot));
    scf::YieldOp::create(b);
  });
}

// Row h of the thread's two holds accumulators i with (i / 2) % 2 == h.
static int64_t rowOf(int64_t i) { return (i / 2) % 2; }

SmallVector<Value> HopperPrefillBuilder::maskedScores(LocBuilder &b, Value it,
                                                      Value scores) {
  SmallVector<Value> raw = scoreMma.unpack(b, scores);
  Value t0 = tileStart(b, it);
  // Accumulator i of the thread is column 8 (i / 4) + 2 (lane % 4) + i % 2
  // of the tile, in row (i / 2) % 2 of the thread's two.
  auto keyOf = [&](LocBuilder &b, int64_t i) -> Value {
    Value quadLane = arith::RemUIOp::create(b, lane, cIndex(b, 4));
    Value laneCol = arith::MulIOp::create(b, quadLane, cIndex(b, 2));
    Value laneKey = arith::AddIOp::create(b, t0, laneCol);
    return arith::AddIOp::create(b, laneKey, cIndex(b, 8 * (i / 4) + i % 2));
  };
  // A logits hook sees natural-domain logits; the softmax takes base 2.
  if (!rawScores)
    for (int64_t i = 0; i < static_cast<int64_t>(raw.size()); ++i) {
      Value natural = arith::MulFOp::create(b, raw[i], cF32(b, s.scale));
      Value kpos = k.hookKeyPosition(b, f, keyOf(b, i));
      int64_t h = rowOf(i);
      Value logit =
          k.hooks.logits(b, natural, hookQpos[h], kpos, rowHead[h], params[h]);
      raw[i] = arith::MulFOp::create(b, logit, cF32(b, kernels::kLog2E));
    }
  return buildIf(
      b, masksTile(b, it, t0),
      [&](LocBuilder &b) -> SmallVector<Value> {
        SmallVector<Value> masked;
        for (auto [i, score] : llvm::enumerate(raw)) {
          Value key = keyOf(b, i);
          Value bound = rowKeyBound[rowOf(i)];
          // Split: keys before kBegin wrap around in the unsigned compare.
          // Unsplit the compare is signed: a causal row's bound is <= 0
          // where queries outnumber the keys before it.
          Value visible =
              s.chunked ? arith::CmpIOp::create(
                              b, arith::CmpIPredicate::ult,
                              arith::SubIOp::create(b, key, f.kBegin), bound)
                        : arith::CmpIOp::create(b, arith::CmpIPredicate::slt,
                                                key, bound);
          if (hookMask) {
            Value kpos = k.hookKeyPosition(b, f, key);
            int64_t h = rowOf(i);
            Value kept =
                k.hooks.mask(b, hookQpos[h], kpos, rowHead[h], params[h]);
            visible = arith::AndIOp::create(b, visible, kept);
          }
          masked.push_back(
              arith::SelectOp::create(b, visible, score, negInf(b)));
        }
        return masked;
      },
      [&](LocBuilder &) { return raw; });
}

Value HopperPrefillBuilder::masksTile(LocBuilder &b, Value it, Value t0) {
  // With another mask hook every tile masks.
  if (hookMask)
    return arith::ConstantOp::create(b, b.getBoolAttr(true));
  // Tiles past the end (or, split, starting before the chunk) mask, and
  // exactly causal those past the first row's position: the warpgroup's
  // (from maskFrom on) or the CTA's.
  auto startsBefore = [&]() -> Value {
    return arith::CmpIOp::create(b, arith::CmpIPredicate::ult, t0, f.kBegin);
  };
  if (warpgroupMasks) {
    Value partial =
        arith::CmpIOp::create(b, arith::CmpIPredicate::uge, it, maskFrom);
    return s.chunked
               ? arith::OrIOp::create(b, partial, startsBefore()).getResult()
               : partial;
  }
  Value tileEnd = arith::AddIOp::create(b, t0, cIndex(b, KV));
  Value partial =
      arith::CmpIOp::create(b, arith::CmpIPredicate::ugt, tileEnd, f.kEnd);
  if (s.chunked)
    partial = arith::OrIOp::create(b, partial, startsBefore());
  if (causal) {
    Value firstVisible = arith::AddIOp::create(b, firstQpos, c1);
    Value pastFirst = arith::CmpIOp::create(b, arith::CmpIPredicate::sgt,
                                            tileEnd, firstVisible);
    partial = arith::OrIOp::create(b, partial, pastFirst);
  }
  return partial;
}

Value HopperPrefillBuilder::rowMax(LocBuilder &b, ArrayRef<Value> x,
                                   int64_t h) {
  Value mx;
  for (int64_t i = 0; i < static_cast<int64_t>(x.size()); ++i)
    if (rowOf(i) == h)
      mx = mx ? arith::MaxNumFOp::create(b, mx, x[i]).getResult() : x[i];
  for (int32_t offset : {1, 2})
    mx = arith::MaxNumFOp::create(b, mx, k.shuffleXor(b, mx, offset));
  return factor != 1.0f
             ? arith::MulFOp::create(b, mx, cF32(b, factor)).getResult()
             : mx;
}

HopperPrefillBuilder::Weights
HopperPrefillBuilder::softmax(LocBuilder &b, ArrayRef<Value> x,
                              const RowState &state) {
  Weights w;
  w.state = state;
  SmallVector<Value> p(x.size());
  if (k.hooks.sigmoid()) {
    // p = sigmoid(s) needs no maximum: m stays 0, O is never rescaled.
    for (int64_t h = 0; h < 2; ++h) {
      Value sum;
      for (int64_t i = 0; i < static_cast<int64_t>(x.size()); ++i) {
        if (rowOf(i) != h)
          continue;
        Value xi = factor != 1.0f
                       ? arith::MulFOp::create(b, x[i], cF32(b, factor))
                       : x[i];
        p[i] = k.sigmoidBase2(b, xi);
        sum = sum ? arith::AddFOp::create(b, sum, p[i]).getResult() : p[i];
      }
      w.state.l[h] = arith::AddFOp::create(b, state.l[h], sum);
    }
  } else {
    // Each row's maximum grows to the tile's, or with lazyMax only when the
    // tile's exceeds it by more than kLazyRescale: otherwise P = exp2(x -
    // m) <= 2^kLazyRescale, exact in f32 sums and in P's element type, and
    // O / l and lse use the same m. The warp's vote on O's rescale stays
    // off the exponentials' path.
    Value grows;
    for (int64_t h = 0; h < 2; ++h) {
      Value m = state.m[h];
      Value tileMax = rowMax(b, x, h);
      Value mNew;
      if (lazyMax) {
        Value limit =
            arith::AddFOp::create(b, m, cF32(b, kernels::kLazyRescale));
        Value up =
            arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, tileMax, limit);
        grows = grows ? arith::OrIOp::create(b, grows, up).getResult() : up;
        mNew = arith::SelectOp::create(b, up, tileMax, m);
      } else {
        mNew = arith::MaxNumFOp::create(b, m, tileMax);
      }
      // A row with no visible key yet keeps base 0 (no -inf - -inf).
      Value noKey = isNegInf(b, mNew);
      Value zero = cF32(b, 0.0f);
      Value base = arith::SelectOp::create(b, noKey, zero, mNew);
      w.alpha[h] = kernels::exp2Ftz(b, arith::SubFOp::create(b, m, base));
      Value negBase = arith::NegFOp::create(b, base);
      Value sum;
      for (int64_t i = 0; i < static_cast<int64_t>(x.size()); ++i) {
        if (rowOf(i) != h)
          continue;
        p[i] = kernels::exp2Ftz(
            b, math::FmaOp::create(b, x[i], cF32(b, factor), negBase));
        sum = sum ? arith::AddFOp::create(b, sum, p[i]).getResult() : p[i];
      }
      w.state.m[h] = mNew;
      w.state.l[h] = math::FmaOp::create(b, state.l[h], w.alpha[h], sum);
    }
    if (lazyMax)
      w.rescale = NVVM::VoteSyncOp::create(
          b, b.getI1Type(),
          arith::ConstantOp::create(b, b.getI32IntegerAttr(-1)), grows,
          NVVM::VoteSyncKindAttr::get(ctx, NVVM::VoteSyncKind::any));
  }
  for (int64_t kk = 0; kk < KV / parts::WgmmaAtom::k; ++kk)
    llvm::append_range(w.registers, scoreMma.registersA(b, p, kk));
  return w;
}

Value HopperPrefillBuilder::rescale(LocBuilder &b, Value o, const Weights &w) {
  if (!w.alpha[0])
    return o;
  auto multiply = [&](LocBuilder &b) -> SmallVector<Value> {
    SmallVector<Value> values = outputMma.unpack(b, o);
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = arith::MulFOp::create(b, values[i], w.alpha[rowOf(i)]);
    return {outputMma.pack(b, values)};
  };
  if (!w.rescale)
    return multiply(b)[0];
  // Warp-uniform: once the maxima settle, most tiles skip the multiplies.
  return buildIf(b, w.rescale, multiply,
                 [&](LocBuilder &) -> SmallVector<Value> { return {o}; })[0];
}

void HopperPrefillBuilder::zeroTailRows(LocBuilder &b, Value it) {
  Value t0 = tileStart(b, it);
  Value vOffset = tileOffset(b, Operand::V, slotAndParity(b, it).first);
  Value tileEnd = arith::AddIOp::create(b, t0, cIndex(b, KV));
  Value partial =
      arith::CmpIOp::create(b, arith::CmpIPredicate::ugt, tileEnd, f.kEnd);
  scf::IfOp::create(b, partial, [&](OpBuilder &zb, Location loc) {
    LocBuilder b(loc, zb);
    // The consumers' threads u take chunks u, u + threads, ... of the
    // tile; a chunk of a row past the end becomes zeros.
    int64_t threads = consumers * parts::WgmmaAtom::kThreads;
    int64_t chunksPerRow = D / kernels::kVec;
    assert(KV * chunksPerRow % threads == 0 &&
           "every consumer thread takes whole passes");
    Value u =
        arith::SubIOp::create(b, tid, cIndex(b, parts::WgmmaAtom::kThreads));
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
            b, vOffset, swizzledChunk(b, ringImage, row, chunk));
        vector::StoreOp::create(b, zeros, layout,
                                ValueRange{arith::DivUIOp::create(
                                    b, offset, cIndex(b, elementBytes))},
                                /*nontemporal=*/false, llvm::MaybeAlign(16));
        scf::YieldOp::create(b);
      });
    }
    parts::fenceAsyncShared(b);
    namedBarrier(
        b,
        arith::ConstantOp::create(
            b, b.getI32IntegerAttr(static_cast<int32_t>(consumers + 1))),
        threads);
    scf::YieldOp::create(b);
  });
}

} // namespace flashir::conversion::hopper
