//===- KernelBuilder.h - the attention kernels' common builder --*- C++ -*-===//
//
// What every kernel of convert-attn-to-gpu shares: the kernel ABI (its
// arguments by role, KernelBuilder.cpp), the request / chunk a CTA serves and
// its keys, the variant's parameters and hook helpers. The families build on
// it: the CUDA-core decode (SimtDecode.cpp), the tensor-core decode
// (TensorCoreDecode/), the tensor-core prefill (Prefill/) and the split-KV
// merge kernel (MergeKernel.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef FLASHIR_LIB_CONVERSION_ATTNTOGPU_KERNELBUILDER_H
#define FLASHIR_LIB_CONVERSION_ATTNTOGPU_KERNELBUILDER_H

#include "flashir/ABI/KernelABI.h"
#include "flashir/Dialect/Attn/IR/Attn.h"

#include "../BuilderUtils.h"
#include "../VariantHooks.h"
#include "Parts/PagedKVAccess.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/Support/MathExtras.h"

namespace flashir::conversion::prefill {
class PrefillBuilder;
} // namespace flashir::conversion::prefill
namespace flashir::conversion::hopper {
class HopperPrefillBuilder;
} // namespace flashir::conversion::hopper

namespace flashir::conversion::kernels {
using namespace flashir::attn;

class TensorCoreDecodeBuilder;
class SimtDecodeBuilder;
class MergeKernelBuilder;

/// Elements per 16-byte vector load.
constexpr int64_t kVec = 8;
constexpr float kLog2E = 1.4426950408889634f, kLn2 = 0.6931471805599453f;
/// How far (base 2) a prefill row's scores may exceed its reference maximum
/// before the warp rescales its accumulators (probabilities stay <= 256).
constexpr float kLazyRescale = 8.0f;
/// cp.async ring stages where the chip has cp.async and none is asked for.
constexpr int64_t kDefaultStages = 4;
/// The same for the tensor-core kernel (16-key tiles are larger stages).
constexpr int64_t kDefaultTensorCoreStages = 3;
/// Keys per warp and iteration of the tensor-core kernel (the k of the
/// m16n8k16 P.V product).
constexpr int64_t kTileKeys = 16;
/// Tensor copies: the alignment of the ring (the 128-byte swizzle's
/// pattern repeats every 1024 bytes).
constexpr int64_t kSwizzleAlign = 1024;
/// Tensor copies: the boxes of one K or V row and their columns
/// (PagedKVAccess::tensorMapBoxColumns; the last box reaches past D where D
/// is not a multiple of its columns: the copy engine fills those with zeros).
inline int64_t tensorCopyBoxColumns(int64_t headDim) {
  return parts::PagedKVAccess{false, 1, 1, headDim}.tensorMapBoxColumns();
}
inline int64_t tensorCopyBoxes(int64_t headDim) {
  return parts::PagedKVAccess{false, 1, 1, headDim}.tensorMapBoxes();
}
/// 2^x by ex2.approx.ftz.f32: one MUFU.EX2 (math.exp2 lowers to the
/// non-ftz form, which ptxas wraps in a denormal range check and two
/// multiplications). Flushing results below 2^-126 to zero is harmless for
/// probabilities relative to a running maximum.
inline Value exp2Ftz(LocBuilder &b, Value x) {
  return LLVM::CallIntrinsicOp::create(
             b, b.getF32Type(), b.getStringAttr("llvm.nvvm.ex2.approx.ftz.f"),
             ValueRange{x})
      .getResult(0);
}
/// f32 accumulators a tensor-core decode lane may keep in registers.
constexpr int64_t kMaxAccumulators = 128;

/// The tensor-core decode kernel's lanes for head dim D and g query heads
/// per KV head: each lane stages the 16-byte K pieces of every 32-column
/// chunk (two n-tiles) and V pieces of every 64-column chunk (four keys),
/// and holds row gid of each of R = ceil(g / 8) 8-row halves of ceil(R / 2)
/// m16 tiles.
struct TensorCoreDecodeLayout {
  int64_t kChunks, vChunks, rowHalves, mTiles;
  TensorCoreDecodeLayout(int64_t headDim, int64_t group)
      : kChunks(llvm::divideCeil(headDim, 32)),
        vChunks(llvm::divideCeil(headDim, 64)),
        rowHalves(llvm::divideCeil(group, 8)),
        mTiles(llvm::divideCeil(rowHalves, 2)) {}
  /// Staged K pieces per lane and tile.
  int64_t kSlots() const { return 2 * kChunks; }
  /// Staged K and V pieces per lane and tile.
  int64_t slots() const { return 2 * kChunks + 4 * vChunks; }
  /// f32 registers of the lane's accumulators (two per n-tile and row).
  int64_t accumulators() const { return rowHalves * 2 * 8 * vChunks; }
};

struct KernelShape {
  int64_t headDim, pageSize, numQoHeads, numKvHeads, group, warps, unroll;
  /// cp.async ring stages per warp; 0: register double buffering.
  int64_t stages;
  /// Resident CTAs per SM the register allocation must allow (0: any).
  int64_t minBlocksPerSM;
  /// Split-KV: one CTA per (chunk, KV head) writing partial states (O in
  /// the element type, lse in f32).
  bool chunked;
  /// mma.sync (m16n8k16) for Q.K^T and P.V instead of CUDA-core fma.
  bool tensorCores;
  /// Tensor-core kernel: K/V rows staged by cp.async.bulk (sm_90) completing
  /// on mbarriers, instead of 16-byte cp.async per lane.
  bool bulkCopy;
  /// Bulk copies as tensor copies (cp.async.bulk.tensor) of whole 16-key
  /// tiles through the host's tensor maps (kv_maps) with the 128-byte
  /// swizzle, instead of one copy per K or V row; needs tiles that never
  /// cross a page (page size a multiple of 16).
  bool tensorCopy;
  /// The KV head varies fastest in the CTAs' launch order (see
  /// loadFrame).
  bool headsInnermost;
  Type element;
  float scale;
  /// Prefill (Prefill/PrefillKernel.cpp): query rows per CTA (16 or 32 per
  /// warp; 0: a decode kernel) and keys per K/V tile.
  int64_t prefillRows = 0, kvTile = 0;
  /// Prefill on sm_75: f16 m16n8k8 products (two per 16-wide k step) and
  /// K/V tiles staged by plain 16-byte loads and stores (no cp.async; one
  /// ring slot).
  bool turing = false;
  /// Prefill with fused head groups: a CTA serves one KV head and its rows
  /// are (token, query head of the group) pairs, prefillRows / group tokens.
  bool fusedHeadGroups = false;
  /// Prefill with 16 rows per warp: Q in shared memory (tiles' q_shared), as
  /// with 32 rows per warp.
  bool prefillQShared = false;
  /// The wgmma prefill kernel with persistent CTAs (persistent-prefill).
  bool persistent = false;
  /// The wgmma prefill kernel's consumer warpgroups (64 query rows each).
  int64_t consumers = 2;
  /// The wgmma prefill kernel's K/V tiles group-major (SwizzledTile), each
  /// page (or tile) one tensor copy of its 8-key groups over every column
  /// box (PagedKVAccess::tensorMapGroups; a five-extent tensor_map_box).
  bool groupedRing = false;
  /// Split-KV on sm_90: the partial-state kernel lets its merge kernel launch
  /// early (griddepcontrol.launch_dependents) and the merge kernel waits for
  /// it (griddepcontrol.wait) before reading the partial states, so the
  /// runtime may launch the merge with programmatic stream serialization.
  /// The merge lets the grid after it launch early too, and a split prefill
  /// kernel waits in every CTA before its first access (the runtime may
  /// launch it programmatically behind any kernel).
  bool dependentLaunch = false;
  /// The pools' address arithmetic (NHD or HND): kernels index them as
  /// (page, slot, head, column) memrefs with these strides.
  parts::PagedKVAccess access = {};
  /// The chip converts f32 pairs to bf16 in one instruction
  /// (cvt.rn.bf16x2.f32, sm_80+).
  bool bf16Convert = true;
  /// KV views of one type whose keys the kernel attends concatenated (more
  /// than one: the prefill kernel, one key loop per view).
  int64_t numViews = 1;
  /// Prefill on sm_90a by warpgroup MMA and tensor copies, warp-specialized
  /// (Hopper/HopperPrefillBuilder.h).
  bool wgmma = false;
};

/// Dynamic shared memory of the prefill kernel: the K/V ring and, with 32
/// query rows per warp (qRows = 32 warps) or `qShared`, the Q tile.
int64_t prefillSharedMemoryBytes(int64_t kvTile, int64_t headDim,
                                 int64_t stages, int64_t elementBytes,
                                 int64_t qRows, int64_t warps,
                                 bool qShared = false);

/// Lane groups of the split-KV merge kernel (D / kVec lanes each): one warp
/// for decode merges, 256 threads for those of split prefill (`manyRows`).
int64_t mergeGroups(int64_t headDim, bool manyRows);

/// Bytes of the kernel's workgroup buffer: the larger of the cp.async
/// staging ring and the per-warp states of the final merge.
int64_t sharedMemoryBytes(bool tensorCores, bool bulkCopy, bool tensorCopy,
                          int64_t warps, int64_t group, int64_t headDim,
                          int64_t unroll, int64_t stages, int64_t elementBytes);
int64_t sharedMemoryBytes(const KernelShape &s);

/// Makes the variant hooks inlined into `func` cheaper per score: an f32
/// division in a loop by a value defined outside it becomes a multiplication
/// by its reciprocal and f32 tanh the hardware's tanh.approx.f32
/// (HookMath.cpp).
void relaxHookMath(gpu::GPUFuncOp func);

/// Why `op` cannot become a kernel of any family, or an empty string (the
/// families' shape rules are checked separately).
std::string unsupportedReason(AttentionOp op, VariantOp variant);

/// The type of `op`'s (first) view as the kernels read it: a paged view's,
/// or for a ragged view (attn.ragged_kv, its keys' contiguous rows) that of
/// one-token NHD pages (PagedKVAccess::raggedRows addresses them).
PagedKVType kvViewType(AttentionOp op);
/// Why the decode kernel (tensor-core or CUDA-core design) cannot serve
/// `headDim` with `group` query heads per KV head, or an empty string.
std::string decodeShapeReason(int64_t headDim, int64_t group, bool tensorCores);
/// Lanes of the CUDA-core decode kernel's key groups: D / 8 rounded up to a
/// power of two (lanes past D / 8 hold zeros).
int64_t simtGroupLanes(int64_t headDim);
/// The same for the prefill kernel (Prefill/PrefillKernel.cpp).
std::string prefillShapeReason(int64_t headDim, int64_t group);

class KernelBuilder {
public:
  KernelBuilder(AttentionOp op, VariantOp variant, KernelShape shape)
      : op(op), variant(variant), hooks(variant, /*contract=*/true), s(shape) {}

  /// The attention kernel of `shape`: prefill when `shape.prefillRows`, else
  /// the tensor-core decode when `shape.tensorCores`, else the CUDA-core one.
  gpu::GPUFuncOp build(OpBuilder &moduleBuilder, StringRef name) {
    if (s.wgmma)
      return buildHopperPrefill(moduleBuilder, name);
    if (s.prefillRows > 0)
      return buildPrefill(moduleBuilder, name);
    return s.tensorCores ? buildTensorCore(moduleBuilder, name)
                         : buildSimt(moduleBuilder, name);
  }

  /// The split-KV merge kernel: one CTA of D/8 threads per (request, query
  /// head) merges the request's chunk states, row by row.
  gpu::GPUFuncOp buildMerge(OpBuilder &moduleBuilder, StringRef name);

  /// Argument names of the kernel built last (for the manifest).
  SmallVector<std::string> argNames;
  /// Its fixed arguments' roles (abi::fixedArgs), before the parameters.
  std::vector<abi::FixedArg> roles;

private:
  /// The prefill kernel's, the decode kernels' (TensorCoreDecode/,
  /// SimtDecode.cpp) and the merge kernel's parts use the kernel ABI and
  /// hook helpers below.
  friend class prefill::PrefillBuilder;
  friend class hopper::HopperPrefillBuilder;
  friend class TensorCoreDecodeBuilder;
  friend class SimtDecodeBuilder;
  friend class MergeKernelBuilder;

  /// What both decode designs share: the kernel ABI, the request or chunk a
  /// CTA serves and its key range, the variant parameters.
  struct Frame {
    gpu::GPUFuncOp func;
    Block *entry;
    Value q, qoIndptr, kPool, vPool, indptr, out, lse;
    /// The page table (null for a ragged view).
    Value indices, lastPageLen;
    /// Split-KV: the planner's chunk arrays.
    Value chunkIndptr, chunkRequest, chunkStarts, chunkEnds, chunkOrder;
    /// The K and V tensor maps ([2, 16] i64).
    Value kvMaps;
    /// Split-KV: the partial states, and whether this chunk is its
    /// request's only one (it then writes out / lse itself).
    Value partialO, partialLse, direct;
    /// Split-KV: C, the chunks of the partial rows chunk + C * i
    /// (chunk_indptr's last entry, as the merge kernel reads it).
    Value numChunks;
    /// The request, or for split-KV the chunk (chunk_order at the CTA's
    /// grid position).
    Value block, req, kvHead;
    Value qBegin, numQ, pageBegin, numKv;
    /// Keys this CTA attends: [kBegin, kEnd) of the request.
    Value kBegin, kEnd;
    /// The request's keys over every view: query row i of n sits at key
    /// position keysTotal - n + i (numKv where there is one view).
    Value keysTotal;
    /// Several views: the position of the selected view's first key among
    /// the request's keys (null with one view, whose positions are its own).
    Value keyOffset;
    /// Each view's arguments (bindArguments) and, with several views, the
    /// request's keys in it (loadRequestKeys); selectView makes one the
    /// frame's current view (kPool ... lastPageLen, pageBegin, numKv, kBegin,
    /// kEnd).
    struct View {
      Value kPool, vPool, indptr, indices, lastPageLen;
      Value pageBegin, numKv, keyOffset;
    };
    SmallVector<View> views;
    /// The i8 workgroup buffer.
    Value buf;
    unsigned firstParam;
    SmallVector<VariantParamAttr> params;
  };

  /// The keys [f.kBegin, f.kEnd) the CTA attends (after loadRequestKeys):
  /// the request's, or the split-KV chunk's clamped to them (then also
  /// f.direct: the chunk is its request's only one).
  void loadKeyRange(LocBuilder &b, Frame &f, Value nextRequest);

  /// The prefill kernels' frame: what a CTA serves and its key range.
  struct PrefillTile {
    /// The q tile and the query head (fused head groups: the KV head).
    Value qTile, head;
    /// The tile's first token: qTile * tokens.
    Value rowBase;
    /// Whether the tile holds any of its request's rows (i1).
    Value any;
  };
  /// A prefill grid's extents (x: requests or split chunks, y: q tiles, z:
  /// heads) and one of its positions.
  struct PrefillGrid {
    Value x, y, z;
  };
  struct GridPosition {
    Value block, qTile, head;
  };
  /// Whether the CTAs run the longest q tiles first: kernels whose tiles'
  /// keys grow with the q tile (`keysGrow`, e.g. causal), unsplit (a split
  /// kernel's x follows the planner's chunk order).
  bool longestFirst(bool keysGrow) const { return keysGrow && !s.chunked; }
  /// The launch's grid extents.
  PrefillGrid prefillGrid(LocBuilder &b);
  /// The CTA's linear block index: x + X (y + Y z).
  Value linearPosition(LocBuilder &b, const PrefillGrid &grid);
  /// Grid position `linear` (x fastest). With `longestFirst` (see
  /// longestFirst()) the index is read by bands of the query heads of one
  /// KV head (one KV head with fused head groups), within a band q-tile-
  /// slowest and reversed: for equal-length requests each band's longest
  /// tiles come first, the final wave ends evenly, and the CTAs in flight
  /// read few KV heads' keys.
  /// `acrossHeads`: one band of every head, so that the q tile is slowest
  /// (the persistent kernel's static walk: each round's tiles about equal).
  GridPosition prefillGridPosition(LocBuilder &b, const PrefillGrid &grid,
                                   Value linear, bool longestFirst,
                                   bool acrossHeads = false);
  /// Loads what grid position `pos` serves into `f` (its arguments bound):
  /// the request (split-KV: chunk chunk_order[x] of request
  /// chunk_request[chunk]), its queries, pages and keys, the KV head.
  PrefillTile loadPrefillTile(LocBuilder &b, Frame &f, const GridPosition &pos,
                              bool fused, int64_t tokens);
  /// A prefill kernel's arguments (bindArguments, dynamic shared memory);
  /// with dependentLaunch, after waiting for the grid launched before it.
  Frame bindPrefillArguments(LocBuilder &b, gpu::GPUFuncOp func);
  /// Binds a prefill kernel's frame: the arguments, the request x (split-KV:
  /// chunk chunk_order[x] of request chunk_request[chunk]), q tile y, head z,
  /// the request's queries, pages and keys. Where longestFirst(`keysGrow`)
  /// the CTAs run each head band's last q tile of every (request, head)
  /// first (prefillGridPosition).
  /// Leaves `b` inside the guard that CTAs past their request's rows
  /// (`tokens` per q tile) skip, before any barrier.
  PrefillTile bindPrefillFrame(LocBuilder &b, Frame &f, gpu::GPUFuncOp func,
                               bool keysGrow, bool fused, int64_t tokens);
  /// The token and query head of row `r` of a prefill q tile whose first
  /// token is `rowBase`: row r of query head `head`, or with fused head
  /// groups token r / g of the g query heads of KV head f.kvHead.
  std::pair<Value, Value> prefillRow(LocBuilder &b, const Frame &f,
                                     Value rowBase, Value head, bool fused,
                                     Value r);

  /// With dependentLaunch, before a decode kernel returns: the grid's last CTA
  /// waits for the grid it was launched behind (griddepcontrol.wait), so
  /// this grid completes only after that one. A cascade launches its suffix
  /// kernel behind the prefix kernel and the merge behind the suffix; the
  /// merge's wait then covers both grids' states. One CTA holds its slot
  /// meanwhile; in a plain launch the wait returns at once.
  void waitInLastCta(LocBuilder &b);

  /// Stores query row `i` of the request through `store(b, oMem, lseMem,
  /// row)` (O in the element type, lse in f32): to out / lse, or, for a
  /// split-KV chunk that is not its request's only one, to partial row
  /// chunk + C * i (C = chunks) of the partial states.
  void storeRow(LocBuilder &b, const Frame &f, Value i,
                function_ref<void(LocBuilder &, Value, Value, Value)> store);

  gpu::GPUFuncOp buildSimt(OpBuilder &moduleBuilder, StringRef name);
  gpu::GPUFuncOp buildTensorCore(OpBuilder &moduleBuilder, StringRef name);
  /// The tensor-core prefill kernel (sm_80+; f16 on sm_75): CTAs of
  /// s.prefillRows query rows of one query head (or of the heads of one KV
  /// head's group), K/V tiles of s.kvTile keys shared by its warps
  /// (Prefill/PrefillBuilder.h).
  gpu::GPUFuncOp buildPrefill(OpBuilder &moduleBuilder, StringRef name);
  /// The sm_90a prefill kernel: warpgroup MMA, tensor copies, a producer
  /// warpgroup and consumer warpgroups (Hopper/HopperPrefillBuilder.h).
  gpu::GPUFuncOp buildHopperPrefill(OpBuilder &moduleBuilder, StringRef name);

  /// Creates the kernel with its ABI (recorded in argNames) and a workgroup
  /// buffer of `bufferBytes`: a static attribution, or dynamic shared
  /// memory (the launcher passes its size) when `dynamicShared`.
  gpu::GPUFuncOp createKernel(OpBuilder &moduleBuilder, StringRef name,
                              int64_t bufferBytes, bool dynamicShared);
  /// The kernel's arguments and workgroup buffer in a Frame (no per-CTA
  /// quantities yet).
  Frame bindArguments(LocBuilder &b, gpu::GPUFuncOp func, bool dynamicShared);
  /// f.pageBegin and f.numKv (the request's keys) of request f.req, and
  /// f.keysTotal; with several views, each view's (f.views; view 0 current).
  void loadRequestKeys(LocBuilder &b, Frame &f);
  /// The first page and the key count of request f.req in the view of
  /// `indptr` / `lastPageLen`.
  std::pair<Value, Value> viewKeys(LocBuilder &b, const Frame &f, Value indptr,
                                   Value lastPageLen);
  /// Makes view `v` of f.views the frame's current view: its arguments, its
  /// keys [0, numKv) as [kBegin, kEnd), its key offset (unsplit kernels).
  void selectView(Frame &f, int64_t v);
  /// The position a hook sees for key `key` of the current view: clamped
  /// to the range's last key for variants that read buffers
  /// (hookPosition), plus the view's key offset.
  Value hookKeyPosition(LocBuilder &b, const Frame &f, Value key);
  /// Reads the per-CTA quantities at the start of `func`'s body.
  Frame loadFrame(LocBuilder &b, gpu::GPUFuncOp func, bool dynamicShared);
  /// Parameter values of query head `head` (request-level ones per request).
  SmallVector<Value> paramValues(LocBuilder &b, const Frame &f, Value head);
  /// The warps' final states in the workgroup buffer, [warps, g, D + 4] f32
  /// (acc, then m and l; rows padded to D + 4 floats so each starts 16-byte
  /// aligned), the layout writeRows merges.
  Value statesView(LocBuilder &b, const Frame &f);
  /// Merges the warps' states in `smem` ([warps, g, D + 4] f32: acc, m, l)
  /// and writes the g rows of the CTA's query row `i` (split-KV: to the
  /// partial states, row c + C * i, unless the chunk is its request's only
  /// one: then to out / lse like the unsplit kernel); lanes `lane` <
  /// D / 8 of warp 0 do the writing, 8 columns each. Barriers before (every
  /// warp has stored its state) and after (the next row's copies must not
  /// overwrite states still being read).
  void writeRows(LocBuilder &b, const Frame &f, Value smem, Value warp,
                 Value lane, Value i);

  /// The staged key loop of both designs (s.stages >= 2): the first
  /// stages - 1 iterations' copies are issued up front; iteration `it` of
  /// `numIter` issues the copies of iteration it + stages - 1 (with page ids
  /// loaded one iteration earlier, so copies never wait on the page table),
  /// `commit`s them, loads the page ids of iteration it + stages, `wait`s
  /// for iteration it's copies and runs `body` on the carried state.
  /// Iterations past the end issue nothing; `noPages` stands for their page
  /// ids. Returns the final state followed by the carried page ids.
  ValueRange buildStagedLoop(
      LocBuilder &b, Value numIter, ArrayRef<Value> inits,
      ArrayRef<Value> noPages,
      function_ref<SmallVector<Value>(LocBuilder &, Value)> pagesOf,
      function_ref<void(LocBuilder &, Value, ArrayRef<Value>)> issue,
      function_ref<Value(LocBuilder &)> commit,
      function_ref<void(LocBuilder &, Value, Value)> wait,
      function_ref<SmallVector<Value>(LocBuilder &, Value, ValueRange)> body);

  /// The 8 elements of a row at columns (d0 + D/2 + e) mod D (the partners
  /// of a query or key hook's columns d0 + e; d0 a multiple of 8): one
  /// 16-byte read through `read(b, column, width)` where D/2 is a multiple
  /// of 8, else two 8-byte ones.
  Value loadRotated(LocBuilder &b, Value d0,
                    function_ref<Value(LocBuilder &, Value, int64_t)> read);
  /// `memref[prefix..., column]`, `width` elements (8, 4 or 2).
  Value loadColumns(LocBuilder &b, Value memref, ValueRange prefix,
                    Value column, int64_t width);
  /// The position a hook is given for `pos`: with buffer parameters at
  /// most `end` - 1. Keys past a tile's range and rows past the request
  /// run their hooks too (the results are masked out or never stored);
  /// clamped, their buffer reads stay among the request's positions.
  Value hookPosition(LocBuilder &b, Value pos, Value end);
  /// A query (`isKey` false) or key hook applied to the columns d0.. of a
  /// row (8, or as many as `x` has): `x` and `xRot` (loadRotated) in the
  /// element type; the result in the element type (what the mma reads).
  Value applyRowHook(LocBuilder &b, bool isKey, Value x, Value xRot, Value d0,
                     Value pos, Value head, ValueRange params);

  /// The final output of columns e0.. of query head `head` from a merged
  /// state's normalised `o` (vector<8xf32>, or of any width) and its l:
  /// sigmoid outputs are not normalised (o * l); then the output hook.
  Value finalOutput(LocBuilder &b, Value o, Value l, Value e0, Value head);

  VectorType f32Vec(LocBuilder &b) {
    return VectorType::get({kVec}, b.getF32Type());
  }
  Value splat(LocBuilder &b, Value scalar) {
    return vector::BroadcastOp::create(b, f32Vec(b), scalar);
  }
  Value loadIndex(LocBuilder &b, Value memref, Value i) {
    Value v = memref::LoadOp::create(b, memref, ValueRange{i});
    return arith::IndexCastOp::create(b, b.getIndexType(), v);
  }
  /// The pool page of page-table entry `entry` (an index): indices[entry],
  /// or, over a ragged view (no page table: one-token pages in token
  /// order), `entry` itself.
  Value poolPage(LocBuilder &b, const Frame &f, Value entry) {
    return s.access.ragged ? entry : loadIndex(b, f.indices, entry);
  }
  /// poolPage as an i32.
  Value poolPage32(LocBuilder &b, const Frame &f, Value entry) {
    if (s.access.ragged)
      return arith::IndexCastUIOp::create(b, b.getI32Type(), entry);
    return memref::LoadOp::create(b, f.indices, ValueRange{entry});
  }
  /// 16 bytes of `memref` at `indices`.
  Value loadRaw(LocBuilder &b, Value memref, ValueRange indices) {
    return vector::LoadOp::create(b, VectorType::get({kVec}, s.element), memref,
                                  indices,
                                  /*nontemporal=*/false, llvm::MaybeAlign(16));
  }
  /// Elements of the vector `v` (of any width) widened to f32.
  Value widen(LocBuilder &b, Value v) {
    auto type = VectorType::get(cast<VectorType>(v.getType()).getShape(),
                                b.getF32Type());
    return arith::ExtFOp::create(b, type, v);
  }
  /// 16 bytes of `memref` at `indices`, widened to f32.
  Value loadVec(LocBuilder &b, Value memref, ValueRange indices) {
    return widen(b, loadRaw(b, memref, indices));
  }
  /// f32 -> the element type (a vector of any width), round to nearest
  /// even. Without cvt.rn.bf16x2.f32 (sm_75) bf16 is rounded with integer
  /// ops: LLVM's NVPTX lowering of fptrunc to bf16 there emits PTX that
  /// ptxas rejects (setp.nan.f32 on .b32 registers).
  Value narrow(LocBuilder &b, Value v) {
    int64_t width = cast<VectorType>(v.getType()).getNumElements();
    auto type = VectorType::get({width}, s.element);
    if (!s.element.isBF16() || s.bf16Convert)
      return arith::TruncFOp::create(b, type, v);
    auto i32 = VectorType::get({width}, b.getI32Type());
    auto splatI = [&](int32_t x) {
      return arith::ConstantOp::create(
          b, DenseElementsAttr::get(i32, b.getI32IntegerAttr(x)));
    };
    Value bits = arith::BitcastOp::create(b, i32, v);
    // NaN stays a (quiet) NaN instead of rounding into Inf.
    Value isNan = arith::CmpFOp::create(b, arith::CmpFPredicate::UNO, v, v);
    Value shifted = arith::ShRUIOp::create(b, bits, splatI(16));
    Value lsb = arith::AndIOp::create(b, shifted, splatI(1));
    Value rounded = arith::AddIOp::create(
        b, bits, arith::AddIOp::create(b, lsb, splatI(0x7fff)));
    rounded = arith::SelectOp::create(b, isNan, splatI(0x7fc00000), rounded);
    Value high =
        arith::TruncIOp::create(b, VectorType::get({width}, b.getI16Type()),
                                arith::ShRUIOp::create(b, rounded, splatI(16)));
    return arith::BitcastOp::create(b, type, high);
  }

  /// The dot product of two vector<8xf32> as two interleaved fma chains
  /// (explicit fma: arith ops carry no contraction flag, and a sequential
  /// reduction would be 16 dependent instructions).
  Value dot(LocBuilder &b, Value x, Value y) {
    Value partial[2];
    for (int64_t e = 0; e < kVec; ++e) {
      Value xe = vector::ExtractOp::create(b, x, e);
      Value ye = vector::ExtractOp::create(b, y, e);
      partial[e % 2] =
          e < 2 ? Value(arith::MulFOp::create(b, xe, ye))
                : Value(math::FmaOp::create(b, xe, ye, partial[e % 2]));
    }
    return arith::AddFOp::create(b, partial[0], partial[1]);
  }

  /// sigmoid(x / log2(e)) = 1 / (1 + 2^-x) for a base-2 logit x (0 at
  /// x = -inf; 2^-x flushed below 2^-126 changes nothing in 1 + 2^-x).
  Value sigmoidBase2(LocBuilder &b, Value x) {
    Value one = cF32(b, 1.0f);
    Value negX = arith::NegFOp::create(b, x);
    Value power = exp2Ftz(b, negX);
    Value denom = arith::AddFOp::create(b, one, power);
    // The approximate reciprocal (~1 ulp; denominators are >= 1 or inf)
    // instead of div.rn's correctly rounded sequence, once per score.
    return NVVM::RcpApproxFtzF32Op::create(b, b.getF32Type(), denom);
  }
  Value shuffleXor(LocBuilder &b, Value v, int32_t offset) {
    return gpu::ShuffleOp::create(b, v, offset, 32, gpu::ShuffleMode::XOR)
        .getShuffleResult();
  }
  /// exp(x - m), 0 when x = -inf (also when m = -inf: no NaN).
  Value expDiff(LocBuilder &b, Value x, Value m) {
    Value isInf = isNegInf(b, x), zero = cF32(b, 0.0f);
    return arith::SelectOp::create(
        b, isInf, zero, math::ExpOp::create(b, arith::SubFOp::create(b, x, m)));
  }

  // Maxima use maxnumf (PTX max.f32): scores are finite or -inf, never NaN,
  // and sm_75 has no NaN-propagating max (LLVM's emulation of it emits PTX
  // that ptxas rejects).

  /// Merges state (m, l, acc) with (mo, lo, acco) by eq. (6).
  void merge(LocBuilder &b, Value &m, Value &l, Value &acc, Value mo, Value lo,
             Value acco) {
    Value mNew = arith::MaxNumFOp::create(b, m, mo);
    Value ca = expDiff(b, m, mNew), cb = expDiff(b, mo, mNew);
    Value lScaled = arith::MulFOp::create(b, l, ca);
    l = arith::AddFOp::create(b, lScaled, arith::MulFOp::create(b, lo, cb));
    Value accScaled = arith::MulFOp::create(b, acc, splat(b, ca));
    acc = arith::AddFOp::create(b, accScaled,
                                arith::MulFOp::create(b, acco, splat(b, cb)));
    m = mNew;
  }

  AttentionOp op;
  VariantOp variant;
  VariantHooks hooks;
  KernelShape s;
};

} // namespace flashir::conversion::kernels

#endif // FLASHIR_LIB_CONVERSION_ATTNTOGPU_KERNELBUILDER_H
