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

#include "PrefillBuilder.h"

#include "flashir/Target/Chip.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

using namespace mlir;

namespace flashir::conversion {

std::string decode::prefillShapeReason(int64_t headDim, int64_t /*group*/) {
  // Rows move in 16-byte pieces; the products pad the head dim to 16 inside
  // the kernel (prefillPaddedHeadDim). Past 256, O's accumulators (D / 2 f32
  // per lane) crowd out the rest. Every group size works: a fused tile holds
  // whole groups (convert-attn-to-gpu fuses only then), else one query head.
  if (headDim < 16 || headDim > 256 || headDim % kVec != 0)
    return "head_dim a multiple of 8 from 16 to 256";
  return "";
}

int64_t decode::prefillSharedMemoryBytes(int64_t kvTile, int64_t headDim,
                                         int64_t stages, int64_t elementBytes,
                                         int64_t qRows, int64_t warps,
                                         bool qShared) {
  return flashir::target::prefillSharedMemoryBytes(
      qRows, kvTile, warps, stages, headDim, elementBytes, qShared);
}

gpu::GPUFuncOp decode::DecodeKernel::buildPrefill(OpBuilder &moduleBuilder,
                                                  StringRef name) {
  return prefill::PrefillBuilder(*this).build(moduleBuilder, name);
}

namespace prefill {

/// Signed predicates only: a query row with fewer keys than rows before it
/// has a negative qpos.
CausalMask classifyMask(Region &mask) {
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

PrefillBuilder::PrefillBuilder(DecodeKernel &kernel)
    : k(kernel), s(kernel.s), hooks(kernel.hooks), ctx(kernel.op.getContext()),
      f32(Float32Type::get(ctx)), D(s.headDim), g(s.group), W(s.warps),
      S(s.stages), KV(s.kvTile), P(s.pageSize),
      elementBytes(s.element.getIntOrFloatBitWidth() / 8),
      mma(parts::MmaSync::atomFor(s.element, s.turing), s.element),
      aLayout(mma.atom.layout(parts::MmaOperand::A)),
      cLayout(mma.atom.layout(parts::MmaOperand::C)) {
  assert(aLayout.rowPerGroup == cLayout.rowPerGroup &&
         aLayout.colPerThread == cLayout.colPerThread &&
         "A and C fragments with one lane base");
  halves = cLayout.rowOffsets();
  H = halves.size();
  laneCols = cLayout.elements() / H;
  nPerK = mma.atom.k / mma.atom.n;
  Dp = flashir::target::prefillPaddedHeadDim(D);
  kSteps = Dp / mma.atom.k;
  rowStride = Dp + flashir::target::kPrefillRowPad;
  chunksPerRow = D / kVec;
  fused = s.fusedHeadGroups;
  tokens = fused ? s.prefillRows / g : s.prefillRows;
  rowsPerWarp = s.prefillRows / W;
  M = rowsPerWarp / mma.atom.m;
  R = H * M;
  qShared = M > 1 || s.prefillQShared;
  threads = 32 * W;
  ringBytes = decode::prefillSharedMemoryBytes(KV, D, S, elementBytes, 0, 1);
  oTiles = Dp / mma.atom.n;
  sTiles = KV / mma.atom.n;
  causal = classifyMask(k.variant.getMask());
  rawScores = k.variant.getLogits().empty() && s.scale > 0;
  factor = rawScores ? s.scale * decode::kLog2E : 1.0f;
  hasMask = !k.variant.getMask().empty();
  causalOnly = causal == CausalMask::Exact;
  spreadAll = D >= 256;
  // Where a row's pieces do not divide the threads (head dims 72, 96, ...),
  // the last threads % chunksPerRow threads sit the raw copies out.
  copyThreads = threads - threads % chunksPerRow;
  rowsPerPass = copyThreads / chunksPerRow;
  pieces = KV * chunksPerRow;
  copyPasses = (pieces + copyThreads - 1) / copyThreads;
}

gpu::GPUFuncOp PrefillBuilder::build(OpBuilder &moduleBuilder, StringRef name) {
  func = k.createKernel(moduleBuilder, name,
                        decode::prefillSharedMemoryBytes(KV, D, S, elementBytes,
                                                         s.prefillRows, W,
                                                         s.prefillQShared),
                        /*dynamicShared=*/true);
  Block &entry = func.getBody().front();
  OpBuilder ob = OpBuilder::atBlockBegin(&entry);
  LocBuilder b(k.op.getLoc(), ob);
  c0 = cIndex(b, 0);
  c1 = cIndex(b, 1);
  bindFrame(b);
  bindLaneRows(b);
  pairType = VectorType::get({2}, s.element);
  zeroF = cF32(b, 0.0f);
  bindRing(b);
  loadQuery(b);
  planKeyTiles(b);
  if (rawCopies)
    bindRawCopies(b);
  lane32 = toI32(b, lane);
  bindFragmentPointers(b);
  firstQpos = arith::SubIOp::create(
      b, arith::AddIOp::create(b, rowBase, f.numKv), f.numQ);
  // State per lane: m and l of its R rows, O (M x Dp / 8 n-tiles x 4).
  // Sigmoid keeps m = 0 (its states merge by sums).
  inits.assign(R, hooks.sigmoid() ? zeroF : negInf(b));
  inits.append(R, zeroF);
  inits.append(M * cLayout.elements() * oTiles, zeroF);
  if (warpPages)
    noPages.push_back(cI32(b, 0));
  ValueRange done = keyLoop(b);
  writeOutput(b, done);
  return func;
}

void PrefillBuilder::bindFrame(LocBuilder &b) {
  // The frame: request x, q tile y, query head z (fused head groups: KV
  // head z, the tile's rows are (token, head of the group) pairs).
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
  f = k.bindArguments(b, func, /*dynamicShared=*/true);
  // Split-KV: grid position x serves chunk chunk_order[x] of request
  // chunk_request[chunk] (the decode ABI's chunk arguments).
  Block &args = func.getBody().front();
  f.block = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  if (s.chunked)
    f.block = k.loadIndex(b, args.getArgument(11), f.block);
  f.req = s.chunked ? k.loadIndex(b, args.getArgument(8), f.block) : f.block;
  qTile = gpu::BlockIdOp::create(b, gpu::Dimension::y);
  head = gpu::BlockIdOp::create(b, gpu::Dimension::z);
  if (!s.chunked && causal != CausalMask::None) {
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
  f.qBegin = k.loadIndex(b, f.qoIndptr, f.req);
  f.numQ = arith::SubIOp::create(b, k.loadIndex(b, f.qoIndptr, next), f.qBegin);
  // The request's pages and (split-KV) its chunk's keys: loaded next to
  // qo_indptr, not after the guard below waits for it (one round trip less
  // before the first page ids and copies).
  k.loadRequestKeys(b, f);
  k.loadKeyRange(b, f, next);
  // The tile's first token.
  rowBase = arith::MulIOp::create(b, qTile, cIndex(b, tokens));
  // Every thread of a CTA past its request's rows leaves together.
  scf::IfOp guard = scf::IfOp::create(
      b, arith::CmpIOp::create(b, arith::CmpIPredicate::ult, rowBase, f.numQ),
      /*withElseRegion=*/false);
  gpu::ReturnOp::create(b);
  b.setInsertionPointToStart(&guard.getThenRegion().front());
}

void PrefillBuilder::bindLaneRows(LocBuilder &b) {
  tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  warp = arith::DivUIOp::create(b, tid, cIndex(b, 32));
  lane = arith::RemUIOp::create(b, tid, cIndex(b, 32));
  parts::MmaSync::LaneBase base = parts::MmaSync::laneBase(b, lane, cLayout);
  laneRow = base.row;
  laneCol = base.col;
  tig = base.tig;
  // The lane's rows: their token within the request and their query head.
  rowOf.resize(R);
  headOf.resize(R);
  rowValid.resize(R);
  qpos.resize(R);
  paramsOf.resize(R);
  warpRow = arith::MulIOp::create(b, warp, cIndex(b, rowsPerWarp));
  for (int64_t ri = 0; ri < R; ++ri) {
    Value r = arith::AddIOp::create(
        b, warpRow,
        arith::AddIOp::create(
            b, laneRow, cIndex(b, mma.atom.m * (ri / H) + halves[ri % H])));
    std::tie(rowOf[ri], headOf[ri]) = tokenAndHead(b, r);
    paramsOf[ri] = k.paramValues(b, f, headOf[ri]);
    rowValid[ri] =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, rowOf[ri], f.numQ);
    qpos[ri] = arith::SubIOp::create(
        b, arith::AddIOp::create(b, rowOf[ri], f.numKv), f.numQ);
  }
}

std::pair<Value, Value> PrefillBuilder::tokenAndHead(LocBuilder &b, Value r) {
  if (!fused)
    return {arith::AddIOp::create(b, rowBase, r), head};
  Value token = arith::AddIOp::create(
      b, rowBase, arith::DivUIOp::create(b, r, cIndex(b, g)));
  Value headBase = arith::MulIOp::create(b, f.kvHead, cIndex(b, g));
  return {token, arith::AddIOp::create(
                     b, headBase, arith::RemUIOp::create(b, r, cIndex(b, g)))};
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

void PrefillBuilder::bindRing(LocBuilder &b) {
  // The staging ring [slot][K or V][key][D + 8], then (qShared) the Q tile
  // [row][D + 8].
  workgroup = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  ring = memref::ViewOp::create(
      b,
      MemRefType::get({S, 2, KV, rowStride}, s.element,
                      MemRefLayoutAttrInterface(), workgroup),
      f.buf, c0, ValueRange{});
  ringBase = arith::IndexCastOp::create(
      b, b.getI64Type(),
      memref::ExtractAlignedPointerAsIndexOp::create(b, f.buf));
  if (Dp != D)
    zeroPaddingColumns(b, f.buf, s.element,
                       S * 2 * KV + (qShared ? s.prefillRows : 0), rowStride, D,
                       tid, threads);
  nvgpuToken = nvgpu::DeviceAsyncTokenType::get(ctx);
}

void PrefillBuilder::planKeyTiles(LocBuilder &b) {
  // A causal mask hides every key past the CTA's last query position:
  // those tiles are skipped (they would add exp2(-inf) = 0 and rescale by 1).
  kLoopEnd = f.kEnd;
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
  // indexing would linearize every piece in 64 bits).
  auto kPoolType = cast<MemRefType>(f.kPool.getType());
  int64_t poolOffset = 0;
  rawCopies =
      !s.turing &&
      succeeded(kPoolType.getStridesAndOffset(poolStrides, poolOffset)) &&
      poolOffset == 0 && poolStrides.size() == 4 &&
      poolStrides[0] == P * poolStrides[1] && poolStrides[3] == 1 &&
      cast<MemRefType>(f.vPool.getType()) == kPoolType;
  // With at most 32 pages under a tile, lane L of every warp holds the id of
  // the tile's L-th page, loaded one tile ahead by the staged loop (the
  // load's latency hides behind a tile's math), and a piece takes its page
  // id by a shuffle instead of a dependent global load.
  warpPages = rawCopies && (KV - 1) / P + 2 <= 32;
  // Tiles aligned to pages whose copy passes each stay in one page -- the
  // tile inside one page, or whole pages per tile and a whole number of
  // passes (rowsPerPass rows each) per page: a thread's rows of one page lie
  // at fixed strides from its first.
  pagedPasses = rawCopies && warpPages &&
                (P % KV == 0 || (KV % P == 0 && P % rowsPerPass == 0));
  // Tiles of KV keys from kBegin (0 unless split-KV). A split chunk's tiles
  // start at its first key rounded down to a page (or, inside a page, tile)
  // boundary where that keeps passes in one page; keys before the chunk are
  // masked like those past its end.
  alignedChunks = s.chunked && pagedPasses;
  kTileBegin = f.kBegin;
  if (alignedChunks)
    kTileBegin = arith::SubIOp::create(
        b, f.kBegin,
        arith::RemUIOp::create(b, f.kBegin, cIndex(b, std::min(KV, P))));
  Value span = s.chunked
                   ? arith::MaxSIOp::create(
                         b, arith::SubIOp::create(b, kLoopEnd, kTileBegin), c0)
                   : kLoopEnd;
  Value spanUp = arith::AddIOp::create(b, span, cIndex(b, KV - 1));
  numTiles = arith::DivUIOp::create(b, spanUp, cIndex(b, KV));
  lastKey = arith::SubIOp::create(b, f.kEnd, c1);
}

Value PrefillBuilder::tileStart(LocBuilder &b, Value it) {
  return arith::AddIOp::create(b, kTileBegin,
                               arith::MulIOp::create(b, it, cIndex(b, KV)));
}

} // namespace prefill
} // namespace flashir::conversion
//===----------------------------------------------------------------------===//
// QueryTile: the prefill kernel's Q operand
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
        Value qposOf = arith::SubIOp::create(
            b, arith::AddIOp::create(b, token, f.numKv), f.numQ);
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
                                          qpos[half], paramsOf[half], 2)
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

//===----------------------------------------------------------------------===//
// KVCopies: the prefill kernel's K/V copy ring
//
// K/V tiles of KV keys are staged CTA-wide by 16-byte cp.async into a ring
// of S slots of rows padded to Dp + 8 elements; keys past the end copy the
// last key (masked), or read nothing on the per-page path. Three ways in:
//  - raw addresses (sm_80+, pools with contiguous pages): each thread keeps
//    one 16-byte column of its keys, so its global base and shared offset
//    are loop invariant; page ids come by warp shuffle where at most 32
//    pages lie under a tile, and where a copy pass never straddles a page a
//    page costs one shuffle and one wide multiply (RawTileCopies);
//  - memref-indexed cp.async (other pool strides, e.g. HND);
//  - sm_75: plain 16-byte loads and stores into one slot.
// The key hook then rewrites a landed K tile in place.
//
//===----------------------------------------------------------------------===//

namespace flashir::conversion::prefill {

void PrefillBuilder::forEachPiece(
    LocBuilder &b, int64_t total,
    function_ref<void(LocBuilder &, Value, int64_t)> fn) {
  for (int64_t p0 = 0; p0 < total; p0 += threads) {
    Value piece = arith::AddIOp::create(b, tid, cIndex(b, p0));
    if (p0 + threads <= total) {
      fn(b, piece, p0);
      continue;
    }
    scf::IfOp::create(b,
                      arith::CmpIOp::create(b, arith::CmpIPredicate::ult, piece,
                                            cIndex(b, total)),
                      [&](OpBuilder &iob, Location loc) {
                        LocBuilder ib(loc, iob);
                        fn(ib, piece, p0);
                        scf::YieldOp::create(ib);
                      });
  }
}

void PrefillBuilder::copy16(LocBuilder &b, Value view, ValueRange dst,
                            Value pool, ValueRange src) {
  if (s.turing)
    vector::StoreOp::create(b, k.loadRaw(b, pool, src), view, dst,
                            /*nontemporal=*/false, llvm::MaybeAlign(16));
  else
    nvgpu::DeviceAsyncCopyOp::create(
        b, view, dst, pool, src, b.getIndexAttr(kVec),
        /*srcElements=*/Value(), /*bypassL1=*/b.getUnitAttr());
}

void PrefillBuilder::bindRawCopies(LocBuilder &b) {
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
  copyDst = toI64(b, arith::MulIOp::create(b, keyCol, cIndex(b, elementBytes)));
}

SmallVector<Value> PrefillBuilder::pagesOf(LocBuilder &b, Value it) {
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
}

SmallVector<Value> PrefillBuilder::pagesIf(LocBuilder &b, Value it,
                                           ArrayRef<Value> otherwise) {
  return llvm::to_vector(buildIf(
      b, arith::CmpIOp::create(b, arith::CmpIPredicate::slt, it, numTiles),
      [&](LocBuilder &b) { return pagesOf(b, it); },
      [&](LocBuilder &) { return llvm::to_vector(otherwise); }));
}

PrefillBuilder::RawTileCopies::RawTileCopies(PrefillBuilder &pb, LocBuilder &b,
                                             Value it, ArrayRef<Value> pages,
                                             Value valid, bool withK,
                                             bool withV)
    : pb(pb), valid(valid), withK(withK), withV(withV) {
  Value slot = arith::RemUIOp::create(b, it, cIndex(b, pb.S));
  Value t32 = toI32(b, pb.tileStart(b, it));
  Value threadDst = arith::AddIOp::create(b, pb.ringBase, pb.copyDst);
  Value slot64 = toI64(b, slot);
  dst = pb.sharedPtr(
      b,
      arith::AddIOp::create(
          b, threadDst,
          arith::MulIOp::create(
              b, slot64, cI64(b, 2 * pb.KV * pb.rowStride * pb.elementBytes))));
  firstKey = arith::AddIOp::create(
      b, t32,
      toI32(b, arith::DivUIOp::create(b, pb.tid, cIndex(b, pb.chunksPerRow))));
  last32 = toI32(b, pb.lastKey);
  // The per-piece path's page lookups (the per-page path needs neither).
  if (!pb.pagedPasses) {
    pageBegin32 = toI32(b, pb.f.pageBegin);
    firstPage = arith::DivUIOp::create(b, t32, cI32(b, pb.P));
  }
  if (valid && !pb.pagedPasses) {
    Value full = cI32(b, 16);
    size = arith::SelectOp::create(b, valid, full, cI32(b, 0));
  }
  page0 = pb.warpPages ? pages[0] : Value();
  pageBases.assign(pb.P >= pb.KV ? 1 : pb.KV / pb.P, Value());
}

// With pagedPasses, page g of the tile is lane g's id (one shuffle per
// page) and a pass's sources are the page's base for the thread plus a
// constant (an immediate address offset), the base computed by the page's
// first pass. Keys past the end read nothing (src-size 0: zero fill)
// instead of repeating the last key; their addresses still lie in the
// tile's last page (or the request's, for pages past it).
PrefillBuilder::RawTileCopies::Sources
PrefillBuilder::RawTileCopies::pagedSources(LocBuilder &b, int64_t keyOffset) {
  int64_t P = pb.P, rowBytes = pb.poolStrides[1] * pb.elementBytes;
  int64_t pg = P >= pb.KV ? 0 : keyOffset / P;
  Value &pageBase = pageBases[pg];
  if (!pageBase) {
    Value srcLane = cI32(b, pg);
    Value page = gpu::ShuffleOp::create(b, page0, srcLane, cI32(b, 32),
                                        gpu::ShuffleMode::IDX)
                     .getShuffleResult();
    Value pageStart = arith::MulIOp::create(b, page, cI32(b, P));
    Value row = arith::AddIOp::create(
        b, pageStart, arith::RemUIOp::create(b, firstKey, cI32(b, P)));
    Value row64 = arith::ExtUIOp::create(b, b.getI64Type(), row);
    pageBase = arith::MulIOp::create(b, row64, cI64(b, rowBytes));
  }
  Value inRange = arith::CmpIOp::create(
      b, arith::CmpIPredicate::sle,
      arith::AddIOp::create(b, firstKey, cI32(b, keyOffset)), last32);
  if (valid)
    inRange = arith::AndIOp::create(b, inRange, valid);
  Sources src;
  Value full = cI32(b, 16);
  src.bytes = arith::SelectOp::create(b, inRange, full, cI32(b, 0));
  src.kBase = arith::AddIOp::create(b, pb.kThreadBase, pageBase);
  src.vBase = arith::AddIOp::create(b, pb.vThreadBase, pageBase);
  src.offset = cI64(b, (keyOffset - pg * P) * rowBytes);
  return src;
}

// Per piece: the key (clamped to the last), its page id (a shuffle, or a
// page-table load) and row.
PrefillBuilder::RawTileCopies::Sources
PrefillBuilder::RawTileCopies::keySources(LocBuilder &b, int64_t keyOffset) {
  int64_t P = pb.P;
  Value j = arith::MinSIOp::create(
      b, arith::AddIOp::create(b, firstKey, cI32(b, keyOffset)), last32);
  Value pageOfKey = arith::DivUIOp::create(b, j, cI32(b, P));
  Value page;
  if (pb.warpPages) {
    Value srcLane = arith::SubIOp::create(b, pageOfKey, firstPage);
    page = gpu::ShuffleOp::create(b, page0, srcLane, cI32(b, 32),
                                  gpu::ShuffleMode::IDX)
               .getShuffleResult();
  } else {
    page = memref::LoadOp::create(
        b, pb.f.indices,
        ValueRange{arith::IndexCastUIOp::create(
            b, b.getIndexType(),
            arith::AddIOp::create(b, pageBegin32, pageOfKey))});
  }
  Value pageStart = arith::MulIOp::create(b, page, cI32(b, P));
  Value row = arith::AddIOp::create(b, pageStart,
                                    arith::RemUIOp::create(b, j, cI32(b, P)));
  Value row64 = arith::ExtUIOp::create(b, b.getI64Type(), row);
  Sources src;
  src.kBase = pb.kThreadBase;
  src.vBase = pb.vThreadBase;
  src.bytes = size;
  src.offset = arith::MulIOp::create(
      b, row64, cI64(b, pb.poolStrides[1] * pb.elementBytes));
  return src;
}

void PrefillBuilder::RawTileCopies::pass(LocBuilder &b, int64_t pass) {
  auto globalPtr = LLVM::LLVMPointerType::get(pb.ctx, /*global=*/1);
  int64_t p0 = pass * pb.copyThreads, keyOffset = p0 / pb.chunksPerRow;
  // Every lane computes the sources, outside the guard of a partial pass:
  // the shuffle needs all lanes.
  Sources src =
      pb.pagedPasses ? pagedSources(b, keyOffset) : keySources(b, keyOffset);
  auto copies = [&](LocBuilder &b) {
    for (int64_t kind = 0; kind < 2; ++kind) {
      if (!(kind ? withV : withK))
        continue;
      Value address =
          arith::AddIOp::create(b, kind ? src.vBase : src.kBase, src.offset);
      Value from = LLVM::IntToPtrOp::create(b, globalPtr, address);
      int64_t dstOffset =
          (kind * pb.KV + keyOffset) * pb.rowStride * pb.elementBytes;
      Value to = LLVM::GEPOp::create(
          b, dst.getType(), b.getI8Type(), dst,
          ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(dstOffset)});
      NVVM::CpAsyncOp::create(b, to, from, 16u, NVVM::LoadCacheModifierKind::CG,
                              src.bytes);
    }
  };
  if (pb.copyThreads == pb.threads && p0 + pb.threads <= pb.pieces) {
    copies(b);
    return;
  }
  // The pass's pieces: p0 .. p0 + min(copyThreads, pieces - p0) - 1.
  Value piece = arith::AddIOp::create(b, pb.tid, cIndex(b, p0));
  int64_t passEnd = p0 + std::min(pb.copyThreads, pb.pieces - p0);
  scf::IfOp::create(b,
                    arith::CmpIOp::create(b, arith::CmpIPredicate::ult, piece,
                                          cIndex(b, passEnd)),
                    [&](OpBuilder &iob, Location loc) {
                      LocBuilder ib(loc, iob);
                      copies(ib);
                      scf::YieldOp::create(ib);
                    });
}

void PrefillBuilder::issue(LocBuilder &b, Value it, ArrayRef<Value> pages) {
  if (rawCopies) {
    RawTileCopies(*this, b, it, pages, Value()).all(b);
    return;
  }
  // Pieces (key, 16-byte chunk) of K and V, thread t taking t, t + threads,
  // ...; keys past the end copy the last key (valid memory; masked).
  Value slot = arith::RemUIOp::create(b, it, cIndex(b, S));
  Value t0 = tileStart(b, it);
  forEachPiece(b, KV * chunksPerRow, [&](LocBuilder &b, Value piece, int64_t) {
    Value key = arith::DivUIOp::create(b, piece, cIndex(b, chunksPerRow));
    Value chunk = arith::RemUIOp::create(b, piece, cIndex(b, chunksPerRow));
    Value j =
        arith::MinSIOp::create(b, arith::AddIOp::create(b, t0, key), lastKey);
    Value page = k.loadIndex(
        b, f.indices,
        arith::AddIOp::create(b, f.pageBegin,
                              arith::DivUIOp::create(b, j, cIndex(b, P))));
    Value inPage = arith::RemUIOp::create(b, j, cIndex(b, P));
    Value col = arith::MulIOp::create(b, chunk, cIndex(b, kVec));
    for (int64_t kind = 0; kind < 2; ++kind)
      copy16(b, ring, {slot, cIndex(b, kind), key, col},
             kind ? f.vPool : f.kPool, {page, inPage, f.kvHead, col});
  });
}

void PrefillBuilder::hookKeyTile(LocBuilder &b, Value slot, Value t0) {
  int64_t half = D / 2;
  int64_t width = half % kVec == 0 ? kVec : kVec / 2;
  int64_t unitsPerRow = half / width, units = KV * unitsPerRow;
  ValueRange params = paramsOf[0];
  Value zero = cIndex(b, 0);
  // Unit u: key u / unitsPerRow, columns col.. and their partners col + D/2..
  // (each the other's x_rot).
  auto hookUnit = [&](LocBuilder &b, Value unit) {
    Value key = arith::DivUIOp::create(b, unit, cIndex(b, unitsPerRow));
    Value inRow = arith::RemUIOp::create(b, unit, cIndex(b, unitsPerRow));
    Value col = arith::MulIOp::create(b, inRow, cIndex(b, width));
    Value partner = arith::AddIOp::create(b, col, cIndex(b, half));
    Value kpos = arith::AddIOp::create(b, t0, key);
    SmallVector<Value> prefix = {slot, zero, key};
    Value x = k.loadColumns(b, ring, prefix, col, width);
    Value xRot = k.loadColumns(b, ring, prefix, partner, width);
    Value y =
        k.applyRowHook(b, /*isKey=*/true, x, xRot, col, kpos, f.kvHead, params);
    Value yRot = k.applyRowHook(b, /*isKey=*/true, xRot, x, partner, kpos,
                                f.kvHead, params);
    for (auto [value, column] : {std::pair(y, col), std::pair(yRot, partner)})
      vector::StoreOp::create(
          b, value, ring, ValueRange{slot, zero, key, column},
          /*nontemporal=*/false, llvm::MaybeAlign(width * elementBytes));
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

} // namespace flashir::conversion::prefill

//===----------------------------------------------------------------------===//
// KeyTile: one key tile of the prefill kernel
//
// S = Q.K^T takes K's B fragments by ldmatrix.x4 (two n-tiles of 8 keys per
// instruction), P.V takes V's by ldmatrix.x4.trans; the S accumulators are
// P's A fragments, so probabilities never leave their lanes. Between the
// two: the logits hook per score and the mask, only on tiles that need it
// (every key below the request's end needs none without a mask hook, nor
// with exactly `kpos <= qpos` where every key precedes the CTA's first
// query position).
//
//===----------------------------------------------------------------------===//

namespace flashir::conversion::prefill {

Value PrefillBuilder::sharedPtr(LocBuilder &b, Value address) {
  return LLVM::IntToPtrOp::create(
      b, LLVM::LLVMPointerType::get(ctx, /*shared=*/3), address);
}

// A GEP, so the offset folds into the instruction.
PrefillBuilder::Fragment PrefillBuilder::ldmatrix(LocBuilder &b, Value base,
                                                  int64_t offset,
                                                  bool transpose) {
  Value ptr =
      LLVM::GEPOp::create(b, base.getType(), b.getI8Type(), base,
                          ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(offset)});
  return mma.loadMatrixX4(b, ptr, transpose);
}

void PrefillBuilder::bindFragmentPointers(LocBuilder &b) {
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
  kLane = laneBytes(b, lmHigh, lmLow);
  vLane = laneBytes(b, lmLow, lmHigh);
  tileBytes = KV * rowStride * elementBytes;
  qTilePtr = qShared ? sharedPtr(b, qTileBase) : Value();
}

Value PrefillBuilder::slotPtr(LocBuilder &b, Value slot, int64_t kind) {
  Value slot64 = arith::IndexCastOp::create(b, b.getI64Type(), slot);
  Value slotBytes = arith::MulIOp::create(
      b, slot64,
      arith::ConstantOp::create(b, b.getI64IntegerAttr(2 * tileBytes)));
  Value base = arith::AddIOp::create(
      b, arith::AddIOp::create(b, ringBase, slotBytes), kind ? vLane : kLane);
  if (kind)
    base = arith::AddIOp::create(
        b, base, arith::ConstantOp::create(b, b.getI64IntegerAttr(tileBytes)));
  return sharedPtr(b, base);
}

// The ldmatrix.x4's matrices 0, 1 are B0, 2 and 3 B1, shared by the m
// blocks.
void PrefillBuilder::productPairs(LocBuilder &b, ArrayRef<Fragment> a,
                                  Value base, int64_t offset, bool transpose,
                                  function_ref<Value *(int64_t)> acc0,
                                  function_ref<Value *(int64_t)> acc1) {
  Fragment w = ldmatrix(b, base, offset, transpose);
  ArrayRef<Value> b0 = ArrayRef<Value>(w).take_front(2),
                  b1 = ArrayRef<Value>(w).drop_front(2);
  for (int64_t mb = 0; mb < M; ++mb) {
    mma.build(b, a[mb], b0, MutableArrayRef<Value>(acc0(mb), 4));
    mma.build(b, a[mb], b1, MutableArrayRef<Value>(acc1(mb), 4));
  }
}

// `copiesAt(b, c)`, when given, emits copies of a later tile after k-step c
// of Q.K^T. `afterScores(b)`, when given, runs between Q.K^T and the
// softmax (the one-stage schedule's second wait); `pvCopiesAt(b, kk)` after
// k-step kk of P.V.
SmallVector<Value> PrefillBuilder::tileBody(
    LocBuilder &b, Value it, ValueRange carried, StepFn copiesAt,
    function_ref<void(LocBuilder &)> afterScores, StepFn pvCopiesAt) {
  Value slot = arith::RemUIOp::create(b, it, cIndex(b, S));
  Value t0 = tileStart(b, it);
  // A key hook transforms the landed K tile in place, between the barrier
  // that made it visible (every schedule calls tileBody after one; the
  // copies in flight fill other slots, or V) and a second one before the
  // ldmatrix reads. The slot's last readers (tile it - S) passed the
  // first barrier.
  if (hooks.hasKey()) {
    hookKeyTile(b, slot, t0);
    gpu::BarrierOp::create(b);
  }
  Value kPtr = slotPtr(b, slot, 0), vPtr = slotPtr(b, slot, 1);
  SmallVector<Fragment> score = scores(b, kPtr, copiesAt);
  if (afterScores)
    afterScores(b);
  SmallVector<SmallVector<Value>> x = logits(b, t0, score);
  mask(b, t0, x);
  SmallVector<Value> state = rescaledState(b, x, carried);
  SmallVector<Value> m(state.begin(), state.begin() + R),
      l(state.begin() + R, state.begin() + 2 * R);
  SmallVector<Fragment> pFrag = weights(b, x, m, l);
  // O = O * corr + P.V.
  SmallVector<Value> next(m);
  next.append(l);
  SmallVector<Fragment> o(M * oTiles);
  for (int64_t i = 0; i < M * cLayout.elements() * oTiles; ++i)
    o[i / cLayout.elements()][i % cLayout.elements()] = state[2 * R + i];
  addProducts(b, vPtr, pFrag, o, pvCopiesAt);
  for (auto &acc : o)
    next.append(acc.begin(), acc.end());
  return next;
}

// n-tiles of 8 keys; ldmatrix.x4 gives the B fragments of two n-tiles
// (matrices: k half lmLow, n-tile lmHigh).
SmallVector<PrefillBuilder::Fragment>
PrefillBuilder::scores(LocBuilder &b, Value kPtr, StepFn copiesAt) {
  SmallVector<Fragment> score(M * sTiles);
  for (auto &acc : score)
    acc = {zeroF, zeroF, zeroF, zeroF};
  for (int64_t c = 0; c < kSteps; ++c) {
    SmallVector<Fragment> a = qFragments(b, c);
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
  return score;
}

Value PrefillBuilder::keyOf(LocBuilder &b, Value t0, int64_t nt, int64_t e) {
  return arith::AddIOp::create(
      b, t0, arith::AddIOp::create(b, laneCol, cIndex(b, mma.atom.n * nt + e)));
}

SmallVector<SmallVector<Value>>
PrefillBuilder::logits(LocBuilder &b, Value t0, ArrayRef<Fragment> score) {
  SmallVector<SmallVector<Value>> x(R);
  for (int64_t ri = 0; ri < R; ++ri)
    for (int64_t nt = 0; nt < sTiles; ++nt)
      for (int64_t e = 0; e < laneCols; ++e) {
        Value raw =
            score[(ri / H) * sTiles + nt][cLayout.elementAt(halves[ri % H], e)];
        if (rawScores) {
          x[ri].push_back(raw);
          continue;
        }
        Value j = keyOf(b, t0, nt, e);
        // Hooks see natural-domain logits.
        Value natural = arith::MulFOp::create(b, raw, cF32(b, s.scale));
        Value v =
            hooks.logits(b, natural, qpos[ri], j, headOf[ri], paramsOf[ri]);
        x[ri].push_back(arith::MulFOp::create(b, v, cF32(b, decode::kLog2E)));
      }
  return x;
}

// Keys past kEnd (and, for aligned split chunks, before kBegin) and the
// mask hook's.
SmallVector<Value>
PrefillBuilder::maskedScores(LocBuilder &b, Value t0,
                             ArrayRef<SmallVector<Value>> x) {
  SmallVector<Value> flat;
  for (int64_t ri = 0; ri < R; ++ri)
    for (int64_t nt = 0; nt < sTiles; ++nt)
      for (int64_t e = 0; e < laneCols; ++e) {
        Value j = keyOf(b, t0, nt, e);
        Value keep =
            arith::CmpIOp::create(b, arith::CmpIPredicate::slt, j, f.kEnd);
        if (alignedChunks)
          keep = arith::AndIOp::create(
              b, keep,
              arith::CmpIOp::create(b, arith::CmpIPredicate::sge, j, f.kBegin));
        if (hasMask) {
          Value visible = hooks.mask(b, qpos[ri], j, headOf[ri], paramsOf[ri]);
          keep = arith::AndIOp::create(b, keep, visible);
        }
        flat.push_back(arith::SelectOp::create(
            b, keep, x[ri][laneCols * nt + e], negInf(b)));
      }
  return flat;
}

void PrefillBuilder::mask(LocBuilder &b, Value t0,
                          SmallVector<SmallVector<Value>> &x) {
  SmallVector<Value> flat;
  if (hasMask && !causalOnly) {
    flat = maskedScores(b, t0, x);
  } else {
    // Tiles that need no mask: every key is < kEnd and, where the mask is
    // exactly causal, <= the CTA's first query position (signed: rows with
    // fewer keys before them than rows have negative positions).
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
        [&](LocBuilder &b) { return maskedScores(b, t0, x); }));
  }
  for (int64_t ri = 0; ri < R; ++ri)
    for (int64_t i = 0; i < laneCols * sTiles; ++i)
      x[ri][i] = flat[ri * laneCols * sTiles + i];
}

// ldmatrix.trans gives the B fragments of two n-tiles of 8 head dims
// (matrices: key half lmLow, n-tile lmHigh).
void PrefillBuilder::addProducts(LocBuilder &b, Value vPtr,
                                 ArrayRef<Fragment> pFrag,
                                 MutableArrayRef<Fragment> o,
                                 StepFn pvCopiesAt) {
  for (int64_t kk = 0; kk < sTiles / nPerK; ++kk) {
    SmallVector<Fragment> a;
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
}

} // namespace flashir::conversion::prefill

//===----------------------------------------------------------------------===//
// OnlineSoftmax: the prefill kernel's softmax weights
//
// Online softmax of the lane's rows over a tile (base 2), with the running
// maximum kept lazily: a warp rescales O and l only when one of its rows'
// tile maximum exceeds that row's reference by more than kLazyRescale (then
// every row moves to max(reference, tile maximum)). Otherwise
// P = exp2(x - m) <= 2^kLazyRescale: exact in f32 sums and bf16 P, and O / l
// and lse = m + log l use the same m. Once the maxima settle most tiles skip
// the O multiplies. Sigmoid: p = sigmoid(s) needs no maximum (m stays 0) and
// no rescale. A row's maximum and sum span its 4 lanes (shuffles); within a
// lane they are balanced trees, not chains: the softmax is latency-bound.
//
//===----------------------------------------------------------------------===//

namespace flashir::conversion::prefill {

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

/// A row's maximum or sum as a balanced tree: depth log2(n) instead of a
/// chain of n dependent instructions.
static Value pairwise(LocBuilder &b, ArrayRef<Value> values,
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
}

SmallVector<Value> PrefillBuilder::rescaledState(LocBuilder &b,
                                                 ArrayRef<SmallVector<Value>> x,
                                                 ValueRange carried) {
  if (hooks.sigmoid())
    return SmallVector<Value>(carried.begin(),
                              carried.begin() + 2 * R +
                                  M * cLayout.elements() * oTiles);
  return lazyRescale(b, x, carried);
}

SmallVector<Value> PrefillBuilder::lazyRescale(LocBuilder &b,
                                               ArrayRef<SmallVector<Value>> x,
                                               ValueRange carried) {
  SmallVector<Value> m(carried.begin(), carried.begin() + R),
      l(carried.begin() + R, carried.begin() + 2 * R), tileMax(R);
  Value grows;
  for (int64_t ri = 0; ri < R; ++ri) {
    Value tm = pairwise(b, x[ri], [&](LocBuilder &b, Value u, Value v) {
      return arith::MaxNumFOp::create(b, u, v).getResult();
    });
    for (int32_t off : {1, 2})
      tm = arith::MaxNumFOp::create(b, tm, k.shuffleXor(b, tm, off));
    if (factor != 1.0f)
      tm = arith::MulFOp::create(b, tm, cF32(b, factor));
    tileMax[ri] = tm;
    Value up = arith::CmpFOp::create(
        b, arith::CmpFPredicate::OGT, tm,
        arith::AddFOp::create(b, m[ri], cF32(b, decode::kLazyRescale)));
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
          Value mSafe = arith::SelectOp::create(b, noMax, cF32(b, 0.0f), mNew);
          corr[ri] = exp2Ftz(b, arith::SubFOp::create(b, m[ri], mSafe));
          next.push_back(mNew);
        }
        for (int64_t ri = 0; ri < R; ++ri)
          next.push_back(arith::MulFOp::create(b, l[ri], corr[ri]));
        // O's accumulator e of m block mb belongs to row half
        // halfOf(offsets[e].row).
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
}

// P as A fragments (FlashAttention-2: the lane's accumulators of nPerK
// n-tiles are the A fragment of one P.V k-step): pFrag[mb * sTiles / nPerK
// + kk] covers n-tiles nPerK kk.. of m block mb.
SmallVector<PrefillBuilder::Fragment>
PrefillBuilder::weights(LocBuilder &b, ArrayRef<SmallVector<Value>> x,
                        ArrayRef<Value> m, MutableArrayRef<Value> l) {
  SmallVector<Value> negM(R);
  if (!hooks.sigmoid())
    for (int64_t ri = 0; ri < R; ++ri) {
      Value noMax = isNegInf(b, m[ri]);
      negM[ri] = arith::NegFOp::create(
          b, arith::SelectOp::create(b, noMax, cF32(b, 0.0f), m[ri]));
    }
  SmallVector<Fragment> pFrag(M * sTiles / nPerK);
  SmallVector<SmallVector<Value>> rowP(R);
  for (int64_t ri = 0; ri < R; ++ri)
    for (int64_t nt = 0; nt < sTiles; ++nt) {
      Value p[2];
      for (int64_t e = 0; e < laneCols; ++e) {
        Value xe = x[ri][laneCols * nt + e];
        if (hooks.sigmoid()) {
          // sigmoid(s) = 1 / (1 + 2^-x); masked keys (-inf) weigh 0.
          if (factor != 1.0f)
            xe = arith::MulFOp::create(b, xe, cF32(b, factor));
          p[e] = k.sigmoidBase2(b, xe);
        } else {
          Value arg =
              factor != 1.0f
                  ? math::FmaOp::create(b, xe, cF32(b, factor), negM[ri])
                        .getResult()
                  : arith::AddFOp::create(b, xe, negM[ri]).getResult();
          p[e] = exp2Ftz(b, arg);
        }
        rowP[ri].push_back(p[e]);
      }
      Value pair = vector::FromElementsOp::create(b, VectorType::get({2}, f32),
                                                  ValueRange{p[0], p[1]});
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
  return pFrag;
}

} // namespace flashir::conversion::prefill

//===----------------------------------------------------------------------===//
// KeyLoop: the prefill kernel's key loop schedules
//
// Three schedules of copies, waits and barriers around tileBody:
//  - one stage (raw copies, S == 1): one K and one V slot, staggered as
//    FlashAttention-2 does: half the shared memory of two stages for a
//    second barrier per tile;
//  - the raw ring (raw copies, S >= 2): the wait and one barrier open each
//    iteration; tile it + S - 1's copies go out between the k-steps of tile
//    it's Q.K^T (and P.V at head dim 256);
//  - the staged loop (memref-indexed copies, sm_75): DecodeKernel's
//    buildStagedLoop, with the copies as one block and a barrier before a
//    slot is refilled.
//
//===----------------------------------------------------------------------===//

namespace flashir::conversion::prefill {

static void commit(LocBuilder &b) { NVVM::CpAsyncCommitGroupOp::create(b); }

ValueRange PrefillBuilder::keyLoop(LocBuilder &b) {
  if (rawCopies && S == 1)
    return oneStageLoop(b);
  if (rawCopies)
    return rawRingLoop(b);
  return stagedLoop(b);
}

// Tile it's V copies go out before its Q.K^T, tile it + 1's K copies before
// its softmax and P.V. Two barriers per tile: at the top (K landed; every
// warp is done with the V slot) and after Q.K^T (V landed; every warp is
// done with the K slot). One copy group is in flight at each wait.
ValueRange PrefillBuilder::oneStageLoop(LocBuilder &b) {
  // Tile 0's page ids serve its K copies here and its V copies in the loop
  // (carried).
  SmallVector<Value> firstIds = pagesIf(b, c0, noPages);
  buildIf(
      b, arith::CmpIOp::create(b, arith::CmpIPredicate::slt, c0, numTiles),
      [&](LocBuilder &b) {
        RawTileCopies(*this, b, c0, firstIds, Value(), /*withK=*/true,
                      /*withV=*/false)
            .all(b);
        return SmallVector<Value>();
      },
      [](LocBuilder &) { return SmallVector<Value>(); });
  commit(b);
  SmallVector<Value> loopInits(inits);
  llvm::append_range(loopInits, firstIds);
  size_t numState = inits.size();
  ValueRange done =
      buildFor(b, c0, numTiles, loopInits,
               [&](LocBuilder &b, Value it, ValueRange carried) {
                 NVVM::CpAsyncWaitGroupOp::create(b, 0);
                 gpu::BarrierOp::create(b);
                 SmallVector<Value> ids(carried.drop_front(numState));
                 Value itNext = arith::AddIOp::create(b, it, c1);
                 SmallVector<Value> nextIds = pagesIf(b, itNext, ids);
                 // Bursts, as soon as their slot is free: a copy spread among
                 // the MMAs would go out just before the wait that needs it.
                 RawTileCopies(*this, b, it, ids, Value(), /*withK=*/false,
                               /*withV=*/true)
                     .all(b);
                 commit(b);
                 Value nextValid = arith::CmpIOp::create(
                     b, arith::CmpIPredicate::slt, itNext, numTiles);
                 RawTileCopies kPass(*this, b, itNext, nextIds, nextValid,
                                     /*withK=*/true, /*withV=*/false);
                 SmallVector<Value> state = tileBody(
                     b, it, carried.take_front(numState), nullptr,
                     [&](LocBuilder &b) {
                       NVVM::CpAsyncWaitGroupOp::create(b, 0);
                       gpu::BarrierOp::create(b);
                       kPass.all(b);
                     },
                     nullptr);
                 commit(b);
                 llvm::append_range(state, nextIds);
                 return state;
               });
  NVVM::CpAsyncWaitGroupOp::create(b, 0);
  return done;
}

// The copies are spread among the MMAs rather than one burst that fills the
// load/store queue; the slot they refill was last read before the barrier,
// so no second barrier closes the iteration. The page ids of the tile after
// travel in the loop's carried values.
ValueRange PrefillBuilder::rawRingLoop(LocBuilder &b) {
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
  ValueRange done = buildFor(
      b, c0, numTiles, loopInits,
      [&](LocBuilder &b, Value it, ValueRange carried) {
        NVVM::CpAsyncWaitGroupOp::create(b, S - 2);
        gpu::BarrierOp::create(b);
        SmallVector<Value> ids(carried.drop_front(numState));
        Value itIssue = arith::AddIOp::create(b, it, cIndex(b, S - 1));
        Value valid = arith::CmpIOp::create(b, arith::CmpIPredicate::slt,
                                            itIssue, numTiles);
        RawTileCopies copies(*this, b, itIssue, ids, valid);
        // Passes [k * passes / steps, (k + 1) * passes / steps) after step
        // first + k of `steps`.
        int64_t steps = kSteps + (spreadAll ? KV / 16 : 0);
        auto spread = [&](int64_t first) {
          return [&copies, first, steps, this](LocBuilder &b, int64_t k) {
            int64_t step = first + k;
            for (int64_t p = (step * copyPasses + steps - 1) / steps;
                 p < ((step + 1) * copyPasses + steps - 1) / steps; ++p)
              copies.pass(b, p);
          };
        };
        auto qkAt = spread(0), pvAt = spread(kSteps);
        SmallVector<Value> state =
            tileBody(b, it, carried.take_front(numState), qkAt, nullptr,
                     spreadAll ? StepFn(pvAt) : nullptr);
        commit(b);
        llvm::append_range(
            state, pagesIf(b, arith::AddIOp::create(b, itIssue, c1), ids));
        return state;
      });
  NVVM::CpAsyncWaitGroupOp::create(b, 0);
  return done;
}

ValueRange PrefillBuilder::stagedLoop(LocBuilder &b) {
  ValueRange done = k.buildStagedLoop(
      b, numTiles, inits, noPages,
      [&](LocBuilder &b, Value it) { return pagesOf(b, it); },
      [&](LocBuilder &b, Value it, ArrayRef<Value> pages) {
        issue(b, it, pages);
      },
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
        SmallVector<Value> next =
            tileBody(b, it, carried, nullptr, nullptr, nullptr);
        // Every warp is done with this slot before it is refilled.
        gpu::BarrierOp::create(b);
        return next;
      });
  // No copy may still be in flight when the CTA exits (the Q tile's group
  // when the request has no key tile).
  if (qToken)
    nvgpu::DeviceAsyncWaitOp::create(b, qToken, b.getI32IntegerAttr(0));
  return done;
}

} // namespace flashir::conversion::prefill

//===----------------------------------------------------------------------===//
// Epilogue: the prefill kernel's output
//
// Each row is finished after the key loop: l over the row's 4 lanes; no
// visible key: O = 0, lse = -inf. O / l leaves in the element type: staged
// through shared memory where the tile fits the ring, so each lane stores
// whole 16-byte pieces of a row (the fragments' 4-byte pairs would write
// half sectors, which cost the split kernels' partial states more than f32
// pairs did). Only O's first D columns (chunksPerRow n-tiles of 8) leave
// the lanes. The lse goes out directly.
//
//===----------------------------------------------------------------------===//

namespace flashir::conversion::prefill {

void PrefillBuilder::writeOutput(LocBuilder &b, ValueRange done) {
  int64_t stageBytes = s.prefillRows * rowStride * elementBytes;
  int64_t stagePieces = rowsPerWarp * chunksPerRow;
  Value stage;
  if (stageBytes <= ringBytes) {
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
  for (int64_t ri = 0; ri < R; ++ri)
    finishRow(b, done, ri, stage);
  if (!stage)
    return;
  // The warp's own rows, 16 bytes per lane and store.
  NVVM::SyncWarpOp::create(
      b, arith::ConstantOp::create(b, b.getI32IntegerAttr(-1)));
  for (int64_t p0 = 0; p0 < stagePieces; p0 += 32) {
    if (p0 + 32 <= stagePieces) {
      readBack(b, stage, p0);
      continue;
    }
    // A partial last round (odd chunksPerRow, 16 rows per warp): the
    // lanes past the warp's pieces would read the next warp's rows.
    Value active = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, lane,
                                         cIndex(b, stagePieces - p0));
    scf::IfOp::create(b, active, [&](OpBuilder &iob, Location loc) {
      LocBuilder ib(loc, iob);
      readBack(ib, stage, p0);
      scf::YieldOp::create(ib);
    });
  }
}

void PrefillBuilder::finishRow(LocBuilder &b, ValueRange done, int64_t ri,
                               Value stage) {
  bool staged = static_cast<bool>(stage);
  bool finalForm = hooks.sigmoid() || hooks.hasOutput();
  Value l = done[R + ri];
  for (int32_t off : {1, 2})
    l = arith::AddFOp::create(b, l, k.shuffleXor(b, l, off));
  Value empty =
      arith::CmpFOp::create(b, arith::CmpFPredicate::OLE, l, cF32(b, 0.0f));
  Value zeroInv = cF32(b, 0.0f);
  Value inv = arith::SelectOp::create(
      b, empty, zeroInv, arith::DivFOp::create(b, cF32(b, 1.0f), l));
  Value noLse = negInf(b);
  Value mNatural = arith::MulFOp::create(b, done[ri], cF32(b, decode::kLn2));
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
      o = k.finalOutput(b, o, l, d, headOf[ri]);
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
  // lse (and, unstaged, O) of the row to `row` of oMem / lseMem; one lane of
  // the row's four stores the lse.
  auto store = [&](LocBuilder &b, Value oMem, Value lseMem, Value row) {
    if (!staged)
      for (int64_t nd = 0; nd < chunksPerRow; ++nd) {
        Value pair = pairAt(b, nd, /*final=*/oMem == f.out);
        vector::StoreOp::create(
            b, pair, oMem,
            ValueRange{
                row, headOf[ri],
                arith::AddIOp::create(b, laneCol, cIndex(b, mma.atom.n * nd))});
      }
    scf::IfOp::create(
        b, arith::CmpIOp::create(b, arith::CmpIPredicate::eq, tig, c0),
        [&](OpBuilder &tob, Location loc) {
          LocBuilder b(loc, tob);
          memref::StoreOp::create(b, lse, lseMem, ValueRange{row, headOf[ri]});
          scf::YieldOp::create(b);
        });
  };
  scf::IfOp::create(b, rowValid[ri], [&](OpBuilder &iob, Location loc) {
    LocBuilder b(loc, iob);
    k.storeRow(b, f, rowOf[ri], store);
    scf::YieldOp::create(b);
  });
}

// Piece p0 + lane of the warp's rows: row p / chunksPerRow, columns
// kVec * (p % chunksPerRow).
void PrefillBuilder::readBack(LocBuilder &b, Value stage, int64_t p0) {
  Value p = arith::AddIOp::create(b, lane, cIndex(b, p0));
  Value r = arith::AddIOp::create(
      b, warpRow, arith::DivUIOp::create(b, p, cIndex(b, chunksPerRow)));
  Value chunk = arith::RemUIOp::create(b, p, cIndex(b, chunksPerRow));
  Value col = arith::MulIOp::create(b, chunk, cIndex(b, kVec));
  Value token, qHead;
  std::tie(token, qHead) = tokenAndHead(b, r);
  Value inRange =
      arith::CmpIOp::create(b, arith::CmpIPredicate::ult, token, f.numQ);
  Value piece = k.loadRaw(b, stage, ValueRange{r, col});
  scf::IfOp::create(b, inRange, [&](OpBuilder &iob, Location loc) {
    LocBuilder b(loc, iob);
    k.storeRow(b, f, token, [&](LocBuilder &b, Value oMem, Value, Value row) {
      vector::StoreOp::create(b, piece, oMem, ValueRange{row, qHead, col},
                              /*nontemporal=*/false, llvm::MaybeAlign(16));
    });
    scf::YieldOp::create(b);
  });
}

} // namespace flashir::conversion::prefill
