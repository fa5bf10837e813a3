//===- Epilogue.cpp - the prefill kernel's output -------------------------===//
//
// Each row is finished after the key loop: l over the row's 4 lanes; no
// visible key: O = 0, lse = -inf. O / l leaves in the element type: staged
// through shared memory where the tile fits the ring, so each lane stores
// whole 16-byte pieces of a row (the fragments' 4-byte pairs would write
// half sectors, which cost the split kernels' partial states more than f32
// pairs did). Only O's first D columns (chunksPerRow n-tiles of 8) leave
// the lanes. The lse goes out directly.
//
//===----------------------------------------------------------------------===//

#include "PrefillBuilder.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;

namespace flashir::conversion::prefill {

void PrefillBuilder::writeOutput(LocBuilder &b, ValueRange done) {
  int64_t stageBytes = s.prefillRows * rowStride * elementBytes;
  int64_t stagePieces = rowsPerWarp * chunksPerRow;
  Value stage;
  if (stageBytes <= ringBytes) {
    // Every warp is past its last read of the ring before it is
    // overwritten, and no copy writes it any more (the raw-copy loops end
    // with a wait for all groups; the staged loop's last waits leave only
    // empty groups).
    gpu::BarrierOp::create(b);
    stage = memref::ViewOp::create(
        b,
        MemRefType::get({s.prefillRows, rowStride}, s.element,
                        MemRefLayoutAttrInterface(), workgroup),
        f.buf, c0, ValueRange{});
  }
  for (int64_t ri = 0; ri < R; ++ri)
    finishRow(b, done, ri, stage);
  if (!stage)
    return;
  // The warp's own rows, 16 bytes per lane and store.
  NVVM::SyncWarpOp::create(
      b, arith::ConstantOp::create(b, b.getI32IntegerAttr(-1)));
  for (int64_t p0 = 0; p0 < stagePieces; p0 += 32) {
    if (p0 + 32 <= stagePieces) {
      readBack(b, stage, p0);
      continue;
    }
    // A partial last round (odd chunksPerRow, 16 rows per warp): the
    // lanes past the warp's pieces would read the next warp's rows.
    Value active = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, lane,
                                         cIndex(b, stagePieces - p0));
    scf::IfOp::create(b, active, [&](OpBuilder &iob, Location loc) {
      LocBuilder ib(loc, iob);
      readBack(ib, stage, p0);
      scf::YieldOp::create(ib);
    });
  }
}

void PrefillBuilder::finishRow(LocBuilder &b, ValueRange done, int64_t ri,
                               Value stage) {
  bool staged = static_cast<bool>(stage);
  bool finalForm = hooks.sigmoid() || hooks.hasOutput();
  Value l = done[R + ri];
  for (int32_t off : {1, 2})
    l = arith::AddFOp::create(b, l, k.shuffleXor(b, l, off));
  Value empty =
      arith::CmpFOp::create(b, arith::CmpFPredicate::OLE, l, cF32(b, 0.0f));
  Value zeroInv = cF32(b, 0.0f);
  Value inv = arith::SelectOp::create(
      b, empty, zeroInv, arith::DivFOp::create(b, cF32(b, 1.0f), l));
  Value noLse = negInf(b);
  Value mNatural = arith::MulFOp::create(b, done[ri], cF32(b, kernels::kLn2));
  Value lse = arith::SelectOp::create(
      b, empty, noLse,
      arith::AddFOp::create(b, mNatural, math::LogOp::create(b, l)));
  int64_t mb = ri / H, half = ri % H;
  // The lane's pair of n-tile nd of the row in the element type: O / l,
  // and as a `final` row (not a split-KV partial state) what finalOutput
  // makes of it (sigmoid: O unnormalised; the output hook).
  auto pairAt = [&](LocBuilder &b, int64_t nd, bool final = true) -> Value {
    int64_t at = 2 * R + cLayout.elements() * (mb * oTiles + nd);
    int64_t e0 = cLayout.elementAt(halves[half], 0),
            e1 = cLayout.elementAt(halves[half], 1);
    Value o = vector::FromElementsOp::create(
        b, VectorType::get({2}, f32),
        ValueRange{arith::MulFOp::create(b, done[at + e0], inv),
                   arith::MulFOp::create(b, done[at + e1], inv)});
    if (final && finalForm) {
      Value d = arith::AddIOp::create(b, laneCol, cIndex(b, mma.atom.n * nd));
      o = k.finalOutput(b, o, l, d, headOf[ri]);
    }
    return arith::TruncFOp::create(b, pairType, o);
  };
  Value localRow = arith::AddIOp::create(
      b, warpRow,
      arith::AddIOp::create(b, laneRow,
                            cIndex(b, mma.atom.m * mb + halves[half])));
  if (staged)
    for (int64_t nd = 0; nd < chunksPerRow; ++nd) {
      Value pair = pairAt(b, nd);
      // A split chunk stages its final rows only if it is its request's
      // only one (the read-back stores them to out, else to the partial
      // states).
      if (s.chunked && finalForm) {
        Value partial = pairAt(b, nd, /*final=*/false);
        pair = arith::SelectOp::create(b, f.direct, pair, partial);
      }
      vector::StoreOp::create(
          b, pair, stage,
          ValueRange{localRow, arith::AddIOp::create(
                                   b, laneCol, cIndex(b, mma.atom.n * nd))});
    }
  // lse (and, unstaged, O) of the row to `row` of oMem / lseMem; one lane of
  // the row's four stores the lse.
  auto store = [&](LocBuilder &b, Value oMem, Value lseMem, Value row) {
    if (!staged)
      for (int64_t nd = 0; nd < chunksPerRow; ++nd) {
        Value pair = pairAt(b, nd, /*final=*/oMem == f.out);
        vector::StoreOp::create(
            b, pair, oMem,
            ValueRange{
                row, headOf[ri],
                arith::AddIOp::create(b, laneCol, cIndex(b, mma.atom.n * nd))});
      }
    scf::IfOp::create(
        b, arith::CmpIOp::create(b, arith::CmpIPredicate::eq, tig, c0),
        [&](OpBuilder &tob, Location loc) {
          LocBuilder b(loc, tob);
          memref::StoreOp::create(b, lse, lseMem, ValueRange{row, headOf[ri]});
          scf::YieldOp::create(b);
        });
  };
  scf::IfOp::create(b, rowValid[ri], [&](OpBuilder &iob, Location loc) {
    LocBuilder b(loc, iob);
    k.storeRow(b, f, rowOf[ri], store);
    scf::YieldOp::create(b);
  });
}

// Piece p0 + lane of the warp's rows: row p / chunksPerRow, columns
// kVec * (p % chunksPerRow).
void PrefillBuilder::readBack(LocBuilder &b, Value stage, int64_t p0) {
  Value p = arith::AddIOp::create(b, lane, cIndex(b, p0));
  Value r = arith::AddIOp::create(
      b, warpRow, arith::DivUIOp::create(b, p, cIndex(b, chunksPerRow)));
  Value chunk = arith::RemUIOp::create(b, p, cIndex(b, chunksPerRow));
  Value col = arith::MulIOp::create(b, chunk, cIndex(b, kVec));
  Value token, qHead;
  std::tie(token, qHead) = tokenAndHead(b, r);
  Value inRange =
      arith::CmpIOp::create(b, arith::CmpIPredicate::ult, token, f.numQ);
  Value piece = k.loadRaw(b, stage, ValueRange{r, col});
  scf::IfOp::create(b, inRange, [&](OpBuilder &iob, Location loc) {
    LocBuilder b(loc, iob);
    k.storeRow(b, f, token, [&](LocBuilder &b, Value oMem, Value, Value row) {
      vector::StoreOp::create(b, piece, oMem, ValueRange{row, qHead, col},
                              /*nontemporal=*/false, llvm::MaybeAlign(16));
    });
    scf::YieldOp::create(b);
  });
}

} // namespace flashir::conversion::prefill
