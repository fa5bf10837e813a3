//===- TensorCoreKernel.cpp - the tensor-core decode kernel ---------------===//
//
// Decode on tensor cores (sm_80+): one CTA per (request or chunk, KV head),
// each warp walks its own tiles of 16 keys. The g query heads of the KV head
// are the rows of an m16n8k16 mma.sync (rows g..15 are zero), so a tile costs
// D/8 mma for S = Q.K^T and D/8 for O += P.V instead of 2 * D * g fma per
// key on CUDA cores.
//
// No ldmatrix and no bank conflicts: the contraction index of each product
// may be permuted freely, so every lane stages (cp.async, 16 bytes) exactly
// the K and V pieces whose elements its own mma fragments hold:
//  - S: lane (gid, tig) holds K[key gid + 8h][32c + 8tig .. +8] for the two
//    n-tiles h; the halves of that piece feed two k-steps, and Q's A
//    fragments use the same order of the head dimension.
//  - O: lane holds V[key][64c + 8gid .. +8] for the keys 2tig + {0,1,8,9};
//    pairing two keys' elements (a byte permute) gives the B fragments of 8
//    n-tiles whose columns are d = 64c + 8 * n + e.
// With 16-byte cp.async (sm_80+) the staging ring is laid out
// [warp][stage][piece][lane][16 bytes], so the copies and the reads of a
// piece cover 512 contiguous bytes. With cp.async.bulk (sm_90a) each lane
// copies one whole K or V row into rows padded to D + 8 elements, and the
// tile completes on the stage's mbarrier; on the H200 the cp.async variant
// reached about 3.1 TB/s and bulk copies 3.9-4.1 (bench/results, decode v5).
// The S accumulator layout is the P.V
// A-fragment layout (FlashAttention-2), so the probabilities never leave
// their lane; a row's max is a 4-lane reduction.
//
//===----------------------------------------------------------------------===//

#include "TensorCoreDecodeBuilder.h"

#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

using namespace mlir;

namespace flashir::conversion::kernels {

gpu::GPUFuncOp KernelBuilder::buildTensorCore(OpBuilder &moduleBuilder,
                                              StringRef name) {
  return TensorCoreDecodeBuilder(*this).build(moduleBuilder, name);
}

TensorCoreDecodeBuilder::TensorCoreDecodeBuilder(KernelBuilder &kernel)
    : kernel(kernel), s(kernel.s), hooks(kernel.hooks),
      ctx(kernel.op.getContext()), f32(Float32Type::get(ctx)),
      i32(IntegerType::get(ctx, 32)), D(s.headDim), g(s.group), W(s.warps),
      S(s.stages), layout(D, g), kPieces(layout.kChunks),
      vPieces(layout.vChunks), kSlots(layout.kSlots()), R(layout.rowHalves),
      M(layout.mTiles), bulk(s.bulkCopy), tensor(s.tensorCopy),
      elementBytes(s.element.getIntOrFloatBitWidth() / 8), rowStride(D + 8),
      boxes(tensorCopyBoxes(D)), boxColumns(tensorCopyBoxColumns(D)),
      barrierOffset(sharedMemoryBytes(s) - W * S * 8),
      // Whole boxes with tensor copies: their zero-filled columns count.
      tileBytes(2 * kTileKeys * (tensor ? boxes * boxColumns : D) *
                elementBytes),
      oTiles(vPieces * kVec), partnersShared(D % 64 != 0),
      keysShared(hooks.hasKey() && partnersShared && !bulk),
      mma(parts::MmaSync::atomFor(s.element, /*turing=*/false), s.element),
      pairType(VectorType::get({2}, s.element)) {}

gpu::GPUFuncOp TensorCoreDecodeBuilder::build(OpBuilder &moduleBuilder,
                                              StringRef name) {
  func = kernel.createKernel(moduleBuilder, name, sharedMemoryBytes(s),
                             /*dynamicShared=*/true);
  Block &entry = func.getBody().front();
  OpBuilder ob = OpBuilder::atBlockBegin(&entry);
  LocBuilder b(kernel.op.getLoc(), ob);
  f = kernel.loadFrame(b, func, /*dynamicShared=*/true);
  c0 = cIndex(b, 0);
  c1 = cIndex(b, 1);
  workgroup = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  smem = kernel.statesView(b, f);
  bindRing(b);
  bindLanes(b);
  fullMask = arith::ConstantOp::create(b, b.getI32IntegerAttr(-1));
  zeroPiece = arith::ConstantOp::create(
      b, DenseElementsAttr::get(VectorType::get({kVec}, s.element),
                                b.getZeroAttr(s.element)));
  planKeyTiles(b);
  shuffleWidth = arith::ConstantOp::create(b, b.getI32IntegerAttr(32));
  if (bulk)
    bindBarriers(b);
  if (tensor)
    bindTensorMaps(b);
  zeroOperand =
      s.element.isBF16()
          ? Value(arith::ConstantOp::create(b, b.getI32IntegerAttr(0)))
          : Value(arith::ConstantOp::create(
                b, DenseElementsAttr::get(pairType, b.getZeroAttr(s.element))));
  zeroF = cF32(b, 0.0f);
  nvgpuToken = nvgpu::DeviceAsyncTokenType::get(ctx);
  buildFor(b, c0, f.numQ, [&](LocBuilder &b, Value i) { buildQueryRow(b, i); });
  kernel.waitInLastCta(b);
  gpu::ReturnOp::create(b);
  return func;
}

void TensorCoreDecodeBuilder::bindLanes(LocBuilder &b) {
  tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  warp = arith::DivUIOp::create(b, tid, cIndex(b, 32));
  lane = arith::RemUIOp::create(b, tid, cIndex(b, 32));
  // The mma fragment coordinates of the lane: groupID and thread-in-group.
  gid = arith::DivUIOp::create(b, lane, cIndex(b, 4));
  tig = arith::RemUIOp::create(b, lane, cIndex(b, 4));
  Value headBase = arith::MulIOp::create(b, f.kvHead, cIndex(b, g));
  for (int64_t r = 0; r < R; ++r) {
    Value inGroup =
        r == 0 ? gid : arith::AddIOp::create(b, gid, cIndex(b, 8 * r));
    rowValid.push_back(arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                             inGroup, cIndex(b, g)));
    Value clamped = arith::MinUIOp::create(b, inGroup, cIndex(b, g - 1));
    ownHead.push_back(arith::AddIOp::create(b, headBase, clamped));
    ownParams.push_back(kernel.paramValues(b, f, ownHead.back()));
  }
}

Value TensorCoreDecodeBuilder::kColumnValid(LocBuilder &b, int64_t c) {
  if (32 * (c + 1) <= D)
    return Value();
  return arith::CmpIOp::create(b, arith::CmpIPredicate::ult, tig,
                               cIndex(b, (D - 32 * c) / kVec));
}

Value TensorCoreDecodeBuilder::vColumnValid(LocBuilder &b, int64_t c) {
  if (64 * (c + 1) <= D)
    return Value();
  return arith::CmpIOp::create(b, arith::CmpIPredicate::ult, gid,
                               cIndex(b, (D - 64 * c) / kVec));
}

void TensorCoreDecodeBuilder::planKeyTiles(LocBuilder &b) {
  // Warp w takes the tiles w, w + W, ... of the CTA's keys. Tensor copies
  // load whole tiles of one page: tiles start at multiples of 16 (keys
  // before kBegin are masked out).
  kStart = tensor
               ? arith::AndIOp::create(b, f.kBegin, cIndex(b, ~(kTileKeys - 1)))
                     .getResult()
               : f.kBegin;
  Value span = arith::SubIOp::create(b, f.kEnd, kStart);
  Value spanUp = arith::AddIOp::create(b, span, cIndex(b, kTileKeys - 1));
  Value numTiles = arith::DivUIOp::create(b, spanUp, cIndex(b, kTileKeys));
  Value hasTiles =
      arith::CmpIOp::create(b, arith::CmpIPredicate::ugt, numTiles, warp);
  Value tilesLeft = arith::SubIOp::create(b, numTiles, warp);
  Value tilesUp = arith::AddIOp::create(b, tilesLeft, cIndex(b, W - 1));
  numIter = arith::SelectOp::create(
      b, hasTiles, arith::DivUIOp::create(b, tilesUp, cIndex(b, W)), c0);
}

Value TensorCoreDecodeBuilder::tileStart(LocBuilder &b, Value it) {
  Value tile = arith::AddIOp::create(
      b, warp, arith::MulIOp::create(b, it, cIndex(b, W)));
  return arith::AddIOp::create(
      b, kStart, arith::MulIOp::create(b, tile, cIndex(b, kTileKeys)));
}

void TensorCoreDecodeBuilder::buildQueryRow(LocBuilder &b, Value i) {
  Value row = arith::AddIOp::create(b, f.qBegin, i);
  qpos = arith::SubIOp::create(b, arith::AddIOp::create(b, i, f.keysTotal),
                               f.numQ);
  loadQueryPieces(b, row);

  // State: m, l (the lane's partial sum; m is uniform over the 4 lanes of
  // a row) per row half, o (two columns of each n-tile), next page.
  // Sigmoid keeps m = 0: its states merge by plain sums.
  SmallVector<Value> inits(R, hooks.sigmoid() ? zeroF : negInf(b));
  inits.append(R, zeroF);
  inits.append(R * 2 * oTiles, zeroF);
  seqBase = arith::MulIOp::create(b, i, numIter);
  Value zeroPage = arith::ConstantOp::create(b, b.getI32IntegerAttr(0));
  ValueRange done = kernel.buildStagedLoop(
      b, numIter, inits, zeroPage,
      [&](LocBuilder &b, Value it) {
        return SmallVector<Value>{lanePage(b, it)};
      },
      [&](LocBuilder &b, Value it, ArrayRef<Value> pages) {
        issueTile(b, it, pages[0]);
      },
      [&](LocBuilder &b) { return commitTile(b); },
      [&](LocBuilder &b, Value it, Value token) { waitTile(b, it, token); },
      [&](LocBuilder &b, Value it, ValueRange carried) {
        return keyTile(b, it, carried);
      });
  writeOutput(b, done, i);
}

} // namespace flashir::conversion::kernels
