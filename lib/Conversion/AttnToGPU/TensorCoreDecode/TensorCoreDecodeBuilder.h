//===- TensorCoreDecodeBuilder.h - the tensor-core decode -------*- C++ -*-===//
//
// The tensor-core decode kernel (see TensorCoreKernel.cpp for its design) is
// built by one TensorCoreDecodeBuilder: the kernel's shape facts and the IR
// values its parts share are members, and the member functions of each part
// sit in the file named after it:
//   TensorCoreKernel.cpp  the CTA's frame, the lane's row halves, each
//                         warp's key tiles, the loop over query rows
//   KVCopies.cpp          the K/V staging ring, page ids, 16-byte cp.async
//                         pieces and the key loop's issue / commit / wait
//   BulkCopies.cpp        sm_90a: mbarriers, bulk row copies and tensor
//                         copies of whole tiles
//   QueryFragments.cpp    Q's A fragments (query hook), mma operands
//   KVFragments.cpp       K's and V's B pieces read back from the ring (key
//                         hook)
//   KeyTile.cpp           one key tile: S = Q.K^T, logits and mask, O += P.V
//   OnlineSoftmax.cpp     the rows' maxima, rescale and weights (or sigmoid)
//   Epilogue.cpp          the warps' states into shared memory, then out /
//                         lse or the partial states
// Every part emits its ops in the order the kernel always had: the PTX is a
// function of that order.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHIR_LIB_CONVERSION_ATTNTOGPU_TENSORCOREDECODE_TENSORCOREDECODEBUILDER_H
#define FLASHIR_LIB_CONVERSION_ATTNTOGPU_TENSORCOREDECODE_TENSORCOREDECODEBUILDER_H

#include "../KernelBuilder.h"
#include "../Parts/MmaSync.h"

#include <array>

namespace flashir::conversion::kernels {

class TensorCoreDecodeBuilder {
public:
  explicit TensorCoreDecodeBuilder(KernelBuilder &kernel);
  gpu::GPUFuncOp build(OpBuilder &moduleBuilder, StringRef name);

private:
  using Frame = KernelBuilder::Frame;
  /// Two values by n-tile half h or element e: score[r][h][e], a row half's
  /// P operands by h.
  using Pair = std::array<Value, 2>;
  /// A row half's S accumulators of a tile: [h][e] for keys 8h + 2tig + e.
  using RowScores = std::array<Pair, 2>;
  /// A row half's base-2 logits of a tile (masked keys -inf), [h][e], and
  /// their maximum (softmax only).
  struct RowLogits {
    RowScores x;
    Value max;
  };
  /// The V keys of a lane, 2tig + kVKeys[qk] (the B fragment rows of P.V).
  static constexpr int64_t kVKeys[] = {0, 1, 8, 9};

  // TensorCoreKernel.cpp: the frame, the lanes and the key tiles.
  /// The lane's coordinates and its row halves' heads and parameters.
  void bindLanes(LocBuilder &b);
  /// Whether the lane's K piece of 32-column chunk c (columns 32c + 8tig)
  /// lies before D; null where the chunk is whole.
  Value kColumnValid(LocBuilder &b, int64_t c);
  /// The same for the V piece of 64-column chunk c (64c + 8gid).
  Value vColumnValid(LocBuilder &b, int64_t c);
  /// The warp's tiles of the CTA's keys: kStart and numIter.
  void planKeyTiles(LocBuilder &b);
  /// The first key of iteration `it`'s tile.
  Value tileStart(LocBuilder &b, Value it);
  /// The carried state's size and the index of row half r's accumulator k
  /// of n-tile t in it (after m and l of each row half).
  int64_t stateSize() const { return 2 * R + R * 2 * oTiles; }
  int64_t oIndex(int64_t r, int64_t t, int64_t k) const {
    return 2 * R + r * 2 * oTiles + 2 * t + k;
  }
  /// Query row i of the request: its key loop and output.
  void buildQueryRow(LocBuilder &b, Value i);

  // KVCopies.cpp: the ring and the copy schedule.
  /// The staging ring's view of the workgroup buffer (`stage`).
  void bindRing(LocBuilder &b);
  /// Key j clamped to the last key: keys past the end read valid memory and
  /// are masked out (only used where kEnd > kBegin).
  Value clampKey(LocBuilder &b, Value j);
  /// The page of key (lane % 16) of iteration `it`'s tile; other lanes'
  /// pages come by shuffles.
  Value lanePage(LocBuilder &b, Value it);
  /// Bulk copies: tile sequence numbers run on over the query rows (the
  /// barriers' phases do).
  Value seqOf(LocBuilder &b, Value it);
  /// The key loop's copies of iteration `it`'s tile (pages: `pageId`), their
  /// commit (a cp.async group token, or null) and the wait for them.
  void issueTile(LocBuilder &b, Value it, Value pageId);
  Value commitTile(LocBuilder &b);
  void waitTile(LocBuilder &b, Value it, Value token);
  /// The lane's 16-byte cp.async pieces of iteration `it`'s tile.
  void issuePieces(LocBuilder &b, Value it, Value pageId);

  // BulkCopies.cpp: sm_90a copies completing on mbarriers.
  /// The shared and pool base addresses, and the warps' initialised
  /// barriers.
  void bindBarriers(LocBuilder &b);
  /// The mbarrier of the warp's ring slot `slot`.
  Value barrierOf(LocBuilder &b, Value slot);
  /// Ring slot seq % S for the copies of tile sequence number `seq`, once
  /// the warp is done reading its previous tile.
  Value claimSlot(LocBuilder &b, Value seq);
  /// Lane 0's arrival on `barrier` with the bytes of one K and V tile.
  void expectTile(LocBuilder &b, Value barrier);
  /// Bulk row copies of tile `it` (sequence number `seq`).
  void issueBulkRows(LocBuilder &b, Value it, Value seq, Value pageId);
  /// The pool row (of D elements) of key j in page `page`.
  Value poolRow(LocBuilder &b, Value page, Value j);
  /// The K and V tensor maps' generic addresses.
  void bindTensorMaps(LocBuilder &b);
  /// Tensor copies of tile `it` (sequence number `seq`; all in `pageId`).
  void issueTensorBoxes(LocBuilder &b, Value it, Value seq, Value pageId);
  /// Lane 0's tensor copy of box `box` of K (kind 0) or V (kind 1) at
  /// tensor-map coordinates (column, x, y) into ring slot `slot`.
  void copyBox(LocBuilder &b, Value slot, int64_t kind, int64_t box, Value x,
               Value y, Value barrier);
  /// Waits for tile sequence number `seq`.
  void waitBulk(LocBuilder &b, Value seq);
  /// Tensor copies: zeroes the V rows of the tile's keys outside
  /// [kBegin, kEnd).
  void zeroOutsideRows(LocBuilder &b, Value ring, Value t0);

  // QueryFragments.cpp.
  /// Q's pieces of query row `row` for every row half (qPiece).
  void loadQueryPieces(LocBuilder &b, Value row);
  /// A pair of elements as an mma operand register.
  Value operand(LocBuilder &b, Value pair) { return mma.operand(b, pair); }
  /// Elements e, e + 1 of a 16-byte piece as an operand register.
  Value pairAt(LocBuilder &b, Value piece, int64_t e);

  // KVFragments.cpp: the lane's K and V pieces in ring slot `ring`.
  /// Piece `piece` of the lane's cp.async pieces.
  Value loadPiece(LocBuilder &b, Value ring, int64_t piece);
  /// Columns col.. +8 of row `key` of K (kind 0) or V (kind 1), row copies.
  Value loadRow(LocBuilder &b, Value ring, int64_t kind, Value key, Value col);
  /// The same, zeros where `valid` (if non-null) is false.
  Value loadRowPiece(LocBuilder &b, Value ring, int64_t kind, Value key,
                     Value col, Value valid);
  /// Tensor copies: the 16-byte piece at column base + 8 * part (part <
  /// parts, by lane) of row `key`; zeros where `valid` (if non-null) is
  /// false.
  Value loadSwizzled(LocBuilder &b, Value ring, int64_t kind, int64_t base,
                     Value part, int64_t parts, Value key, Value valid);
  /// The lane's K piece of n-tile h, columns 32c + 8tig.
  Value loadK(LocBuilder &b, Value ring, int64_t h, int64_t c);
  /// The lane's V piece of key 2tig + kVKeys[qk], columns 64c + 8gid.
  Value loadV(LocBuilder &b, Value ring, int64_t qk, int64_t c);
  /// `width` columns col.. of the lane's K row of n-tile h (the key hook's
  /// partners).
  Value readK(LocBuilder &b, Value ring, int64_t h, Value col, int64_t width);
  /// The lane's K pieces of n-tile h (keys t0 + gid + 8h) after the key hook.
  SmallVector<Value> keyHooked(LocBuilder &b, Value ring, Value t0, int64_t h);

  // KeyTile.cpp.
  /// One key tile: S = Q.K^T, online softmax, O = O * corr + P.V.
  SmallVector<Value> keyTile(LocBuilder &b, Value it, ValueRange carried);
  /// One m16n8k16 product on rows gid (a0, a2; acc[0], acc[1]) and, with a1
  /// non-null, gid + 8 (a1, a3; acc[2], acc[3]).
  void mmaRows(LocBuilder &b, Value a0, Value a1, Value a2, Value a3, Value b0,
               Value b1, MutableArrayRef<Value> acc);
  /// S = Q.K^T of the tile in `ring` for every row half.
  SmallVector<RowScores> scores(LocBuilder &b, Value ring, Value t0);
  /// Row half r's scores in the base-2 domain after the logits hook, with
  /// the keys outside the range or the mask at -inf.
  RowLogits maskedLogits(LocBuilder &b, Value t0, Value tig2, int64_t r,
                         const RowScores &score);
  /// next's accumulators: carried ones times corr, plus P.V.
  void addValueProducts(LocBuilder &b, Value ring, ValueRange carried,
                        ArrayRef<Value> corr, ArrayRef<Pair> pOperand,
                        MutableArrayRef<Value> next);

  // OnlineSoftmax.cpp.
  /// Row half r's new m and l (in next), rescale factor of its accumulators
  /// (corr) and P.V A operands for the tile's logits.
  void updateRowHalf(LocBuilder &b, int64_t r, const RowLogits &logits,
                     ValueRange carried, MutableArrayRef<Value> next,
                     Value &corr, Pair &pOperand);

  // Epilogue.cpp.
  /// Stores the warp's final state `done` into the states view and writes
  /// query row i's outputs (KernelBuilder::writeRows).
  void writeOutput(LocBuilder &b, ValueRange done, Value i);
  /// Row half r's accumulators, m and l (natural domain) in the states view.
  void storeRowState(LocBuilder &b, ValueRange done, int64_t r, Value m,
                     Value l);

  KernelBuilder &kernel;
  const KernelShape &s;
  VariantHooks &hooks;
  MLIRContext *ctx;
  Type f32, i32;
  int64_t D, g, W, S;
  TensorCoreDecodeLayout layout;
  // 16-byte pieces per lane and tile: K has one per 32-column chunk and
  // n-tile (two n-tiles), V one per 64-column chunk and key (four keys). A
  // head dim that is not a multiple of 64 leaves the last chunks partial:
  // their missing pieces are zeros (zero-filled copies, or selects), so they
  // add nothing to Q.K^T and P.V, and the columns past D are not stored.
  int64_t kPieces, vPieces, kSlots;
  // The g query heads are the rows of R = ceil(g / 8) 8-row halves of
  // ceil(R / 2) m16 tiles; the lane holds row gid of each half.
  int64_t R, M;
  bool bulk, tensor;
  int64_t elementBytes;
  // Row bulk copies: rows padded to rowStride elements; tensor copies: boxes
  // of boxColumns columns per row.
  int64_t rowStride, boxes, boxColumns;
  // Bulk copies: the barriers' byte offset in the buffer and the bytes a
  // tile's copies complete.
  int64_t barrierOffset, tileBytes;
  // Accumulator n-tiles: 8 per 64-column chunk (columns 64c + 8n + e).
  int64_t oTiles;
  // A key hook reads each K element's partner half a head away. Where D is
  // a multiple of 64 the partner of chunk c is chunk c + D/64 of the same
  // lane; otherwise it is read from the tile in shared memory (with 16-byte
  // cp.async, from the piece another lane staged: keysShared).
  bool partnersShared, keysShared;
  // The m16n8k16 atom of the element type.
  parts::MmaSync mma;
  VectorType pairType;

  gpu::GPUFuncOp func;
  Frame f;
  Value c0, c1;
  gpu::AddressSpaceAttr workgroup;
  // The buffer holds the staging ring (`stage`; tensor copies start it
  // ringShift bytes in) while the warps walk the keys, then the warps'
  // states for the final merge (`smem`; barriers separate the uses).
  Value smem, stage, ringShift;
  Value tid, warp, lane, gid, tig;
  // Row half r holds head 8r + gid of the group; rows past g take a real
  // head's parameters and query (never written).
  SmallVector<Value> rowValid, ownHead;
  SmallVector<SmallVector<Value>> ownParams;
  Value fullMask, zeroPiece;
  // The warp's tiles start at kStart (tensor copies: kBegin rounded down to
  // 16); numIter of them.
  Value kStart, numIter;
  // The width of the page id shuffles.
  Value shuffleWidth;
  // Bulk copies: the buffer's and the pools' addresses (i64), lane == 0.
  Value sharedBase, kBase, vBase, laneIsZero;
  // Tensor copies: the K and V tensor maps.
  Value kMap, vMap;
  Value zeroOperand, zeroF;
  Type nvgpuToken;
  // The query row being built: its position, the first tile sequence
  // number (bulk copies) and Q's pieces, qPiece[r][c] for row half r and
  // 32-column chunk c.
  Value qpos, seqBase;
  SmallVector<SmallVector<Value>> qPiece;
};

} // namespace flashir::conversion::kernels

#endif // FLASHIR_LIB_CONVERSION_ATTNTOGPU_TENSORCOREDECODE_TENSORCOREDECODEBUILDER_H
