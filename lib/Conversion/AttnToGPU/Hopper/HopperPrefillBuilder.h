//===- HopperPrefillBuilder.h - the sm_90a wgmma prefill kernel -*- C++ -*-===//
//
// The warp-specialized prefill kernel of the WgmmaPrefill family (see
// HopperPrefillKernel.cpp for its design) is built by one
// HopperPrefillBuilder; the member functions of each part sit in the file
// named after it:
//   HopperPrefillKernel.cpp  the CTA's frame, the shared-memory layout, the
//                            ring's barriers and the warpgroup roles
//   Producer.cpp             the producer warpgroup: K/V tiles by tensor
//                            copies into the ring
//   Gather.cpp               or by its cp.async gather (small pages)
//   Consumer.cpp             a consumer warpgroup: its Q rows, the key loop
//                            (Q.K^T and P.V by wgmma), the online softmax
//                            (or sigmoid weights)
//   RowHooks.cpp             the query and key hooks on Q rows and K tiles
//   Epilogue.cpp             O / l and lse out
// docs/HopperPrefillPlan.md has the plan and its milestones.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHIR_LIB_CONVERSION_ATTNTOGPU_HOPPER_HOPPERPREFILLBUILDER_H
#define FLASHIR_LIB_CONVERSION_ATTNTOGPU_HOPPER_HOPPERPREFILLBUILDER_H

#include "../KernelBuilder.h"
#include "../Parts/CausalMask.h"
#include "../Parts/MBarrierRing.h"
#include "../Parts/Wgmma.h"

namespace flashir::conversion::hopper {
using kernels::KernelBuilder;
using kernels::KernelShape;

/// Consumer warpgroups of 64 query rows each (KernelShape::consumers, 2 or
/// 4) plus one producer warpgroup.
constexpr int64_t kRowsPerConsumer = 64;

/// What the producer warpgroup computes besides issuing copies, which sets
/// its registers: nothing (tensor copies of one frame), addresses (the
/// persistent kernel's and each q tile's frame, below head dim 256 the
/// split one's chunk bounds, a gather's rows: one at a time, or at head
/// dim 256 several, its consumers keeping 232), or below head dim 256
/// several gathered rows' addresses in flight (gatherPasses).
enum class ProducerLoad { Copies, Addresses, Gather };

/// Registers per thread of the producer and of each consumer. setmaxnreg
/// moves registers within the CTA's launch allocation (ptxas gives every
/// thread 65536 / threads, rounded down to 8): 3 x 168 >= 24 + 2 x 240 for
/// two consumers, 5 x 96 >= 24 + 4 x 112 for four (a consumer asking for
/// more waits forever). A producer with more to compute takes more (40 /
/// 232 for addresses, 64 / 216 for the gather of power-of-two pages below
/// head dim 256); only two consumers leave it room.
struct RegisterSplit {
  int64_t producer, consumer;
};
RegisterSplit registerSplit(int64_t consumers, ProducerLoad load);

/// The shared memory the kernel's layout takes from its dynamic buffer
/// (the alignment slack of the 1024-byte swizzle bases included).
int64_t hopperPrefillSharedBytes(int64_t qRows, int64_t kvTile, int64_t headDim,
                                 int64_t stages, int64_t elementBytes);

/// Whether the kernel fills its ring by the producer's cp.async gather
/// (Gather.cpp) rather than tensor-copy boxes: pages the boxes cannot tile
/// (not a multiple of 8 keys, or neither holding nor dividing a K/V tile),
/// or no tensor maps (`tensorMaps` false: copy=cp-async or bulk).
bool gathersKeys(const KernelShape &s, bool tensorMaps);

/// The passes of 32 lanes' copies one gather loop iteration issues (at
/// most; each independent of the others) over pages of `pageSize` keys:
/// more than one takes the producer's ProducerLoad::Gather registers below
/// head dim 256.
int64_t gatherPasses(int64_t pageSize);

/// bar.sync on named barrier `id` (i32) for `threads` threads: 0 is the
/// CTA's; consumer warpgroup wg's own is wg; the consumers' together
/// consumers + 1.
void namedBarrier(LocBuilder &b, Value id, int64_t threads);
/// Byte offset of 16-byte chunk `chunk` of row `row` in `tile` (128-byte
/// swizzle; SwizzledTile's formula, in IR).
Value swizzledChunk(LocBuilder &b, const parts::SwizzledTile &tile, Value row,
                    Value chunk);

class HopperPrefillBuilder {
public:
  explicit HopperPrefillBuilder(KernelBuilder &kernel);
  gpu::GPUFuncOp build(OpBuilder &moduleBuilder, StringRef name);

private:
  using Frame = KernelBuilder::Frame;
  /// A K or V tile of the ring.
  enum class Operand { K = 0, V = 1 };

  // HopperPrefillKernel.cpp.
  /// The CTA's request (split-KV: chunk), q tile and head (one per CTA);
  /// leaves `b` inside the guard CTAs past their request's rows skip.
  void bindFrame(LocBuilder &b);
  /// Persistent CTAs: the CTA's index among the workers (one per SM);
  /// leaves `b` inside the guard that the other CTAs skip.
  void bindWorkers(LocBuilder &b);
  /// The thread's roles from thread index `thread`: its warpgroup, warp
  /// and lane.
  void bindThread(LocBuilder &b, Value thread);
  /// Runs `body` on the CTA's q tile; persistent, on each of the worker's
  /// q tiles (grid positions worker, worker + workers, ...; causal: longest
  /// first) that hold rows: the tile's request (split-KV: chunk), q tile,
  /// head and key tiles bound, the ring's uses so far in ringBase.
  void forEachTile(LocBuilder &b, function_ref<void(LocBuilder &)> body);
  /// The tiles of the CTA's keys (causal: up to its last row's position).
  void planKeyTiles(LocBuilder &b);
  /// The first key of tile `it`.
  Value tileStart(LocBuilder &b, Value it);
  /// The key position of the request's row `token` (bottom-right aligned:
  /// keysTotal - numQ + token); the position one past is the number of
  /// keys the row sees, exactly causal.
  Value keyPosition(LocBuilder &b, Value token);
  /// The end of the keys a row at key position `position` sees, exactly
  /// causal: min(kEnd, position + 1).
  Value causalEnd(LocBuilder &b, Value position);
  /// The key tiles from kTileBegin to key `end`: those wholly before it,
  /// or (`partial`) also the one it ends inside.
  Value tilesUpTo(LocBuilder &b, Value end, bool partial);
  /// The token and query head of tile row `row`: with fused head groups
  /// rows are (token, head of the KV head's group) pairs.
  std::pair<Value, Value> tokenAndHead(LocBuilder &b, Value row);
  /// The 1024-aligned base of the layout and the ring's barriers, which
  /// thread 0 initialises before every thread passes a CTA barrier.
  void bindSharedMemory(LocBuilder &b);
  /// Shared-window address of byte `offset` of the layout.
  Value sharedAddress(LocBuilder &b, Value offset);
  /// The full (`full`) or empty barrier of `operand` in ring slot `slot`.
  Value barrier(LocBuilder &b, Operand operand, bool full, Value slot);
  /// Byte offset of `operand`'s tile in ring slot `slot`.
  Value tileOffset(LocBuilder &b, Operand operand, Value slot);
  /// The slot and phase parity of the ring's use by the q tile's key tile
  /// `tile` (use ringBase + tile; consumers' waits: the producer's flips the
  /// parity).
  std::pair<Value, Value> slotAndParity(LocBuilder &b, Value tile);

  // Producer.cpp.
  /// The producer's walk over the CTA's tiles: `ahead(b, it)` (an i32 the
  /// filling needs, such as page ids) loads a tile ahead; per tile, K then
  /// V, once their slot is empty, `fill(b, operand, it, slot, value)`.
  using AheadFn = function_ref<Value(LocBuilder &, Value)>;
  using FillFn = function_ref<void(LocBuilder &, Operand, Value, Value, Value)>;
  void walkRing(LocBuilder &b, AheadFn ahead, FillFn fill);
  /// The producer's first warp copies every K and V tile of the CTA's keys
  /// into the ring, one box per lane.
  void produce(LocBuilder &b);
  /// The lane's box row coordinate in tile `it` (i32): its pool row (NHD,
  /// ragged) or page (HND), loaded from the page table.
  Value boxRow(LocBuilder &b, Value it);
  /// The lane's tensor copy of `operand`'s tile `it` into ring slot `slot`
  /// at box row `row` (lanes past the tile's boxes copy nothing).
  void copyBox(LocBuilder &b, Operand operand, Value it, Value slot, Value row);

  // Gather.cpp.
  /// Every producer thread gathers each K and V tile by cp.async into the
  /// ring (the alternative to produce()'s boxes).
  void gatherTiles(LocBuilder &b);
  /// The page id (i32) of the lane's row of its warp's rows of tile `it`.
  Value gatherPage(LocBuilder &b, Value it);
  /// The thread's cp.async copies of `operand`'s tile `it` into ring slot
  /// `slot`; `page` holds gatherPage(it).
  void gatherTile(LocBuilder &b, Operand operand, Value it, Value slot,
                  Value page);
  /// One tile's gather operands, shared by its rows' copies: the pool and
  /// the ring slot's byte offset, the warp's page ids (gatherPage), its
  /// first row, the tile's first key, and the lane's 16-byte chunk of a row
  /// (its index and first column).
  struct GatherFrame {
    Value pool, tile, page, warpRow, t0, chunk, column;
  };
  /// The lane's copy of row `rowInWarp` of its warp's rows.
  void gatherRow(LocBuilder &b, const GatherFrame &g, Value rowInWarp);

  // Consumer.cpp.
  /// Consumer warpgroup `wg` (1..): its rows' attention over every tile.
  void consume(LocBuilder &b);
  /// The warpgroup's maskFrom (warpgroupMasks: exactly causal).
  void planMaskedTiles(LocBuilder &b);
  /// Whether tile `it` (its first key t0) masks: a warpgroup-uniform
  /// branch in maskedScores.
  Value masksTile(LocBuilder &b, Value it, Value t0);
  /// The thread's first row of the CTA's tile (its second is 8 below).
  Value threadRow(LocBuilder &b);
  /// How the warpgroup's threads move its rows as 16-byte pieces (the Q
  /// rows in, O out): thread u takes chunk u % (D / 8) of tile rows
  /// firstRow + rowsPerPass * i.
  struct RowPieces {
    int64_t rowsPerPass;
    Value chunk, firstRow;
  };
  RowPieces rowPieces(LocBuilder &b);
  /// The warpgroup's Q rows, swizzled into the Q tile for wgmma.
  void loadQueryRows(LocBuilder &b);
  /// The online-softmax state of the thread's two rows (m, l) and O.
  struct RowState {
    Value m[2], l[2], o;
  };
  /// The key loop, software-pipelined: tile j's Q.K^T is in flight with
  /// tile j-1's P.V while the softmax waits only for the former.
  RowState keyLoop(LocBuilder &b, RowState init);
  /// Waits until `operand`'s tile `it` has landed in its slot.
  void waitTile(LocBuilder &b, Operand operand, Value it);
  /// Issues S = Q.K^T of tile `it` (one commit group).
  Value issueScores(LocBuilder &b, Value it);
  /// Issues O += P.V of tile `it` with P's registers `weights` (one commit
  /// group).
  Value issueOutput(LocBuilder &b, Value it, Value o, ValueRange weights);
  /// One elected thread of the warpgroup releases `operand`'s slot of tile
  /// `it` to the producer.
  void release(LocBuilder &b, Operand operand, Value it);
  /// Tile `it`'s scores in the softmax's base-2 domain: keys the CTA does
  /// not attend (before a split chunk's first, past its end; past a causal
  /// row's position) at -inf.
  SmallVector<Value> maskedScores(LocBuilder &b, Value it, Value scores);
  /// The online softmax of scores `x` on `state`: the new m and l (O not
  /// yet rescaled: `alpha` is each row's factor) and P.V's A registers.
  struct Weights {
    RowState state;
    Value alpha[2];
    /// With lazy maxima, whether a row of the warp moved its maximum (a
    /// warp vote); null otherwise.
    Value rescale;
    SmallVector<Value> registers;
  };
  Weights softmax(LocBuilder &b, ArrayRef<Value> x, const RowState &state);
  /// Row h's maximum of the tile's scores `x`, times `factor`.
  Value rowMax(LocBuilder &b, ArrayRef<Value> x, int64_t h);
  /// O * alpha, row by row: always with eager maxima, where the warp moved
  /// one with lazy maxima, never for sigmoid (no alpha).
  Value rescale(LocBuilder &b, Value o, const Weights &w);
  /// Zeroes the V rows of keys past the end in tile `it` (every consumer
  /// warpgroup, then a consumer barrier).
  void zeroTailRows(LocBuilder &b, Value it);

  // RowHooks.cpp.
  /// The 8 columns `column`.. of Q row `q` (the request's token `token`,
  /// query head `qHead`) after the variant's query hook.
  Value hookedQueryPiece(LocBuilder &b, Value q, Value token, Value qHead,
                         Value column);
  /// With a key hook, the consumers transform K tile `it` in place in its
  /// slot (landed, not yet read) and pass a consumer barrier; without one,
  /// nothing.
  void hookKeyTile(LocBuilder &b, Value it);

  // Epilogue.cpp.
  /// O / l and lse of the thread's rows from the final `state` (final rows
  /// as finalOutput makes them: sigmoid's unnormalised O, the output hook).
  void writeOutput(LocBuilder &b, const RowState &state);

  KernelBuilder &k;
  const KernelShape &s;
  MLIRContext *ctx;
  Type f32;
  int64_t D, KV, S, P, elementBytes, qRows;
  /// Fused head groups: a q tile is `tokens` tokens of the group's query
  /// heads of KV head `head` (else qRows tokens of query head `head`).
  bool fused;
  int64_t tokens;
  /// The producer gathers rows by cp.async (gathersKeys) instead of
  /// issuing boxes.
  bool gather;
  /// Keys per tensor-copy box (a page's, or a tile's where pages hold
  /// whole tiles or the keys are contiguous; 1 for the gather: tiles may
  /// start at any key) and boxes per 64 columns.
  int64_t boxRows, rowBoxes;
  /// Boxes per row group: one grouped box, else one per 64 columns.
  int64_t boxesPerRowGroup() const { return s.groupedRing ? 1 : D / 64; }
  /// The slot in its page of the first key of row group `group` of tile
  /// `it`.
  Value boxSlot(LocBuilder &b, Value it, Value group);
  /// The grouped map's coordinates of row group `group` of tile `it`, whose
  /// pool row (NHD) or page (HND) boxRow gave as `row`.
  SmallVector<Value> groupedBoxStart(LocBuilder &b, Value it, Value group,
                                     Value row);
  /// The K and V tiles' image: group-major where one 5-D box brings a
  /// page's 8-key groups over every column box (KernelShape::groupedRing),
  /// else box-major.
  parts::SwizzledTile ringImage;
  /// The Q tile's image (box-major).
  parts::SwizzledTile qImage() const {
    return {qRows, D, parts::SmemSwizzle::B128};
  }
  parts::WgmmaAtom scoreAtom, outputAtom;
  parts::Wgmma scoreMma, outputMma;
  parts::MBarrierRing ring;
  /// The layout: Q tile, then K tiles, V tiles, then barriers.
  int64_t tileBytes, qBytes, barrierOffset;
  float factor;
  /// How the mask hook relates to causality (bottom-right aligned: row i
  /// of n sits at position keys - n + i): where it implies it, tiles past
  /// the CTA's last row are skipped; exactly causal (`causal`), only tiles
  /// past its first row's position are masked, by position; any other mask
  /// hook (`hookMask`) runs on every score. `skipsTiles`: it implies
  /// causality (the CTAs also run the longest q tiles first).
  parts::CausalMask maskKind;
  bool skipsTiles, causal, hookMask;
  /// Scores enter the softmax as raw Q.K^T times `factor` (scale * log2(e));
  /// with a logits hook (or a scale <= 0: the row maximum of raw scores
  /// would not be that of the scaled ones) as hook(raw * scale) * log2(e)
  /// (factor 1).
  bool rawScores;
  /// Whether the softmax keeps its row maxima lazily (only a growth past
  /// kLazyRescale moves one) so that most tiles skip O's rescale: above
  /// head dim 128, where O's rescale outweighs the tile's exponentials;
  /// below, the branch measured slower (bench/results/README.md,
  /// 2026-12-06).
  bool lazyMax;
  /// Whether each consumer warpgroup decides which tiles it masks from its
  /// own first row (maskFrom) rather than the CTA's, exactly causal: where a
  /// tile holds fewer keys than the CTA has rows, the diagonal spans several
  /// tiles and a later warpgroup's rows see whole tiles the first one masks
  /// (d256's 64-key tiles: the second masks one instead of two; four
  /// consumers at d64: 10 warpgroup tiles instead of 16). With 128-key
  /// tiles and 128 rows both mask the same tiles, and only the schedule
  /// differs: the per-warpgroup form measured faster at d128 (B4 S4096
  /// causal +2.2-2.4%, B1 S16384 -0.4 to -1.6%), slower at d64 (-3%), and
  /// with fused head groups its split kernels spill more: the CTA-uniform
  /// test there (bench/results/README.md, 2026-12-07).
  bool warpgroupMasks;

  gpu::GPUFuncOp func;
  Frame f;
  /// The launched grid, the CTA's worker index and the workers' count.
  KernelBuilder::PrefillGrid grid;
  Value worker, workers;
  /// The q tile being served: the ring's uses before it.
  Value ringBase;
  Value c0, c1, qTile, head, rowBase, numTiles;
  /// The keys the CTA's tiles cover: from kTileBegin (a split chunk's first
  /// key rounded down to a box: boxes never cross a page) to kLoopEnd; its
  /// first token's position.
  Value kTileBegin, kLoopEnd, firstQpos;
  /// With warpgroupMasks, the consumer warpgroup's first tile that reaches
  /// past the end or past its first row's position: it and those after it
  /// mask (maskedScores).
  Value maskFrom;
  /// The thread's two rows' positions (consumers) as hooks see them, their
  /// query heads and those heads' parameters.
  Value hookQpos[2], rowHead[2];
  /// The thread's two rows' bound on visible keys (maskedScores): the end,
  /// or split, the count from kBegin.
  Value rowKeyBound[2];
  SmallVector<Value> params[2];
  Value tid, wg, wgThread, warpInWg, lane;
  /// Consumer warpgroups (KernelShape::consumers).
  int64_t consumers;
  Value alignedAddress, layout;
  Value kMap, vMap;
};

} // namespace flashir::conversion::hopper

#endif // FLASHIR_LIB_CONVERSION_ATTNTOGPU_HOPPER_HOPPERPREFILLBUILDER_H
