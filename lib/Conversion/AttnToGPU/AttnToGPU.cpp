//===- AttnToGPU.cpp - decode attention to a gpu.func kernel --------------===//
//
// CUDA-core decode kernel (FlashInfer's design): one CTA per (request, KV
// head) serves the g = Hq/Hkv query heads of that KV head, so every K/V row
// it loads from the paged cache is used g times. Lanes split the head
// dimension into 16-byte vectors (8 f16/bf16 elements, one `ld.global.v4`
// each); a key group of D/8 lanes computes one key's score with a
// butterfly warp reduction; the warp's key groups and the CTA's warps each
// keep an online-softmax state that are merged at the end (shuffles, then
// shared memory). All address arithmetic is written in upstream dialects;
// the variant's logits and mask hooks are inlined.
//
//===----------------------------------------------------------------------===//

#include "flashir/Conversion/Passes.h"
#include "flashir/Dialect/Attn/IR/Attn.h"
#include "flashir/Target/Chip.h"

#include "../BuilderUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace flashir {
#define GEN_PASS_DEF_CONVERTATTNTOGPU
#include "flashir/Conversion/Passes.h.inc"
} // namespace flashir

using namespace mlir;
using namespace flashir::attn;
using namespace flashir::conversion;

namespace {

/// Elements per 16-byte vector load.
constexpr int64_t kVec = 8;
constexpr float kLog2E = 1.4426950408889634f, kLn2 = 0.6931471805599453f;
/// cp.async ring stages where the chip has cp.async and none is asked for.
constexpr int64_t kDefaultStages = 4;

struct DecodeShape {
  int64_t headDim, pageSize, numQoHeads, numKvHeads, group, warps, unroll;
  /// cp.async ring stages per warp; 0: register double buffering.
  int64_t stages;
  /// Resident CTAs per SM the register allocation must allow (0: any).
  int64_t minBlocksPerSM;
  /// Split-KV: one CTA per (chunk, KV head) writing f32 partial states.
  bool chunked;
  Type element;
  float scale;
};

/// Bytes of the kernel's workgroup buffer: the larger of the cp.async
/// staging ring and the per-warp states of the final merge.
int64_t sharedMemoryBytes(int64_t warps, int64_t group, int64_t headDim,
                          int64_t unroll, int64_t stages,
                          int64_t elementBytes) {
  int64_t states = warps * group * (headDim + 4) * 4;
  int64_t staging = warps * stages * 2 * unroll * 32 * kVec * elementBytes;
  return std::max(states, staging);
}
int64_t sharedMemoryBytes(const DecodeShape &s) {
  return sharedMemoryBytes(s.warps, s.group, s.headDim, s.unroll, s.stages,
                           s.element.getIntOrFloatBitWidth() / 8);
}

/// Why `op` cannot become a decode kernel, or an empty string.
std::string unsupportedReason(AttentionOp op, VariantOp variant) {
  if (op.getViews().size() != 1)
    return "one KV view";
  auto paged = op.getViews().front().getDefiningOp<PagedKVOp>();
  if (!paged)
    return "a KV view defined by attn.paged_kv";
  PagedKVType view = paged.getType();
  if (view.getLayout() != KVLayout::NHD)
    return "the NHD page layout";
  if (!view.getElementType().isF16() && !view.getElementType().isBF16())
    return "f16 or bf16 elements";
  if (!llvm::is_contained({64, 128, 256}, view.getHeadDim()))
    return "head_dim 64, 128 or 256";
  if (op.getNumQoHeads() / op.getNumKvHeads() > 8)
    return "at most 8 query heads per KV head";
  if (!op.getQueries().getDefiningOp<RaggedQOp>())
    return "queries defined by attn.ragged_q";
  if (op.getAttendedViews())
    return "no attended_views";
  Value output;
  if (op.getChunkIndptr()) {
    // Split-KV: the chunk states must be merged and finalized right away
    // (the merge kernel does both).
    auto merge = op->hasOneUse()
                     ? dyn_cast<MergeChunksOp>(*op->getUsers().begin())
                     : MergeChunksOp();
    FinalizeOp finalize;
    if (merge && merge->hasOneUse())
      finalize = dyn_cast<FinalizeOp>(*merge->getUsers().begin());
    if (!finalize || merge.getChunkIndptr() != op.getChunkIndptr() ||
        merge.getQueries() != op.getQueries())
      return "split-KV chunk states that go to one attn.merge_chunks (same "
             "queries and chunk_indptr) and then one attn.finalize";
    output = finalize.getOutput();
  } else {
    if (op.getNumResults() != 2)
      return "an (output, lse) result, or chunk states merged by "
             "attn.merge_chunks and attn.finalize";
    output = op.getResult(0);
  }
  if (cast<RankedTensorType>(output.getType()).getElementType() !=
      view.getElementType())
    return "an output of the KV element type";
  if (variant.getReduction() != ReductionKind::Softmax)
    return "a softmax variant";
  if (!variant.getQuery().empty() || !variant.getKey().empty() ||
      !variant.getOutput().empty())
    return "no query, key or output hook";
  for (VariantParamAttr param : variant.getParamList())
    if (param.getKind() == ParamKind::Buffer || !param.getType().isIntOrFloat())
      return "scalar, per-request or per-head integer/float parameters";
  return "";
}

class DecodeKernel {
public:
  DecodeKernel(AttentionOp op, VariantOp variant, DecodeShape shape)
      : op(op), variant(variant), s(shape) {}

  gpu::GPUFuncOp build(OpBuilder &moduleBuilder, StringRef name);

  /// The split-KV merge kernel: one CTA of D/8 threads per (request, query
  /// head) merges the request's chunk states, row by row.
  gpu::GPUFuncOp buildMerge(OpBuilder &moduleBuilder, StringRef name);

  /// Argument names of the kernel built last (for the manifest).
  SmallVector<std::string> argNames;

private:
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
  /// 16 bytes of `memref` at `indices`.
  Value loadRaw(LocBuilder &b, Value memref, ValueRange indices) {
    return vector::LoadOp::create(b, VectorType::get({kVec}, s.element), memref,
                                  indices,
                                  /*nontemporal=*/false, llvm::MaybeAlign(16));
  }
  Value widen(LocBuilder &b, Value v) {
    return arith::ExtFOp::create(b, f32Vec(b), v);
  }
  /// 16 bytes of `memref` at `indices`, widened to f32.
  Value loadVec(LocBuilder &b, Value memref, ValueRange indices) {
    return widen(b, loadRaw(b, memref, indices));
  }
  /// f32 -> the element type, round to nearest even. bf16 is rounded with
  /// integer ops: LLVM's NVPTX lowering of fptrunc to bf16 for sm_75 emits
  /// PTX that ptxas rejects (setp.nan.f32 on .b32 registers).
  Value narrow(LocBuilder &b, Value v) {
    auto type = VectorType::get({kVec}, s.element);
    if (!s.element.isBF16())
      return arith::TruncFOp::create(b, type, v);
    auto i32 = VectorType::get({kVec}, b.getI32Type());
    auto splatI = [&](int32_t x) {
      return arith::ConstantOp::create(
          b, DenseElementsAttr::get(i32, b.getI32IntegerAttr(x)));
    };
    Value bits = arith::BitcastOp::create(b, i32, v);
    // NaN stays a (quiet) NaN instead of rounding into Inf.
    Value isNan = arith::CmpFOp::create(b, arith::CmpFPredicate::UNO, v, v);
    Value lsb = arith::AndIOp::create(
        b, arith::ShRUIOp::create(b, bits, splatI(16)), splatI(1));
    Value rounded = arith::AddIOp::create(
        b, bits, arith::AddIOp::create(b, lsb, splatI(0x7fff)));
    rounded = arith::SelectOp::create(b, isNan, splatI(0x7fc00000), rounded);
    Value high =
        arith::TruncIOp::create(b, VectorType::get({kVec}, b.getI16Type()),
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

  Value shuffleXor(LocBuilder &b, Value v, int32_t offset) {
    return gpu::ShuffleOp::create(b, v, offset, 32, gpu::ShuffleMode::XOR)
        .getShuffleResult();
  }
  /// exp(x - m), 0 when x = -inf (also when m = -inf: no NaN).
  Value expDiff(LocBuilder &b, Value x, Value m) {
    return arith::SelectOp::create(
        b, isNegInf(b, x), cF32(b, 0.0f),
        math::ExpOp::create(b, arith::SubFOp::create(b, x, m)));
  }

  // Maxima use maxnumf (PTX max.f32): scores are finite or -inf, never NaN,
  // and sm_75 has no NaN-propagating max (LLVM's emulation of it emits PTX
  // that ptxas rejects).

  /// Merges state (m, l, acc) with (mo, lo, acco) by eq. (6).
  void merge(LocBuilder &b, Value &m, Value &l, Value &acc, Value mo, Value lo,
             Value acco) {
    Value mNew = arith::MaxNumFOp::create(b, m, mo);
    Value ca = expDiff(b, m, mNew), cb = expDiff(b, mo, mNew);
    l = arith::AddFOp::create(b, arith::MulFOp::create(b, l, ca),
                              arith::MulFOp::create(b, lo, cb));
    acc = arith::AddFOp::create(b, arith::MulFOp::create(b, acc, splat(b, ca)),
                                arith::MulFOp::create(b, acco, splat(b, cb)));
    m = mNew;
  }

  AttentionOp op;
  VariantOp variant;
  DecodeShape s;
};

gpu::GPUFuncOp DecodeKernel::build(OpBuilder &moduleBuilder, StringRef name) {
  MLIRContext *ctx = op.getContext();
  LocBuilder mb(op.getLoc(), moduleBuilder);
  Type i32 = mb.getI32Type(), f32 = mb.getF32Type();
  int64_t dyn = ShapedType::kDynamic;
  int64_t D = s.headDim, g = s.group, W = s.warps, U = s.unroll, S = s.stages;
  // Kernel ABI (recorded in the bundle manifest).
  SmallVector<Type> args = {
      MemRefType::get({dyn, s.numQoHeads, D}, s.element), // q
      MemRefType::get({dyn}, i32),                        // qo_indptr
      MemRefType::get({dyn, s.pageSize, s.numKvHeads, D}, s.element), // k pool
      MemRefType::get({dyn, s.pageSize, s.numKvHeads, D}, s.element), // v pool
      MemRefType::get({dyn}, i32),                                    // indptr
      MemRefType::get({dyn}, i32),                                    // indices
      MemRefType::get({dyn}, i32), // last_page_len
  };
  argNames = {"q",      "qo_indptr", "k_pool",       "v_pool",
              "indptr", "indices",   "last_page_len"};
  if (s.chunked) {
    // Chunk c covers keys [chunk_starts[c], chunk_ends[c]) of request
    // chunk_request[c]; its partial state of query row i goes to row
    // c + C * i of partial_o / partial_lse (C = number of chunks).
    for (const char *name :
         {"chunk_indptr", "chunk_request", "chunk_starts", "chunk_ends"}) {
      args.push_back(MemRefType::get({dyn}, i32));
      argNames.push_back(name);
    }
    args.push_back(MemRefType::get({dyn, s.numQoHeads, D}, f32));
    args.push_back(MemRefType::get({dyn, s.numQoHeads}, f32));
    argNames.append({"partial_o", "partial_lse"});
  } else {
    args.push_back(MemRefType::get({dyn, s.numQoHeads, D}, s.element));
    args.push_back(MemRefType::get({dyn, s.numQoHeads}, f32));
    argNames.append({"out", "lse"});
  }
  int64_t firstParam = args.size();
  SmallVector<VariantParamAttr> params = variant.getParamList();
  for (VariantParamAttr param : params) {
    args.push_back(param.getKind() == ParamKind::Scalar
                       ? param.getType()
                       : Type(MemRefType::get({dyn}, param.getType())));
    argNames.push_back(param.getName().str());
  }
  // One 16-byte aligned workgroup buffer, viewed twice: the cp.async staging
  // ring while the warps walk the keys, then the warps' states for the final
  // merge (a barrier separates the two uses).
  auto workgroup =
      gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  auto bufType = MemRefType::get({sharedMemoryBytes(s)}, mb.getI8Type(),
                                 MemRefLayoutAttrInterface(), workgroup);
  auto func = gpu::GPUFuncOp::create(mb, name, FunctionType::get(ctx, args, {}),
                                     TypeRange{bufType});
  func.setWorkgroupAttributionAttr(0, StringAttr::get(ctx, "llvm.align"),
                                   mb.getI64IntegerAttr(16));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), mb.getUnitAttr());
  func.setKnownBlockSizeAttr(mb.getDenseI32ArrayAttr({int32_t(32 * W), 1, 1}));
  if (s.minBlocksPerSM > 0)
    func->setAttr("nvvm.minctasm", mb.getI32IntegerAttr(s.minBlocksPerSM));

  Block &entry = func.getBody().front();
  OpBuilder ob = OpBuilder::atBlockBegin(&entry);
  LocBuilder b(op.getLoc(), ob);
  Value q = entry.getArgument(0), qoIndptr = entry.getArgument(1),
        kPool = entry.getArgument(2), vPool = entry.getArgument(3),
        indptr = entry.getArgument(4), indices = entry.getArgument(5),
        lastPageLen = entry.getArgument(6);
  Value out = entry.getArgument(firstParam - 2),
        lse = entry.getArgument(firstParam - 1);
  Value c0 = cIndex(b, 0), c1 = cIndex(b, 1);
  Value buf = func.getWorkgroupAttributions().front();
  // Per warp and row: acc[D], m, l; rows padded to D + 4 floats so every
  // row starts 16-byte aligned for the vector accesses.
  Value smem = memref::ViewOp::create(
      b,
      MemRefType::get({W, g, D + 4}, f32, MemRefLayoutAttrInterface(),
                      workgroup),
      buf, c0, ValueRange{});
  // Per warp, stage, key (K and V) and lane: the lane's 16 bytes.
  Value stage;
  if (S > 0)
    stage = memref::ViewOp::create(
        b,
        MemRefType::get({W, S, 2 * U, 32, kVec}, s.element,
                        MemRefLayoutAttrInterface(), workgroup),
        buf, c0, ValueRange{});

  Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value block = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value req = s.chunked ? loadIndex(b, entry.getArgument(8), block) : block;
  Value kvHead = gpu::BlockIdOp::create(b, gpu::Dimension::y);
  int64_t groupLanes = D / kVec, keysPerIter = 32 / groupLanes;
  Value warp = arith::DivUIOp::create(b, tid, cIndex(b, 32));
  Value lane = arith::RemUIOp::create(b, tid, cIndex(b, 32));
  Value keyGroup = arith::DivUIOp::create(b, lane, cIndex(b, groupLanes));
  Value laneInGroup = arith::RemUIOp::create(b, lane, cIndex(b, groupLanes));
  Value e0 = arith::MulIOp::create(b, laneInGroup, cIndex(b, kVec));

  Value next = arith::AddIOp::create(b, req, c1);
  Value qBegin = loadIndex(b, qoIndptr, req);
  Value numQ = arith::SubIOp::create(b, loadIndex(b, qoIndptr, next), qBegin);
  Value pageBegin = loadIndex(b, indptr, req);
  Value pages = arith::SubIOp::create(b, loadIndex(b, indptr, next), pageBegin);
  Value numKv = arith::SelectOp::create(
      b, arith::CmpIOp::create(b, arith::CmpIPredicate::sgt, pages, c0),
      arith::AddIOp::create(
          b,
          arith::MulIOp::create(b, arith::SubIOp::create(b, pages, c1),
                                cIndex(b, s.pageSize)),
          loadIndex(b, lastPageLen, req)),
      c0);

  // Parameter values of query head `head` (request-level ones per request).
  auto paramValues = [&](LocBuilder &b, Value head) {
    SmallVector<Value> values;
    for (auto [index, param] : llvm::enumerate(params)) {
      Value arg = entry.getArgument(firstParam + index);
      if (param.getKind() == ParamKind::Scalar)
        values.push_back(arg);
      else
        values.push_back(memref::LoadOp::create(
            b, arg,
            ValueRange{param.getKind() == ParamKind::PerRequest ? req : head}));
    }
    return values;
  };
  auto headOf = [&](LocBuilder &b, int64_t r) {
    return arith::AddIOp::create(
        b, arith::MulIOp::create(b, kvHead, cIndex(b, g)), cIndex(b, r));
  };

  // Each warp walks its own keys: iteration `it` covers keys
  // [jBase, jBase + keysPerIter * U) with jBase = start + it * step, where
  // key group `keyGroup` takes keys jBase + u * keysPerIter + keyGroup. The
  // trip count is uniform per warp (shuffles need every lane): keys past the
  // end load a valid key (the last one) and are masked out.
  // The keys this CTA attends: all of the request's, or its chunk's.
  Value kBegin = c0, kEnd = numKv;
  if (s.chunked) {
    auto clampKeys = [&](Value v, Value lo) {
      return arith::MinSIOp::create(b, arith::MaxSIOp::create(b, v, lo), numKv);
    };
    kBegin = clampKeys(loadIndex(b, entry.getArgument(9), block), c0);
    kEnd = clampKeys(loadIndex(b, entry.getArgument(10), block), kBegin);
  }
  Value start = arith::AddIOp::create(
      b, kBegin, arith::MulIOp::create(b, warp, cIndex(b, keysPerIter * U)));
  Value step = cIndex(b, W * keysPerIter * U);
  Value rem = arith::SubIOp::create(b, kEnd, start);
  Value numIter = arith::SelectOp::create(
      b, arith::CmpIOp::create(b, arith::CmpIPredicate::sgt, rem, c0),
      arith::DivUIOp::create(
          b, arith::AddIOp::create(b, rem, cIndex(b, W * keysPerIter * U - 1)),
          step),
      c0);
  auto jBaseOf = [&](LocBuilder &b, Value it) {
    return arith::AddIOp::create(b, start, arith::MulIOp::create(b, it, step));
  };
  auto keyIndex = [&](LocBuilder &b, Value jBase, int64_t u) {
    return arith::AddIOp::create(
        b, jBase,
        arith::AddIOp::create(b, cIndex(b, u * keysPerIter), keyGroup));
  };
  // Only called for iterations < numIter, so kEnd > kBegin.
  auto keySafe = [&](LocBuilder &b, Value jBase, int64_t u) {
    return arith::MinSIOp::create(b, keyIndex(b, jBase, u),
                                  arith::SubIOp::create(b, kEnd, c1));
  };
  // The page of each of the U keys of iteration `it` (page-table loads).
  auto pagesOf = [&](LocBuilder &b, Value it) {
    Value jBase = jBaseOf(b, it);
    SmallVector<Value> ids;
    for (int64_t u = 0; u < U; ++u)
      ids.push_back(
          loadIndex(b, indices,
                    arith::AddIOp::create(
                        b, pageBegin,
                        arith::DivUIOp::create(b, keySafe(b, jBase, u),
                                               cIndex(b, s.pageSize)))));
    return ids;
  };
  auto slotOf = [&](LocBuilder &b, Value jBase, int64_t u) {
    return arith::RemUIOp::create(b, keySafe(b, jBase, u),
                                  cIndex(b, s.pageSize));
  };

  // Rows padded to a power of two for the transposing reduction; lane t of
  // a key group owns row t / (groupLanes / rowsPow2).
  int64_t rowsPow2 = static_cast<int64_t>(llvm::PowerOf2Ceil(g));
  int64_t lanesPerRow = groupLanes / rowsPow2;
  Value ownRow = arith::DivUIOp::create(b, laneInGroup, cIndex(b, lanesPerRow));
  // Padding rows take a real head's parameters (never used).
  Value ownHead = arith::AddIOp::create(
      b, arith::MulIOp::create(b, kvHead, cIndex(b, g)),
      arith::MinUIOp::create(b, ownRow, cIndex(b, g - 1)));
  SmallVector<Value> ownParams = paramValues(b, ownHead);
  SmallVector<Value> upperHalf;
  for (int64_t off = groupLanes / 2, n = rowsPow2; n > 1; off /= 2, n /= 2)
    upperHalf.push_back(arith::CmpIOp::create(
        b, arith::CmpIPredicate::ne,
        arith::AndIOp::create(b, laneInGroup, cIndex(b, off)), c0));
  Value groupBase = arith::IndexCastOp::create(
      b, i32, arith::MulIOp::create(b, keyGroup, cIndex(b, groupLanes)));
  // Row r's value of `v`, read from the first lane owning row r in this key
  // group (every owner holds the same value).
  auto fromOwner = [&](LocBuilder &b, Value v, int64_t r) -> Value {
    if (rowsPow2 == 1)
      return v;
    Value src = arith::AddIOp::create(
        b, groupBase,
        arith::ConstantOp::create(
            b, b.getI32IntegerAttr(static_cast<int32_t>(r * lanesPerRow))));
    return gpu::ShuffleOp::create(
               b, v, src, arith::ConstantOp::create(b, b.getI32IntegerAttr(32)),
               gpu::ShuffleMode::IDX)
        .getShuffleResult();
  };

  buildFor(b, c0, numQ, [&](LocBuilder &b, Value i) {
    Value row = arith::AddIOp::create(b, qBegin, i);
    // Partial states: row c + C * i.
    Value outRow =
        s.chunked
            ? Value(arith::AddIOp::create(
                  b, block,
                  arith::MulIOp::create(
                      b, memref::DimOp::create(b, entry.getArgument(8), 0), i)))
            : row;
    Value qpos =
        arith::SubIOp::create(b, arith::AddIOp::create(b, i, numKv), numQ);
    // The query fragments of the g rows, pre-scaled by scale * log2(e):
    // scores live in the base-2 domain (one ex2 per exponential).
    SmallVector<Value> qFrag, heads;
    for (int64_t r = 0; r < g; ++r) {
      heads.push_back(headOf(b, r));
      qFrag.push_back(
          arith::MulFOp::create(b, loadVec(b, q, {row, heads.back(), e0}),
                                splat(b, cF32(b, s.scale * kLog2E))));
    }
    // Carried: the lane's own row's m and l, then acc of every row.
    Value zeroVec = splat(b, cF32(b, 0.0f));
    SmallVector<Value> inits = {negInf(b), cF32(b, 0.0f)};
    for (int64_t r = 0; r < g; ++r)
      inits.push_back(zeroVec);
    size_t numState = inits.size();

    // One iteration's keys folded into the state. Each key's g partial dot
    // products are reduced over the key's lanes by a transposing butterfly
    // (each step halves the rows a lane keeps), so every lane ends with the
    // full score of one row (its own row) after log2(groupLanes) shuffles
    // in total; the online softmax runs once per lane for that row, and the
    // rows' rescale factors and probabilities are then broadcast from their
    // owners to the lanes holding the accumulators.
    auto processKeys = [&](LocBuilder &b, SmallVector<Value> &state,
                           Value jBase, ArrayRef<Value> kRaw,
                           ArrayRef<Value> vRaw) {
      SmallVector<Value> js, inRange, ks, vs;
      for (int64_t u = 0; u < U; ++u) {
        Value j = keyIndex(b, jBase, u);
        js.push_back(j);
        inRange.push_back(
            arith::CmpIOp::create(b, arith::CmpIPredicate::slt, j, kEnd));
        ks.push_back(widen(b, kRaw[u]));
        vs.push_back(widen(b, vRaw[u]));
      }
      SmallVector<Value> own;
      for (int64_t u = 0; u < U; ++u) {
        SmallVector<Value> vals;
        for (int64_t r = 0; r < rowsPow2; ++r)
          vals.push_back(r < g ? dot(b, qFrag[r], ks[u]) : cF32(b, 0.0f));
        int64_t off = groupLanes / 2;
        for (size_t step = 0; vals.size() > 1; ++step, off /= 2) {
          size_t half = vals.size() / 2;
          SmallVector<Value> kept;
          for (size_t k = 0; k < half; ++k) {
            Value send = arith::SelectOp::create(b, upperHalf[step], vals[k],
                                                 vals[half + k]);
            Value keep = arith::SelectOp::create(b, upperHalf[step],
                                                 vals[half + k], vals[k]);
            kept.push_back(
                arith::AddFOp::create(b, keep, shuffleXor(b, send, off)));
          }
          vals = std::move(kept);
        }
        Value score = vals.front();
        for (; off >= 1; off /= 2)
          score = arith::AddFOp::create(b, score, shuffleXor(b, score, off));
        if (!variant.getLogits().empty()) {
          // Hooks see natural-domain logits.
          SmallVector<Value> hookArgs = {
              arith::MulFOp::create(b, score, cF32(b, kLn2)), qpos, js[u],
              ownHead};
          hookArgs.append(ownParams);
          score = arith::MulFOp::create(
              b, inlineHook(b, variant.getLogits(), hookArgs), cF32(b, kLog2E));
        }
        Value keep = inRange[u];
        if (!variant.getMask().empty()) {
          SmallVector<Value> hookArgs = {qpos, js[u], ownHead};
          hookArgs.append(ownParams);
          keep = arith::AndIOp::create(
              b, keep, inlineHook(b, variant.getMask(), hookArgs));
        }
        own.push_back(arith::SelectOp::create(b, keep, score, negInf(b)));
      }
      Value m = state[0], l = state[1];
      Value mNew = m;
      for (Value x : own)
        mNew = arith::MaxNumFOp::create(b, mNew, x);
      // exp2(-inf - mSafe) = 0 without a NaN when every score is -inf.
      Value mSafe =
          arith::SelectOp::create(b, isNegInf(b, mNew), cF32(b, 0.0f), mNew);
      Value c = math::Exp2Op::create(b, arith::SubFOp::create(b, m, mSafe));
      l = arith::MulFOp::create(b, l, c);
      SmallVector<Value> p;
      for (Value x : own) {
        p.push_back(
            math::Exp2Op::create(b, arith::SubFOp::create(b, x, mSafe)));
        l = arith::AddFOp::create(b, l, p.back());
      }
      state[0] = mNew;
      state[1] = l;
      for (int64_t r = 0; r < g; ++r) {
        Value acc = arith::MulFOp::create(b, state[2 + r],
                                          splat(b, fromOwner(b, c, r)));
        for (int64_t u = 0; u < U; ++u)
          acc = vector::FMAOp::create(b, vs[u], splat(b, fromOwner(b, p[u], r)),
                                      acc);
        state[2 + r] = acc;
      }
    };

    ValueRange finalState;
    if (S == 0) {
      // Register double buffering (every chip): the loads of the next
      // iteration are issued before this iteration's arithmetic.
      auto loadKeys = [&](LocBuilder &b, Value it) {
        SmallVector<Value> ids = pagesOf(b, it);
        Value jBase = jBaseOf(b, it);
        SmallVector<Value> kv;
        for (int64_t u = 0; u < U; ++u) {
          Value slot = slotOf(b, jBase, u);
          kv.push_back(loadRaw(b, kPool, {ids[u], slot, kvHead, e0}));
          kv.push_back(loadRaw(b, vPool, {ids[u], slot, kvHead, e0}));
        }
        return kv;
      };
      auto rawType = VectorType::get({kVec}, s.element);
      Value hasKeys =
          arith::CmpIOp::create(b, arith::CmpIPredicate::sgt, numIter, c0);
      SmallVector<Value> first = llvm::to_vector(buildIf(
          b, hasKeys, [&](LocBuilder &b) { return loadKeys(b, c0); },
          [&](LocBuilder &b) {
            Value zero = arith::ConstantOp::create(
                b, DenseElementsAttr::get(rawType, b.getZeroAttr(s.element)));
            return SmallVector<Value>(2 * U, zero);
          }));
      inits.append(first);
      finalState = buildFor(
          b, c0, numIter, inits,
          [&](LocBuilder &b, Value it, ValueRange carried) {
            Value itNext = arith::AddIOp::create(b, it, c1);
            // The last iteration reloads its own keys (valid memory).
            SmallVector<Value> nextRaw = loadKeys(
                b, arith::MinSIOp::create(
                       b, itNext, arith::SubIOp::create(b, numIter, c1)));
            SmallVector<Value> state(carried.take_front(numState)), kRaw, vRaw;
            for (int64_t u = 0; u < U; ++u) {
              kRaw.push_back(carried[numState + 2 * u]);
              vRaw.push_back(carried[numState + 2 * u + 1]);
            }
            processKeys(b, state, jBaseOf(b, it), kRaw, vRaw);
            state.append(nextRaw);
            return state;
          });
    } else {
      // cp.async staging (sm_80+): a ring of S stages per warp; each lane
      // copies exactly the 16-byte pieces it reads back, so completion of
      // its own copy groups is all the synchronisation needed. Iteration
      // `it` issues the copies of iteration it + S - 1 (page ids loaded one
      // iteration earlier, so the copies never wait on the page table),
      // then waits for the group of iteration `it`.
      Type tokenType = nvgpu::DeviceAsyncTokenType::get(ctx);
      auto issue = [&](LocBuilder &b, Value it, ArrayRef<Value> ids) {
        Value jBase = jBaseOf(b, it);
        Value ring = arith::RemUIOp::create(b, it, cIndex(b, S));
        Value pools[] = {kPool, vPool};
        for (int64_t u = 0; u < U; ++u) {
          Value slot = slotOf(b, jBase, u);
          for (auto [kind, pool] : llvm::enumerate(pools))
            nvgpu::DeviceAsyncCopyOp::create(
                b, stage,
                ValueRange{warp, ring, cIndex(b, 2 * u + kind), lane, c0}, pool,
                ValueRange{ids[u], slot, kvHead, e0}, b.getIndexAttr(kVec),
                /*srcElements=*/Value(),
                /*bypassL1=*/b.getUnitAttr());
        }
      };
      auto ifIter = [&](LocBuilder &b, Value it,
                        function_ref<SmallVector<Value>(LocBuilder &)> thenFn,
                        function_ref<SmallVector<Value>(LocBuilder &)> elseFn) {
        return buildIf(
            b, arith::CmpIOp::create(b, arith::CmpIPredicate::slt, it, numIter),
            thenFn, elseFn);
      };
      auto nothing = [](LocBuilder &) { return SmallVector<Value>(); };
      for (int64_t st = 0; st + 1 < S; ++st) {
        Value it = cIndex(b, st);
        ifIter(
            b, it,
            [&](LocBuilder &b) {
              issue(b, it, pagesOf(b, it));
              return SmallVector<Value>();
            },
            nothing);
        nvgpu::DeviceAsyncCreateGroupOp::create(b, tokenType, ValueRange{});
      }
      Value itFirst = cIndex(b, S - 1);
      SmallVector<Value> zeros(U, c0);
      inits.append(llvm::to_vector(ifIter(
          b, itFirst, [&](LocBuilder &b) { return pagesOf(b, itFirst); },
          [&](LocBuilder &) { return zeros; })));
      finalState = buildFor(
          b, c0, numIter, inits,
          [&](LocBuilder &b, Value it, ValueRange carried) {
            SmallVector<Value> ids(carried.drop_front(numState));
            Value itIssue = arith::AddIOp::create(b, it, cIndex(b, S - 1));
            ifIter(
                b, itIssue,
                [&](LocBuilder &b) {
                  issue(b, itIssue, ids);
                  return SmallVector<Value>();
                },
                nothing);
            Value token = nvgpu::DeviceAsyncCreateGroupOp::create(b, tokenType,
                                                                  ValueRange{});
            Value itPages = arith::AddIOp::create(b, itIssue, c1);
            SmallVector<Value> nextIds = llvm::to_vector(ifIter(
                b, itPages, [&](LocBuilder &b) { return pagesOf(b, itPages); },
                [&](LocBuilder &) { return ids; }));
            nvgpu::DeviceAsyncWaitOp::create(b, token,
                                             b.getI32IntegerAttr(S - 1));
            Value ring = arith::RemUIOp::create(b, it, cIndex(b, S));
            SmallVector<Value> kRaw, vRaw;
            for (int64_t u = 0; u < U; ++u)
              for (int64_t kind = 0; kind < 2; ++kind)
                (kind ? vRaw : kRaw)
                    .push_back(vector::LoadOp::create(
                        b, VectorType::get({kVec}, s.element), stage,
                        ValueRange{warp, ring, cIndex(b, 2 * u + kind), lane,
                                   c0},
                        /*nontemporal=*/false, llvm::MaybeAlign(16)));
            SmallVector<Value> state(carried.take_front(numState));
            processKeys(b, state, jBaseOf(b, it), kRaw, vRaw);
            state.append(nextIds);
            return state;
          });
    }

    // Merge the warp's key groups (lanes d, d + groupLanes, ... hold the
    // same dims), then the warps through shared memory.
    SmallVector<Value> m, l, acc;
    for (int64_t r = 0; r < g; ++r) {
      // Row r's m (back to the natural domain) and l from its owner.
      m.push_back(arith::MulFOp::create(b, fromOwner(b, finalState[0], r),
                                        cF32(b, kLn2)));
      l.push_back(fromOwner(b, finalState[1], r));
      acc.push_back(finalState[2 + r]);
      for (int64_t off = groupLanes; off < 32; off *= 2) {
        Value accOther = zeroVec;
        for (int64_t e = 0; e < kVec; ++e) {
          Value x = vector::ExtractOp::create(b, acc[r], e);
          accOther =
              vector::InsertOp::create(b, shuffleXor(b, x, off), accOther, e);
        }
        merge(b, m[r], l[r], acc[r], shuffleXor(b, m[r], off),
              shuffleXor(b, l[r], off), accOther);
      }
    }
    // Every warp is done with the staging ring (it aliases the states) and
    // the previous row's readers are done.
    gpu::BarrierOp::create(b);
    Value leader =
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, keyGroup, c0);
    scf::IfOp::create(b, leader, [&](OpBuilder &iob, Location loc) {
      LocBuilder b(loc, iob);
      for (int64_t r = 0; r < g; ++r) {
        Value rr = cIndex(b, r);
        vector::StoreOp::create(b, acc[r], smem, ValueRange{warp, rr, e0},
                                /*nontemporal=*/false, llvm::MaybeAlign(16));
        memref::StoreOp::create(b, m[r], smem,
                                ValueRange{warp, rr, cIndex(b, D)});
        memref::StoreOp::create(b, l[r], smem,
                                ValueRange{warp, rr, cIndex(b, D + 1)});
      }
      scf::YieldOp::create(b);
    });
    gpu::BarrierOp::create(b);
    Value writer = arith::AndIOp::create(
        b, leader,
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, warp, c0));
    scf::IfOp::create(b, writer, [&](OpBuilder &iob, Location loc) {
      LocBuilder b(loc, iob);
      for (int64_t r = 0; r < g; ++r) {
        Value rr = cIndex(b, r);
        Value mr = negInf(b), lr = cF32(b, 0.0f), accr = zeroVec;
        for (int64_t w = 0; w < W; ++w) {
          Value ww = cIndex(b, w);
          merge(
              b, mr, lr, accr,
              memref::LoadOp::create(b, smem, ValueRange{ww, rr, cIndex(b, D)}),
              memref::LoadOp::create(b, smem,
                                     ValueRange{ww, rr, cIndex(b, D + 1)}),
              vector::LoadOp::create(b, f32Vec(b), smem, ValueRange{ww, rr, e0},
                                     /*nontemporal=*/false,
                                     llvm::MaybeAlign(16)));
        }
        // No visible key: output 0, lse = -inf.
        Value empty =
            arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, lr, cF32(b, 0));
        Value inv = arith::SelectOp::create(
            b, empty, cF32(b, 0.0f),
            arith::DivFOp::create(b, cF32(b, 1.0f), lr));
        Value o = arith::MulFOp::create(b, accr, splat(b, inv));
        if (!s.chunked)
          o = narrow(b, o);
        vector::StoreOp::create(b, o, out, ValueRange{outRow, heads[r], e0},
                                /*nontemporal=*/false, llvm::MaybeAlign(16));
        Value rowLse = arith::SelectOp::create(
            b, empty, negInf(b),
            arith::AddFOp::create(b, mr, math::LogOp::create(b, lr)));
        Value first =
            arith::CmpIOp::create(b, arith::CmpIPredicate::eq, laneInGroup, c0);
        scf::IfOp::create(b, first, [&](OpBuilder &fob, Location loc) {
          LocBuilder b(loc, fob);
          memref::StoreOp::create(b, rowLse, lse, ValueRange{outRow, heads[r]});
          scf::YieldOp::create(b);
        });
      }
      scf::YieldOp::create(b);
    });
    // The next row's copies must not overwrite states still being read.
    gpu::BarrierOp::create(b);
  });
  gpu::ReturnOp::create(b);
  return func;
}

gpu::GPUFuncOp DecodeKernel::buildMerge(OpBuilder &moduleBuilder,
                                        StringRef name) {
  MLIRContext *ctx = op.getContext();
  LocBuilder mb(op.getLoc(), moduleBuilder);
  Type i32 = mb.getI32Type(), f32 = mb.getF32Type();
  int64_t dyn = ShapedType::kDynamic, D = s.headDim, H = s.numQoHeads;
  SmallVector<Type> args = {
      MemRefType::get({dyn}, i32),             // qo_indptr
      MemRefType::get({dyn}, i32),             // chunk_indptr
      MemRefType::get({dyn, H, D}, f32),       // partial_o
      MemRefType::get({dyn, H}, f32),          // partial_lse
      MemRefType::get({dyn, H, D}, s.element), // out
      MemRefType::get({dyn, H}, f32),          // lse
  };
  argNames = {"qo_indptr",   "chunk_indptr", "partial_o",
              "partial_lse", "out",          "lse"};
  auto func =
      gpu::GPUFuncOp::create(mb, name, FunctionType::get(ctx, args, {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), mb.getUnitAttr());
  func.setKnownBlockSizeAttr(
      mb.getDenseI32ArrayAttr({int32_t(D / kVec), 1, 1}));
  Block &entry = func.getBody().front();
  OpBuilder ob = OpBuilder::atBlockBegin(&entry);
  LocBuilder b(op.getLoc(), ob);
  Value qoIndptr = entry.getArgument(0), chunkIndptr = entry.getArgument(1),
        partialO = entry.getArgument(2), partialLse = entry.getArgument(3),
        out = entry.getArgument(4), lse = entry.getArgument(5);
  Value c0 = cIndex(b, 0), c1 = cIndex(b, 1);
  Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value req = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value head = gpu::BlockIdOp::create(b, gpu::Dimension::y);
  Value e0 = arith::MulIOp::create(b, tid, cIndex(b, kVec));
  Value next = arith::AddIOp::create(b, req, c1);
  Value qBegin = loadIndex(b, qoIndptr, req);
  Value numQ = arith::SubIOp::create(b, loadIndex(b, qoIndptr, next), qBegin);
  Value cBegin = loadIndex(b, chunkIndptr, req);
  Value cEnd = loadIndex(b, chunkIndptr, next);
  Value numChunks = loadIndex(
      b, chunkIndptr,
      arith::SubIOp::create(b, memref::DimOp::create(b, chunkIndptr, 0), c1));
  buildFor(b, c0, numQ, [&](LocBuilder &b, Value i) {
    Value base = arith::MulIOp::create(b, numChunks, i);
    Value zeroVec = splat(b, cF32(b, 0.0f));
    SmallVector<Value> inits = {negInf(b), cF32(b, 0.0f), zeroVec};
    ValueRange merged = buildFor(
        b, cBegin, cEnd, inits, [&](LocBuilder &b, Value c, ValueRange state) {
          Value prow = arith::AddIOp::create(b, c, base);
          Value m = state[0], l = state[1], acc = state[2];
          // A chunk's state: (lse, 1, normalised o); empty: lse = -inf.
          merge(b, m, l, acc,
                memref::LoadOp::create(b, partialLse, ValueRange{prow, head}),
                cF32(b, 1.0f),
                vector::LoadOp::create(
                    b, f32Vec(b), partialO, ValueRange{prow, head, e0},
                    /*nontemporal=*/false, llvm::MaybeAlign(16)));
          return SmallVector<Value>{m, l, acc};
        });
    Value m = merged[0], l = merged[1], acc = merged[2];
    Value row = arith::AddIOp::create(b, qBegin, i);
    Value empty =
        arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, l, cF32(b, 0));
    Value inv = arith::SelectOp::create(
        b, empty, cF32(b, 0.0f), arith::DivFOp::create(b, cF32(b, 1.0f), l));
    vector::StoreOp::create(
        b, narrow(b, arith::MulFOp::create(b, acc, splat(b, inv))), out,
        ValueRange{row, head, e0}, /*nontemporal=*/false, llvm::MaybeAlign(16));
    Value rowLse = arith::SelectOp::create(
        b, empty, negInf(b),
        arith::AddFOp::create(b, m, math::LogOp::create(b, l)));
    scf::IfOp::create(
        b, arith::CmpIOp::create(b, arith::CmpIPredicate::eq, tid, c0),
        [&](OpBuilder &fob, Location loc) {
          LocBuilder b(loc, fob);
          memref::StoreOp::create(b, rowLse, lse, ValueRange{row, head});
          scf::YieldOp::create(b);
        });
  });
  gpu::ReturnOp::create(b);
  return func;
}

struct ConvertAttnToGPUPass
    : flashir::impl::ConvertAttnToGPUBase<ConvertAttnToGPUPass> {
  using ConvertAttnToGPUBase::ConvertAttnToGPUBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (warps < 1 || warps > 32 || unroll < 1 || unroll > 16) {
      module.emitError("convert-attn-to-gpu: warps must be in 1..32 and "
                       "unroll in 1..16, got warps = ")
          << static_cast<int64_t>(warps)
          << ", unroll = " << static_cast<int64_t>(unroll);
      return signalPassFailure();
    }
    const flashir::target::ChipInfo *info = flashir::target::lookupChip(chip);
    if (!info) {
      module.emitError("convert-attn-to-gpu: unknown chip '")
          << chip << "'; expected one of " << flashir::target::validChipNames();
      return signalPassFailure();
    }
    int64_t numStages = stages;
    if (numStages == -1)
      numStages = info->hasCpAsync ? kDefaultStages : 0;
    if (numStages < 0 || numStages == 1 || numStages > 8) {
      module.emitError("convert-attn-to-gpu: stages must be -1 (by chip), 0 "
                       "(register double buffering) or 2..8, got ")
          << numStages;
      return signalPassFailure();
    }
    if (numStages > 0 && !info->hasCpAsync) {
      module.emitError("convert-attn-to-gpu: ")
          << chip << " has no cp.async; stages = " << numStages
          << " needs sm_80 or newer (use stages=0)";
      return signalPassFailure();
    }
    SmallVector<std::pair<AttentionOp, std::string>> kernels;
    bool failedAny = false;
    module.walk([&](AttentionOp op) {
      VariantOp variant = resolveVariant(op, op.getVariantAttr());
      std::string reason = unsupportedReason(op, variant);
      if (reason.empty()) {
        // Static shared memory: one state per warp and fused row.
        auto view = cast<PagedKVType>(op.getViews().front().getType());
        int64_t g =
            static_cast<int64_t>(op.getNumQoHeads() / op.getNumKvHeads());
        int64_t bytes = sharedMemoryBytes(
            warps, g, view.getHeadDim(), unroll, numStages,
            view.getElementType().getIntOrFloatBitWidth() / 8);
        if (bytes > 48 * 1024)
          reason = "at most 48 KiB of static shared memory; " +
                   std::to_string(static_cast<int64_t>(warps)) +
                   " warps need " + std::to_string(bytes) +
                   " bytes here (use fewer warps, stages or unroll)";
      }
      if (!reason.empty()) {
        op.emitOpError("the decode kernel generator needs ") << reason;
        failedAny = true;
        return;
      }
      auto func = op->getParentOfType<func::FuncOp>();
      std::string name =
          (func ? func.getSymName().str() : std::string("attn")) + "_decode_" +
          std::to_string(kernels.size());
      kernels.push_back({op, name});
    });
    if (failedAny)
      return signalPassFailure();
    if (kernels.empty())
      return;

    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    b.getUnitAttr());
    auto gpuModule =
        gpu::GPUModuleOp::create(b, module.getLoc(), "flashir_kernels");
    OpBuilder kb = OpBuilder::atBlockBegin(gpuModule.getBody());
    for (auto &entry : kernels) {
      AttentionOp op = entry.first;
      const std::string &name = entry.second;
      VariantOp variant = resolveVariant(op, op.getVariantAttr());
      PagedKVType view = cast<PagedKVType>(op.getViews().front().getType());
      auto numQoHeads = static_cast<int64_t>(op.getNumQoHeads());
      auto numKvHeads = static_cast<int64_t>(op.getNumKvHeads());
      bool chunked = static_cast<bool>(op.getChunkIndptr());
      DecodeShape shape{view.getHeadDim(),
                        view.getPageSize(),
                        numQoHeads,
                        numKvHeads,
                        numQoHeads / numKvHeads,
                        static_cast<int64_t>(warps),
                        static_cast<int64_t>(unroll),
                        numStages,
                        static_cast<int64_t>(minBlocks),
                        chunked,
                        view.getElementType(),
                        op.getEffectiveScale()};
      DecodeKernel generator(op, variant, shape);
      // What the host needs to launch each kernel.
      auto describe = [&](gpu::GPUFuncOp func, StringRef grid, int64_t block,
                          bool withPipeline) {
        SmallVector<NamedAttribute> launch = {
            kb.getNamedAttr("grid", kb.getStringAttr(grid)),
            kb.getNamedAttr("block", kb.getI64IntegerAttr(block)),
            kb.getNamedAttr("variant", op.getVariantAttr()),
            kb.getNamedAttr(
                "args", kb.getStrArrayAttr(
                            llvm::to_vector_of<StringRef>(generator.argNames))),
        };
        if (withPipeline) {
          launch.push_back(
              kb.getNamedAttr("stages", kb.getI64IntegerAttr(numStages)));
          launch.push_back(
              kb.getNamedAttr("unroll", kb.getI64IntegerAttr(unroll)));
        }
        func->setAttr("attn.launch", kb.getDictionaryAttr(launch));
        kb.setInsertionPointAfter(func);
      };
      gpu::GPUFuncOp func = generator.build(kb, name);
      describe(func,
               chunked ? "chunks x num_kv_heads" : "requests x num_kv_heads",
               32 * warps, true);
      if (chunked) {
        std::string mergeName = name;
        mergeName.replace(mergeName.rfind("_decode_"), 8, "_merge_");
        describe(generator.buildMerge(kb, mergeName), "requests x num_qo_heads",
                 view.getHeadDim() / kVec, false);
      }
    }
  }
};

} // namespace
