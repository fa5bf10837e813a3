//===- PrefillKernel.cpp - the tensor-core prefill kernel -----------------===//
//
// Prefill on tensor cores (sm_75+): one CTA per (request, tile of
// s.prefillRows query rows, query head), grid (requests, q tiles, Hq); CTAs
// past a request's rows return at once. With fused head groups a CTA serves
// a KV head: its rows are (token, query head of the group) pairs, grid
// (requests, q tiles of prefillRows / g tokens, Hkv), so each K/V tile is
// loaded once for the whole group. Warp w owns query rows 16w..16w+15
// of the tile as the rows of m16n8k16 mma.sync products (FlashAttention-2):
//  - Q stays in registers as A fragments for the whole key loop;
//  - K/V tiles of s.kvTile keys are staged CTA-wide by 16-byte cp.async
//    (gathered through the page table) into rows padded to D + 8 elements,
//    a ring of s.stages slots; the 8 rows an ldmatrix phase reads then sit
//    in 8 different 16-byte bank groups. sm_75 (f16): plain 16-byte loads
//    and stores into one slot, and each m16n8k16 product as two m16n8k8;
//  - S = Q.K^T takes K's B fragments by ldmatrix (K rows are the n index),
//    P.V takes V's by ldmatrix.trans; the S accumulators are P's A
//    fragments, so probabilities never leave their lanes;
//  - online softmax in f32 per row (4 lanes per row), variant hooks inlined.
// Keys past the end of the request are masked; the mask hook (causal,
// sliding window, ...) decides the rest. Where the mask is causal, tiles
// past the CTA's last query position are skipped.
//
//===----------------------------------------------------------------------===//

#include "DecodeKernel.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

#include <functional>

using namespace mlir;

namespace flashir::conversion::decode {

/// Whether the mask hook `mask` (block arguments qpos, kpos, ...) can only
/// keep keys with kpos <= qpos: it yields `kpos sle qpos` (or `qpos sge
/// kpos`), or a conjunction with such a term. Signed predicates only: a
/// query row with fewer keys than rows before it has a negative qpos.
static bool maskImpliesCausal(Region &mask) {
  if (mask.empty())
    return false;
  Block &block = mask.front();
  if (block.getNumArguments() < 2)
    return false;
  Value qpos = block.getArgument(0), kpos = block.getArgument(1);
  std::function<bool(Value)> implies = [&](Value v) {
    if (auto cmp = v.getDefiningOp<arith::CmpIOp>())
      return (cmp.getPredicate() == arith::CmpIPredicate::sle &&
              cmp.getLhs() == kpos && cmp.getRhs() == qpos) ||
             (cmp.getPredicate() == arith::CmpIPredicate::sge &&
              cmp.getLhs() == qpos && cmp.getRhs() == kpos);
    if (auto conj = v.getDefiningOp<arith::AndIOp>())
      return implies(conj.getLhs()) || implies(conj.getRhs());
    return false;
  };
  return implies(block.getTerminator()->getOperand(0));
}

int64_t prefillSharedMemoryBytes(int64_t kvTile, int64_t headDim,
                                 int64_t stages, int64_t elementBytes) {
  return stages * 2 * kvTile * (headDim + 8) * elementBytes;
}

gpu::GPUFuncOp DecodeKernel::buildPrefill(OpBuilder &moduleBuilder,
                                          StringRef name) {
  MLIRContext *ctx = op.getContext();
  Type f32 = Float32Type::get(ctx), i32 = IntegerType::get(ctx, 32);
  int64_t D = s.headDim, g = s.group, W = s.warps, S = s.stages, KV = s.kvTile,
          P = s.pageSize;
  int64_t elementBytes = s.element.getIntOrFloatBitWidth() / 8;
  int64_t rowStride = D + 8, chunksPerRow = D / kVec;
  bool bf16 = s.element.isBF16();

  gpu::GPUFuncOp func = createKernel(
      moduleBuilder, name, prefillSharedMemoryBytes(KV, D, S, elementBytes),
      /*dynamicShared=*/true);
  Block &entry = func.getBody().front();
  OpBuilder ob = OpBuilder::atBlockBegin(&entry);
  LocBuilder b(op.getLoc(), ob);
  Value c0 = cIndex(b, 0), c1 = cIndex(b, 1);

  // The frame: request x, q tile y, query head z (fused head groups: KV
  // head z, the tile's rows are (token, head of the group) pairs).
  bool fused = s.fusedHeadGroups;
  int64_t tokens = fused ? s.prefillRows / g : s.prefillRows;
  Frame f = bindArguments(b, func, /*dynamicShared=*/true);
  f.req = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  f.block = f.req;
  Value qTile = gpu::BlockIdOp::create(b, gpu::Dimension::y);
  Value head = gpu::BlockIdOp::create(b, gpu::Dimension::z);
  f.kvHead =
      fused ? head : arith::DivUIOp::create(b, head, cIndex(b, g)).getResult();
  Value next = arith::AddIOp::create(b, f.req, c1);
  f.qBegin = loadIndex(b, f.qoIndptr, f.req);
  f.numQ = arith::SubIOp::create(b, loadIndex(b, f.qoIndptr, next), f.qBegin);
  // The tile's first token.
  Value rowBase = arith::MulIOp::create(b, qTile, cIndex(b, tokens));
  // Every thread of a CTA past its request's rows leaves together.
  scf::IfOp guard = scf::IfOp::create(
      b, arith::CmpIOp::create(b, arith::CmpIPredicate::ult, rowBase, f.numQ),
      /*withElseRegion=*/false);
  gpu::ReturnOp::create(b);
  b.setInsertionPointToStart(&guard.getThenRegion().front());

  loadRequestKeys(b, f);
  f.kBegin = c0;
  f.kEnd = f.numKv;

  Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value warp = arith::DivUIOp::create(b, tid, cIndex(b, 32));
  Value lane = arith::RemUIOp::create(b, tid, cIndex(b, 32));
  Value gid = arith::DivUIOp::create(b, lane, cIndex(b, 4));
  Value tig = arith::RemUIOp::create(b, lane, cIndex(b, 4));
  Value tig2 = arith::MulIOp::create(b, tig, cIndex(b, 2));

  // The lane's two rows (gid, gid + 8 of the warp's 16): their token within
  // the request and their query head.
  Value rowOf[2], headOf[2];
  Value rowValid[2], qpos[2];
  SmallVector<Value> paramsOf[2];
  for (int64_t half = 0; half < 2; ++half) {
    Value r = arith::AddIOp::create(
        b, arith::MulIOp::create(b, warp, cIndex(b, 16)),
        arith::AddIOp::create(b, gid, cIndex(b, 8 * half)));
    rowOf[half] = arith::AddIOp::create(
        b, rowBase,
        fused ? arith::DivUIOp::create(b, r, cIndex(b, g)).getResult() : r);
    headOf[half] =
        fused ? arith::AddIOp::create(
                    b, arith::MulIOp::create(b, f.kvHead, cIndex(b, g)),
                    arith::RemUIOp::create(b, r, cIndex(b, g)))
                    .getResult()
              : head;
    paramsOf[half] = paramValues(b, f, headOf[half]);
    rowValid[half] = arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                           rowOf[half], f.numQ);
    qpos[half] = arith::SubIOp::create(
        b, arith::AddIOp::create(b, rowOf[half], f.numKv), f.numQ);
  }

  auto pairType = VectorType::get({2}, s.element);
  auto operand = [&](LocBuilder &b, Value pair) { return mmaOperand(b, pair); };
  // ldmatrix results (i32 words) as mma operands.
  auto wordOperand = [&](LocBuilder &b, Value word) -> Value {
    if (bf16)
      return word;
    Value v = vector::BroadcastOp::create(b, VectorType::get({1}, i32), word);
    return vector::BitCastOp::create(b, pairType, v);
  };
  Value zeroF = cF32(b, 0.0f);
  auto structType = LLVM::LLVMStructType::getLiteral(ctx, {f32, f32, f32, f32});
  NVVM::MMATypes ptxType = bf16 ? NVVM::MMATypes::bf16 : NVVM::MMATypes::f16;
  // acc (4 f32: rows gid, gid + 8 x columns 2tig, 2tig + 1) += A.B.
  auto mma = [&](LocBuilder &b, ArrayRef<Value> a, Value b0, Value b1,
                 MutableArrayRef<Value> acc) {
    if (s.turing) {
      // Two m16n8k8: k columns 0-7 (a0, a1; b0), then 8-15 (a2, a3; b1).
      for (int64_t k = 0; k < 2; ++k) {
        Value result = NVVM::MmaOp::create(
            b, structType, ValueRange{a[2 * k], a[2 * k + 1]},
            ValueRange{k ? b1 : b0}, acc, ArrayRef<int64_t>{16, 8, 8},
            std::nullopt, std::nullopt,
            std::array<NVVM::MMATypes, 2>{ptxType, ptxType},
            std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                           NVVM::MMALayout::col});
        for (int64_t e = 0; e < 4; ++e)
          acc[e] =
              LLVM::ExtractValueOp::create(b, result, ArrayRef<int64_t>{e});
      }
      return;
    }
    Value result = NVVM::MmaOp::create(
        b, structType, a, ValueRange{b0, b1}, acc, ArrayRef<int64_t>{16, 8, 16},
        std::nullopt, std::nullopt,
        std::array<NVVM::MMATypes, 2>{ptxType, ptxType},
        std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                       NVVM::MMALayout::col});
    for (int64_t e = 0; e < 4; ++e)
      acc[e] = LLVM::ExtractValueOp::create(b, result, ArrayRef<int64_t>{e});
  };

  // Q's A fragments for k-step c (head dims 16c..16c+15): rows gid / gid+8,
  // columns 2tig (+1) and 2tig + 8 (+1).
  SmallVector<std::array<Value, 4>> qFrag;
  Value zeroPair = arith::ConstantOp::create(
      b, DenseElementsAttr::get(pairType, b.getZeroAttr(s.element)));
  for (int64_t c = 0; c < D / 16; ++c) {
    std::array<Value, 4> frag;
    for (int64_t k = 0; k < 4; ++k) {
      int64_t half = k % 2, hi = k / 2;
      Value row = arith::MinUIOp::create(
          b, arith::AddIOp::create(b, f.qBegin, rowOf[half]),
          arith::SubIOp::create(b, arith::AddIOp::create(b, f.qBegin, f.numQ),
                                c1));
      Value d = arith::AddIOp::create(b, tig2, cIndex(b, 16 * c + 8 * hi));
      Value pair = vector::LoadOp::create(b, pairType, f.q,
                                          ValueRange{row, headOf[half], d});
      frag[k] = operand(
          b, arith::SelectOp::create(b, rowValid[half], pair, zeroPair));
    }
    qFrag.push_back(frag);
  }

  // The staging ring [slot][K or V][key][D + 8].
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

  // A causal mask hides every key past the CTA's last query position:
  // those tiles are skipped (they would add exp2(-inf) = 0 and rescale by 1).
  Value kLoopEnd = f.kEnd;
  if (maskImpliesCausal(variant.getMask())) {
    Value lastRow = arith::SubIOp::create(
        b,
        arith::MinUIOp::create(
            b, arith::AddIOp::create(b, rowBase, cIndex(b, tokens)), f.numQ),
        c1);
    Value visible =
        arith::SubIOp::create(b, arith::AddIOp::create(b, lastRow, f.numKv),
                              arith::SubIOp::create(b, f.numQ, c1));
    kLoopEnd = arith::MinSIOp::create(b, arith::MaxSIOp::create(b, visible, c0),
                                      f.kEnd);
  }
  Value numTiles = arith::DivUIOp::create(
      b, arith::AddIOp::create(b, kLoopEnd, cIndex(b, KV - 1)), cIndex(b, KV));
  int64_t threads = 32 * W, pieces = KV * chunksPerRow;
  Value lastKey = arith::SubIOp::create(b, f.kEnd, c1);
  // Copies of tile `it` into slot it % S: pieces (key, 16-byte chunk) of K
  // and V, thread t taking t, t + threads, ...; keys past the end copy the
  // last key (valid memory; masked).
  auto issue = [&](LocBuilder &b, Value it, ArrayRef<Value>) {
    Value slot = arith::RemUIOp::create(b, it, cIndex(b, S));
    Value t0 = arith::MulIOp::create(b, it, cIndex(b, KV));
    for (int64_t p0 = 0; p0 < pieces; p0 += threads) {
      auto copyPiece = [&](LocBuilder &b) {
        Value piece = arith::AddIOp::create(b, tid, cIndex(b, p0));
        Value key = arith::DivUIOp::create(b, piece, cIndex(b, chunksPerRow));
        Value chunk = arith::RemUIOp::create(b, piece, cIndex(b, chunksPerRow));
        Value j = arith::MinSIOp::create(b, arith::AddIOp::create(b, t0, key),
                                         lastKey);
        Value page = loadIndex(
            b, f.indices,
            arith::AddIOp::create(b, f.pageBegin,
                                  arith::DivUIOp::create(b, j, cIndex(b, P))));
        Value inPage = arith::RemUIOp::create(b, j, cIndex(b, P));
        Value col = arith::MulIOp::create(b, chunk, cIndex(b, kVec));
        for (int64_t kind = 0; kind < 2; ++kind) {
          Value pool = kind ? f.vPool : f.kPool;
          SmallVector<Value> dst = {slot, cIndex(b, kind), key, col};
          SmallVector<Value> src = {page, inPage, f.kvHead, col};
          if (s.turing)
            vector::StoreOp::create(b, loadRaw(b, pool, src), ring, dst,
                                    /*nontemporal=*/false,
                                    llvm::MaybeAlign(16));
          else
            nvgpu::DeviceAsyncCopyOp::create(
                b, ring, dst, pool, src, b.getIndexAttr(kVec),
                /*srcElements=*/Value(), /*bypassL1=*/b.getUnitAttr());
        }
      };
      if (p0 + threads <= pieces) {
        copyPiece(b);
      } else {
        scf::IfOp::create(
            b,
            arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                  arith::AddIOp::create(b, tid, cIndex(b, p0)),
                                  cIndex(b, pieces)),
            [&](OpBuilder &iob, Location loc) {
              LocBuilder ib(loc, iob);
              copyPiece(ib);
              scf::YieldOp::create(ib);
            });
      }
    }
  };
  Type nvgpuToken = nvgpu::DeviceAsyncTokenType::get(ctx);
  // ldmatrix.x4 at byte address `address` of the lane's row (shared).
  auto ldmatrix = [&](LocBuilder &b, Value address, bool transpose) {
    Value ptr = LLVM::IntToPtrOp::create(
        b, LLVM::LLVMPointerType::get(ctx, /*shared=*/3), address);
    Value result = NVVM::LdMatrixOp::create(
        b, LLVM::LLVMStructType::getLiteral(ctx, {i32, i32, i32, i32}), ptr,
        /*num=*/4, transpose ? NVVM::MMALayout::col : NVVM::MMALayout::row,
        NVVM::LdStMatrixShapeAttr::get(ctx, 8, 8),
        NVVM::LdStMatrixEltType::B16);
    std::array<Value, 4> words;
    for (int64_t e = 0; e < 4; ++e)
      words[e] = wordOperand(
          b, LLVM::ExtractValueOp::create(b, result, ArrayRef<int64_t>{e}));
    return words;
  };
  // Byte address of element [slot][kind][key][col] of the ring.
  auto ringAddress = [&](LocBuilder &b, Value slot, int64_t kind, Value key,
                         Value col) -> Value {
    Value element = arith::AddIOp::create(
        b,
        arith::MulIOp::create(
            b,
            arith::AddIOp::create(
                b,
                arith::MulIOp::create(
                    b,
                    arith::AddIOp::create(
                        b, arith::MulIOp::create(b, slot, cIndex(b, 2)),
                        cIndex(b, kind)),
                    cIndex(b, KV)),
                key),
            cIndex(b, rowStride)),
        col);
    return arith::AddIOp::create(
        b, ringBase,
        arith::IndexCastOp::create(
            b, b.getI64Type(),
            arith::MulIOp::create(b, element, cIndex(b, elementBytes))));
  };
  // acc0 += a . B0, acc1 += a . B1 with the B fragments of two n-tiles from
  // one ldmatrix.x4 at the lane's `address` (matrices 0, 1: B0; 2, 3: B1).
  auto productPair = [&](LocBuilder &b, ArrayRef<Value> a, Value address,
                         bool transpose, MutableArrayRef<Value> acc0,
                         MutableArrayRef<Value> acc1) {
    std::array<Value, 4> w = ldmatrix(b, address, transpose);
    mma(b, a, w[0], w[1], acc0);
    mma(b, a, w[2], w[3], acc1);
  };
  // ldmatrix lane roles: matrix lane / 8, row lane % 8 of it.
  Value lmRow = arith::RemUIOp::create(b, lane, cIndex(b, 8));
  Value lmMatrix = arith::DivUIOp::create(b, lane, cIndex(b, 8));
  Value lmLow = arith::RemUIOp::create(b, lmMatrix, cIndex(b, 2));  // k half
  Value lmHigh = arith::DivUIOp::create(b, lmMatrix, cIndex(b, 2)); // n tile

  // State per lane: m and l of both rows, O (D / 8 n-tiles x 4).
  int64_t oTiles = D / 8, sTiles = KV / 8;
  SmallVector<Value> inits = {negInf(b), negInf(b), zeroF, zeroF};
  inits.append(4 * oTiles, zeroF);
  ValueRange done = buildStagedLoop(
      b, numTiles, inits, {},
      [&](LocBuilder &, Value) { return SmallVector<Value>(); }, issue,
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
        Value slot = arith::RemUIOp::create(b, it, cIndex(b, S));
        Value t0 = arith::MulIOp::create(b, it, cIndex(b, KV));
        // S = Q.K^T: n-tiles of 8 keys; ldmatrix.x4 gives the B fragments
        // of two n-tiles (matrices: k half lmLow, n-tile lmHigh).
        SmallVector<std::array<Value, 4>> score(sTiles);
        for (auto &acc : score)
          acc = {zeroF, zeroF, zeroF, zeroF};
        for (int64_t nt = 0; nt < sTiles; nt += 2) {
          Value key = arith::AddIOp::create(
              b, arith::MulIOp::create(b, lmHigh, cIndex(b, 8)),
              arith::AddIOp::create(b, lmRow, cIndex(b, 8 * nt)));
          for (int64_t c = 0; c < D / 16; ++c) {
            Value col = arith::AddIOp::create(
                b, arith::MulIOp::create(b, lmLow, cIndex(b, 8)),
                cIndex(b, 16 * c));
            productPair(b, qFrag[c], ringAddress(b, slot, 0, key, col),
                        /*transpose=*/false, score[nt], score[nt + 1]);
          }
        }
        // Online softmax of both rows over the tile (base-2 domain).
        Value m[2] = {carried[0], carried[1]}, l[2] = {carried[2], carried[3]};
        Value corr[2], mSafe[2];
        SmallVector<std::array<Value, 4>> x(sTiles);
        for (int64_t half = 0; half < 2; ++half) {
          Value tileMax = negInf(b);
          for (int64_t nt = 0; nt < sTiles; ++nt)
            for (int64_t e = 0; e < 2; ++e) {
              Value j = arith::AddIOp::create(
                  b, t0, arith::AddIOp::create(b, tig2, cIndex(b, 8 * nt + e)));
              Value raw = score[nt][2 * half + e];
              Value v;
              if (!variant.getLogits().empty()) {
                SmallVector<Value> hookArgs = {
                    arith::MulFOp::create(b, raw, cF32(b, s.scale)), qpos[half],
                    j, headOf[half]};
                hookArgs.append(paramsOf[half]);
                v = arith::MulFOp::create(
                    b, inlineHook(b, variant.getLogits(), hookArgs),
                    cF32(b, kLog2E));
              } else {
                v = arith::MulFOp::create(b, raw, cF32(b, s.scale * kLog2E));
              }
              Value keep = arith::CmpIOp::create(b, arith::CmpIPredicate::slt,
                                                 j, f.kEnd);
              if (!variant.getMask().empty()) {
                SmallVector<Value> hookArgs = {qpos[half], j, headOf[half]};
                hookArgs.append(paramsOf[half]);
                keep = arith::AndIOp::create(
                    b, keep, inlineHook(b, variant.getMask(), hookArgs));
              }
              x[nt][2 * half + e] =
                  arith::SelectOp::create(b, keep, v, negInf(b));
              tileMax =
                  arith::MaxNumFOp::create(b, tileMax, x[nt][2 * half + e]);
            }
          for (int32_t off : {1, 2})
            tileMax = arith::MaxNumFOp::create(b, tileMax,
                                               shuffleXor(b, tileMax, off));
          Value mNew = arith::MaxNumFOp::create(b, m[half], tileMax);
          mSafe[half] = arith::SelectOp::create(b, isNegInf(b, mNew),
                                                cF32(b, 0.0f), mNew);
          corr[half] = math::Exp2Op::create(
              b, arith::SubFOp::create(b, m[half], mSafe[half]));
          l[half] = arith::MulFOp::create(b, l[half], corr[half]);
          m[half] = mNew;
        }
        // P as A fragments: k-step kk covers n-tiles 2kk, 2kk + 1.
        SmallVector<std::array<Value, 4>> pFrag(sTiles / 2);
        for (int64_t nt = 0; nt < sTiles; ++nt)
          for (int64_t half = 0; half < 2; ++half) {
            Value p[2];
            for (int64_t e = 0; e < 2; ++e) {
              p[e] = math::Exp2Op::create(
                  b,
                  arith::SubFOp::create(b, x[nt][2 * half + e], mSafe[half]));
              l[half] = arith::AddFOp::create(b, l[half], p[e]);
            }
            Value pair = vector::FromElementsOp::create(
                b, VectorType::get({2}, f32), ValueRange{p[0], p[1]});
            pFrag[nt / 2][half + 2 * (nt % 2)] =
                operand(b, arith::TruncFOp::create(b, pairType, pair));
          }
        // O = O * corr + P.V: ldmatrix.trans gives the B fragments of two
        // n-tiles of 8 head dims (matrices: key half lmLow, n-tile lmHigh).
        SmallVector<Value> next = {m[0], m[1], l[0], l[1]};
        SmallVector<std::array<Value, 4>> o(oTiles);
        for (int64_t nd = 0; nd < oTiles; ++nd)
          for (int64_t e = 0; e < 4; ++e)
            o[nd][e] =
                arith::MulFOp::create(b, carried[4 + 4 * nd + e], corr[e / 2]);
        for (int64_t kk = 0; kk < sTiles / 2; ++kk) {
          Value key = arith::AddIOp::create(
              b, arith::MulIOp::create(b, lmLow, cIndex(b, 8)),
              arith::AddIOp::create(b, lmRow, cIndex(b, 16 * kk)));
          for (int64_t nd = 0; nd < oTiles; nd += 2) {
            Value col = arith::AddIOp::create(
                b, arith::MulIOp::create(b, lmHigh, cIndex(b, 8)),
                cIndex(b, 8 * nd));
            productPair(b, pFrag[kk], ringAddress(b, slot, 1, key, col),
                        /*transpose=*/true, o[nd], o[nd + 1]);
          }
        }
        for (int64_t nd = 0; nd < oTiles; ++nd)
          next.append(o[nd].begin(), o[nd].end());
        // Every warp is done with this slot before it is refilled.
        gpu::BarrierOp::create(b);
        return next;
      });

  // Finish both rows: l over the row's 4 lanes; no visible key: O = 0,
  // lse = -inf.
  for (int64_t half = 0; half < 2; ++half) {
    Value l = done[2 + half];
    for (int32_t off : {1, 2})
      l = arith::AddFOp::create(b, l, shuffleXor(b, l, off));
    Value empty =
        arith::CmpFOp::create(b, arith::CmpFPredicate::OLE, l, cF32(b, 0.0f));
    Value inv = arith::SelectOp::create(
        b, empty, cF32(b, 0.0f), arith::DivFOp::create(b, cF32(b, 1.0f), l));
    Value lse = arith::SelectOp::create(
        b, empty, negInf(b),
        arith::AddFOp::create(
            b, arith::MulFOp::create(b, done[half], cF32(b, kLn2)),
            math::LogOp::create(b, l)));
    scf::IfOp::create(b, rowValid[half], [&](OpBuilder &iob, Location loc) {
      LocBuilder b(loc, iob);
      Value row = arith::AddIOp::create(b, f.qBegin, rowOf[half]);
      for (int64_t nd = 0; nd < oTiles; ++nd) {
        Value pair = vector::FromElementsOp::create(
            b, VectorType::get({2}, f32),
            ValueRange{
                arith::MulFOp::create(b, done[4 + 4 * nd + 2 * half], inv),
                arith::MulFOp::create(b, done[4 + 4 * nd + 2 * half + 1],
                                      inv)});
        Value col = arith::AddIOp::create(b, tig2, cIndex(b, 8 * nd));
        vector::StoreOp::create(b, arith::TruncFOp::create(b, pairType, pair),
                                f.out, ValueRange{row, headOf[half], col});
      }
      scf::IfOp::create(
          b, arith::CmpIOp::create(b, arith::CmpIPredicate::eq, tig, c0),
          [&](OpBuilder &tob, Location loc) {
            LocBuilder b(loc, tob);
            memref::StoreOp::create(b, lse, f.lse,
                                    ValueRange{row, headOf[half]});
            scf::YieldOp::create(b);
          });
      scf::YieldOp::create(b);
    });
  }
  return func;
}

} // namespace flashir::conversion::decode
