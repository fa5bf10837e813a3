//===- PrefillBuilder.h - the prefill kernel, part by part ------*- C++ -*-===//
//
// The prefill kernel (see PrefillKernel.cpp for its design) is built by one
// PrefillBuilder: the kernel's shape facts and the IR values its parts share
// are members, and the member functions of each part sit in the file named
// after it:
//   PrefillKernel.cpp  the CTA's frame (request, q tile, head), the lane's
//                      rows, the key tiles' range and copy strategy
//   QueryTile.cpp      Q: A fragments in registers, or the shared Q tile
//   KVCopies.cpp       the K/V ring's copies (raw-address cp.async passes,
//                      memref-indexed cp.async or sm_75 loads) and the key
//                      hook on a landed K tile
//   KeyTile.cpp        one key tile: Q.K^T, logits hook and mask, P.V
//   OnlineSoftmax.cpp  the lazily rescaled softmax (or sigmoid) weights
//   KeyLoop.cpp        the key loop's schedules (one stage, raw ring, staged)
//   Epilogue.cpp       O / l and lse out, through shared memory
// Every part emits its ops in the order the kernel always had: the PTX is a
// function of that order.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHIR_LIB_CONVERSION_ATTNTOGPU_PREFILL_PREFILLBUILDER_H
#define FLASHIR_LIB_CONVERSION_ATTNTOGPU_PREFILL_PREFILLBUILDER_H

#include "../KernelBuilder.h"
#include "../Parts/CausalMask.h"
#include "../Parts/MmaSync.h"
#include "../Parts/PackedBitMask.h"

#include <array>
#include <functional>
#include <optional>
#include <vector>

namespace flashir::conversion::prefill {
using kernels::KernelBuilder;
using kernels::KernelShape;
using kernels::kVec;

inline Value cI32(LocBuilder &b, int64_t v) {
  return arith::ConstantOp::create(b, b.getI32IntegerAttr(v));
}
inline Value cI64(LocBuilder &b, int64_t v) {
  return arith::ConstantOp::create(b, b.getI64IntegerAttr(v));
}
inline Value toI32(LocBuilder &b, Value v) {
  return arith::IndexCastOp::create(b, b.getI32Type(), v);
}
inline Value toI64(LocBuilder &b, Value v) {
  return arith::IndexCastOp::create(b, b.getI64Type(), v);
}

using parts::CausalMask;
using parts::classifyMask;

class PrefillBuilder {
public:
  explicit PrefillBuilder(KernelBuilder &kernel);
  gpu::GPUFuncOp build(OpBuilder &moduleBuilder, StringRef name);

private:
  using Frame = KernelBuilder::Frame;
  /// A lane's A fragment (or an ldmatrix.x4 result): four registers.
  using Fragment = std::array<Value, 4>;
  /// Emits copies (or other work) after step k of a tile's products.
  using StepFn = function_ref<void(LocBuilder &, int64_t)>;
  class RawTileCopies;

  /// The 8-row half (index into `halves`) of a fragment row offset.
  int64_t halfOf(int64_t rowOffset) const {
    return llvm::find(halves, rowOffset) - halves.begin();
  }

  // PrefillKernel.cpp: the frame.
  /// The CTA's request, q tile and head (causal: renumbered), the request's
  /// queries and keys; leaves `b` inside the guard CTAs past their request's
  /// rows skip.
  void bindFrame(LocBuilder &b);
  /// The lane's coordinates and rows: token, head, validity, position and
  /// parameters of each.
  void bindLaneRows(LocBuilder &b);
  /// Token and query head of tile row `r`.
  std::pair<Value, Value> tokenAndHead(LocBuilder &b, Value r);
  /// The staging ring over the workgroup buffer (and zeroed row padding).
  void bindRing(LocBuilder &b);
  /// How K/V tiles are copied (raw copies, page ids per warp, passes per
  /// page): facts of the pools' type, the same for every view.
  void planCopies();
  /// The current view's key range and its tiles.
  void planKeyTiles(LocBuilder &b);
  /// Tile `it`'s first key.
  Value tileStart(LocBuilder &b, Value it);

  // QueryTile.cpp.
  void loadQuery(LocBuilder &b);
  void loadQueryTile(LocBuilder &b);
  void loadQueryFragments(LocBuilder &b);
  /// `width` (8 or 2) columns col.. of row `row`, query head `head` of `q`
  /// after the query hook (qpos, the head's `params`), in the element type.
  Value hookedQueryPiece(LocBuilder &b, Value q, Value row, Value head,
                         Value col, Value qpos, ValueRange params,
                         int64_t width);
  /// Q's A fragments of k-step c for every m block.
  SmallVector<Fragment> qFragments(LocBuilder &b, int64_t c);

  // KVCopies.cpp.
  /// Thread tid's 16-byte pieces p0 + tid (p0 = 0, threads, ...) of
  /// `total` (fn gets the piece and p0).
  void forEachPiece(LocBuilder &b, int64_t total,
                    function_ref<void(LocBuilder &, Value, int64_t)> fn);
  /// 16 bytes from `src` of `pool` to `dst` of `view`: cp.async, or (sm_75)
  /// a load and a store.
  void copy16(LocBuilder &b, Value view, ValueRange dst, Value pool,
              ValueRange src);
  /// The raw copies' loop-invariant per-thread addresses.
  void bindRawCopies(LocBuilder &b);
  /// Tile `it`'s page ids by lane (warpPages), else nothing.
  SmallVector<Value> pagesOf(LocBuilder &b, Value it);
  /// Tile `it`'s page ids where it exists, else `otherwise`.
  SmallVector<Value> pagesIf(LocBuilder &b, Value it,
                             ArrayRef<Value> otherwise);
  /// Copies of tile `it` into slot it % S, all at once.
  void issue(LocBuilder &b, Value it, ArrayRef<Value> pages);
  /// The key hook on the K tile of keys t0.. in ring slot `slot`, in place:
  /// the CTA's threads each take units of w = 8 columns (4 where D/2 is an
  /// odd multiple of 4) together with their partners half a head away, so
  /// no thread reads what another writes. Columns past D are not touched.
  /// The caller brackets it with barriers.
  void hookKeyTile(LocBuilder &b, Value slot, Value t0);

  // KeyTile.cpp.
  Value sharedPtr(LocBuilder &b, Value address);
  /// ldmatrix.x4 at `offset` bytes past the lane's shared pointer `base`.
  Fragment ldmatrix(LocBuilder &b, Value base, int64_t offset, bool transpose);
  /// The lane's ldmatrix rows in a ring slot and in the Q tile.
  void bindFragmentPointers(LocBuilder &b);
  /// The lane's K (kind 0) or V (kind 1) row pointer in slot `slot`.
  Value slotPtr(LocBuilder &b, Value slot, int64_t kind);
  /// For every m block mb: acc0[mb] += a[mb] . B0, acc1[mb] += a[mb] . B1
  /// with the B fragments of two n-tiles from one ldmatrix.x4.
  void productPairs(LocBuilder &b, ArrayRef<Fragment> a, Value base,
                    int64_t offset, bool transpose,
                    function_ref<Value *(int64_t)> acc0,
                    function_ref<Value *(int64_t)> acc1);
  /// One key tile: S = Q.K^T, online softmax, O += P.V; `copiesAt`,
  /// `afterScores` and `pvCopiesAt` place a schedule's work among it.
  SmallVector<Value> tileBody(LocBuilder &b, Value it, ValueRange carried,
                              StepFn copiesAt,
                              function_ref<void(LocBuilder &)> afterScores,
                              StepFn pvCopiesAt);
  /// S = Q.K^T of the tile in K slot `kPtr`: score[mb * sTiles + nt].
  SmallVector<Fragment> scores(LocBuilder &b, Value kPtr, StepFn copiesAt);
  /// The scores in the softmax's base-2 domain (see rawScores), row by row:
  /// x[ri][laneCols nt + e].
  SmallVector<SmallVector<Value>> logits(LocBuilder &b, Value t0,
                                         ArrayRef<Fragment> score);
  /// x with masked keys at -inf, on tiles that need a mask (tile `it`).
  void mask(LocBuilder &b, Value it, Value t0,
            SmallVector<SmallVector<Value>> &x);
  /// Whether the lane's key j (column e of n-tile nt) is visible.
  using KeyVisibility =
      std::function<Value(LocBuilder &, Value j, int64_t nt, int64_t e)>;
  /// x with keys that do not exist or that the visibility of their row
  /// (null: every existing key) hides at -inf, flattened row by row.
  SmallVector<Value> maskedScores(
      LocBuilder &b, Value t0, ArrayRef<SmallVector<Value>> x,
      function_ref<KeyVisibility(LocBuilder &, int64_t)> rowVisibility);
  /// Row ri's visibility by the mask hook (null without one).
  KeyVisibility hookVisibility(LocBuilder &b, int64_t ri);
  /// `cond` and, where a split chunk's tiles start before it
  /// (alignedChunks), `key` pred kBegin: keys before the chunk are masked.
  Value inChunk(LocBuilder &b, Value cond, arith::CmpIPredicate pred,
                Value key);
  /// Whether `key` is one of the CTA's: < kEnd and in the chunk.
  Value keyExists(LocBuilder &b, Value key);
  /// The key of column e of n-tile nt of the lane's rows.
  Value keyOf(LocBuilder &b, Value t0, int64_t nt, int64_t e);
  /// O += P.V of the tile in V slot `vPtr`.
  void addProducts(LocBuilder &b, Value vPtr, ArrayRef<Fragment> pFrag,
                   MutableArrayRef<Fragment> o, StepFn pvCopiesAt);

  // OnlineSoftmax.cpp.
  /// The state (m, l, O) the tile's weights add to: lazily rescaled, or
  /// (sigmoid) as carried.
  SmallVector<Value> rescaledState(LocBuilder &b,
                                   ArrayRef<SmallVector<Value>> x,
                                   ValueRange carried);
  /// The lazily rescaled state (m, l, O) of the lane's rows before a tile
  /// of base-2 scores x[ri].
  SmallVector<Value> lazyRescale(LocBuilder &b, ArrayRef<SmallVector<Value>> x,
                                 ValueRange carried);
  /// The tile's weights (rows' maxima m) as P.V's A fragments; adds them
  /// to the rows' l.
  SmallVector<Fragment> weights(LocBuilder &b, ArrayRef<SmallVector<Value>> x,
                                ArrayRef<Value> m, MutableArrayRef<Value> l);

  // MaskTiles.cpp: a packed-bit mask.
  /// The buffer's windows and the lane rows' bit index of key 0.
  void bindPackedMask(LocBuilder &b);
  /// Classifies the key tiles into shared bit sets and restricts the loop
  /// to the visible ones.
  void classifyKeyTiles(LocBuilder &b);
  /// Tile row r's bit of key 0 and whether it is one of the request's.
  struct MaskRow {
    Value bit, valid;
  };
  MaskRow maskRow(LocBuilder &b, Value r);
  /// Adds the warp's rows' classes of the first `scanned` tiles to the sets.
  void classifyWarpTiles(LocBuilder &b, Value scanned);
  /// The loop's first tile and count from the classes.
  void restrictKeyTiles(LocBuilder &b);
  /// Whether loop tile `it` has every key visible (`allVisible`) or some.
  Value tileClass(LocBuilder &b, Value it, bool allVisible);
  /// Keys of 64-key window `window` of the tile at t0 that exist (< kEnd,
  /// in the chunk) as (low, high) words.
  std::pair<Value, Value> keysMask(LocBuilder &b, Value t0, int64_t window);
  /// Each lane row's visibility by the packed-bit mask: its windows of the
  /// lane's keys from laneKey (t0 + laneCol).
  SmallVector<KeyVisibility> packedVisibility(LocBuilder &b, Value laneKey);
  /// tileBody, or with a packed-bit mask on a tile with no visible key,
  /// `skipped` (the schedule's copies and waits) and the state as carried.
  SmallVector<Value>
  visibleTileBody(LocBuilder &b, Value it, ValueRange carried,
                  function_ref<SmallVector<Value>(LocBuilder &)> body,
                  function_ref<void(LocBuilder &)> skipped);

  // KeyLoop.cpp.
  /// The key loop: the final (m, l, O) of the lane's rows.
  ValueRange keyLoop(LocBuilder &b);
  ValueRange oneStageLoop(LocBuilder &b);
  ValueRange rawRingLoop(LocBuilder &b);
  ValueRange stagedLoop(LocBuilder &b);

  // Epilogue.cpp.
  /// Finishes each row of the final state `done` and writes O and lse.
  void writeOutput(LocBuilder &b, ValueRange done);
  /// Row ri's O / l pairs (staged into `stage`, or stored) and lse.
  void finishRow(LocBuilder &b, ValueRange done, int64_t ri, Value stage);
  /// Round p0 of the warp's rows from the staging tile to global memory.
  void readBack(LocBuilder &b, Value stage, int64_t p0);

  KernelBuilder &k;
  const KernelShape &s;
  VariantHooks &hooks;
  MLIRContext *ctx;
  Type f32;
  int64_t D, g, W, S, KV, P, elementBytes;
  // The MMA atom (m16n8k16; m16n8k8 pairs on sm_75). The lane's
  // accumulators and A fragments share its base (laneRow, laneCol) = (gid,
  // 2 tig): rows laneRow + halves[h] (8-row halves h), columns laneCol +
  // 8 n (n-tiles) + 0..laneCols-1. The accumulators of nPerK n-tiles are
  // the A fragment of one k-step.
  parts::MmaSync mma;
  parts::FragmentLayout aLayout, cLayout;
  std::vector<int64_t> halves;
  int64_t H, laneCols, nPerK;
  // The products run over Dp = D rounded up to 16 (kSteps k-steps of 16,
  // Dp / 8 n-tiles of O); staged rows hold Dp columns, zeros past D, plus
  // the row pad. Global rows hold D columns: chunksPerRow 16-byte pieces.
  int64_t Dp, kSteps, rowStride, chunksPerRow;
  // Fused head groups: a tile of `tokens` tokens x g heads.
  bool fused;
  int64_t tokens;
  // The lane's rows: halves of each of the warp's M m16 blocks (row index
  // ri = H * block + half).
  int64_t rowsPerWarp, M, R;
  // Q in shared memory: always with two m blocks per warp (registers are
  // short next to their O), on request (tiles' q_shared) with one.
  bool qShared;
  int64_t threads, ringBytes, oTiles, sTiles;
  CausalMask causal;
  // Scores enter the softmax in the base-2 domain as val * factor: without
  // a logits hook val is the raw Q.K^T product (factor = scale * log2(e)),
  // so max and exp2(val * factor - m) cost one max and one fma per score;
  // with a hook val = hook(raw * scale) * log2(e).
  bool rawScores;
  float factor;
  // Tiles that need no mask: every key is < kEnd and, where the mask is
  // exactly causal, <= the CTA's first query position.
  bool hasMask, causalOnly;
  // Head dim 256: the next tile's copies spread over Q.K^T and P.V alike
  // (the load/store queue throttles issue there).
  bool spreadAll;
  // Copies: threads that copy (whole rows of pieces), rows per pass, pieces
  // per tile and passes per tile; the strategy (planKeyTiles).
  int64_t copyThreads, rowsPerPass, pieces, copyPasses;
  SmallVector<int64_t> poolStrides;
  bool rawCopies = false, warpPages = false, pagedPasses = false,
       alignedChunks = false;

  gpu::GPUFuncOp func;
  Frame f;
  Value c0, c1, qTile, head, rowBase;
  Value tid, warp, lane, laneRow, laneCol, tig, warpRow;
  SmallVector<Value> rowOf, headOf, rowValid, qpos;
  // The rows' positions as query, logits and mask hooks see them
  // (KernelBuilder::hookPosition: rows past the request clamped where hooks
  // read buffers; else qpos).
  SmallVector<Value> hookQpos;
  SmallVector<SmallVector<Value>> paramsOf;
  VectorType pairType;
  Value zeroF;
  gpu::AddressSpaceAttr workgroup;
  Value ring, ringBase;
  Type nvgpuToken;
  SmallVector<Fragment> qFrag;
  Value qTileBase, qToken, qTilePtr;
  Value kLoopEnd, kTileBegin, numTiles, lastKey;
  Value kThreadBase, vThreadBase, copyDst, lane32;
  Value kLane, vLane;
  int64_t tileBytes;
  Value firstQpos;
  SmallVector<Value> inits, noPages;
  // A packed-bit mask: its windows, the lane rows' bit of key 0, the tile
  // classes (workgroup memory) and the loop's first tile among them.
  std::optional<parts::PackedBitMask> packedMask;
  std::optional<parts::BitWindows> bitWindows;
  SmallVector<Value> rowBits;
  Value tileClasses, classBase;
};

/// Tile `it`'s raw cp.async copies (sm_80+, pools with contiguous pages) as
/// passes (pass p: the K and V pieces p * copyThreads + tid), emitted by
/// pass() wherever the caller places them. With `valid` false (a tile past
/// the last) they read nothing and write 16 zero bytes each into that tile's
/// slot, whose last tile every warp finished before the iteration's
/// barrier: branch-free, so they can sit between another tile's MMAs.
class PrefillBuilder::RawTileCopies {
public:
  RawTileCopies(PrefillBuilder &pb, LocBuilder &b, Value it,
                ArrayRef<Value> pages, Value valid, bool withK = true,
                bool withV = true);
  void pass(LocBuilder &b, int64_t pass);
  void all(LocBuilder &b) {
    for (int64_t p = 0; p < pb.copyPasses; ++p)
      pass(b, p);
  }

private:
  /// A pass's K and V sources (base + offset) and its src-size.
  struct Sources {
    Value kBase, vBase, offset, bytes;
  };
  Sources pagedSources(LocBuilder &b, int64_t keyOffset);
  Sources keySources(LocBuilder &b, int64_t keyOffset);

  PrefillBuilder &pb;
  Value valid;
  bool withK, withV;
  Value dst, firstKey, last32, pageBegin32, firstPage, size, page0;
  /// pagedPasses: each page's source base for the thread, computed by the
  /// page's first pass.
  SmallVector<Value> pageBases;
};

} // namespace flashir::conversion::prefill

#endif // FLASHIR_LIB_CONVERSION_ATTNTOGPU_PREFILL_PREFILLBUILDER_H
