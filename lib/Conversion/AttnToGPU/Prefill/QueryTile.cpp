//===- QueryTile.cpp - the prefill kernel's Q operand ---------------------===//
//
// Q's A fragments for k-step c (head dims 16c..16c+15) of m block mb: the
// atom's A layout (rows gid / gid+8, columns 2tig (+1) and 2tig + 8 (+1)).
// With one m block (and no q_shared) they stay in registers for the whole
// key loop; with two (32 rows per warp) they would not fit next to O, so the
// tile waits in shared memory (one cp.async group ahead of the K/V ring's)
// and each k-step reloads them by ldmatrix (FlashAttention-2's layout). The
// query hook transforms Q as it is loaded.
//
//===----------------------------------------------------------------------===//

#include "PrefillBuilder.h"

#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

using namespace mlir;

namespace flashir::conversion::prefill {

Value PrefillBuilder::hookedQueryPiece(LocBuilder &b, Value q, Value row,
                                       Value head, Value col, Value qpos,
                                       ValueRange params, int64_t width) {
  auto read = [&](LocBuilder &b, Value column, int64_t w) {
    return k.loadColumns(b, q, {row, head}, column, w);
  };
  Value x = read(b, col, width);
  Value rot;
  if (width == kVec) {
    rot = k.loadRotated(b, col, read);
  } else {
    // A pair's partners (D / 2 is a multiple of 4, col even) are adjacent.
    Value shifted = arith::AddIOp::create(b, col, cIndex(b, D / 2));
    rot = read(b, arith::RemUIOp::create(b, shifted, cIndex(b, D)), width);
  }
  return k.applyRowHook(b, /*isKey=*/false, x, rot, col, qpos, head, params);
}

void PrefillBuilder::loadQuery(LocBuilder &b) {
  if (qShared)
    loadQueryTile(b);
  else
    loadQueryFragments(b);
}

void PrefillBuilder::loadQueryTile(LocBuilder &b) {
  Value qView = memref::ViewOp::create(
      b,
      MemRefType::get({s.prefillRows, rowStride}, s.element,
                      MemRefLayoutAttrInterface(), workgroup),
      f.buf, cIndex(b, ringBytes), ValueRange{});
  Value lastRow =
      arith::SubIOp::create(b, arith::AddIOp::create(b, f.qBegin, f.numQ), c1);
  forEachPiece(
      b, s.prefillRows * chunksPerRow, [&](LocBuilder &b, Value p, int64_t) {
        Value r = arith::DivUIOp::create(b, p, cIndex(b, chunksPerRow));
        Value chunk = arith::RemUIOp::create(b, p, cIndex(b, chunksPerRow));
        Value col = arith::MulIOp::create(b, chunk, cIndex(b, kVec));
        auto [token, qHead] = tokenAndHead(b, r);
        // Rows past the request copy its last row (never stored).
        Value row = arith::MinUIOp::create(
            b, arith::AddIOp::create(b, f.qBegin, token), lastRow);
        if (!hooks.hasQuery()) {
          copy16(b, qView, {r, col}, f.q, {row, qHead, col});
          return;
        }
        // A query hook: the piece is loaded, transformed and stored by
        // the thread (the key loop's first barrier makes it visible).
        Value qposOf = k.hookPosition(
            b,
            arith::SubIOp::create(
                b, arith::AddIOp::create(b, token, f.keysTotal), f.numQ),
            f.keysTotal);
        SmallVector<Value> params = k.paramValues(b, f, qHead);
        Value piece =
            hookedQueryPiece(b, f.q, row, qHead, col, qposOf, params, kVec);
        vector::StoreOp::create(b, piece, qView, ValueRange{r, col},
                                /*nontemporal=*/false, llvm::MaybeAlign(16));
      });
  if (!s.turing)
    qToken =
        nvgpu::DeviceAsyncCreateGroupOp::create(b, nvgpuToken, ValueRange{});
  // The lane's ldmatrix row: rows lane % 16 of its m block, columns
  // 8 (lane / 16) of the k-step.
  Value lrow = arith::AddIOp::create(
      b, warpRow, arith::RemUIOp::create(b, lane, cIndex(b, 16)));
  Value lhalf = arith::DivUIOp::create(b, lane, cIndex(b, 16));
  Value lcol = arith::MulIOp::create(b, lhalf, cIndex(b, 8));
  Value qRingStart = cIndex(b, ringBytes);
  Value lelement = arith::AddIOp::create(
      b, arith::MulIOp::create(b, lrow, cIndex(b, rowStride)), lcol);
  Value lbytes = arith::MulIOp::create(b, lelement, cIndex(b, elementBytes));
  qTileBase = arith::AddIOp::create(
      b, ringBase,
      arith::IndexCastOp::create(b, b.getI64Type(),
                                 arith::AddIOp::create(b, qRingStart, lbytes)));
}

void PrefillBuilder::loadQueryFragments(LocBuilder &b) {
  Value zeroPair = arith::ConstantOp::create(
      b, DenseElementsAttr::get(pairType, b.getZeroAttr(s.element)));
  for (int64_t c = 0; c < kSteps; ++c) {
    Fragment frag;
    for (int64_t r = 0; r < aLayout.registers(); ++r) {
      // Register r: the pair at this offset from the lane's base.
      parts::FragmentCoord at = aLayout.offsets[r * aLayout.perRegister];
      int64_t half = halfOf(at.row), col = mma.atom.k * c + at.col;
      // The padded k-step's columns past D are zeros.
      if (col >= D) {
        frag[r] = mma.operand(b, zeroPair);
        continue;
      }
      Value qRow = arith::AddIOp::create(b, f.qBegin, rowOf[half]);
      Value row = arith::MinUIOp::create(
          b, qRow,
          arith::SubIOp::create(b, arith::AddIOp::create(b, f.qBegin, f.numQ),
                                c1));
      Value d = arith::AddIOp::create(b, laneCol, cIndex(b, col));
      Value pair = hooks.hasQuery()
                       ? hookedQueryPiece(b, f.q, row, headOf[half], d,
                                          hookQpos[half], paramsOf[half], 2)
                       : vector::LoadOp::create(
                             b, pairType, f.q, ValueRange{row, headOf[half], d})
                             .getResult();
      frag[r] = mma.operand(
          b, arith::SelectOp::create(b, rowValid[half], pair, zeroPair));
    }
    qFrag.push_back(frag);
  }
}

SmallVector<PrefillBuilder::Fragment> PrefillBuilder::qFragments(LocBuilder &b,
                                                                 int64_t c) {
  SmallVector<Fragment> frags;
  if (!qShared) {
    frags.push_back(qFrag[c]);
    return frags;
  }
  for (int64_t mb = 0; mb < M; ++mb) {
    int64_t offset =
        (mma.atom.m * mb * rowStride + mma.atom.k * c) * elementBytes;
    frags.push_back(ldmatrix(b, qTilePtr, offset, /*transpose=*/false));
  }
  return frags;
}

} // namespace flashir::conversion::prefill
