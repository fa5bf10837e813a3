//===- TensorCoreDecode.cpp - the tensor-core decode kernel ---------------===//
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

#include "DecodeKernel.h"
#include "Parts/MmaSync.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

using namespace mlir;

namespace flashir::conversion::decode {

gpu::GPUFuncOp DecodeKernel::buildTensorCore(OpBuilder &moduleBuilder,
                                             StringRef name) {
  MLIRContext *ctx = op.getContext();
  Type f32 = Float32Type::get(ctx), i32 = IntegerType::get(ctx, 32);
  int64_t D = s.headDim, g = s.group, W = s.warps, S = s.stages;
  TensorCoreDecodeLayout layout(D, g);
  // 16-byte pieces per lane and tile: K has one per 32-column chunk and
  // n-tile (two n-tiles), V one per 64-column chunk and key (four keys). A
  // head dim that is not a multiple of 64 leaves the last chunks partial:
  // their missing pieces are zeros (zero-filled copies, or selects), so
  // they add nothing to Q.K^T and P.V, and the columns past D are not
  // stored.
  int64_t kPieces = layout.kChunks, vPieces = layout.vChunks,
          kSlots = layout.kSlots();
  // The g query heads are the rows of R = ceil(g / 8) 8-row halves of
  // ceil(R / 2) m16 tiles; the lane holds row gid of each half.
  int64_t R = layout.rowHalves, M = layout.mTiles;
  bool bf16 = s.element.isBF16();

  gpu::GPUFuncOp func = createKernel(moduleBuilder, name, sharedMemoryBytes(s),
                                     /*dynamicShared=*/true);
  Block &entry = func.getBody().front();
  OpBuilder ob = OpBuilder::atBlockBegin(&entry);
  LocBuilder b(op.getLoc(), ob);
  Frame f = loadFrame(b, func, /*dynamicShared=*/true);
  Value c0 = cIndex(b, 0), c1 = cIndex(b, 1);
  auto workgroup =
      gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  // The buffer holds the staging ring while the warps walk the keys, then
  // the warps' states for the final merge (barriers separate the uses).
  Value smem = statesView(b, f);
  bool bulk = s.bulkCopy, tensor = s.tensorCopy;
  int64_t elementBytes = s.element.getIntOrFloatBitWidth() / 8;
  // cp.async: [warp][stage][piece][lane][16 bytes]. Row bulk copies: whole
  // rows, [warp][stage][K or V][key][D + 8] (the padding spreads the 64-byte
  // K fragment reads of 8 rows over all banks, but leaves copies that are
  // not 128-byte aligned: the H200's L2 then served ~12% more sectors than
  // the rows hold, with ~20% hits). Tensor copies: [warp][stage][K or V]
  // [D / 64][key][64], 128-byte rows whose 16-byte chunks the copy engine
  // swizzles (chunk ^ key % 8), 1024-byte aligned: aligned copies and
  // conflict-free fragment reads; columns from D to the box's end are
  // zeros the copy engine fills in.
  int64_t rowStride = D + 8, halves = tensorCopyBoxes(D);
  Value stage, ringShift;
  if (tensor) {
    Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, f.buf);
    Value align = cIndex(b, kSwizzleAlign);
    Value misalign = arith::RemUIOp::create(b, base, cIndex(b, kSwizzleAlign));
    Value shift = arith::SubIOp::create(b, align, misalign);
    ringShift = arith::RemUIOp::create(b, shift, cIndex(b, kSwizzleAlign));
    stage = memref::ViewOp::create(
        b,
        MemRefType::get({W, S, 2, halves, kTileKeys, kBoxElements}, s.element,
                        MemRefLayoutAttrInterface(), workgroup),
        f.buf, ringShift, ValueRange{});
  } else if (bulk) {
    stage = memref::ViewOp::create(
        b,
        MemRefType::get({W, S, 2, kTileKeys, rowStride}, s.element,
                        MemRefLayoutAttrInterface(), workgroup),
        f.buf, c0, ValueRange{});
  } else {
    stage = memref::ViewOp::create(
        b,
        MemRefType::get({W, S, layout.slots(), 32, kVec}, s.element,
                        MemRefLayoutAttrInterface(), workgroup),
        f.buf, c0, ValueRange{});
  }

  Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value warp = arith::DivUIOp::create(b, tid, cIndex(b, 32));
  Value lane = arith::RemUIOp::create(b, tid, cIndex(b, 32));
  // The mma fragment coordinates of the lane: groupID and thread-in-group.
  Value gid = arith::DivUIOp::create(b, lane, cIndex(b, 4));
  Value tig = arith::RemUIOp::create(b, lane, cIndex(b, 4));
  // Row half r holds head 8r + gid of the group; rows past g take a real
  // head's parameters and query (never written).
  SmallVector<Value> rowValid, ownHead;
  SmallVector<SmallVector<Value>> ownParams;
  Value headBase = arith::MulIOp::create(b, f.kvHead, cIndex(b, g));
  for (int64_t r = 0; r < R; ++r) {
    Value inGroup =
        r == 0 ? gid : arith::AddIOp::create(b, gid, cIndex(b, 8 * r));
    rowValid.push_back(arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                             inGroup, cIndex(b, g)));
    Value clamped = arith::MinUIOp::create(b, inGroup, cIndex(b, g - 1));
    ownHead.push_back(arith::AddIOp::create(b, headBase, clamped));
    ownParams.push_back(paramValues(b, f, ownHead.back()));
  }
  // Whether the lane's K piece of 32-column chunk c (columns 32c + 8tig) or
  // V piece of 64-column chunk c (64c + 8gid) lies before D; null where the
  // chunk is whole.
  auto kColumnValid = [&](LocBuilder &b, int64_t c) -> Value {
    if (32 * (c + 1) <= D)
      return Value();
    return arith::CmpIOp::create(b, arith::CmpIPredicate::ult, tig,
                                 cIndex(b, (D - 32 * c) / kVec));
  };
  auto vColumnValid = [&](LocBuilder &b, int64_t c) -> Value {
    if (64 * (c + 1) <= D)
      return Value();
    return arith::CmpIOp::create(b, arith::CmpIPredicate::ult, gid,
                                 cIndex(b, (D - 64 * c) / kVec));
  };
  Value fullMask = arith::ConstantOp::create(b, b.getI32IntegerAttr(-1));
  Value zeroPiece = arith::ConstantOp::create(
      b, DenseElementsAttr::get(VectorType::get({kVec}, s.element),
                                b.getZeroAttr(s.element)));

  // Warp w takes the tiles w, w + W, ... of the CTA's keys. Tensor copies
  // load whole tiles of one page: tiles start at multiples of 16 (keys
  // before kBegin are masked out).
  Value kBegin = f.kBegin, kEnd = f.kEnd;
  Value kStart =
      tensor ? arith::AndIOp::create(b, kBegin, cIndex(b, ~(kTileKeys - 1)))
                   .getResult()
             : kBegin;
  Value span = arith::SubIOp::create(b, kEnd, kStart);
  Value spanUp = arith::AddIOp::create(b, span, cIndex(b, kTileKeys - 1));
  Value numTiles = arith::DivUIOp::create(b, spanUp, cIndex(b, kTileKeys));
  Value hasTiles =
      arith::CmpIOp::create(b, arith::CmpIPredicate::ugt, numTiles, warp);
  Value tilesLeft = arith::SubIOp::create(b, numTiles, warp);
  Value tilesUp = arith::AddIOp::create(b, tilesLeft, cIndex(b, W - 1));
  Value numIter = arith::SelectOp::create(
      b, hasTiles, arith::DivUIOp::create(b, tilesUp, cIndex(b, W)), c0);
  auto tileStart = [&](LocBuilder &b, Value it) {
    Value tile = arith::AddIOp::create(
        b, warp, arith::MulIOp::create(b, it, cIndex(b, W)));
    return arith::AddIOp::create(
        b, kStart, arith::MulIOp::create(b, tile, cIndex(b, kTileKeys)));
  };
  // Keys past the end read the last key (valid memory) and are masked out;
  // only used for iterations < numIter, so kEnd > kBegin.
  auto clampKey = [&](LocBuilder &b, Value j) {
    return arith::MinSIOp::create(b, j, arith::SubIOp::create(b, kEnd, c1));
  };
  // The page of key (lane % 16) of iteration `it`'s tile; other lanes'
  // pages come by shuffles.
  auto lanePage = [&](LocBuilder &b, Value it) -> Value {
    Value t0 = tileStart(b, it);
    Value j = clampKey(
        b, arith::AddIOp::create(
               b, t0, arith::RemUIOp::create(b, lane, cIndex(b, kTileKeys))));
    return poolPage32(b, f,
                      arith::AddIOp::create(
                          b, f.pageBegin,
                          arith::DivUIOp::create(b, j, cIndex(b, s.pageSize))));
  };
  Value width = arith::ConstantOp::create(b, b.getI32IntegerAttr(32));
  // Bulk copies (sm_90): one `cp.async.bulk` of a whole K or V row per lane
  // (lanes 0-15: K rows, 16-31: V rows of the tile's 16 keys), completing
  // on the stage's mbarrier (one per warp and stage, after the buffer).
  Type i64 = b.getI64Type();
  auto i64Of = [&](LocBuilder &b, Value index) -> Value {
    return arith::IndexCastOp::create(b, i64, index);
  };
  auto pointerTo = [&](LocBuilder &b, Value address, unsigned space) -> Value {
    return LLVM::IntToPtrOp::create(b, LLVM::LLVMPointerType::get(ctx, space),
                                    address);
  };
  constexpr unsigned kGlobal = 1, kShared = 3, kSharedCluster = 7;
  Value sharedBase, kBase, vBase;
  int64_t barrierOffset = sharedMemoryBytes(s) - W * S * 8;
  auto barrierOf = [&](LocBuilder &b, Value slot) {
    Value base = cIndex(b, barrierOffset);
    Value index = arith::AddIOp::create(
        b, arith::MulIOp::create(b, warp, cIndex(b, S)), slot);
    Value offset = arith::AddIOp::create(
        b, base, arith::MulIOp::create(b, index, cIndex(b, 8)));
    return pointerTo(b, arith::AddIOp::create(b, sharedBase, i64Of(b, offset)),
                     kShared);
  };
  Value laneIsZero;
  if (bulk) {
    sharedBase =
        i64Of(b, memref::ExtractAlignedPointerAsIndexOp::create(b, f.buf));
    auto poolBase = [&](Value pool) -> Value {
      auto meta = memref::ExtractStridedMetadataOp::create(b, pool);
      Value aligned = memref::ExtractAlignedPointerAsIndexOp::create(b, pool);
      return i64Of(b, arith::AddIOp::create(
                          b, aligned,
                          arith::MulIOp::create(b, meta.getOffset(),
                                                cIndex(b, elementBytes))));
    };
    // Row copies address the pools directly (tensor copies go through the
    // tensor maps).
    if (!tensor) {
      kBase = poolBase(f.kPool);
      vBase = poolBase(f.vPool);
    }
    laneIsZero = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, lane, c0);
    // Lane 0 of each warp initialises the warp's barriers (one arrival: its
    // own expect-tx); the fence makes them visible to the copy engine.
    scf::IfOp::create(b, laneIsZero, [&](OpBuilder &iob, Location loc) {
      LocBuilder b(loc, iob);
      for (int64_t st = 0; st < S; ++st) {
        Value barrier = barrierOf(b, cIndex(b, st));
        NVVM::MBarrierInitOp::create(
            b, barrier, arith::ConstantOp::create(b, b.getI32IntegerAttr(1)),
            Value());
      }
      scf::YieldOp::create(b);
    });
    NVVM::FenceProxyOp::create(
        b, NVVM::ProxyKindAttr::get(ctx, NVVM::ProxyKind::async_shared),
        NVVM::SharedSpaceAttr::get(ctx, NVVM::SharedSpace::shared_cta));
    NVVM::SyncWarpOp::create(b, fullMask);
  }
  // Ring slot seq % S for the copies of tile sequence number `seq`: every
  // lane is done reading the slot's previous tile (generic proxy) before the
  // copy engine (async proxy) overwrites it. Returns the slot.
  auto claimSlot = [&](LocBuilder &b, Value seq) -> Value {
    NVVM::SyncWarpOp::create(b, fullMask);
    NVVM::FenceProxyOp::create(
        b, NVVM::ProxyKindAttr::get(ctx, NVVM::ProxyKind::async_shared),
        NVVM::SharedSpaceAttr::get(ctx, NVVM::SharedSpace::shared_cta));
    return arith::RemUIOp::create(b, seq, cIndex(b, S));
  };
  // Lane 0's arrival on `barrier` with the bytes of one K and V tile (whole
  // boxes with tensor copies: their zero-filled columns count).
  int64_t tileBytes =
      2 * kTileKeys * (tensor ? halves * kBoxElements : D) * elementBytes;
  auto expectTile = [&](LocBuilder &b, Value barrier) {
    NVVM::MBarrierArriveExpectTxOp::create(
        b, Type(), barrier,
        arith::ConstantOp::create(
            b, b.getI32IntegerAttr(static_cast<int32_t>(tileBytes))),
        NVVM::MemScopeKindAttr::get(ctx, NVVM::MemScopeKind::CTA),
        b.getBoolAttr(false), Value());
  };
  // Issues the bulk copies of tile `it` (sequence number `seq`).
  auto issueBulk = [&](LocBuilder &b, Value it, Value seq, Value pageId) {
    Value slot = claimSlot(b, seq);
    Value barrier = barrierOf(b, slot);
    scf::IfOp::create(b, laneIsZero, [&](OpBuilder &iob, Location loc) {
      LocBuilder b(loc, iob);
      expectTile(b, barrier);
      scf::YieldOp::create(b);
    });
    Value key = arith::RemUIOp::create(b, lane, cIndex(b, kTileKeys));
    Value isV = arith::CmpIOp::create(b, arith::CmpIPredicate::uge, lane,
                                      cIndex(b, kTileKeys));
    Value j = clampKey(b, arith::AddIOp::create(b, tileStart(b, it), key));
    Value page = arith::IndexCastOp::create(b, b.getIndexType(), pageId);
    Value row;
    if (s.access.headMajor) {
      // HND: the head's rows of the page follow one another.
      Value slotInPage = arith::RemUIOp::create(b, j, cIndex(b, s.pageSize));
      Value headRow = arith::MulIOp::create(
          b, f.kvHead, cIndex(b, s.access.strides()[2] / D));
      Value pageRow =
          arith::MulIOp::create(b, page, cIndex(b, s.access.strides()[0] / D));
      row = arith::AddIOp::create(b, arith::AddIOp::create(b, pageRow, headRow),
                                  slotInPage);
    } else {
      Value pageStart = arith::MulIOp::create(b, page, cIndex(b, s.pageSize));
      Value token = arith::AddIOp::create(
          b, pageStart, arith::RemUIOp::create(b, j, cIndex(b, s.pageSize)));
      row = arith::AddIOp::create(
          b, arith::MulIOp::create(b, token, cIndex(b, s.numKvHeads)),
          f.kvHead);
    }
    Value pool = arith::SelectOp::create(b, isV, vBase, kBase);
    Value src = arith::AddIOp::create(
        b, pool,
        i64Of(b, arith::MulIOp::create(b, row, cIndex(b, D * elementBytes))));
    // Element offset of [warp][slot][K or V][key][0] in the stage view.
    Value warpSlot = arith::AddIOp::create(
        b, arith::MulIOp::create(b, warp, cIndex(b, S)), slot);
    Value slotBase = arith::MulIOp::create(b, warpSlot, cIndex(b, 2));
    Value kvIndex = arith::AddIOp::create(
        b, slotBase, arith::DivUIOp::create(b, lane, cIndex(b, kTileKeys)));
    Value keyRow = arith::AddIOp::create(
        b, arith::MulIOp::create(b, kvIndex, cIndex(b, kTileKeys)), key);
    Value dstElements = arith::MulIOp::create(b, keyRow, cIndex(b, rowStride));
    Value dst = arith::AddIOp::create(
        b, sharedBase,
        i64Of(b,
              arith::MulIOp::create(b, dstElements, cIndex(b, elementBytes))));
    // The shared::cluster form (PTX 8.0); a CTA's own shared window is part
    // of its cluster's.
    Value dstCluster = LLVM::AddrSpaceCastOp::create(
        b, LLVM::LLVMPointerType::get(ctx, kSharedCluster),
        pointerTo(b, dst, kShared));
    Value srcPointer = pointerTo(b, src, kGlobal);
    NVVM::CpAsyncBulkGlobalToSharedClusterOp::create(
        b, dstCluster, srcPointer, barrier,
        arith::ConstantOp::create(
            b, b.getI32IntegerAttr(static_cast<int32_t>(D * elementBytes))),
        Value(), Value());
  };
  // Tensor copies: the generic addresses of the K and V maps (written by
  // the host before the launch, so no tensor-map proxy fence is needed).
  Value kMap, vMap;
  if (tensor) {
    Value maps =
        i64Of(b, memref::ExtractAlignedPointerAsIndexOp::create(b, f.kvMaps));
    kMap = pointerTo(b, maps, 0);
    vMap = pointerTo(
        b,
        arith::AddIOp::create(
            b, maps, arith::ConstantOp::create(b, b.getI64IntegerAttr(128))),
        0);
  }
  // Issues the tensor copies of tile `it` (all in page `pageId`): lane 0
  // copies ceil(D / 64) boxes of 16 rows x 64 elements each of K and V, at
  // abi::kvTensorMap's coordinates (column, head, token) in NHD pools and
  // (column, slot, page * Hkv + head) in HND ones.
  auto issueTensor = [&](LocBuilder &b, Value it, Value seq, Value pageId) {
    Value slot = claimSlot(b, seq);
    Value barrier = barrierOf(b, slot);
    Value t0 = tileStart(b, it);
    scf::IfOp::create(b, laneIsZero, [&](OpBuilder &iob, Location loc) {
      LocBuilder b(loc, iob);
      expectTile(b, barrier);
      auto i32Of = [&](Value index) -> Value {
        return arith::IndexCastOp::create(b, i32, index);
      };
      Value page = arith::IndexCastOp::create(b, b.getIndexType(), pageId);
      Value slotInPage = arith::RemUIOp::create(b, t0, cIndex(b, s.pageSize));
      Value x, y;
      if (s.access.headMajor) {
        x = i32Of(slotInPage);
        Value pageHeads =
            arith::MulIOp::create(b, page, cIndex(b, s.numKvHeads));
        y = i32Of(arith::AddIOp::create(b, pageHeads, f.kvHead));
      } else {
        x = i32Of(f.kvHead);
        Value pageStart = arith::MulIOp::create(b, page, cIndex(b, s.pageSize));
        y = i32Of(arith::AddIOp::create(b, pageStart, slotInPage));
      }
      for (int64_t kind = 0; kind < 2; ++kind)
        for (int64_t h = 0; h < halves; ++h) {
          // Byte offset of [warp][slot][kind][h][0][0] in the ring.
          Value warpSlot = arith::AddIOp::create(
              b, arith::MulIOp::create(b, warp, cIndex(b, S)), slot);
          Value slotBase =
              arith::MulIOp::create(b, warpSlot, cIndex(b, 2 * halves));
          Value boxIndex =
              arith::AddIOp::create(b, slotBase, cIndex(b, kind * halves + h));
          Value ringBase =
              arith::AddIOp::create(b, sharedBase, i64Of(b, ringShift));
          Value box = arith::AddIOp::create(
              b, ringBase,
              i64Of(b,
                    arith::MulIOp::create(
                        b, boxIndex,
                        cIndex(b, kTileKeys * kBoxElements * elementBytes))));
          Value dst = LLVM::AddrSpaceCastOp::create(
              b, LLVM::LLVMPointerType::get(ctx, kSharedCluster),
              pointerTo(b, box, kShared));
          NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(
              b, dst, kind == 0 ? kMap : vMap,
              ValueRange{arith::ConstantOp::create(
                             b, b.getI32IntegerAttr(
                                    static_cast<int32_t>(h * kBoxElements))),
                         x, y},
              barrier, ValueRange{}, Value(), Value(), NVVM::TMALoadMode::TILE,
              false, NVVM::CTAGroupKindAttr(), Value());
        }
      scf::YieldOp::create(b);
    });
  };
  // Waits for tile sequence number `seq`: its slot's barrier completes its
  // (seq / S)-th phase.
  auto waitBulk = [&](LocBuilder &b, Value seq) {
    Value slot = arith::RemUIOp::create(b, seq, cIndex(b, S));
    Value phase = arith::DivUIOp::create(b, seq, cIndex(b, S));
    Value parity = arith::IndexCastOp::create(
        b, b.getI32Type(), arith::RemUIOp::create(b, phase, cIndex(b, 2)));
    Value barrier = barrierOf(b, slot);
    NVVM::MBarrierTryWaitParityOp::create(
        b, barrier, parity,
        arith::ConstantOp::create(b, b.getI32IntegerAttr(10000000)));
  };

  // Issues the copies of iteration `it`'s tile into its ring slot.
  auto issue = [&](LocBuilder &b, Value it, Value pageId) {
    Value t0 = tileStart(b, it);
    Value ring = arith::RemUIOp::create(b, it, cIndex(b, S));
    // (page, slot) of key `k` (0..15) of the tile.
    auto locate = [&](Value k) -> std::pair<Value, Value> {
      Value page = gpu::ShuffleOp::create(b, pageId,
                                          arith::IndexCastOp::create(b, i32, k),
                                          width, gpu::ShuffleMode::IDX)
                       .getShuffleResult();
      Value key = clampKey(b, arith::AddIOp::create(b, t0, k));
      Value slot = arith::RemUIOp::create(b, key, cIndex(b, s.pageSize));
      return {arith::IndexCastOp::create(b, b.getIndexType(), page), slot};
    };
    // A piece past column D (`valid` false) copies nothing from column 0
    // and zero-fills its 16 bytes.
    auto copy = [&](Value pool, int64_t piece, Value page, Value slot, Value d,
                    Value valid) {
      Value srcElements;
      if (valid) {
        Value full = cIndex(b, kVec), none = cIndex(b, 0);
        srcElements = arith::SelectOp::create(b, valid, full, none);
        d = arith::SelectOp::create(b, valid, d, none);
      }
      nvgpu::DeviceAsyncCopyOp::create(
          b, stage, ValueRange{warp, ring, cIndex(b, piece), lane, c0}, pool,
          ValueRange{page, slot, f.kvHead, d}, b.getIndexAttr(kVec),
          srcElements, /*bypassL1=*/b.getUnitAttr());
    };
    Value tig8 = arith::MulIOp::create(b, tig, cIndex(b, kVec));
    for (int64_t h = 0; h < 2; ++h) {
      auto [page, slot] =
          locate(arith::AddIOp::create(b, gid, cIndex(b, 8 * h)));
      for (int64_t c = 0; c < kPieces; ++c) {
        Value d = arith::AddIOp::create(b, tig8, cIndex(b, 32 * c));
        copy(f.kPool, h * kPieces + c, page, slot, d, kColumnValid(b, c));
      }
    }
    Value gid8 = arith::MulIOp::create(b, gid, cIndex(b, kVec));
    Value tig2 = arith::MulIOp::create(b, tig, cIndex(b, 2));
    // A named array: an ArrayRef of a braced list dangles in a range-for.
    static constexpr int64_t kRowOffsets[] = {0, 1, 8, 9};
    for (auto [qk, offset] : llvm::enumerate(kRowOffsets)) {
      auto [page, slot] =
          locate(arith::AddIOp::create(b, tig2, cIndex(b, offset)));
      for (int64_t c = 0; c < vPieces; ++c) {
        Value d = arith::AddIOp::create(b, gid8, cIndex(b, 64 * c));
        copy(f.vPool, kSlots + qk * vPieces + c, page, slot, d,
             vColumnValid(b, c));
      }
    }
  };

  auto pairType = VectorType::get({2}, s.element);
  // The m16n8k16 atom of the element type.
  parts::MmaSync mmaSync(parts::MmaSync::atomFor(s.element, /*turing=*/false),
                         s.element);
  auto operand = [&](LocBuilder &b, Value pair) {
    return mmaSync.operand(b, pair);
  };
  Value zeroOperand =
      bf16
          ? Value(arith::ConstantOp::create(b, b.getI32IntegerAttr(0)))
          : Value(arith::ConstantOp::create(
                b, DenseElementsAttr::get(pairType, b.getZeroAttr(s.element))));
  Value zeroF = cF32(b, 0.0f);
  // Elements e, e + 1 of a 16-byte piece.
  auto pairAt = [&](LocBuilder &b, Value piece, int64_t e) {
    return operand(b, vector::ShuffleOp::create(b, piece, piece,
                                                ArrayRef<int64_t>{e, e + 1}));
  };
  // One m16n8k16 product accumulating rows gid (a0, a2; acc[0], acc[1])
  // and, where the m tile has a second row half (a1 non-null), rows gid + 8
  // (a1, a3; acc[2], acc[3]); without it those rows are zero on input and
  // ignored on output.
  auto mma = [&](LocBuilder &b, Value a0, Value a1, Value a2, Value a3,
                 Value b0, Value b1, MutableArrayRef<Value> acc) {
    bool upper = static_cast<bool>(a1);
    Value aRegs[] = {a0, upper ? a1 : zeroOperand, a2,
                     upper ? a3 : zeroOperand};
    Value bRegs[] = {b0, b1};
    Value cRegs[] = {acc[0], acc[1], upper ? acc[2] : zeroF,
                     upper ? acc[3] : zeroF};
    mmaSync.build(b, aRegs, bRegs, cRegs);
    for (int64_t k = 0; k < (upper ? 4 : 2); ++k)
      acc[k] = cRegs[k];
  };
  auto loadPiece = [&](LocBuilder &b, Value ring, int64_t piece) {
    return vector::LoadOp::create(
        b, VectorType::get({kVec}, s.element), stage,
        ValueRange{warp, ring, cIndex(b, piece), lane, c0},
        /*nontemporal=*/false, llvm::MaybeAlign(16));
  };
  auto loadRow = [&](LocBuilder &b, Value ring, int64_t kind, Value key,
                     Value col) {
    return vector::LoadOp::create(
        b, VectorType::get({kVec}, s.element), stage,
        ValueRange{warp, ring, cIndex(b, kind), key, col},
        /*nontemporal=*/false, llvm::MaybeAlign(16));
  };
  // Tensor copies: 16-byte chunk `chunk` of row `key` of box `half`, where
  // the swizzle put it (chunk ^ key % 8).
  auto loadSwizzled = [&](LocBuilder &b, Value ring, int64_t kind, int64_t half,
                          Value key, Value chunk) {
    Value physical = arith::XOrIOp::create(
        b, chunk, arith::RemUIOp::create(b, key, cIndex(b, 8)));
    return vector::LoadOp::create(
        b, VectorType::get({kVec}, s.element), stage,
        ValueRange{warp, ring, cIndex(b, kind), cIndex(b, half), key,
                   arith::MulIOp::create(b, physical, cIndex(b, kVec))},
        /*nontemporal=*/false, llvm::MaybeAlign(16));
  };
  // A whole-row read of columns `col`.. +8 that may lie past D (`valid`
  // false): reads column 0 and yields zeros (the row's padding or the next
  // row may hold anything).
  auto loadRowPiece = [&](LocBuilder &b, Value ring, int64_t kind, Value key,
                          Value col, Value valid) -> Value {
    if (!valid)
      return loadRow(b, ring, kind, key, col);
    Value safeCol = arith::SelectOp::create(b, valid, col, c0);
    Value piece = loadRow(b, ring, kind, key, safeCol);
    return arith::SelectOp::create(b, valid, piece, zeroPiece);
  };
  // The lane's K piece of n-tile h, columns 32c + 8tig.
  auto loadK = [&](LocBuilder &b, Value ring, int64_t h, int64_t c) -> Value {
    if (!tensor && !bulk)
      return loadPiece(b, ring, h * kPieces + c);
    Value key = arith::AddIOp::create(b, gid, cIndex(b, 8 * h));
    if (tensor)
      return loadSwizzled(
          b, ring, 0, c / 2, key,
          arith::AddIOp::create(b, tig, cIndex(b, 4 * (c % 2))));
    Value col = arith::MulIOp::create(b, tig, cIndex(b, kVec));
    col = arith::AddIOp::create(b, col, cIndex(b, 32 * c));
    return loadRowPiece(b, ring, 0, key, col, kColumnValid(b, c));
  };
  // The lane's V piece of key 2tig + {0, 1, 8, 9}[qk], columns 64c + 8gid.
  auto loadV = [&](LocBuilder &b, Value ring, int64_t qk, int64_t c) -> Value {
    const int64_t offsets[] = {0, 1, 8, 9};
    if (!tensor && !bulk)
      return loadPiece(b, ring, kSlots + qk * vPieces + c);
    Value tig2 = arith::MulIOp::create(b, tig, cIndex(b, 2));
    Value key = arith::AddIOp::create(b, tig2, cIndex(b, offsets[qk]));
    if (tensor)
      return loadSwizzled(b, ring, 1, c, key, gid);
    Value col = arith::MulIOp::create(b, gid, cIndex(b, kVec));
    col = arith::AddIOp::create(b, col, cIndex(b, 64 * c));
    return loadRowPiece(b, ring, 1, key, col, vColumnValid(b, c));
  };
  // A key hook reads each K element's partner half a head away. Where D is
  // a multiple of 64 the partner of chunk c is chunk c + D/64 of the same
  // lane; otherwise it is read from the tile in shared memory (with 16-byte
  // cp.async, from the piece another lane staged: see keysShared).
  bool partnersShared = D % 64 != 0;
  bool keysShared = hooks.hasKey() && partnersShared && !bulk;
  auto readK = [&](LocBuilder &b, Value ring, int64_t h, Value col,
                   int64_t width) -> Value {
    Value key = arith::AddIOp::create(b, gid, cIndex(b, 8 * h));
    if (bulk)
      return loadColumns(b, stage, {warp, ring, c0, key}, col, width);
    Value chunk = arith::DivUIOp::create(b, col, cIndex(b, 32));
    Value piece = arith::AddIOp::create(b, chunk, cIndex(b, h * kPieces));
    Value inChunk = arith::RemUIOp::create(b, col, cIndex(b, 32));
    Value gid4 = arith::MulIOp::create(b, gid, cIndex(b, 4));
    Value owner = arith::AddIOp::create(
        b, gid4, arith::DivUIOp::create(b, inChunk, cIndex(b, kVec)));
    Value element = arith::RemUIOp::create(b, col, cIndex(b, kVec));
    return loadColumns(b, stage, {warp, ring, piece, owner}, element, width);
  };
  // The lane's K pieces of n-tile h (keys t0 + gid + 8h) after the key
  // hook; pieces past D stay zero.
  auto keyHooked = [&](LocBuilder &b, Value ring, Value t0,
                       int64_t h) -> SmallVector<Value> {
    SmallVector<Value> raw, hooked;
    for (int64_t c = 0; c < kPieces; ++c)
      raw.push_back(loadK(b, ring, h, c));
    Value key = arith::AddIOp::create(b, gid, cIndex(b, 8 * h));
    Value kpos = arith::AddIOp::create(b, t0, key);
    Value tig8 = arith::MulIOp::create(b, tig, cIndex(b, kVec));
    for (int64_t c = 0; c < kPieces; ++c) {
      Value d0 = arith::AddIOp::create(b, tig8, cIndex(b, 32 * c));
      Value valid = kColumnValid(b, c);
      if (valid)
        d0 = arith::SelectOp::create(b, valid, d0, c0);
      Value rot =
          partnersShared
              ? loadRotated(b, d0,
                            [&](LocBuilder &b, Value col, int64_t width) {
                              return readK(b, ring, h, col, width);
                            })
              : raw[(c + D / 64) % kPieces];
      Value piece = applyRowHook(b, /*isKey=*/true, raw[c], rot, d0, kpos,
                                 f.kvHead, ownParams[0]);
      if (valid)
        piece = arith::SelectOp::create(b, valid, piece, zeroPiece);
      hooked.push_back(piece);
    }
    return hooked;
  };
  // Tensor copies load whole tiles: V rows of keys outside [kBegin, kEnd)
  // may hold anything (a last page's unwritten rows: NaN * 0 would poison
  // O), so a tile that has such keys zeroes them after it arrives. Lane l
  // clears 16-byte chunks l / 16 + 2k of row l % 16 (the swizzle only
  // permutes a row's chunks).
  auto zeroOutsideRows = [&](LocBuilder &b, Value ring, Value t0) {
    Value startsBefore =
        arith::CmpIOp::create(b, arith::CmpIPredicate::slt, t0, kBegin);
    Value t1 = arith::AddIOp::create(b, t0, cIndex(b, kTileKeys));
    Value partial = arith::OrIOp::create(
        b, startsBefore,
        arith::CmpIOp::create(b, arith::CmpIPredicate::sgt, t1, kEnd));
    scf::IfOp::create(b, partial, [&](OpBuilder &iob, Location loc) {
      LocBuilder b(loc, iob);
      Value key = arith::RemUIOp::create(b, lane, cIndex(b, kTileKeys));
      Value j = arith::AddIOp::create(b, t0, key);
      Value before =
          arith::CmpIOp::create(b, arith::CmpIPredicate::slt, j, kBegin);
      Value outside = arith::OrIOp::create(
          b, before,
          arith::CmpIOp::create(b, arith::CmpIPredicate::sge, j, kEnd));
      scf::IfOp::create(b, outside, [&](OpBuilder &zob, Location loc) {
        LocBuilder b(loc, zob);
        Value first = arith::DivUIOp::create(b, lane, cIndex(b, kTileKeys));
        for (int64_t h = 0; h < halves; ++h)
          for (int64_t k = 0; k < kBoxElements / kVec / 2; ++k) {
            Value chunk = arith::AddIOp::create(b, first, cIndex(b, 2 * k));
            vector::StoreOp::create(
                b, zeroPiece, stage,
                ValueRange{warp, ring, cIndex(b, 1), cIndex(b, h), key,
                           arith::MulIOp::create(b, chunk, cIndex(b, kVec))},
                /*nontemporal=*/false, llvm::MaybeAlign(16));
          }
        scf::YieldOp::create(b);
      });
      NVVM::SyncWarpOp::create(b, fullMask);
      scf::YieldOp::create(b);
    });
  };
  Type nvgpuToken = nvgpu::DeviceAsyncTokenType::get(ctx);
  // Accumulator n-tiles: 8 per 64-column chunk (columns 64c + 8n + e).
  int64_t oTiles = vPieces * kVec;
  // The carried state: m of each row half, then l of each, then each row
  // half's accumulators (two per n-tile).
  auto oIndex = [&](int64_t r, int64_t t, int64_t k) {
    return 2 * R + r * 2 * oTiles + 2 * t + k;
  };

  buildFor(b, c0, f.numQ, [&](LocBuilder &b, Value i) {
    Value row = arith::AddIOp::create(b, f.qBegin, i);
    Value qpos =
        arith::SubIOp::create(b, arith::AddIOp::create(b, i, f.numKv), f.numQ);
    // A fragments of Q: row half r's piece c holds Q[head 8r + gid]
    // [32c + 8tig .. +8] (zeros past g or D).
    SmallVector<SmallVector<Value>> qPiece(R);
    for (int64_t r = 0; r < R; ++r)
      for (int64_t c = 0; c < kPieces; ++c) {
        Value tig8 = arith::MulIOp::create(b, tig, cIndex(b, kVec));
        Value d = arith::AddIOp::create(b, tig8, cIndex(b, 32 * c));
        Value valid = rowValid[r];
        if (Value inD = kColumnValid(b, c)) {
          valid = arith::AndIOp::create(b, valid, inD);
          d = arith::SelectOp::create(b, inD, d, c0);
        }
        Value piece = loadRaw(b, f.q, {row, ownHead[r], d});
        if (hooks.hasQuery()) {
          Value rot =
              loadRotated(b, d, [&](LocBuilder &b, Value col, int64_t w) {
                return loadColumns(b, f.q, {row, ownHead[r]}, col, w);
              });
          piece = applyRowHook(b, /*isKey=*/false, piece, rot, d, qpos,
                               ownHead[r], ownParams[r]);
        }
        qPiece[r].push_back(
            arith::SelectOp::create(b, valid, piece, zeroPiece));
      }

    // State: m, l (the lane's partial sum; m is uniform over the 4 lanes of
    // a row) per row half, o (two columns of each n-tile), next page.
    // Sigmoid keeps m = 0: its states merge by plain sums.
    SmallVector<Value> inits(R, hooks.sigmoid() ? zeroF : negInf(b));
    inits.append(R, zeroF);
    inits.append(R * 2 * oTiles, zeroF);
    // Bulk copies: tile sequence numbers run on over the query rows (the
    // barriers' phases do).
    Value seqBase = arith::MulIOp::create(b, i, numIter);
    auto seqOf = [&](LocBuilder &b, Value it) -> Value {
      return arith::AddIOp::create(b, seqBase, it);
    };
    Value zeroPage = arith::ConstantOp::create(b, b.getI32IntegerAttr(0));
    ValueRange done = buildStagedLoop(
        b, numIter, inits, zeroPage,
        [&](LocBuilder &b, Value it) {
          return SmallVector<Value>{lanePage(b, it)};
        },
        [&](LocBuilder &b, Value it, ArrayRef<Value> pages) {
          if (tensor) {
            issueTensor(b, it, seqOf(b, it), pages[0]);
          } else if (bulk) {
            issueBulk(b, it, seqOf(b, it), pages[0]);
          } else {
            // Every lane is done reading the pieces others staged in the
            // slot these copies overwrite.
            if (keysShared)
              NVVM::SyncWarpOp::create(b, fullMask);
            issue(b, it, pages[0]);
          }
        },
        [&](LocBuilder &b) -> Value {
          if (bulk)
            return Value();
          return nvgpu::DeviceAsyncCreateGroupOp::create(b, nvgpuToken,
                                                         ValueRange{});
        },
        [&](LocBuilder &b, Value it, Value token) {
          if (bulk) {
            waitBulk(b, seqOf(b, it));
            return;
          }
          nvgpu::DeviceAsyncWaitOp::create(b, token,
                                           b.getI32IntegerAttr(S - 1));
          // The pieces other lanes staged are complete and visible.
          if (keysShared)
            NVVM::SyncWarpOp::create(b, fullMask);
        },
        [&](LocBuilder &b, Value it, ValueRange carried) {
          Value seq = bulk ? seqOf(b, it) : it;
          Value ring = arith::RemUIOp::create(b, seq, cIndex(b, S));
          Value t0 = tileStart(b, it);
          if (tensor)
            zeroOutsideRows(b, ring, t0);

          // S = Q.K^T: row half r, keys 8h + 2tig + e (h, e in {0, 1}).
          SmallVector<std::array<std::array<Value, 2>, 2>> score(R);
          for (int64_t h = 0; h < 2; ++h) {
            SmallVector<Value> acc(4 * M, zeroF);
            SmallVector<Value> hookedK;
            if (hooks.hasKey())
              hookedK = keyHooked(b, ring, t0, h);
            for (int64_t c = 0; c < kPieces; ++c) {
              Value k = hooks.hasKey() ? hookedK[c] : loadK(b, ring, h, c);
              for (int64_t half = 0; half < 2; ++half) {
                Value b0, b1;
                for (int64_t mt = 0; mt < M; ++mt) {
                  ArrayRef<Value> lower = qPiece[2 * mt];
                  Value a0 = pairAt(b, lower[c], 4 * half);
                  Value a2 = pairAt(b, lower[c], 4 * half + 2);
                  Value a1, a3;
                  if (2 * mt + 1 < R) {
                    a1 = pairAt(b, qPiece[2 * mt + 1][c], 4 * half);
                    a3 = pairAt(b, qPiece[2 * mt + 1][c], 4 * half + 2);
                  }
                  if (!b0) {
                    b0 = pairAt(b, k, 4 * half);
                    b1 = pairAt(b, k, 4 * half + 2);
                  }
                  mma(b, a0, a1, a2, a3, b0, b1,
                      MutableArrayRef<Value>(acc).slice(4 * mt, 4));
                }
              }
            }
            for (int64_t r = 0; r < R; ++r)
              for (int64_t e = 0; e < 2; ++e)
                score[r][h][e] = acc[4 * (r / 2) + 2 * (r % 2) + e];
          }
          // Online softmax of each row half's row over the tile, in the
          // base-2 domain.
          Value tig2 = arith::MulIOp::create(b, tig, cIndex(b, 2));
          SmallVector<Value> next(inits.size()), corr(R);
          SmallVector<std::array<Value, 2>> pOperand(R);
          for (int64_t r = 0; r < R; ++r) {
            Value tileMax = negInf(b);
            Value x[2][2];
            for (int64_t h = 0; h < 2; ++h)
              for (int64_t e = 0; e < 2; ++e) {
                Value j = arith::AddIOp::create(
                    b, t0,
                    arith::AddIOp::create(b, tig2, cIndex(b, 8 * h + e)));
                Value v;
                if (hooks.hasLogits()) {
                  // Hooks see natural-domain logits.
                  Value natural = arith::MulFOp::create(b, score[r][h][e],
                                                        cF32(b, s.scale));
                  Value logit = hooks.logits(b, natural, qpos, j, ownHead[r],
                                             ownParams[r]);
                  v = arith::MulFOp::create(b, logit, cF32(b, kLog2E));
                } else {
                  v = arith::MulFOp::create(b, score[r][h][e],
                                            cF32(b, s.scale * kLog2E));
                }
                Value keep = arith::CmpIOp::create(b, arith::CmpIPredicate::slt,
                                                   j, kEnd);
                if (tensor)
                  keep = arith::AndIOp::create(
                      b, keep,
                      arith::CmpIOp::create(b, arith::CmpIPredicate::sge, j,
                                            kBegin));
                if (Value visible =
                        hooks.mask(b, qpos, j, ownHead[r], ownParams[r]))
                  keep = arith::AndIOp::create(b, keep, visible);
                x[h][e] = arith::SelectOp::create(b, keep, v, negInf(b));
                if (!hooks.sigmoid())
                  tileMax = arith::MaxNumFOp::create(b, tileMax, x[h][e]);
              }
            // Sigmoid: p = sigmoid(s) = 1 / (1 + 2^-x), no maximum and no
            // rescale (m stays, corr = 1); masked keys (x = -inf) weigh 0.
            Value m = carried[r], l = carried[R + r], mNew = m, mSafe;
            if (hooks.sigmoid()) {
              corr[r] = cF32(b, 1.0f);
            } else {
              for (int32_t off : {1, 2})
                tileMax = arith::MaxNumFOp::create(b, tileMax,
                                                   shuffleXor(b, tileMax, off));
              mNew = arith::MaxNumFOp::create(b, m, tileMax);
              // exp2(-inf - mSafe) = 0 without a NaN when every score is
              // -inf.
              Value noMax = isNegInf(b, mNew);
              mSafe = arith::SelectOp::create(b, noMax, cF32(b, 0.0f), mNew);
              corr[r] =
                  math::Exp2Op::create(b, arith::SubFOp::create(b, m, mSafe));
              l = arith::MulFOp::create(b, l, corr[r]);
            }
            for (int64_t h = 0; h < 2; ++h) {
              Value p[2];
              for (int64_t e = 0; e < 2; ++e) {
                p[e] = hooks.sigmoid()
                           ? sigmoidBase2(b, x[h][e])
                           : Value(math::Exp2Op::create(
                                 b, arith::SubFOp::create(b, x[h][e], mSafe)));
                l = arith::AddFOp::create(b, l, p[e]);
              }
              Value pair = vector::FromElementsOp::create(
                  b, VectorType::get({2}, f32), ValueRange{p[0], p[1]});
              pOperand[r][h] =
                  operand(b, arith::TruncFOp::create(b, pairType, pair));
            }
            next[r] = mNew;
            next[R + r] = l;
          }
          // O = O * corr + P.V over the n-tiles (c, e).
          for (int64_t c = 0; c < vPieces; ++c) {
            Value v[4];
            for (int64_t qk = 0; qk < 4; ++qk)
              v[qk] = loadV(b, ring, qk, c);
            for (int64_t e = 0; e < kVec; ++e) {
              int64_t t = c * kVec + e;
              Value b0, b1;
              for (int64_t mt = 0; mt < M; ++mt) {
                bool upper = 2 * mt + 1 < R;
                SmallVector<Value, 4> acc;
                for (int64_t r = 2 * mt; r < 2 * mt + (upper ? 2 : 1); ++r)
                  for (int64_t k = 0; k < 2; ++k)
                    acc.push_back(arith::MulFOp::create(
                        b, carried[oIndex(r, t, k)], corr[r]));
                acc.resize(4);
                if (!b0) {
                  auto keys = [&](Value lo, Value hi) {
                    return operand(
                        b, vector::ShuffleOp::create(
                               b, lo, hi, ArrayRef<int64_t>{e, kVec + e}));
                  };
                  b0 = keys(v[0], v[1]);
                  b1 = keys(v[2], v[3]);
                }
                std::array<Value, 2> lower = pOperand[2 * mt], higher = {};
                if (upper)
                  higher = pOperand[2 * mt + 1];
                mma(b, lower[0], higher[0], lower[1], higher[1], b0, b1, acc);
                for (int64_t r = 2 * mt; r < 2 * mt + (upper ? 2 : 1); ++r)
                  for (int64_t k = 0; k < 2; ++k)
                    next[oIndex(r, t, k)] = acc[2 * (r - 2 * mt) + k];
              }
            }
          }
          return next;
        });

    // Each row's l over its 4 lanes; m back to the natural domain.
    SmallVector<Value> mRow, lRow;
    for (int64_t r = 0; r < R; ++r) {
      Value l = done[R + r];
      for (int32_t off : {1, 2})
        l = arith::AddFOp::create(b, l, shuffleXor(b, l, off));
      lRow.push_back(l);
      mRow.push_back(arith::MulFOp::create(b, done[r], cF32(b, kLn2)));
    }
    // Every warp is done with the staging ring (it aliases the states) and
    // the previous row's readers are done.
    gpu::BarrierOp::create(b);
    for (int64_t r = 0; r < R; ++r)
      scf::IfOp::create(b, rowValid[r], [&](OpBuilder &iob, Location loc) {
        LocBuilder b(loc, iob);
        Value stateRow =
            r == 0 ? gid : arith::AddIOp::create(b, gid, cIndex(b, 8 * r));
        // Columns 64c + 16tig + e (first accumulator) and + 8 (second);
        // those past D (a partial last chunk) are not stored.
        for (int64_t c = 0; c < vPieces; ++c)
          for (int64_t second = 0; second < 2; ++second) {
            SmallVector<Value> cols;
            for (int64_t e = 0; e < kVec; ++e)
              cols.push_back(done[oIndex(r, c * kVec + e, second)]);
            Value tig16 = arith::MulIOp::create(b, tig, cIndex(b, 16));
            Value col =
                arith::AddIOp::create(b, tig16, cIndex(b, 64 * c + 8 * second));
            auto store = [&](LocBuilder &b) {
              vector::StoreOp::create(
                  b, vector::FromElementsOp::create(b, f32Vec(b), cols), smem,
                  ValueRange{warp, stateRow, col}, /*nontemporal=*/false,
                  llvm::MaybeAlign(16));
            };
            if (64 * (c + 1) <= D) {
              store(b);
              continue;
            }
            Value inD = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, col,
                                              cIndex(b, D));
            scf::IfOp::create(b, inD, [&](OpBuilder &sob, Location loc) {
              LocBuilder b(loc, sob);
              store(b);
              scf::YieldOp::create(b);
            });
          }
        scf::IfOp::create(
            b, arith::CmpIOp::create(b, arith::CmpIPredicate::eq, tig, c0),
            [&](OpBuilder &fob, Location loc) {
              LocBuilder b(loc, fob);
              memref::StoreOp::create(b, mRow[r], smem,
                                      ValueRange{warp, stateRow, cIndex(b, D)});
              memref::StoreOp::create(
                  b, lRow[r], smem,
                  ValueRange{warp, stateRow, cIndex(b, D + 1)});
              scf::YieldOp::create(b);
            });
        scf::YieldOp::create(b);
      });
    writeRows(b, f, smem, warp, lane, i);
  });
  waitInLastCta(b);
  gpu::ReturnOp::create(b);
  return func;
}

} // namespace flashir::conversion::decode
