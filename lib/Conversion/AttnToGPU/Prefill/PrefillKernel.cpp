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

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

using namespace mlir;

namespace flashir::conversion {

std::string kernels::prefillShapeReason(int64_t headDim, int64_t /*group*/) {
  // Rows move in 16-byte pieces; the products pad the head dim to 16 inside
  // the kernel (prefillPaddedHeadDim). Past 256, O's accumulators (D / 2 f32
  // per lane) crowd out the rest. Every group size works: a fused tile holds
  // whole groups (convert-attn-to-gpu fuses only then), else one query head.
  if (headDim < 16 || headDim > 256 || headDim % kVec != 0)
    return "head_dim a multiple of 8 from 16 to 256";
  return "";
}

int64_t kernels::prefillSharedMemoryBytes(int64_t kvTile, int64_t headDim,
                                          int64_t stages, int64_t elementBytes,
                                          int64_t qRows, int64_t warps,
                                          bool qShared) {
  return flashir::target::prefillSharedMemoryBytes(
      qRows, kvTile, warps, stages, headDim, elementBytes, qShared);
}

gpu::GPUFuncOp kernels::KernelBuilder::buildPrefill(OpBuilder &moduleBuilder,
                                                    StringRef name) {
  return prefill::PrefillBuilder(*this).build(moduleBuilder, name);
}

namespace prefill {

PrefillBuilder::PrefillBuilder(KernelBuilder &kernel)
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
  ringBytes = kernels::prefillSharedMemoryBytes(KV, D, S, elementBytes, 0, 1);
  oTiles = Dp / mma.atom.n;
  sTiles = KV / mma.atom.n;
  causal = classifyMask(k.variant.getMask());
  rawScores = k.variant.getLogits().empty() && s.scale > 0;
  factor = rawScores ? s.scale * kernels::kLog2E : 1.0f;
  hasMask = !k.variant.getMask().empty();
  causalOnly = causal == CausalMask::Exact;
  // The packed mask's tile classes assume one view's positions.
  if (hasMask && causal == CausalMask::None && s.numViews == 1)
    packedMask = parts::matchPackedBitMask(k.variant.getMask());
  spreadAll = D >= 256;
  // Where a row's pieces do not divide the threads (head dims 72, 96, ...),
  // the last threads % chunksPerRow threads sit the raw copies out.
  copyThreads = threads - threads % chunksPerRow;
  rowsPerPass = copyThreads / chunksPerRow;
  pieces = KV * chunksPerRow;
  copyPasses = (pieces + copyThreads - 1) / copyThreads;
}

gpu::GPUFuncOp PrefillBuilder::build(OpBuilder &moduleBuilder, StringRef name) {
  func = k.createKernel(
      moduleBuilder, name,
      kernels::prefillSharedMemoryBytes(KV, D, S, elementBytes, s.prefillRows,
                                        W, s.prefillQShared),
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
  planCopies();
  planKeyTiles(b);
  if (rawCopies)
    bindRawCopies(b);
  lane32 = toI32(b, lane);
  bindFragmentPointers(b);
  firstQpos = arith::SubIOp::create(
      b, arith::AddIOp::create(b, rowBase, f.keysTotal), f.numQ);
  // State per lane: m and l of its R rows, O (M x Dp / 8 n-tiles x 4).
  // Sigmoid keeps m = 0 (its states merge by sums).
  inits.assign(R, hooks.sigmoid() ? zeroF : negInf(b));
  inits.append(R, zeroF);
  inits.append(M * cLayout.elements() * oTiles, zeroF);
  if (warpPages)
    noPages.push_back(cI32(b, 0));
  ValueRange done = keyLoop(b);
  // Several views: one key loop per view, each carrying the state on.
  size_t numState = inits.size();
  for (int64_t v = 1; v < s.numViews; ++v) {
    inits.assign(done.begin(), done.begin() + numState);
    k.selectView(f, v);
    // Every warp is done with the ring before the next view's first copies.
    gpu::BarrierOp::create(b);
    planKeyTiles(b);
    if (rawCopies)
      bindRawCopies(b);
    done = keyLoop(b);
  }
  writeOutput(b, done);
  return func;
}

void PrefillBuilder::bindFrame(LocBuilder &b) {
  // Causal (and, typically, a packed-bit mask, whose tiles with no visible
  // key are not visited): a q tile's keys grow with its index.
  bool keysGrow = causal != CausalMask::None || packedMask;
  kernels::KernelBuilder::PrefillTile t =
      k.bindPrefillFrame(b, f, func, keysGrow, fused, tokens);
  qTile = t.qTile;
  head = t.head;
  rowBase = t.rowBase;
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
  hookQpos.resize(R);
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
        b, arith::AddIOp::create(b, rowOf[ri], f.keysTotal), f.numQ);
    hookQpos[ri] = k.hookPosition(b, qpos[ri], f.keysTotal);
  }
}

std::pair<Value, Value> PrefillBuilder::tokenAndHead(LocBuilder &b, Value r) {
  return k.prefillRow(b, f, rowBase, head, fused, r);
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

void PrefillBuilder::planCopies() {
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
    Value lastPos = arith::AddIOp::create(b, lastRow, f.keysTotal);
    Value visible =
        arith::SubIOp::create(b, lastPos, arith::SubIOp::create(b, f.numQ, c1));
    if (f.keyOffset)
      visible = arith::SubIOp::create(b, visible, f.keyOffset);
    kLoopEnd = arith::MinSIOp::create(b, arith::MaxSIOp::create(b, visible, c0),
                                      f.kEnd);
  }
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
  if (packedMask) {
    bindPackedMask(b);
    classifyKeyTiles(b);
  }
}

Value PrefillBuilder::tileStart(LocBuilder &b, Value it) {
  return arith::AddIOp::create(b, kTileBegin,
                               arith::MulIOp::create(b, it, cIndex(b, KV)));
}

} // namespace prefill
} // namespace flashir::conversion
