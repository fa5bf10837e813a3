//===- Epilogue.cpp - the wgmma prefill kernel's output -------------------===//
//
// Each of the thread's two rows is finished after the key loop: l summed
// over the row's quad; no visible key: O = 0, lse = -inf. O / l goes in the
// element type into the warpgroup's own rows of the swizzled Q tile (its
// products are done) and leaves as 16-byte pieces of whole rows (the
// fragments' 4-byte pairs would write half sectors); the lse from the
// quad's first lane. Sigmoid rows (unnormalised) and the output hook are
// applied to O / l in registers (KernelBuilder::finalOutput).
//
//===----------------------------------------------------------------------===//

#include "HopperPrefillBuilder.h"

using namespace mlir;

namespace flashir::conversion::hopper {

void HopperPrefillBuilder::writeOutput(LocBuilder &b, const RowState &state) {
  SmallVector<Value> o = outputMma.unpack(b, state.o);
  Value quadLane = arith::RemUIOp::create(b, lane, cIndex(b, 4));
  Value pairByte = arith::MulIOp::create(b, quadLane, cIndex(b, 4));
  Value pairColumn = arith::MulIOp::create(b, quadLane, cIndex(b, 2));
  bool finalForm = k.hooks.sigmoid() || k.hooks.hasOutput();
  Value firstRow = threadRow(b);
  auto pairType = VectorType::get({2}, s.element);
  auto f32Pair = VectorType::get({2}, f32);
  for (int64_t h = 0; h < 2; ++h) {
    Value l = state.l[h];
    for (int32_t offset : {1, 2})
      l = arith::AddFOp::create(b, l, k.shuffleXor(b, l, offset));
    Value zero = cF32(b, 0.0f);
    Value empty = arith::CmpFOp::create(b, arith::CmpFPredicate::OLE, l, zero);
    Value one = cF32(b, 1.0f);
    Value reciprocal = arith::DivFOp::create(b, one, l);
    Value inv = arith::SelectOp::create(b, empty, zero, reciprocal);
    Value mNatural =
        arith::MulFOp::create(b, state.m[h], cF32(b, kernels::kLn2));
    Value noLse = negInf(b);
    Value logL = math::LogOp::create(b, l);
    Value natural = arith::AddFOp::create(b, mNatural, logL);
    Value lse = arith::SelectOp::create(b, empty, noLse, natural);
    // O / l of the row into the warpgroup's rows of the Q tile (its
    // products are done): accumulators 4j + 2h, + 1 are columns 8j +
    // 2 (lane % 4), + 1, 4 bytes of chunk j.
    Value tileRow = arith::AddIOp::create(b, firstRow, cIndex(b, 8 * h));
    for (int64_t j = 0; j < D / 8; ++j) {
      Value lo = arith::MulFOp::create(b, o[4 * j + 2 * h], inv);
      Value hi = arith::MulFOp::create(b, o[4 * j + 2 * h + 1], inv);
      Value pair =
          vector::FromElementsOp::create(b, f32Pair, ValueRange{lo, hi});
      // Final rows as finalOutput makes them; a split chunk's are final
      // only where it is its request's only chunk (else partial states).
      if (finalForm) {
        Value column =
            arith::AddIOp::create(b, pairColumn, cIndex(b, kernels::kVec * j));
        Value final = k.finalOutput(b, pair, l, column, rowHead[h]);
        pair =
            s.chunked
                ? arith::SelectOp::create(b, f.direct, final, pair).getResult()
                : final;
      }
      Value narrow = arith::TruncFOp::create(b, pairType, pair);
      Value chunk = swizzledChunk(b, qImage(), tileRow, cIndex(b, j));
      Value byte = arith::AddIOp::create(b, chunk, pairByte);
      Value element = arith::DivUIOp::create(b, byte, cIndex(b, elementBytes));
      vector::StoreOp::create(b, narrow, layout, ValueRange{element});
    }
    Value token = tokenAndHead(b, tileRow).first;
    Value valid =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, token, f.numQ);
    Value first =
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, quadLane, c0);
    Value stores = arith::AndIOp::create(b, valid, first);
    scf::IfOp::create(b, stores, [&](OpBuilder &vb, Location loc) {
      LocBuilder b(loc, vb);
      k.storeRow(b, f, token,
                 [&](LocBuilder &b, Value, Value lseMem, Value row) {
                   memref::StoreOp::create(b, lse, lseMem,
                                           ValueRange{row, rowHead[h]});
                 });
      scf::YieldOp::create(b);
    });
  }
  // The warpgroup's rows leave as 16-byte pieces, whole rows per 8..32
  // threads (as the Q rows came in).
  namedBarrier(b, arith::IndexCastOp::create(b, b.getI32Type(), wg),
               parts::WgmmaAtom::kThreads);
  RowPieces pieces = rowPieces(b);
  int64_t rowsPerPass = pieces.rowsPerPass;
  Value chunk = pieces.chunk, firstPassRow = pieces.firstRow;
  Value column = arith::MulIOp::create(b, chunk, cIndex(b, kernels::kVec));
  for (int64_t i = 0; i < kRowsPerConsumer / rowsPerPass; ++i) {
    Value row =
        arith::AddIOp::create(b, firstPassRow, cIndex(b, rowsPerPass * i));
    Value offset = swizzledChunk(b, qImage(), row, chunk);
    Value element = arith::DivUIOp::create(b, offset, cIndex(b, elementBytes));
    Value piece = k.loadRaw(b, layout, ValueRange{element});
    Value token, pieceHead;
    std::tie(token, pieceHead) = tokenAndHead(b, row);
    Value valid =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, token, f.numQ);
    scf::IfOp::create(b, valid, [&](OpBuilder &vb, Location loc) {
      LocBuilder b(loc, vb);
      k.storeRow(b, f, token, [&](LocBuilder &b, Value oMem, Value, Value row) {
        vector::StoreOp::create(b, piece, oMem,
                                ValueRange{row, pieceHead, column},
                                /*nontemporal=*/false, llvm::MaybeAlign(16));
      });
      scf::YieldOp::create(b);
    });
  }
  // A persistent CTA's next q tile overwrites these rows with its Q rows.
  if (s.persistent)
    namedBarrier(b, arith::IndexCastOp::create(b, b.getI32Type(), wg),
                 parts::WgmmaAtom::kThreads);
}

} // namespace flashir::conversion::hopper
