//===- Epilogue.cpp - the wgmma prefill kernel's output -------------------===//
//
// Each of the thread's two rows is finished after the key loop: l summed
// over the row's quad; no visible key: O = 0, lse = -inf. O / l leaves in
// the element type as the thread's column pairs (4-byte stores), the lse
// from the quad's first lane.
//
//===----------------------------------------------------------------------===//

#include "HopperPrefillBuilder.h"

using namespace mlir;

namespace flashir::conversion::hopper {

void HopperPrefillBuilder::writeOutput(LocBuilder &b, const RowState &state) {
  SmallVector<Value> o = outputMma.unpack(b, state.o);
  Value quadLane = arith::RemUIOp::create(b, lane, cIndex(b, 4));
  Value laneCol = arith::MulIOp::create(b, quadLane, cIndex(b, 2));
  Value firstRow = threadRow(b);
  auto pairType = VectorType::get({2}, s.element);
  for (int64_t h = 0; h < 2; ++h) {
    Value l = state.l[h];
    for (int32_t offset : {1, 2})
      l = arith::AddFOp::create(b, l, k.shuffleXor(b, l, offset));
    Value empty =
        arith::CmpFOp::create(b, arith::CmpFPredicate::OLE, l, cF32(b, 0.0f));
    Value zero = cF32(b, 0.0f);
    Value one = cF32(b, 1.0f);
    Value reciprocal = arith::DivFOp::create(b, one, l);
    Value inv = arith::SelectOp::create(b, empty, zero, reciprocal);
    Value mNatural =
        arith::MulFOp::create(b, state.m[h], cF32(b, kernels::kLn2));
    Value noLse = negInf(b);
    Value logL = math::LogOp::create(b, l);
    Value natural = arith::AddFOp::create(b, mNatural, logL);
    Value lse = arith::SelectOp::create(b, empty, noLse, natural);
    Value token = arith::AddIOp::create(
        b, rowBase, arith::AddIOp::create(b, firstRow, cIndex(b, 8 * h)));
    Value valid =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, token, f.numQ);
    scf::IfOp::create(b, valid, [&](OpBuilder &vb, Location loc) {
      LocBuilder b(loc, vb);
      k.storeRow(
          b, f, token, [&](LocBuilder &b, Value oMem, Value lseMem, Value row) {
            // Accumulators 4j + 2h, 4j + 2h + 1: columns 8j +
            // laneCol, + 1.
            for (int64_t j = 0; j < D / 8; ++j) {
              Value pair = vector::FromElementsOp::create(
                  b, VectorType::get({2}, f32),
                  ValueRange{
                      arith::MulFOp::create(b, o[4 * j + 2 * h], inv),
                      arith::MulFOp::create(b, o[4 * j + 2 * h + 1], inv)});
              Value col = arith::AddIOp::create(b, laneCol, cIndex(b, 8 * j));
              vector::StoreOp::create(
                  b, arith::TruncFOp::create(b, pairType, pair), oMem,
                  ValueRange{row, head, col});
            }
            scf::IfOp::create(b,
                              arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                                    quadLane, c0),
                              [&](OpBuilder &lb, Location loc) {
                                LocBuilder b(loc, lb);
                                memref::StoreOp::create(b, lse, lseMem,
                                                        ValueRange{row, head});
                                scf::YieldOp::create(b);
                              });
          });
      scf::YieldOp::create(b);
    });
  }
}

} // namespace flashir::conversion::hopper
