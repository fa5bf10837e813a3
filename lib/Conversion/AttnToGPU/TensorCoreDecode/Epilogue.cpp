//===- Epilogue.cpp - the tensor-core decode's output ---------------------===//
//
// After a query row's key loop each warp stores its state (acc, m, l of each
// of the g rows) into the states view of the workgroup buffer, where the
// staging ring was; KernelBuilder::writeRows then merges the warps' states
// and writes the row's out / lse, or for a split-KV chunk its partial
// states.
//
//===----------------------------------------------------------------------===//

#include "TensorCoreDecodeBuilder.h"

using namespace mlir;

namespace flashir::conversion::kernels {

void TensorCoreDecodeBuilder::writeOutput(LocBuilder &b, ValueRange done,
                                          Value i) {
  // Each row's l over its 4 lanes; m back to the natural domain.
  SmallVector<Value> mRow, lRow;
  for (int64_t r = 0; r < R; ++r) {
    Value l = done[R + r];
    for (int32_t off : {1, 2})
      l = arith::AddFOp::create(b, l, kernel.shuffleXor(b, l, off));
    lRow.push_back(l);
    mRow.push_back(arith::MulFOp::create(b, done[r], cF32(b, kLn2)));
  }
  // Every warp is done with the staging ring (it aliases the states) and
  // the previous row's readers are done.
  gpu::BarrierOp::create(b);
  for (int64_t r = 0; r < R; ++r)
    scf::IfOp::create(b, rowValid[r], [&](OpBuilder &iob, Location loc) {
      LocBuilder b(loc, iob);
      storeRowState(b, done, r, mRow[r], lRow[r]);
      scf::YieldOp::create(b);
    });
  kernel.writeRows(b, f, smem, warp, lane, i);
}

void TensorCoreDecodeBuilder::storeRowState(LocBuilder &b, ValueRange done,
                                            int64_t r, Value m, Value l) {
  Value stateRow =
      r == 0 ? gid : arith::AddIOp::create(b, gid, cIndex(b, 8 * r));
  // Columns 64c + 16tig + e (first accumulator) and + 8 (second); those
  // past D (a partial last chunk) are not stored.
  for (int64_t c = 0; c < vPieces; ++c)
    for (int64_t second = 0; second < 2; ++second) {
      SmallVector<Value> cols;
      for (int64_t e = 0; e < kVec; ++e)
        cols.push_back(done[oIndex(r, c * kVec + e, second)]);
      Value tig16 = arith::MulIOp::create(b, tig, cIndex(b, 16));
      Value col =
          arith::AddIOp::create(b, tig16, cIndex(b, 64 * c + 8 * second));
      auto store = [&](LocBuilder &b) {
        vector::StoreOp::create(
            b, vector::FromElementsOp::create(b, kernel.f32Vec(b), cols), smem,
            ValueRange{warp, stateRow, col}, /*nontemporal=*/false,
            llvm::MaybeAlign(16));
      };
      if (64 * (c + 1) <= D) {
        store(b);
        continue;
      }
      Value inD = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, col,
                                        cIndex(b, D));
      scf::IfOp::create(b, inD, [&](OpBuilder &sob, Location loc) {
        LocBuilder b(loc, sob);
        store(b);
        scf::YieldOp::create(b);
      });
    }
  scf::IfOp::create(
      b, arith::CmpIOp::create(b, arith::CmpIPredicate::eq, tig, c0),
      [&](OpBuilder &fob, Location loc) {
        LocBuilder b(loc, fob);
        memref::StoreOp::create(b, m, smem,
                                ValueRange{warp, stateRow, cIndex(b, D)});
        memref::StoreOp::create(b, l, smem,
                                ValueRange{warp, stateRow, cIndex(b, D + 1)});
        scf::YieldOp::create(b);
      });
}

} // namespace flashir::conversion::kernels
