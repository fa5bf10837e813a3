//===- QueryFragments.cpp - the tensor-core decode's Q fragments ----------===//
//
// Q's A fragments stay in registers for a query row's whole key loop: row
// half r's piece c holds Q[head 8r + gid][32c + 8tig .. +8], the order of
// the head dimension the lane's K pieces use, after the query hook. Rows
// past g and columns past D are zeros.
//
//===----------------------------------------------------------------------===//

#include "TensorCoreDecodeBuilder.h"

using namespace mlir;

namespace flashir::conversion::kernels {

void TensorCoreDecodeBuilder::loadQueryPieces(LocBuilder &b, Value row) {
  qPiece.assign(R, {});
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < kPieces; ++c) {
      Value tig8 = arith::MulIOp::create(b, tig, cIndex(b, kVec));
      Value d = arith::AddIOp::create(b, tig8, cIndex(b, 32 * c));
      Value valid = rowValid[r];
      if (Value inD = kColumnValid(b, c)) {
        valid = arith::AndIOp::create(b, valid, inD);
        d = arith::SelectOp::create(b, inD, d, c0);
      }
      Value piece = kernel.loadRaw(b, f.q, {row, ownHead[r], d});
      if (hooks.hasQuery()) {
        Value rot = kernel.loadRotated(
            b, d, [&](LocBuilder &b, Value col, int64_t width) {
              return kernel.loadColumns(b, f.q, {row, ownHead[r]}, col, width);
            });
        piece = kernel.applyRowHook(b, /*isKey=*/false, piece, rot, d, qpos,
                                    ownHead[r], ownParams[r]);
      }
      qPiece[r].push_back(arith::SelectOp::create(b, valid, piece, zeroPiece));
    }
}

Value TensorCoreDecodeBuilder::pairAt(LocBuilder &b, Value piece, int64_t e) {
  return operand(b, vector::ShuffleOp::create(b, piece, piece,
                                              ArrayRef<int64_t>{e, e + 1}));
}

} // namespace flashir::conversion::kernels
