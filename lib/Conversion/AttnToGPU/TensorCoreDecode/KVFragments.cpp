//===- KVFragments.cpp - the tensor-core decode's K and V pieces ----------===//
//
// A lane reads back the 16-byte K and V pieces its B fragments hold from
// the ring slot of a landed tile, as each copy kind laid them out: its own
// cp.async pieces, columns of whole rows (pieces past D selected to zero),
// or swizzled chunks of tensor-copy boxes. The key hook then runs on the K
// pieces in registers, each element with its partner half a head away.
//
//===----------------------------------------------------------------------===//

#include "TensorCoreDecodeBuilder.h"

using namespace mlir;

namespace flashir::conversion::kernels {

Value TensorCoreDecodeBuilder::loadPiece(LocBuilder &b, Value ring,
                                         int64_t piece) {
  return vector::LoadOp::create(
      b, VectorType::get({kVec}, s.element), stage,
      ValueRange{warp, ring, cIndex(b, piece), lane, c0},
      /*nontemporal=*/false, llvm::MaybeAlign(16));
}

Value TensorCoreDecodeBuilder::loadRow(LocBuilder &b, Value ring, int64_t kind,
                                       Value key, Value col) {
  return vector::LoadOp::create(
      b, VectorType::get({kVec}, s.element), stage,
      ValueRange{warp, ring, cIndex(b, kind), key, col},
      /*nontemporal=*/false, llvm::MaybeAlign(16));
}

Value TensorCoreDecodeBuilder::loadRowPiece(LocBuilder &b, Value ring,
                                            int64_t kind, Value key, Value col,
                                            Value valid) {
  if (!valid)
    return loadRow(b, ring, kind, key, col);
  // Columns past D read column 0 and yield zeros (the row's padding or the
  // next row may hold anything).
  Value safeCol = arith::SelectOp::create(b, valid, col, c0);
  Value piece = loadRow(b, ring, kind, key, safeCol);
  return arith::SelectOp::create(b, valid, piece, zeroPiece);
}

Value TensorCoreDecodeBuilder::loadSwizzled(LocBuilder &b, Value ring,
                                            int64_t kind, int64_t base,
                                            Value part, int64_t parts,
                                            Value key, Value valid) {
  // The piece of column base + 8 * part; where its columns may reach past
  // the boxes, invalid parts read part 0 and yield zeros.
  if (valid)
    part = arith::SelectOp::create(b, valid, part, c0);
  int64_t chunks = boxColumns / kVec;
  Value box, chunk;
  if (base % boxColumns + kVec * parts <= boxColumns) {
    box = cIndex(b, base / boxColumns);
    chunk =
        arith::AddIOp::create(b, part, cIndex(b, (base % boxColumns) / kVec));
  } else {
    Value first = cIndex(b, base / boxColumns);
    Value more = arith::DivUIOp::create(b, part, cIndex(b, chunks));
    box = arith::AddIOp::create(b, first, more);
    chunk = arith::RemUIOp::create(b, part, cIndex(b, chunks));
  }
  // The swizzle put the chunk at chunk ^ (the row's 128-byte line % chunks):
  // key % 8, (key / 2) % 4 or (key / 4) % 2.
  Value line = key;
  if (chunks < 8)
    line = arith::DivUIOp::create(b, key, cIndex(b, 8 / chunks));
  Value physical = arith::XOrIOp::create(
      b, chunk, arith::RemUIOp::create(b, line, cIndex(b, chunks)));
  Value piece = vector::LoadOp::create(
      b, VectorType::get({kVec}, s.element), stage,
      ValueRange{warp, ring, cIndex(b, kind), box, key,
                 arith::MulIOp::create(b, physical, cIndex(b, kVec))},
      /*nontemporal=*/false, llvm::MaybeAlign(16));
  if (valid)
    piece = arith::SelectOp::create(b, valid, piece, zeroPiece);
  return piece;
}

Value TensorCoreDecodeBuilder::loadK(LocBuilder &b, Value ring, int64_t h,
                                     int64_t c) {
  if (!tensor && !bulk)
    return loadPiece(b, ring, h * kPieces + c);
  Value key = arith::AddIOp::create(b, gid, cIndex(b, 8 * h));
  if (tensor)
    return loadSwizzled(b, ring, 0, 32 * c, tig, 4, key,
                        32 * (c + 1) > boxes * boxColumns ? kColumnValid(b, c)
                                                          : Value());
  Value col = arith::MulIOp::create(b, tig, cIndex(b, kVec));
  col = arith::AddIOp::create(b, col, cIndex(b, 32 * c));
  return loadRowPiece(b, ring, 0, key, col, kColumnValid(b, c));
}

Value TensorCoreDecodeBuilder::loadV(LocBuilder &b, Value ring, int64_t qk,
                                     int64_t c) {
  if (!tensor && !bulk)
    return loadPiece(b, ring, kSlots + qk * vPieces + c);
  Value tig2 = arith::MulIOp::create(b, tig, cIndex(b, 2));
  Value key = arith::AddIOp::create(b, tig2, cIndex(b, kVKeys[qk]));
  if (tensor)
    return loadSwizzled(b, ring, 1, 64 * c, gid, 8, key,
                        64 * (c + 1) > boxes * boxColumns ? vColumnValid(b, c)
                                                          : Value());
  Value col = arith::MulIOp::create(b, gid, cIndex(b, kVec));
  col = arith::AddIOp::create(b, col, cIndex(b, 64 * c));
  return loadRowPiece(b, ring, 1, key, col, vColumnValid(b, c));
}

Value TensorCoreDecodeBuilder::readK(LocBuilder &b, Value ring, int64_t h,
                                     Value col, int64_t width) {
  Value key = arith::AddIOp::create(b, gid, cIndex(b, 8 * h));
  if (bulk)
    return kernel.loadColumns(b, stage, {warp, ring, c0, key}, col, width);
  // cp.async pieces: column col of the key is in the piece of its 32-column
  // chunk that lane gid * 4 + (col % 32) / 8 staged.
  Value chunk = arith::DivUIOp::create(b, col, cIndex(b, 32));
  Value piece = arith::AddIOp::create(b, chunk, cIndex(b, h * kPieces));
  Value inChunk = arith::RemUIOp::create(b, col, cIndex(b, 32));
  Value gid4 = arith::MulIOp::create(b, gid, cIndex(b, 4));
  Value owner = arith::AddIOp::create(
      b, gid4, arith::DivUIOp::create(b, inChunk, cIndex(b, kVec)));
  Value element = arith::RemUIOp::create(b, col, cIndex(b, kVec));
  return kernel.loadColumns(b, stage, {warp, ring, piece, owner}, element,
                            width);
}

SmallVector<Value> TensorCoreDecodeBuilder::keyHooked(LocBuilder &b, Value ring,
                                                      Value t0, int64_t h) {
  SmallVector<Value> raw, hooked;
  for (int64_t c = 0; c < kPieces; ++c)
    raw.push_back(loadK(b, ring, h, c));
  Value key = arith::AddIOp::create(b, gid, cIndex(b, 8 * h));
  Value kpos = kernel.hookKeyPosition(b, f, arith::AddIOp::create(b, t0, key));
  Value tig8 = arith::MulIOp::create(b, tig, cIndex(b, kVec));
  for (int64_t c = 0; c < kPieces; ++c) {
    Value d0 = arith::AddIOp::create(b, tig8, cIndex(b, 32 * c));
    Value valid = kColumnValid(b, c);
    if (valid)
      d0 = arith::SelectOp::create(b, valid, d0, c0);
    // The partners: read from the ring, or the lane's own chunk c + D/64.
    Value rot =
        partnersShared
            ? kernel.loadRotated(b, d0,
                                 [&](LocBuilder &b, Value col, int64_t width) {
                                   return readK(b, ring, h, col, width);
                                 })
            : raw[(c + D / 64) % kPieces];
    Value piece = kernel.applyRowHook(b, /*isKey=*/true, raw[c], rot, d0, kpos,
                                      f.kvHead, ownParams[0]);
    // Pieces past D stay zero.
    if (valid)
      piece = arith::SelectOp::create(b, valid, piece, zeroPiece);
    hooked.push_back(piece);
  }
  return hooked;
}

} // namespace flashir::conversion::kernels
