//===- PrefillKernel.cpp - the tensor-core prefill kernel -----------------===//
//
// Prefill on tensor cores (sm_75+): one CTA per (request, tile of
// s.prefillRows query rows, query head), grid (requests, q tiles, Hq); CTAs
// past a request's rows return at once. With fused head groups a CTA serves
// a KV head: its rows are (token, query head of the group) pairs, grid
// (requests, q tiles of prefillRows / g tokens, Hkv), so each K/V tile is
// loaded once for the whole group. Each warp owns 16 or 32 consecutive
// query rows of the tile (one or two m16 blocks of m16n8k16 mma.sync
// products, FlashAttention-2):
//  - with 16 rows Q stays in registers as A fragments for the whole key
//    loop (unless the tiles say q_shared); with 32 the Q tile waits in
//    shared memory and each k-step reloads its A fragments by ldmatrix
//    (each K/V fragment then feeds two products);
//  - K/V tiles of s.kvTile keys are staged CTA-wide by 16-byte cp.async
//    (gathered through the page table) into rows padded to Dp + 8 elements
//    (Dp: D rounded up to 16, the k of the products; columns D..Dp-1 hold
//    zeros), a ring of s.stages slots; the 8 rows an ldmatrix phase reads
//    then sit in 8 different 16-byte bank groups. On sm_80+ the next tile's
//    copies go out between the k-steps of Q.K^T (raw addresses, page ids by
//    warp shuffle). sm_75 (f16): plain 16-byte loads and stores into one slot,
//    and each m16n8k16 product as two m16n8k8;
//  - S = Q.K^T takes K's B fragments by ldmatrix (K rows are the n index),
//    P.V takes V's by ldmatrix.trans; the S accumulators are P's A
//    fragments, so probabilities never leave their lanes;
//  - online softmax in f32 per row (4 lanes per row) with a lazily
//    rescaled maximum, variant hooks inlined.
// Keys past the end of the request are masked; the mask hook (causal,
// sliding window, ...) decides the rest, except on tiles that provably need
// no mask. Where the mask implies causality, tiles past the CTA's last
// query position are skipped.
//
//===----------------------------------------------------------------------===//

#include "DecodeKernel.h"
#include "Parts/MmaSync.h"

#include "flashir/Target/Chip.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

#include <functional>

using namespace mlir;

namespace flashir::conversion::decode {

std::string prefillShapeReason(int64_t headDim, int64_t /*group*/) {
  // Rows move in 16-byte pieces; the products pad the head dim to 16 inside
  // the kernel (prefillPaddedHeadDim). Past 256, O's accumulators (D / 2 f32
  // per lane) crowd out the rest. Every group size works: a fused tile holds
  // whole groups (convert-attn-to-gpu fuses only then), else one query head.
  if (headDim < 16 || headDim > 256 || headDim % kVec != 0)
    return "head_dim a multiple of 8 from 16 to 256";
  return "";
}

/// How a mask hook (block arguments qpos, kpos, ...) relates to causality.
enum class CausalMask {
  /// It may keep keys past the query position.
  None,
  /// It keeps only keys with kpos <= qpos: it yields a conjunction with
  /// such a term (sliding window): tiles past the CTA's last query position
  /// can be skipped.
  Implied,
  /// It yields exactly `kpos sle qpos` (or `qpos sge kpos`): tiles whose keys
  /// all precede the CTA's first query position need no mask at all.
  Exact,
};

/// Signed predicates only: a query row with fewer keys than rows before it
/// has a negative qpos.
static CausalMask classifyMask(Region &mask) {
  if (mask.empty() || mask.front().getNumArguments() < 2)
    return CausalMask::None;
  Block &block = mask.front();
  Value qpos = block.getArgument(0), kpos = block.getArgument(1);
  auto isCausalTerm = [&](Value v) {
    auto cmp = v.getDefiningOp<arith::CmpIOp>();
    return cmp && ((cmp.getPredicate() == arith::CmpIPredicate::sle &&
                    cmp.getLhs() == kpos && cmp.getRhs() == qpos) ||
                   (cmp.getPredicate() == arith::CmpIPredicate::sge &&
                    cmp.getLhs() == qpos && cmp.getRhs() == kpos));
  };
  std::function<bool(Value)> implies = [&](Value v) {
    if (isCausalTerm(v))
      return true;
    if (auto conj = v.getDefiningOp<arith::AndIOp>())
      return implies(conj.getLhs()) || implies(conj.getRhs());
    return false;
  };
  Value kept = block.getTerminator()->getOperand(0);
  if (isCausalTerm(kept))
    return CausalMask::Exact;
  return implies(kept) ? CausalMask::Implied : CausalMask::None;
}

/// 2^x by ex2.approx.ftz.f32: one MUFU.EX2 (math.exp2 lowers to the
/// non-ftz form, which ptxas wraps in a denormal range check and two
/// multiplications). Flushing results below 2^-126 to zero is harmless for
/// probabilities relative to a running maximum.
static Value exp2Ftz(LocBuilder &b, Value x) {
  return LLVM::CallIntrinsicOp::create(
             b, b.getF32Type(), b.getStringAttr("llvm.nvvm.ex2.approx.ftz.f"),
             ValueRange{x})
      .getResult(0);
}

int64_t prefillSharedMemoryBytes(int64_t kvTile, int64_t headDim,
                                 int64_t stages, int64_t elementBytes,
                                 int64_t qRows, int64_t warps, bool qShared) {
  return flashir::target::prefillSharedMemoryBytes(
      qRows, kvTile, warps, stages, headDim, elementBytes, qShared);
}

/// Zeroes columns [headDim, headDim + 8) of the first `rows` shared rows of
/// `rowStride` elements in `buf` (thread `tid` of `threads` takes rows tid,
/// tid + threads, ...): the padding of staged rows whose head dim is an odd
/// multiple of 8. No copy writes there, and padding left from an earlier
/// kernel could hold NaN, which poisons Q.K^T even times a zero.
static void zeroPaddingColumns(LocBuilder &b, Value buf, Type element,
                               int64_t rows, int64_t rowStride, int64_t headDim,
                               Value tid, int64_t threads) {
  auto workgroup =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  Value c0 = cIndex(b, 0);
  Value view = memref::ViewOp::create(
      b,
      MemRefType::get({rows, rowStride}, element, MemRefLayoutAttrInterface(),
                      workgroup),
      buf, c0, ValueRange{});
  auto type = VectorType::get({kVec}, element);
  Value zeros = arith::ConstantOp::create(
      b, DenseElementsAttr::get(type, b.getZeroAttr(element)));
  Value col = cIndex(b, headDim);
  Value end = cIndex(b, rows);
  Value step = cIndex(b, threads);
  buildForStep(b, tid, end, step, ValueRange{},
               [&](LocBuilder &b, Value row, ValueRange) {
                 vector::StoreOp::create(b, zeros, view, ValueRange{row, col},
                                         /*nontemporal=*/false,
                                         llvm::MaybeAlign(16));
                 return SmallVector<Value>();
               });
}

Value DecodeKernel::hookedQueryPiece(LocBuilder &b, Value q, Value row,
                                     Value head, Value col, Value qpos,
                                     ValueRange params, int64_t width) {
  int64_t D = s.headDim;
  auto read = [&](LocBuilder &b, Value column, int64_t w) {
    return loadColumns(b, q, {row, head}, column, w);
  };
  Value x = read(b, col, width);
  Value rot;
  if (width == kVec) {
    rot = loadRotated(b, col, read);
  } else {
    // A pair's partners (D / 2 is a multiple of 4, col even) are adjacent.
    Value shifted = arith::AddIOp::create(b, col, cIndex(b, D / 2));
    rot = read(b, arith::RemUIOp::create(b, shifted, cIndex(b, D)), width);
  }
  return applyRowHook(b, /*isKey=*/false, x, rot, col, qpos, head, params);
}

void DecodeKernel::hookKeyTile(LocBuilder &b, Value ring, Value slot, Value t0,
                               Value tid, Value kvHead, ValueRange params) {
  int64_t half = s.headDim / 2, threads = 32 * s.warps;
  int64_t width = half % kVec == 0 ? kVec : kVec / 2;
  int64_t unitsPerRow = half / width, units = s.kvTile * unitsPerRow;
  int64_t elementBytes = s.element.getIntOrFloatBitWidth() / 8;
  Value c0 = cIndex(b, 0);
  // Unit u: key u / unitsPerRow, columns col.. and their partners col + D/2..
  // (each the other's x_rot).
  auto hookUnit = [&](LocBuilder &b, Value unit) {
    Value key = arith::DivUIOp::create(b, unit, cIndex(b, unitsPerRow));
    Value inRow = arith::RemUIOp::create(b, unit, cIndex(b, unitsPerRow));
    Value col = arith::MulIOp::create(b, inRow, cIndex(b, width));
    Value partner = arith::AddIOp::create(b, col, cIndex(b, half));
    Value kpos = arith::AddIOp::create(b, t0, key);
    SmallVector<Value> prefix = {slot, c0, key};
    Value x = loadColumns(b, ring, prefix, col, width);
    Value xRot = loadColumns(b, ring, prefix, partner, width);
    Value y =
        applyRowHook(b, /*isKey=*/true, x, xRot, col, kpos, kvHead, params);
    Value yRot =
        applyRowHook(b, /*isKey=*/true, xRot, x, partner, kpos, kvHead, params);
    for (auto [value, column] : {std::pair(y, col), std::pair(yRot, partner)})
      vector::StoreOp::create(b, value, ring, ValueRange{slot, c0, key, column},
                              /*nontemporal=*/false,
                              llvm::MaybeAlign(width * elementBytes));
  };
  // A loop rather than unrolled rounds: the hook's temporaries of one unit
  // at a time next to O and Q (the rounds' loads would all be in flight).
  Value end = cIndex(b, units);
  Value step = cIndex(b, threads);
  buildForStep(b, tid, end, step, ValueRange{},
               [&](LocBuilder &b, Value unit, ValueRange) {
                 hookUnit(b, unit);
                 return SmallVector<Value>();
               });
}

gpu::GPUFuncOp DecodeKernel::buildPrefill(OpBuilder &moduleBuilder,
                                          StringRef name) {
  MLIRContext *ctx = op.getContext();
  Type f32 = Float32Type::get(ctx), i32 = IntegerType::get(ctx, 32);
  int64_t D = s.headDim, g = s.group, W = s.warps, S = s.stages, KV = s.kvTile,
          P = s.pageSize;
  int64_t elementBytes = s.element.getIntOrFloatBitWidth() / 8;
  // The MMA atom (m16n8k16; m16n8k8 pairs on sm_75). The lane's
  // accumulators and A fragments share its base (laneRow, laneCol) = (gid,
  // 2 tig): rows laneRow + halves[h] (8-row halves h), columns laneCol +
  // 8 n (n-tiles) + 0..laneCols-1. The accumulators of nPerK n-tiles are
  // the A fragment of one k-step.
  parts::MmaSync mma(parts::MmaSync::atomFor(s.element, s.turing), s.element);
  parts::FragmentLayout aLayout = mma.atom.layout(parts::MmaOperand::A),
                        cLayout = mma.atom.layout(parts::MmaOperand::C);
  assert(aLayout.rowPerGroup == cLayout.rowPerGroup &&
         aLayout.colPerThread == cLayout.colPerThread &&
         "A and C fragments with one lane base");
  std::vector<int64_t> halves = cLayout.rowOffsets();
  int64_t H = halves.size(), laneCols = cLayout.elements() / H,
          nPerK = mma.atom.k / mma.atom.n;
  auto halfOf = [&](int64_t rowOffset) -> int64_t {
    return llvm::find(halves, rowOffset) - halves.begin();
  };
  // The products run over Dp = D rounded up to 16 (kSteps k-steps of 16,
  // Dp / 8 n-tiles of O); staged rows hold Dp columns, zeros past D, plus
  // the row pad. Global rows hold D columns: chunksPerRow 16-byte pieces.
  int64_t Dp = flashir::target::prefillPaddedHeadDim(D),
          kSteps = Dp / mma.atom.k;
  int64_t rowStride = Dp + flashir::target::kPrefillRowPad,
          chunksPerRow = D / kVec;

  gpu::GPUFuncOp func =
      createKernel(moduleBuilder, name,
                   prefillSharedMemoryBytes(KV, D, S, elementBytes,
                                            s.prefillRows, W, s.prefillQShared),
                   /*dynamicShared=*/true);
  Block &entry = func.getBody().front();
  OpBuilder ob = OpBuilder::atBlockBegin(&entry);
  LocBuilder b(op.getLoc(), ob);
  Value c0 = cIndex(b, 0), c1 = cIndex(b, 1);

  // The frame: request x, q tile y, query head z (fused head groups: KV
  // head z, the tile's rows are (token, head of the group) pairs).
  bool fused = s.fusedHeadGroups;
  int64_t tokens = fused ? s.prefillRows / g : s.prefillRows;
  // sm_90 split kernels: every CTA waits for the grid launched before it
  // before reading or writing anything, so the host may launch this one
  // behind any kernel with programmatic stream serialization (the cascade's
  // next step behind its merge): its CTAs are dispatched while that grid
  // drains, and the grid completes after it. The wait comes before
  // bindArguments' launch_dependents: a grid launched behind this one (the
  // cascade's suffix kernel, which writes the states the previous step's
  // merge reads) starts only after that grid has completed.
  if (s.dependentLaunch)
    NVVM::GriddepcontrolOp::create(b, NVVM::GridDepActionKind::wait);
  Frame f = bindArguments(b, func, /*dynamicShared=*/true);
  // Split-KV: grid position x serves chunk chunk_order[x] of request
  // chunk_request[chunk] (the decode ABI's chunk arguments).
  Block &args = func.getBody().front();
  f.block = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  if (s.chunked)
    f.block = loadIndex(b, args.getArgument(11), f.block);
  f.req = s.chunked ? loadIndex(b, args.getArgument(8), f.block) : f.block;
  Value qTile = gpu::BlockIdOp::create(b, gpu::Dimension::y);
  Value head = gpu::BlockIdOp::create(b, gpu::Dimension::z);
  if (!s.chunked && classifyMask(variant.getMask()) != CausalMask::None) {
    // Causal: a q tile's keys grow with its index, so the CTAs run the
    // grid's last q tile of every (request, head) first, then the one
    // before, ... (the linear block index renumbered q-tile-slowest,
    // reversed): for equal-length requests the longest start first and the
    // final wave ends evenly.
    Value x = gpu::GridDimOp::create(b, gpu::Dimension::x),
          y = gpu::GridDimOp::create(b, gpu::Dimension::y),
          z = gpu::GridDimOp::create(b, gpu::Dimension::z);
    Value linear = arith::AddIOp::create(
        b, f.block,
        arith::MulIOp::create(
            b, x,
            arith::AddIOp::create(b, qTile,
                                  arith::MulIOp::create(b, y, head))));
    f.block = arith::RemUIOp::create(b, linear, x);
    Value rest = arith::DivUIOp::create(b, linear, x);
    head = arith::RemUIOp::create(b, rest, z);
    Value lastTile = arith::SubIOp::create(b, y, c1);
    qTile =
        arith::SubIOp::create(b, lastTile, arith::DivUIOp::create(b, rest, z));
    f.req = f.block;
  }
  f.kvHead =
      fused ? head : arith::DivUIOp::create(b, head, cIndex(b, g)).getResult();
  Value next = arith::AddIOp::create(b, f.req, c1);
  f.qBegin = loadIndex(b, f.qoIndptr, f.req);
  f.numQ = arith::SubIOp::create(b, loadIndex(b, f.qoIndptr, next), f.qBegin);
  // The request's pages and (split-KV) its chunk's keys: loaded next to
  // qo_indptr, not after the guard below waits for it (one round trip less
  // before the first page ids and copies).
  loadRequestKeys(b, f);
  loadKeyRange(b, f, next);
  // The tile's first token.
  Value rowBase = arith::MulIOp::create(b, qTile, cIndex(b, tokens));
  // Every thread of a CTA past its request's rows leaves together.
  scf::IfOp guard = scf::IfOp::create(
      b, arith::CmpIOp::create(b, arith::CmpIPredicate::ult, rowBase, f.numQ),
      /*withElseRegion=*/false);
  gpu::ReturnOp::create(b);
  b.setInsertionPointToStart(&guard.getThenRegion().front());

  Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value warp = arith::DivUIOp::create(b, tid, cIndex(b, 32));
  Value lane = arith::RemUIOp::create(b, tid, cIndex(b, 32));
  parts::MmaSync::LaneBase laneBase =
      parts::MmaSync::laneBase(b, lane, cLayout);
  Value laneRow = laneBase.row, laneCol = laneBase.col, tig = laneBase.tig;

  // The lane's rows: the halves of each of the warp's M m16 blocks (row
  // index ri = H * block + half); their token within the request and their
  // query head.
  int64_t rowsPerWarp = s.prefillRows / W, M = rowsPerWarp / mma.atom.m,
          R = H * M;
  // Q in shared memory: always with two m blocks per warp (registers are
  // short next to their O), on request (tiles' q_shared) with one.
  bool qShared = M > 1 || s.prefillQShared;
  SmallVector<Value> rowOf(R), headOf(R), rowValid(R), qpos(R);
  SmallVector<SmallVector<Value>> paramsOf(R);
  Value warpRow = arith::MulIOp::create(b, warp, cIndex(b, rowsPerWarp));
  auto tokenAndHead = [&](LocBuilder &b, Value r) -> std::pair<Value, Value> {
    if (!fused)
      return {arith::AddIOp::create(b, rowBase, r), head};
    Value token = arith::AddIOp::create(
        b, rowBase, arith::DivUIOp::create(b, r, cIndex(b, g)));
    Value headBase = arith::MulIOp::create(b, f.kvHead, cIndex(b, g));
    return {token,
            arith::AddIOp::create(b, headBase,
                                  arith::RemUIOp::create(b, r, cIndex(b, g)))};
  };
  for (int64_t ri = 0; ri < R; ++ri) {
    Value r = arith::AddIOp::create(
        b, warpRow,
        arith::AddIOp::create(
            b, laneRow, cIndex(b, mma.atom.m * (ri / H) + halves[ri % H])));
    std::tie(rowOf[ri], headOf[ri]) = tokenAndHead(b, r);
    paramsOf[ri] = paramValues(b, f, headOf[ri]);
    rowValid[ri] =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, rowOf[ri], f.numQ);
    qpos[ri] = arith::SubIOp::create(
        b, arith::AddIOp::create(b, rowOf[ri], f.numKv), f.numQ);
  }

  auto pairType = VectorType::get({2}, s.element);
  Value zeroF = cF32(b, 0.0f);

  // The staging ring [slot][K or V][key][D + 8], then (qShared) the Q tile
  // [row][D + 8].
  auto workgroup =
      gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  Value ring = memref::ViewOp::create(
      b,
      MemRefType::get({S, 2, KV, rowStride}, s.element,
                      MemRefLayoutAttrInterface(), workgroup),
      f.buf, c0, ValueRange{});
  Value ringBase = arith::IndexCastOp::create(
      b, b.getI64Type(),
      memref::ExtractAlignedPointerAsIndexOp::create(b, f.buf));
  int64_t ringBytes = prefillSharedMemoryBytes(KV, D, S, elementBytes, 0, 1);
  int64_t threads = 32 * W;
  if (Dp != D)
    zeroPaddingColumns(b, f.buf, s.element,
                       S * 2 * KV + (qShared ? s.prefillRows : 0), rowStride, D,
                       tid, threads);
  auto sharedPtr = [&](LocBuilder &b, Value address) -> Value {
    return LLVM::IntToPtrOp::create(
        b, LLVM::LLVMPointerType::get(ctx, /*shared=*/3), address);
  };
  Type nvgpuToken = nvgpu::DeviceAsyncTokenType::get(ctx);
  // Thread tid's 16-byte pieces p0 + tid (p0 = 0, threads, ...) of `pieces`
  // (fn gets the piece and p0).
  auto forEachPiece = [&](LocBuilder &b, int64_t pieces,
                          function_ref<void(LocBuilder &, Value, int64_t)> fn) {
    for (int64_t p0 = 0; p0 < pieces; p0 += threads) {
      Value piece = arith::AddIOp::create(b, tid, cIndex(b, p0));
      if (p0 + threads <= pieces) {
        fn(b, piece, p0);
        continue;
      }
      scf::IfOp::create(b,
                        arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                              piece, cIndex(b, pieces)),
                        [&](OpBuilder &iob, Location loc) {
                          LocBuilder ib(loc, iob);
                          fn(ib, piece, p0);
                          scf::YieldOp::create(ib);
                        });
    }
  };
  // 16 bytes from `src` of `pool` to `dst` of `view`: cp.async, or (sm_75)
  // a load and a store.
  auto copy16 = [&](LocBuilder &b, Value view, ValueRange dst, Value pool,
                    ValueRange src) {
    if (s.turing)
      vector::StoreOp::create(b, loadRaw(b, pool, src), view, dst,
                              /*nontemporal=*/false, llvm::MaybeAlign(16));
    else
      nvgpu::DeviceAsyncCopyOp::create(
          b, view, dst, pool, src, b.getIndexAttr(kVec),
          /*srcElements=*/Value(), /*bypassL1=*/b.getUnitAttr());
  };

  // Q's A fragments for k-step c (head dims 16c..16c+15) of m block mb:
  // the atom's A layout (rows gid / gid+8, columns 2tig (+1) and 2tig + 8
  // (+1)). With one m block (and no q_shared) they stay in registers for the
  // whole key loop; with two (32 rows per warp) they would not fit next to O,
  // so the tile waits in shared memory (one cp.async group ahead of the K/V
  // ring's) and each k-step reloads them by ldmatrix (FlashAttention-2's
  // layout).
  SmallVector<std::array<Value, 4>> qFrag;
  Value qTileBase, qToken;
  if (qShared) {
    Value qView = memref::ViewOp::create(
        b,
        MemRefType::get({s.prefillRows, rowStride}, s.element,
                        MemRefLayoutAttrInterface(), workgroup),
        f.buf, cIndex(b, ringBytes), ValueRange{});
    Value lastRow = arith::SubIOp::create(
        b, arith::AddIOp::create(b, f.qBegin, f.numQ), c1);
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
          Value qposOf = arith::SubIOp::create(
              b, arith::AddIOp::create(b, token, f.numKv), f.numQ);
          SmallVector<Value> params = paramValues(b, f, qHead);
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
        arith::IndexCastOp::create(
            b, b.getI64Type(), arith::AddIOp::create(b, qRingStart, lbytes)));
  } else {
    Value zeroPair = arith::ConstantOp::create(
        b, DenseElementsAttr::get(pairType, b.getZeroAttr(s.element)));
    for (int64_t c = 0; c < kSteps; ++c) {
      std::array<Value, 4> frag;
      for (int64_t k = 0; k < aLayout.registers(); ++k) {
        // Register k: the pair at this offset from the lane's base.
        parts::FragmentCoord at = aLayout.offsets[k * aLayout.perRegister];
        int64_t half = halfOf(at.row), col = mma.atom.k * c + at.col;
        // The padded k-step's columns past D are zeros.
        if (col >= D) {
          frag[k] = mma.operand(b, zeroPair);
          continue;
        }
        Value qRow = arith::AddIOp::create(b, f.qBegin, rowOf[half]);
        Value row = arith::MinUIOp::create(
            b, qRow,
            arith::SubIOp::create(b, arith::AddIOp::create(b, f.qBegin, f.numQ),
                                  c1));
        Value d = arith::AddIOp::create(b, laneCol, cIndex(b, col));
        Value pair =
            hooks.hasQuery()
                ? hookedQueryPiece(b, f.q, row, headOf[half], d, qpos[half],
                                   paramsOf[half], 2)
                : vector::LoadOp::create(b, pairType, f.q,
                                         ValueRange{row, headOf[half], d})
                      .getResult();
        frag[k] = mma.operand(
            b, arith::SelectOp::create(b, rowValid[half], pair, zeroPair));
      }
      qFrag.push_back(frag);
    }
  }

  // A causal mask hides every key past the CTA's last query position:
  // those tiles are skipped (they would add exp2(-inf) = 0 and rescale by 1).
  Value kLoopEnd = f.kEnd;
  CausalMask causal = classifyMask(variant.getMask());
  if (causal != CausalMask::None) {
    Value lastRow = arith::SubIOp::create(
        b,
        arith::MinUIOp::create(
            b, arith::AddIOp::create(b, rowBase, cIndex(b, tokens)), f.numQ),
        c1);
    Value lastPos = arith::AddIOp::create(b, lastRow, f.numKv);
    Value visible =
        arith::SubIOp::create(b, lastPos, arith::SubIOp::create(b, f.numQ, c1));
    kLoopEnd = arith::MinSIOp::create(b, arith::MaxSIOp::create(b, visible, c0),
                                      f.kEnd);
  }
  // Raw cp.async sources (sm_80+, pools with contiguous pages): each thread
  // keeps one 16-byte column of its keys, so its global base (pool + head +
  // column) and shared offset are loop invariant; a piece then costs the
  // page id load, 32-bit key arithmetic and one wide multiply (memref
  // indexing would linearize every piece in 64 bits). Where a row's pieces
  // do not divide the threads (head dims 72, 96, ...), the last
  // threads % chunksPerRow threads sit the copies out.
  auto kPoolType = cast<MemRefType>(f.kPool.getType());
  SmallVector<int64_t> poolStrides;
  int64_t poolOffset = 0;
  int64_t copyThreads = threads - threads % chunksPerRow;
  bool rawCopies =
      !s.turing &&
      succeeded(kPoolType.getStridesAndOffset(poolStrides, poolOffset)) &&
      poolOffset == 0 && poolStrides.size() == 4 &&
      poolStrides[0] == P * poolStrides[1] && poolStrides[3] == 1 &&
      cast<MemRefType>(f.vPool.getType()) == kPoolType;
  // With at most 32 pages under a tile, lane L of every warp holds the id of
  // the tile's L-th page, loaded one tile ahead by the staged loop (the
  // load's latency hides behind a tile's math), and a piece takes its page
  // id by a shuffle instead of a dependent global load.
  bool warpPages = rawCopies && (KV - 1) / P + 2 <= 32;
  // Tiles aligned to pages whose copy passes each stay in one page -- the
  // tile inside one page, or whole pages per tile and a whole number of
  // passes (rowsPerPass rows each) per page: a thread's rows of one page lie
  // at fixed strides from its first.
  int64_t rowsPerPass = copyThreads / chunksPerRow;
  bool pagedPasses = rawCopies && warpPages &&
                     (P % KV == 0 || (KV % P == 0 && P % rowsPerPass == 0));
  // Tiles of KV keys from kBegin (0 unless split-KV). A split chunk's tiles
  // start at its first key rounded down to a page (or, inside a page, tile)
  // boundary where that keeps passes in one page; keys before the chunk are
  // masked like those past its end.
  bool alignedChunks = s.chunked && pagedPasses;
  Value kTileBegin = f.kBegin;
  if (alignedChunks)
    kTileBegin = arith::SubIOp::create(
        b, f.kBegin,
        arith::RemUIOp::create(b, f.kBegin, cIndex(b, std::min(KV, P))));
  Value span = s.chunked
                   ? arith::MaxSIOp::create(
                         b, arith::SubIOp::create(b, kLoopEnd, kTileBegin), c0)
                   : kLoopEnd;
  Value spanUp = arith::AddIOp::create(b, span, cIndex(b, KV - 1));
  Value numTiles = arith::DivUIOp::create(b, spanUp, cIndex(b, KV));
  Value lastKey = arith::SubIOp::create(b, f.kEnd, c1);
  // Tile `it`'s first key.
  auto tileStart = [&](LocBuilder &b, Value it) -> Value {
    return arith::AddIOp::create(b, kTileBegin,
                                 arith::MulIOp::create(b, it, cIndex(b, KV)));
  };
  Value kThreadBase, vThreadBase, copyDst;
  auto cI64 = [&](LocBuilder &b, int64_t v) -> Value {
    return arith::ConstantOp::create(b, b.getI64IntegerAttr(v));
  };
  auto cI32 = [&](LocBuilder &b, int64_t v) -> Value {
    return arith::ConstantOp::create(b, b.getI32IntegerAttr(v));
  };
  auto toI64 = [&](LocBuilder &b, Value v) -> Value {
    return arith::IndexCastOp::create(b, b.getI64Type(), v);
  };
  auto toI32 = [&](LocBuilder &b, Value v) -> Value {
    return arith::IndexCastOp::create(b, i32, v);
  };
  if (rawCopies) {
    Value key = arith::DivUIOp::create(b, tid, cIndex(b, chunksPerRow));
    Value chunk = arith::RemUIOp::create(b, tid, cIndex(b, chunksPerRow));
    Value col = arith::MulIOp::create(b, chunk, cIndex(b, kVec));
    Value headCol = arith::AddIOp::create(
        b, arith::MulIOp::create(b, f.kvHead, cIndex(b, poolStrides[2])), col);
    Value inRow =
        toI64(b, arith::MulIOp::create(b, headCol, cIndex(b, elementBytes)));
    auto threadBase = [&](Value pool) -> Value {
      return arith::AddIOp::create(
          b, toI64(b, memref::ExtractAlignedPointerAsIndexOp::create(b, pool)),
          inRow);
    };
    kThreadBase = threadBase(f.kPool);
    vThreadBase = threadBase(f.vPool);
    Value keyCol = arith::AddIOp::create(
        b, arith::MulIOp::create(b, key, cIndex(b, rowStride)), col);
    copyDst =
        toI64(b, arith::MulIOp::create(b, keyCol, cIndex(b, elementBytes)));
  }
  Value lane32 = toI32(b, lane);
  auto pagesOf = [&](LocBuilder &b, Value it) -> SmallVector<Value> {
    if (!warpPages)
      return {};
    Value t0 = toI32(b, tileStart(b, it));
    Value firstSlot = arith::AddIOp::create(
        b, arith::DivUIOp::create(b, t0, cI32(b, P)), lane32);
    Value last = toI32(b, lastKey);
    Value slot = arith::MinUIOp::create(
        b, firstSlot, arith::DivUIOp::create(b, last, cI32(b, P)));
    return {memref::LoadOp::create(
        b, f.indices,
        ValueRange{arith::IndexCastUIOp::create(
            b, b.getIndexType(),
            arith::AddIOp::create(b, toI32(b, f.pageBegin), slot))})};
  };
  // Tile `it`'s raw copies as passes (pass p: the K and V pieces p *
  // copyThreads + tid), emitted by the returned function wherever the caller
  // places them. With `valid` false (a tile past the last) they read nothing
  // and write 16 zero bytes each into that tile's slot, whose last tile every
  // warp finished before the iteration's barrier: branch-free, so they can
  // sit between another tile's MMAs.
  int64_t pieces = KV * chunksPerRow,
          copyPasses = (pieces + copyThreads - 1) / copyThreads;
  auto rawTile = [&](LocBuilder &b, Value it, ArrayRef<Value> pages,
                     Value valid, bool withK = true,
                     bool withV =
                         true) -> std::function<void(LocBuilder &, int64_t)> {
    Value slot = arith::RemUIOp::create(b, it, cIndex(b, S));
    Value t32 = toI32(b, tileStart(b, it));
    Value threadDst = arith::AddIOp::create(b, ringBase, copyDst);
    Value slot64 = toI64(b, slot);
    Value dst = sharedPtr(
        b, arith::AddIOp::create(
               b, threadDst,
               arith::MulIOp::create(
                   b, slot64, cI64(b, 2 * KV * rowStride * elementBytes))));
    Value firstKey = arith::AddIOp::create(
        b, t32,
        toI32(b, arith::DivUIOp::create(b, tid, cIndex(b, chunksPerRow))));
    Value last32 = toI32(b, lastKey);
    // The per-piece path's page lookups (the per-page path needs neither).
    Value pageBegin32, firstPage;
    if (!pagedPasses) {
      pageBegin32 = toI32(b, f.pageBegin);
      firstPage = arith::DivUIOp::create(b, t32, cI32(b, P));
    }
    Value size;
    if (valid && !pagedPasses) {
      Value full = cI32(b, 16);
      size = arith::SelectOp::create(b, valid, full, cI32(b, 0));
    }
    Value page0 = warpPages ? pages[0] : Value();
    // With pagedPasses, page g of the tile is lane g's id (one shuffle per
    // page) and a pass's sources are the page's base for the thread plus a
    // constant (an immediate address offset), the base computed by the
    // page's first pass. Keys past the end read nothing (src-size 0: zero
    // fill) instead of repeating the last key; their addresses still lie in
    // the tile's last page (or the request's, for pages past it).
    auto pageBases =
        std::make_shared<SmallVector<Value>>(P >= KV ? 1 : KV / P, Value());
    return [=](LocBuilder &b, int64_t pass) {
      auto globalPtr = LLVM::LLVMPointerType::get(ctx, /*global=*/1);
      int64_t p0 = pass * copyThreads, keyOffset = p0 / chunksPerRow;
      // The pass's K and V sources: base + offset (every lane computes the
      // offset, outside the guard of a partial pass: the shuffle needs all
      // lanes).
      Value kBase = kThreadBase, vBase = vThreadBase, offset, bytes = size;
      if (pagedPasses) {
        int64_t pg = P >= KV ? 0 : keyOffset / P;
        Value &pageBase = (*pageBases)[pg];
        if (!pageBase) {
          Value srcLane = cI32(b, pg);
          Value page = gpu::ShuffleOp::create(b, page0, srcLane, cI32(b, 32),
                                              gpu::ShuffleMode::IDX)
                           .getShuffleResult();
          Value pageStart = arith::MulIOp::create(b, page, cI32(b, P));
          Value row = arith::AddIOp::create(
              b, pageStart, arith::RemUIOp::create(b, firstKey, cI32(b, P)));
          Value row64 = arith::ExtUIOp::create(b, b.getI64Type(), row);
          pageBase = arith::MulIOp::create(
              b, row64, cI64(b, poolStrides[1] * elementBytes));
        }
        Value inRange = arith::CmpIOp::create(
            b, arith::CmpIPredicate::sle,
            arith::AddIOp::create(b, firstKey, cI32(b, keyOffset)), last32);
        if (valid)
          inRange = arith::AndIOp::create(b, inRange, valid);
        Value full = cI32(b, 16);
        bytes = arith::SelectOp::create(b, inRange, full, cI32(b, 0));
        kBase = arith::AddIOp::create(b, kThreadBase, pageBase);
        vBase = arith::AddIOp::create(b, vThreadBase, pageBase);
        offset = cI64(b, (keyOffset - pg * P) * poolStrides[1] * elementBytes);
      } else {
        Value j = arith::MinSIOp::create(
            b, arith::AddIOp::create(b, firstKey, cI32(b, keyOffset)), last32);
        Value pageOfKey = arith::DivUIOp::create(b, j, cI32(b, P));
        Value page;
        if (warpPages) {
          Value srcLane = arith::SubIOp::create(b, pageOfKey, firstPage);
          page = gpu::ShuffleOp::create(b, page0, srcLane, cI32(b, 32),
                                        gpu::ShuffleMode::IDX)
                     .getShuffleResult();
        } else {
          page = memref::LoadOp::create(
              b, f.indices,
              ValueRange{arith::IndexCastUIOp::create(
                  b, b.getIndexType(),
                  arith::AddIOp::create(b, pageBegin32, pageOfKey))});
        }
        Value pageStart = arith::MulIOp::create(b, page, cI32(b, P));
        Value row = arith::AddIOp::create(
            b, pageStart, arith::RemUIOp::create(b, j, cI32(b, P)));
        Value row64 = arith::ExtUIOp::create(b, b.getI64Type(), row);
        offset = arith::MulIOp::create(b, row64,
                                       cI64(b, poolStrides[1] * elementBytes));
      }
      auto copies = [&](LocBuilder &b) {
        for (int64_t kind = 0; kind < 2; ++kind) {
          if (!(kind ? withV : withK))
            continue;
          Value src = LLVM::IntToPtrOp::create(
              b, globalPtr,
              Value(arith::AddIOp::create(b, kind ? vBase : kBase, offset)));
          int64_t dstOffset =
              (kind * KV + keyOffset) * rowStride * elementBytes;
          Value d = LLVM::GEPOp::create(
              b, dst.getType(), b.getI8Type(), dst,
              ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(dstOffset)});
          NVVM::CpAsyncOp::create(b, d, src, 16u,
                                  NVVM::LoadCacheModifierKind::CG, bytes);
        }
      };
      if (copyThreads == threads && p0 + threads <= pieces) {
        copies(b);
        return;
      }
      // The pass's pieces: p0 .. p0 + min(copyThreads, pieces - p0) - 1.
      Value piece = arith::AddIOp::create(b, tid, cIndex(b, p0));
      int64_t passEnd = p0 + std::min(copyThreads, pieces - p0);
      scf::IfOp::create(b,
                        arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                              piece, cIndex(b, passEnd)),
                        [&](OpBuilder &iob, Location loc) {
                          LocBuilder ib(loc, iob);
                          copies(ib);
                          scf::YieldOp::create(ib);
                        });
    };
  };
  // Copies of tile `it` into slot it % S: pieces (key, 16-byte chunk) of K
  // and V, thread t taking t, t + threads, ...; keys past the end copy the
  // last key (valid memory; masked), or zeros on the per-page path.
  auto issue = [&](LocBuilder &b, Value it, ArrayRef<Value> pages) {
    if (rawCopies) {
      auto pass = rawTile(b, it, pages, Value());
      for (int64_t p = 0; p < copyPasses; ++p)
        pass(b, p);
      return;
    }
    Value slot = arith::RemUIOp::create(b, it, cIndex(b, S));
    Value t0 = tileStart(b, it);
    forEachPiece(
        b, KV * chunksPerRow, [&](LocBuilder &b, Value piece, int64_t) {
          Value key = arith::DivUIOp::create(b, piece, cIndex(b, chunksPerRow));
          Value chunk =
              arith::RemUIOp::create(b, piece, cIndex(b, chunksPerRow));
          Value j = arith::MinSIOp::create(b, arith::AddIOp::create(b, t0, key),
                                           lastKey);
          Value page = loadIndex(
              b, f.indices,
              arith::AddIOp::create(
                  b, f.pageBegin, arith::DivUIOp::create(b, j, cIndex(b, P))));
          Value inPage = arith::RemUIOp::create(b, j, cIndex(b, P));
          Value col = arith::MulIOp::create(b, chunk, cIndex(b, kVec));
          for (int64_t kind = 0; kind < 2; ++kind)
            copy16(b, ring, {slot, cIndex(b, kind), key, col},
                   kind ? f.vPool : f.kPool, {page, inPage, f.kvHead, col});
        });
  };
  // ldmatrix.x4 at `offset` bytes past the shared pointer `base` of the
  // lane's row (a GEP, so the offset folds into the instruction).
  auto ldmatrix = [&](LocBuilder &b, Value base, int64_t offset,
                      bool transpose) {
    Value ptr = LLVM::GEPOp::create(
        b, base.getType(), b.getI8Type(), base,
        ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(offset)});
    return mma.loadMatrixX4(b, ptr, transpose);
  };
  // The lane's ldmatrix rows in a ring slot, in bytes: K (matrices: k half
  // lmLow, n-tile lmHigh) and V (key half lmLow, n-tile lmHigh).
  Value lmRow = arith::RemUIOp::create(b, lane, cIndex(b, 8));
  Value lmMatrix = arith::DivUIOp::create(b, lane, cIndex(b, 8));
  Value lmLow = arith::RemUIOp::create(b, lmMatrix, cIndex(b, 2));
  Value lmHigh = arith::DivUIOp::create(b, lmMatrix, cIndex(b, 2));
  auto laneBytes = [&](LocBuilder &b, Value rowBlock, Value colBlock) {
    Value row = arith::AddIOp::create(
        b, arith::MulIOp::create(b, rowBlock, cIndex(b, 8)), lmRow);
    Value rowElement = arith::MulIOp::create(b, row, cIndex(b, rowStride));
    Value element = arith::AddIOp::create(
        b, rowElement, arith::MulIOp::create(b, colBlock, cIndex(b, 8)));
    return arith::IndexCastOp::create(
        b, b.getI64Type(),
        arith::MulIOp::create(b, element, cIndex(b, elementBytes)));
  };
  Value kLane = laneBytes(b, lmHigh, lmLow),
        vLane = laneBytes(b, lmLow, lmHigh);
  int64_t tileBytes = KV * rowStride * elementBytes;
  // The lane's K (kind 0) or V (kind 1) row pointer in slot `slot`.
  auto slotPtr = [&](LocBuilder &b, Value slot, int64_t kind) {
    Value slot64 = arith::IndexCastOp::create(b, b.getI64Type(), slot);
    Value slotBytes = arith::MulIOp::create(
        b, slot64,
        arith::ConstantOp::create(b, b.getI64IntegerAttr(2 * tileBytes)));
    Value base = arith::AddIOp::create(
        b, arith::AddIOp::create(b, ringBase, slotBytes), kind ? vLane : kLane);
    if (kind)
      base = arith::AddIOp::create(
          b, base,
          arith::ConstantOp::create(b, b.getI64IntegerAttr(tileBytes)));
    return sharedPtr(b, base);
  };
  Value qTilePtr = qShared ? sharedPtr(b, qTileBase) : Value();
  // Q's A fragments of k-step c for every m block.
  auto qFragments = [&](LocBuilder &b, int64_t c) {
    SmallVector<std::array<Value, 4>> frags;
    if (!qShared) {
      frags.push_back(qFrag[c]);
      return frags;
    }
    for (int64_t mb = 0; mb < M; ++mb) {
      int64_t offset = (16 * mb * rowStride + 16 * c) * elementBytes;
      frags.push_back(ldmatrix(b, qTilePtr, offset, /*transpose=*/false));
    }
    return frags;
  };
  // For every m block mb: acc0[mb] += a[mb] . B0, acc1[mb] += a[mb] . B1
  // with the B fragments of two n-tiles from one ldmatrix.x4 at the lane's
  // `address` (matrices 0, 1: B0; 2, 3: B1), shared by the m blocks.
  auto productPairs = [&](LocBuilder &b, ArrayRef<std::array<Value, 4>> a,
                          Value base, int64_t offset, bool transpose,
                          function_ref<Value *(int64_t)> acc0,
                          function_ref<Value *(int64_t)> acc1) {
    std::array<Value, 4> w = ldmatrix(b, base, offset, transpose);
    ArrayRef<Value> b0 = ArrayRef<Value>(w).take_front(2),
                    b1 = ArrayRef<Value>(w).drop_front(2);
    for (int64_t mb = 0; mb < M; ++mb) {
      mma.build(b, a[mb], b0, MutableArrayRef<Value>(acc0(mb), 4));
      mma.build(b, a[mb], b1, MutableArrayRef<Value>(acc1(mb), 4));
    }
  };

  // Scores enter the softmax in the base-2 domain as val * factor: without
  // a logits hook val is the raw Q.K^T product (factor = scale * log2(e)),
  // so max and exp2(val * factor - m) cost one max and one fma per score;
  // with a hook val = hook(raw * scale) * log2(e).
  bool rawScores = variant.getLogits().empty() && s.scale > 0;
  float factor = rawScores ? s.scale * kLog2E : 1.0f;
  // Tiles that need no mask: every key is < kEnd and, where the mask is
  // exactly causal, <= the CTA's first query position (signed: rows with
  // fewer keys before them than rows have negative positions).
  bool hasMask = !variant.getMask().empty();
  bool causalOnly = causal == CausalMask::Exact;
  Value firstQpos = arith::SubIOp::create(
      b, arith::AddIOp::create(b, rowBase, f.numKv), f.numQ);

  // State per lane: m and l of its R rows, O (M x Dp / 8 n-tiles x 4).
  int64_t oTiles = Dp / mma.atom.n, sTiles = KV / mma.atom.n;
  // Sigmoid keeps m = 0 (its states merge by sums).
  SmallVector<Value> inits(R, hooks.sigmoid() ? zeroF : negInf(b));
  inits.append(R, zeroF);
  inits.append(M * cLayout.elements() * oTiles, zeroF);
  // A row's maximum or sum as a balanced tree: depth log2(n) instead of a
  // chain of n dependent instructions (the softmax is latency-bound).
  auto pairwise = [](LocBuilder &b, ArrayRef<Value> values,
                     function_ref<Value(LocBuilder &, Value, Value)> combine) {
    SmallVector<Value> level(values);
    while (level.size() > 1) {
      SmallVector<Value> up;
      for (size_t i = 0; i + 1 < level.size(); i += 2)
        up.push_back(combine(b, level[i], level[i + 1]));
      if (level.size() % 2)
        up.push_back(level.back());
      level = std::move(up);
    }
    return level.front();
  };
  SmallVector<Value> noPages;
  if (warpPages)
    noPages.push_back(cI32(b, 0));
  // The lazily rescaled state (m, l, O) of the lane's rows before a tile
  // of base-2 scores x[ri] (see tileBody).
  auto lazyRescale = [&](LocBuilder &b, ArrayRef<SmallVector<Value>> x,
                         ValueRange carried) -> SmallVector<Value> {
    SmallVector<Value> m(carried.begin(), carried.begin() + R),
        l(carried.begin() + R, carried.begin() + 2 * R), tileMax(R);
    Value grows;
    for (int64_t ri = 0; ri < R; ++ri) {
      Value tm = pairwise(b, x[ri], [&](LocBuilder &b, Value u, Value v) {
        return arith::MaxNumFOp::create(b, u, v).getResult();
      });
      for (int32_t off : {1, 2})
        tm = arith::MaxNumFOp::create(b, tm, shuffleXor(b, tm, off));
      if (factor != 1.0f)
        tm = arith::MulFOp::create(b, tm, cF32(b, factor));
      tileMax[ri] = tm;
      Value up = arith::CmpFOp::create(
          b, arith::CmpFPredicate::OGT, tm,
          arith::AddFOp::create(b, m[ri], cF32(b, kLazyRescale)));
      grows = grows ? arith::OrIOp::create(b, grows, up).getResult() : up;
    }
    Value rescale = NVVM::VoteSyncOp::create(
        b, b.getI1Type(), arith::ConstantOp::create(b, b.getI32IntegerAttr(-1)),
        grows, NVVM::VoteSyncKindAttr::get(ctx, NVVM::VoteSyncKind::any));
    int64_t oValues = M * cLayout.elements() * oTiles;
    return buildIf(
        b, rescale,
        [&](LocBuilder &b) {
          SmallVector<Value> next, corr(R);
          for (int64_t ri = 0; ri < R; ++ri) {
            Value mNew = arith::MaxNumFOp::create(b, m[ri], tileMax[ri]);
            Value noMax = isNegInf(b, mNew);
            Value mSafe =
                arith::SelectOp::create(b, noMax, cF32(b, 0.0f), mNew);
            corr[ri] = exp2Ftz(b, arith::SubFOp::create(b, m[ri], mSafe));
            next.push_back(mNew);
          }
          for (int64_t ri = 0; ri < R; ++ri)
            next.push_back(arith::MulFOp::create(b, l[ri], corr[ri]));
          for (int64_t i = 0; i < oValues; ++i) {
            int64_t mb = i / (cLayout.elements() * oTiles),
                    e = i % cLayout.elements();
            int64_t half = halfOf(cLayout.offsets[e].row);
            next.push_back(arith::MulFOp::create(b, carried[2 * R + i],
                                                 corr[H * mb + half]));
          }
          return next;
        },
        [&](LocBuilder &) {
          return SmallVector<Value>(carried.begin(),
                                    carried.begin() + 2 * R + oValues);
        });
  };
  // One key tile: S = Q.K^T, online softmax, O += P.V. `copiesAt(b, c)`,
  // when given, emits copies of a later tile after k-step c of Q.K^T.
  // `afterScores(b)`, when given, runs between Q.K^T and the softmax (the
  // one-stage schedule's second wait); `pvCopiesAt(b, kk)` after k-step kk
  // of P.V.
  auto tileBody = [&](LocBuilder &b, Value it, ValueRange carried,
                      function_ref<void(LocBuilder &, int64_t)> copiesAt,
                      function_ref<void(LocBuilder &)> afterScores = nullptr,
                      function_ref<void(LocBuilder &, int64_t)> pvCopiesAt =
                          nullptr) -> SmallVector<Value> {
    Value slot = arith::RemUIOp::create(b, it, cIndex(b, S));
    Value t0 = tileStart(b, it);
    // A key hook transforms the landed K tile in place, between the barrier
    // that made it visible (every schedule calls tileBody after one; the
    // copies in flight fill other slots, or V) and a second one before the
    // ldmatrix reads. The slot's last readers (tile it - S) passed the
    // first barrier.
    if (hooks.hasKey()) {
      hookKeyTile(b, ring, slot, t0, tid, f.kvHead, paramsOf[0]);
      gpu::BarrierOp::create(b);
    }
    // S = Q.K^T: n-tiles of 8 keys; ldmatrix.x4 gives the B fragments
    // of two n-tiles (matrices: k half lmLow, n-tile lmHigh).
    // score[mb * sTiles + nt]: 4 accumulators.
    SmallVector<std::array<Value, 4>> score(M * sTiles);
    for (auto &acc : score)
      acc = {zeroF, zeroF, zeroF, zeroF};
    Value kPtr = slotPtr(b, slot, 0), vPtr = slotPtr(b, slot, 1);
    for (int64_t c = 0; c < kSteps; ++c) {
      SmallVector<std::array<Value, 4>> a = qFragments(b, c);
      for (int64_t nt = 0; nt < sTiles; nt += 2) {
        productPairs(
            b, a, kPtr,
            (mma.atom.n * nt * rowStride + mma.atom.k * c) * elementBytes,
            /*transpose=*/false,
            [&](int64_t mb) { return score[mb * sTiles + nt].data(); },
            [&](int64_t mb) { return score[mb * sTiles + nt + 1].data(); });
      }
      if (copiesAt)
        copiesAt(b, c);
    }
    if (afterScores)
      afterScores(b);
    // The key of column e of n-tile nt of the lane's rows.
    auto keyOf = [&](LocBuilder &b, int64_t nt, int64_t e) -> Value {
      return arith::AddIOp::create(
          b, t0,
          arith::AddIOp::create(b, laneCol, cIndex(b, mma.atom.n * nt + e)));
    };
    // val of every score: x[ri][laneCols nt + e] (row ri, key keyOf(nt, e)).
    SmallVector<SmallVector<Value>> x(R);
    for (int64_t ri = 0; ri < R; ++ri)
      for (int64_t nt = 0; nt < sTiles; ++nt)
        for (int64_t e = 0; e < laneCols; ++e) {
          Value raw = score[(ri / H) * sTiles + nt]
                           [cLayout.elementAt(halves[ri % H], e)];
          if (rawScores) {
            x[ri].push_back(raw);
            continue;
          }
          Value j = keyOf(b, nt, e);
          // Hooks see natural-domain logits.
          Value natural = arith::MulFOp::create(b, raw, cF32(b, s.scale));
          Value v =
              hooks.logits(b, natural, qpos[ri], j, headOf[ri], paramsOf[ri]);
          x[ri].push_back(arith::MulFOp::create(b, v, cF32(b, kLog2E)));
        }
    // Masking: keys past kEnd and the mask hook's; skipped on tiles that
    // need none.
    auto masked = [&](LocBuilder &b) {
      SmallVector<Value> flat;
      for (int64_t ri = 0; ri < R; ++ri)
        for (int64_t nt = 0; nt < sTiles; ++nt)
          for (int64_t e = 0; e < laneCols; ++e) {
            Value j = keyOf(b, nt, e);
            Value keep =
                arith::CmpIOp::create(b, arith::CmpIPredicate::slt, j, f.kEnd);
            if (alignedChunks)
              keep = arith::AndIOp::create(
                  b, keep,
                  arith::CmpIOp::create(b, arith::CmpIPredicate::sge, j,
                                        f.kBegin));
            if (hasMask) {
              Value visible =
                  hooks.mask(b, qpos[ri], j, headOf[ri], paramsOf[ri]);
              keep = arith::AndIOp::create(b, keep, visible);
            }
            flat.push_back(arith::SelectOp::create(
                b, keep, x[ri][laneCols * nt + e], negInf(b)));
          }
      return flat;
    };
    SmallVector<Value> flat;
    if (hasMask && !causalOnly) {
      flat = masked(b);
    } else {
      Value tEnd = arith::AddIOp::create(b, t0, cIndex(b, KV));
      Value full =
          arith::CmpIOp::create(b, arith::CmpIPredicate::ule, tEnd, f.kEnd);
      if (alignedChunks)
        full = arith::AndIOp::create(
            b, full,
            arith::CmpIOp::create(b, arith::CmpIPredicate::uge, t0, f.kBegin));
      if (causalOnly)
        full = arith::AndIOp::create(
            b, full,
            arith::CmpIOp::create(b, arith::CmpIPredicate::sle, tEnd,
                                  arith::AddIOp::create(b, firstQpos, c1)));
      flat = llvm::to_vector(buildIf(
          b, full,
          [&](LocBuilder &) {
            SmallVector<Value> all;
            for (auto &row : x)
              all.append(row.begin(), row.end());
            return all;
          },
          masked));
    }
    for (int64_t ri = 0; ri < R; ++ri)
      for (int64_t i = 0; i < laneCols * sTiles; ++i)
        x[ri][i] = flat[ri * laneCols * sTiles + i];

    // Online softmax of the lane's rows over the tile (base 2), with the
    // running maximum kept lazily: a warp rescales O and l only when
    // one of its rows' tile maximum exceeds that row's reference by more
    // than kLazyRescale (then every row moves to max(reference, tile maximum)).
    // Otherwise P = exp2(x - m) <= 2^kLazyRescale: exact in f32 sums
    // and bf16 P, and O / l and lse = m + log l use the same m. Once the
    // maxima settle most tiles skip the 4 * oTiles * M multiplies.
    // Sigmoid: p = sigmoid(s) needs no maximum (m stays 0) and no rescale.
    int64_t oValues = M * cLayout.elements() * oTiles;
    SmallVector<Value> m(carried.begin(), carried.begin() + R),
        l(carried.begin() + R, carried.begin() + 2 * R), negM(R);
    SmallVector<Value> state =
        hooks.sigmoid() ? SmallVector<Value>(carried.begin(),
                                             carried.begin() + 2 * R + oValues)
                        : lazyRescale(b, x, carried);
    for (int64_t ri = 0; ri < R; ++ri) {
      m[ri] = state[ri];
      l[ri] = state[R + ri];
      if (hooks.sigmoid())
        continue;
      Value noMax = isNegInf(b, m[ri]);
      negM[ri] = arith::NegFOp::create(
          b, arith::SelectOp::create(b, noMax, cF32(b, 0.0f), m[ri]));
    }
    // P as A fragments (FlashAttention-2: the lane's accumulators of
    // nPerK n-tiles are the A fragment of one P.V k-step):
    // pFrag[mb * sTiles / nPerK + kk] covers n-tiles nPerK kk.. of m block mb.
    SmallVector<std::array<Value, 4>> pFrag(M * sTiles / nPerK);
    SmallVector<SmallVector<Value>> rowP(R);
    for (int64_t ri = 0; ri < R; ++ri)
      for (int64_t nt = 0; nt < sTiles; ++nt) {
        Value p[2];
        for (int64_t e = 0; e < laneCols; ++e) {
          if (hooks.sigmoid()) {
            // sigmoid(s) = 1 / (1 + 2^-x); masked keys (-inf) weigh 0.
            Value x2 = x[ri][laneCols * nt + e];
            if (factor != 1.0f)
              x2 = arith::MulFOp::create(b, x2, cF32(b, factor));
            p[e] = sigmoidBase2(b, x2);
            rowP[ri].push_back(p[e]);
            continue;
          }
          Value arg =
              factor != 1.0f
                  ? math::FmaOp::create(b, x[ri][laneCols * nt + e],
                                        cF32(b, factor), negM[ri])
                        .getResult()
                  : arith::AddFOp::create(b, x[ri][laneCols * nt + e], negM[ri])
                        .getResult();
          p[e] = exp2Ftz(b, arg);
          rowP[ri].push_back(p[e]);
        }
        Value pair = vector::FromElementsOp::create(
            b, VectorType::get({2}, f32), ValueRange{p[0], p[1]});
        int64_t reg =
            aLayout.registerAt(halves[ri % H], mma.atom.n * (nt % nPerK));
        pFrag[(ri / H) * (sTiles / nPerK) + nt / nPerK][reg] =
            mma.operand(b, arith::TruncFOp::create(b, pairType, pair));
      }
    for (int64_t ri = 0; ri < R; ++ri)
      l[ri] = arith::AddFOp::create(
          b, l[ri], pairwise(b, rowP[ri], [&](LocBuilder &b, Value u, Value v) {
            return arith::AddFOp::create(b, u, v).getResult();
          }));
    // O = O * corr + P.V: ldmatrix.trans gives the B fragments of two
    // n-tiles of 8 head dims (matrices: key half lmLow, n-tile lmHigh).
    SmallVector<Value> next(m);
    next.append(l);
    SmallVector<std::array<Value, 4>> o(M * oTiles);
    for (int64_t i = 0; i < oValues; ++i)
      o[i / cLayout.elements()][i % cLayout.elements()] = state[2 * R + i];
    for (int64_t kk = 0; kk < sTiles / nPerK; ++kk) {
      SmallVector<std::array<Value, 4>> a;
      for (int64_t mb = 0; mb < M; ++mb)
        a.push_back(pFrag[mb * (sTiles / nPerK) + kk]);
      for (int64_t nd = 0; nd < oTiles; nd += 2) {
        int64_t at = mma.atom.k * kk * rowStride + mma.atom.n * nd;
        productPairs(
            b, a, vPtr, at * elementBytes,
            /*transpose=*/true,
            [&](int64_t mb) { return o[mb * oTiles + nd].data(); },
            [&](int64_t mb) { return o[mb * oTiles + nd + 1].data(); });
      }
      if (pvCopiesAt)
        pvCopiesAt(b, kk);
    }
    for (auto &acc : o)
      next.append(acc.begin(), acc.end());
    return next;
  };
  ValueRange done;
  auto commit = [&](LocBuilder &b) { NVVM::CpAsyncCommitGroupOp::create(b); };
  auto pagesIf = [&](LocBuilder &b, Value it, ArrayRef<Value> otherwise) {
    return llvm::to_vector(buildIf(
        b, arith::CmpIOp::create(b, arith::CmpIPredicate::slt, it, numTiles),
        [&](LocBuilder &b) { return pagesOf(b, it); },
        [&](LocBuilder &) { return llvm::to_vector(otherwise); }));
  };
  // Passes [k * passes / steps, (k + 1) * passes / steps) of `pass` after
  // step first + k of `steps`: copies spread among the MMAs.
  auto spread = [&](std::function<void(LocBuilder &, int64_t)> &pass,
                    int64_t first, int64_t steps) {
    return [&pass, first, steps, copyPasses](LocBuilder &b, int64_t k) {
      int64_t step = first + k;
      for (int64_t p = (step * copyPasses + steps - 1) / steps;
           p < ((step + 1) * copyPasses + steps - 1) / steps; ++p)
        pass(b, p);
    };
  };
  // Head dim 256: the next tile's copies spread over Q.K^T and P.V alike
  // (the load/store queue throttles issue there).
  bool spreadAll = D >= 256;
  if (rawCopies && S == 1) {
    // One K slot and one V slot (FlashAttention-2's schedule, half the
    // shared memory of two stages): tile it's V copies go out before its
    // Q.K^T, tile it + 1's K copies before its softmax and P.V. Two barriers
    // per tile: at the top (K landed; every warp is done with the V slot)
    // and after Q.K^T (V landed; every warp is done with the K slot). One
    // copy group is in flight at each wait.
    // Tile 0's page ids serve its K copies here and its V copies in the
    // loop (carried).
    SmallVector<Value> firstIds = pagesIf(b, c0, noPages);
    buildIf(
        b, arith::CmpIOp::create(b, arith::CmpIPredicate::slt, c0, numTiles),
        [&](LocBuilder &b) {
          auto kPass = rawTile(b, c0, firstIds, Value(), /*withK=*/true,
                               /*withV=*/false);
          for (int64_t p = 0; p < copyPasses; ++p)
            kPass(b, p);
          return SmallVector<Value>();
        },
        [](LocBuilder &) { return SmallVector<Value>(); });
    commit(b);
    SmallVector<Value> loopInits(inits);
    llvm::append_range(loopInits, firstIds);
    size_t numState = inits.size();
    done = buildFor(
        b, c0, numTiles, loopInits,
        [&](LocBuilder &b, Value it, ValueRange carried) {
          NVVM::CpAsyncWaitGroupOp::create(b, 0);
          gpu::BarrierOp::create(b);
          SmallVector<Value> ids(carried.drop_front(numState));
          Value itNext = arith::AddIOp::create(b, it, c1);
          SmallVector<Value> nextIds = pagesIf(b, itNext, ids);
          // Bursts, as soon as their slot is free: a copy spread among the
          // MMAs would go out just before the wait that needs it.
          auto vPass =
              rawTile(b, it, ids, Value(), /*withK=*/false, /*withV=*/true);
          for (int64_t p = 0; p < copyPasses; ++p)
            vPass(b, p);
          commit(b);
          auto kPass =
              rawTile(b, itNext, nextIds,
                      arith::CmpIOp::create(b, arith::CmpIPredicate::slt,
                                            itNext, numTiles),
                      /*withK=*/true, /*withV=*/false);
          SmallVector<Value> state = tileBody(
              b, it, carried.take_front(numState), nullptr, [&](LocBuilder &b) {
                NVVM::CpAsyncWaitGroupOp::create(b, 0);
                gpu::BarrierOp::create(b);
                for (int64_t p = 0; p < copyPasses; ++p)
                  kPass(b, p);
              });
          commit(b);
          llvm::append_range(state, nextIds);
          return state;
        });
    NVVM::CpAsyncWaitGroupOp::create(b, 0);
  } else if (rawCopies) {
    // Raw copies: the wait and the barrier open each iteration, then the
    // copies of tile it + S - 1 go out between the k-steps of tile it's
    // Q.K^T (and P.V at head dim 256; spread among the MMAs rather than one
    // burst that fills the load/store queue; the slot they refill was last
    // read before the barrier, so no second barrier closes the iteration). The
    // page ids of the tile after travel in the loop's carried values.
    for (int64_t st = 0; st + 1 < S; ++st) {
      Value it = cIndex(b, st);
      buildIf(
          b, arith::CmpIOp::create(b, arith::CmpIPredicate::slt, it, numTiles),
          [&](LocBuilder &b) {
            issue(b, it, pagesOf(b, it));
            return SmallVector<Value>();
          },
          [](LocBuilder &) { return SmallVector<Value>(); });
      commit(b);
    }
    SmallVector<Value> loopInits(inits);
    llvm::append_range(loopInits, pagesIf(b, cIndex(b, S - 1), noPages));
    size_t numState = inits.size();
    done = buildFor(
        b, c0, numTiles, loopInits,
        [&](LocBuilder &b, Value it, ValueRange carried) {
          NVVM::CpAsyncWaitGroupOp::create(b, S - 2);
          gpu::BarrierOp::create(b);
          SmallVector<Value> ids(carried.drop_front(numState));
          Value itIssue = arith::AddIOp::create(b, it, cIndex(b, S - 1));
          Value valid = arith::CmpIOp::create(b, arith::CmpIPredicate::slt,
                                              itIssue, numTiles);
          std::function<void(LocBuilder &, int64_t)> pass =
              rawTile(b, itIssue, ids, valid);
          int64_t steps = kSteps + (spreadAll ? KV / 16 : 0);
          auto qkAt = spread(pass, 0, steps),
               pvAt = spread(pass, kSteps, steps);
          SmallVector<Value> state = tileBody(
              b, it, carried.take_front(numState), qkAt, nullptr,
              spreadAll ? function_ref<void(LocBuilder &, int64_t)>(pvAt)
                        : nullptr);
          commit(b);
          llvm::append_range(
              state, pagesIf(b, arith::AddIOp::create(b, itIssue, c1), ids));
          return state;
        });
    NVVM::CpAsyncWaitGroupOp::create(b, 0);
  } else {
    done = buildStagedLoop(
        b, numTiles, inits, noPages, pagesOf, issue,
        [&](LocBuilder &b) -> Value {
          if (s.turing)
            return Value();
          return nvgpu::DeviceAsyncCreateGroupOp::create(b, nvgpuToken,
                                                         ValueRange{});
        },
        [&](LocBuilder &b, Value, Value token) {
          if (!s.turing)
            nvgpu::DeviceAsyncWaitOp::create(b, token,
                                             b.getI32IntegerAttr(S - 1));
          gpu::BarrierOp::create(b);
        },
        [&](LocBuilder &b, Value it, ValueRange carried) {
          SmallVector<Value> next = tileBody(b, it, carried, nullptr);
          // Every warp is done with this slot before it is refilled.
          gpu::BarrierOp::create(b);
          return next;
        });
    // No copy may still be in flight when the CTA exits (the Q tile's group
    // when the request has no key tile).
    if (qToken)
      nvgpu::DeviceAsyncWaitOp::create(b, qToken, b.getI32IntegerAttr(0));
  }

  // Finish each row: l over the row's 4 lanes; no visible key: O = 0,
  // lse = -inf. O / l leaves in the element type: staged through shared
  // memory where the tile fits the ring, so each lane stores whole 16-byte
  // pieces of a row (the fragments' 4-byte pairs would write half sectors,
  // which cost the split kernels' partial states more than f32 pairs did).
  // Only O's first D columns (chunksPerRow n-tiles of 8) leave the lanes.
  int64_t stageBytes = s.prefillRows * rowStride * elementBytes;
  int64_t stagePieces = rowsPerWarp * chunksPerRow;
  bool staged = stageBytes <= ringBytes;
  Value stage;
  if (staged) {
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
  bool finalForm = hooks.sigmoid() || hooks.hasOutput();
  for (int64_t ri = 0; ri < R; ++ri) {
    Value l = done[R + ri];
    for (int32_t off : {1, 2})
      l = arith::AddFOp::create(b, l, shuffleXor(b, l, off));
    Value empty =
        arith::CmpFOp::create(b, arith::CmpFPredicate::OLE, l, cF32(b, 0.0f));
    Value zeroInv = cF32(b, 0.0f);
    Value inv = arith::SelectOp::create(
        b, empty, zeroInv, arith::DivFOp::create(b, cF32(b, 1.0f), l));
    Value noLse = negInf(b);
    Value mNatural = arith::MulFOp::create(b, done[ri], cF32(b, kLn2));
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
        o = finalOutput(b, o, l, d, headOf[ri]);
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
    // lse (and, unstaged, O) of the row to `row` of oMem / lseMem.
    auto store = [&](LocBuilder &b, Value oMem, Value lseMem, Value row) {
      if (!staged)
        for (int64_t nd = 0; nd < chunksPerRow; ++nd) {
          Value pair = pairAt(b, nd, /*final=*/oMem == f.out);
          vector::StoreOp::create(
              b, pair, oMem,
              ValueRange{row, headOf[ri],
                         arith::AddIOp::create(b, laneCol,
                                               cIndex(b, mma.atom.n * nd))});
        }
      scf::IfOp::create(
          b, arith::CmpIOp::create(b, arith::CmpIPredicate::eq, tig, c0),
          [&](OpBuilder &tob, Location loc) {
            LocBuilder b(loc, tob);
            memref::StoreOp::create(b, lse, lseMem,
                                    ValueRange{row, headOf[ri]});
            scf::YieldOp::create(b);
          });
    };
    scf::IfOp::create(b, rowValid[ri], [&](OpBuilder &iob, Location loc) {
      LocBuilder b(loc, iob);
      storeRow(b, f, rowOf[ri], store);
      scf::YieldOp::create(b);
    });
  }
  if (staged) {
    // The warp's own rows, 16 bytes per lane and store: piece p is row
    // p / chunksPerRow, columns kVec * (p % chunksPerRow).
    NVVM::SyncWarpOp::create(
        b, arith::ConstantOp::create(b, b.getI32IntegerAttr(-1)));
    auto readBack = [&](LocBuilder &b, int64_t p0) {
      Value p = arith::AddIOp::create(b, lane, cIndex(b, p0));
      Value r = arith::AddIOp::create(
          b, warpRow, arith::DivUIOp::create(b, p, cIndex(b, chunksPerRow)));
      Value chunk = arith::RemUIOp::create(b, p, cIndex(b, chunksPerRow));
      Value col = arith::MulIOp::create(b, chunk, cIndex(b, kVec));
      Value token, qHead;
      std::tie(token, qHead) = tokenAndHead(b, r);
      Value inRange =
          arith::CmpIOp::create(b, arith::CmpIPredicate::ult, token, f.numQ);
      Value piece = loadRaw(b, stage, ValueRange{r, col});
      scf::IfOp::create(b, inRange, [&](OpBuilder &iob, Location loc) {
        LocBuilder b(loc, iob);
        storeRow(b, f, token, [&](LocBuilder &b, Value oMem, Value, Value row) {
          vector::StoreOp::create(b, piece, oMem, ValueRange{row, qHead, col},
                                  /*nontemporal=*/false, llvm::MaybeAlign(16));
        });
        scf::YieldOp::create(b);
      });
    };
    for (int64_t p0 = 0; p0 < stagePieces; p0 += 32) {
      if (p0 + 32 <= stagePieces) {
        readBack(b, p0);
        continue;
      }
      // A partial last round (odd chunksPerRow, 16 rows per warp): the
      // lanes past the warp's pieces would read the next warp's rows.
      Value active = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, lane,
                                           cIndex(b, stagePieces - p0));
      scf::IfOp::create(b, active, [&](OpBuilder &iob, Location loc) {
        LocBuilder ib(loc, iob);
        readBack(ib, p0);
        scf::YieldOp::create(ib);
      });
    }
  }
  return func;
}

} // namespace flashir::conversion::decode
