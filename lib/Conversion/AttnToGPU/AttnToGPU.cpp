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

#include "../BuilderUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
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

struct DecodeShape {
  int64_t headDim, pageSize, numQoHeads, numKvHeads, group, warps, unroll;
  Type element;
  float scale;
};

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
  if (op.getNumResults() != 2 || op.getChunkIndptr() || op.getAttendedViews())
    return "an (output, lse) result without chunks or attended_views";
  if (cast<RankedTensorType>(op.getResult(0).getType()).getElementType() !=
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
    return vector::LoadOp::create(b, VectorType::get({kVec}, s.element),
                                  memref, indices,
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
  int64_t D = s.headDim, g = s.group, W = s.warps;
  // Kernel ABI (recorded in the bundle manifest).
  SmallVector<Type> args = {
      MemRefType::get({dyn, s.numQoHeads, D}, s.element), // q
      MemRefType::get({dyn}, i32),                        // qo_indptr
      MemRefType::get({dyn, s.pageSize, s.numKvHeads, D}, s.element), // k pool
      MemRefType::get({dyn, s.pageSize, s.numKvHeads, D}, s.element), // v pool
      MemRefType::get({dyn}, i32),                                    // indptr
      MemRefType::get({dyn}, i32),                                    // indices
      MemRefType::get({dyn}, i32),                        // last_page_len
      MemRefType::get({dyn, s.numQoHeads, D}, s.element), // out
      MemRefType::get({dyn, s.numQoHeads}, f32),          // lse
  };
  SmallVector<VariantParamAttr> params = variant.getParamList();
  for (VariantParamAttr param : params)
    args.push_back(param.getKind() == ParamKind::Scalar
                       ? param.getType()
                       : Type(MemRefType::get({dyn}, param.getType())));
  // Per warp and row: acc[D], m, l; rows padded to D + 4 floats so every
  // row starts 16-byte aligned for the vector accesses.
  auto smemType = MemRefType::get(
      {W, g, D + 4}, f32, MemRefLayoutAttrInterface(),
      gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup));
  auto func = gpu::GPUFuncOp::create(mb, name, FunctionType::get(ctx, args, {}),
                                     TypeRange{smemType});
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), mb.getUnitAttr());
  func.setKnownBlockSizeAttr(mb.getDenseI32ArrayAttr({int32_t(32 * W), 1, 1}));

  Block &entry = func.getBody().front();
  OpBuilder ob = OpBuilder::atBlockBegin(&entry);
  LocBuilder b(op.getLoc(), ob);
  Value q = entry.getArgument(0), qoIndptr = entry.getArgument(1),
        kPool = entry.getArgument(2), vPool = entry.getArgument(3),
        indptr = entry.getArgument(4), indices = entry.getArgument(5),
        lastPageLen = entry.getArgument(6), out = entry.getArgument(7),
        lse = entry.getArgument(8);
  Value smem = func.getWorkgroupAttributions().front();
  Value c0 = cIndex(b, 0), c1 = cIndex(b, 1);

  Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value req = gpu::BlockIdOp::create(b, gpu::Dimension::x);
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
      Value arg = entry.getArgument(9 + index);
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

  buildFor(b, c0, numQ, [&](LocBuilder &b, Value i) {
    Value row = arith::AddIOp::create(b, qBegin, i);
    Value qpos =
        arith::SubIOp::create(b, arith::AddIOp::create(b, i, numKv), numQ);
    // The query fragments of the g rows, pre-scaled.
    SmallVector<Value> qFrag, heads, rowParams;
    SmallVector<SmallVector<Value>> paramsOf;
    for (int64_t r = 0; r < g; ++r) {
      heads.push_back(headOf(b, r));
      qFrag.push_back(
          arith::MulFOp::create(b, loadVec(b, q, {row, heads.back(), e0}),
                                splat(b, cF32(b, s.scale))));
      paramsOf.push_back(paramValues(b, heads.back()));
    }
    // Carried per row: m, l, acc.
    SmallVector<Value> inits;
    Value zeroVec = splat(b, cF32(b, 0.0f));
    for (int64_t r = 0; r < g; ++r)
      inits.append({negInf(b), cF32(b, 0.0f), zeroVec});

    // Uniform trip count per warp (shuffles need every lane): key groups
    // past the end load a valid key and mask it out. Each iteration handles
    // `unroll` keys per key group, all loads issued before any use so that
    // several 16-byte loads per thread are in flight.
    int64_t U = s.unroll;
    Value start = arith::MulIOp::create(b, warp, cIndex(b, keysPerIter * U));
    Value step = cIndex(b, W * keysPerIter * U);
    auto keyIndex = [&](LocBuilder &b, Value jBase, int64_t u) {
      return arith::AddIOp::create(
          b, jBase,
          arith::AddIOp::create(b, cIndex(b, u * keysPerIter), keyGroup));
    };
    // The U K and V vectors of iteration `jBase`, clamped to the last key
    // (valid memory; masked out later), in the storage type.
    auto loadKeys = [&](LocBuilder &b, Value jBase) {
      SmallVector<Value> kv;
      for (int64_t u = 0; u < U; ++u) {
        Value jSafe = arith::MinSIOp::create(
            b, keyIndex(b, jBase, u), arith::SubIOp::create(b, numKv, c1));
        Value page = loadIndex(
            b, indices,
            arith::AddIOp::create(
                b, pageBegin,
                arith::DivUIOp::create(b, jSafe, cIndex(b, s.pageSize))));
        Value slot = arith::RemUIOp::create(b, jSafe, cIndex(b, s.pageSize));
        kv.push_back(loadRaw(b, kPool, {page, slot, kvHead, e0}));
        kv.push_back(loadRaw(b, vPool, {page, slot, kvHead, e0}));
      }
      return kv;
    };
    // Software pipelining in registers: the loads of the next iteration are
    // issued before this iteration's arithmetic.
    auto rawType = VectorType::get({kVec}, s.element);
    Value hasKeys =
        arith::CmpIOp::create(b, arith::CmpIPredicate::sgt, numKv, c0);
    SmallVector<Value> first = llvm::to_vector(buildIf(
        b, hasKeys, [&](LocBuilder &b) { return loadKeys(b, start); },
        [&](LocBuilder &b) {
          Value zero = arith::ConstantOp::create(
              b, DenseElementsAttr::get(rawType, b.getZeroAttr(s.element)));
          return SmallVector<Value>(2 * U, zero);
        }));
    size_t numState = inits.size();
    inits.append(first);
    auto loop = scf::ForOp::create(
        b, start, numKv, step, inits,
        [&](OpBuilder &lob, Location loc, Value jBase, ValueRange carried) {
          LocBuilder b(loc, lob);
          SmallVector<Value> next =
              loadKeys(b, arith::AddIOp::create(b, jBase, step));
          SmallVector<Value> js, inRange, ks, vs;
          for (int64_t u = 0; u < U; ++u) {
            Value j = keyIndex(b, jBase, u);
            js.push_back(j);
            inRange.push_back(
                arith::CmpIOp::create(b, arith::CmpIPredicate::slt, j, numKv));
            ks.push_back(widen(b, carried[numState + 2 * u]));
            vs.push_back(widen(b, carried[numState + 2 * u + 1]));
          }
          SmallVector<Value> state(carried.take_front(numState));
          for (int64_t u = 0; u < U; ++u) {
            for (int64_t r = 0; r < g; ++r) {
              Value m = state[3 * r], l = state[3 * r + 1],
                    acc = state[3 * r + 2];
              Value part = vector::ReductionOp::create(
                  b, vector::CombiningKind::ADD,
                  arith::MulFOp::create(b, qFrag[r], ks[u]));
              for (int64_t off = groupLanes / 2; off >= 1; off /= 2)
                part = arith::AddFOp::create(b, part, shuffleXor(b, part, off));
              Value score = part;
              if (!variant.getLogits().empty()) {
                SmallVector<Value> hookArgs = {score, qpos, js[u], heads[r]};
                hookArgs.append(paramsOf[r]);
                score = inlineHook(b, variant.getLogits(), hookArgs);
              }
              Value keep = inRange[u];
              if (!variant.getMask().empty()) {
                SmallVector<Value> hookArgs = {qpos, js[u], heads[r]};
                hookArgs.append(paramsOf[r]);
                keep = arith::AndIOp::create(
                    b, keep, inlineHook(b, variant.getMask(), hookArgs));
              }
              score = arith::SelectOp::create(b, keep, score, negInf(b));
              Value mNew = arith::MaxNumFOp::create(b, m, score);
              Value c = expDiff(b, m, mNew), p = expDiff(b, score, mNew);
              state[3 * r] = mNew;
              state[3 * r + 1] =
                  arith::AddFOp::create(b, arith::MulFOp::create(b, l, c), p);
              state[3 * r + 2] = arith::AddFOp::create(
                  b, arith::MulFOp::create(b, acc, splat(b, c)),
                  arith::MulFOp::create(b, vs[u], splat(b, p)));
            }
          }
          state.append(next);
          scf::YieldOp::create(b, state);
        });

    // Merge the warp's key groups (lanes d, d + groupLanes, ... hold the
    // same dims), then the warps through shared memory.
    SmallVector<Value> m, l, acc;
    for (int64_t r = 0; r < g; ++r) {
      m.push_back(loop.getResult(3 * r));
      l.push_back(loop.getResult(3 * r + 1));
      acc.push_back(loop.getResult(3 * r + 2));
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
    gpu::BarrierOp::create(b); // the previous row's readers are done
    Value leader =
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, keyGroup, c0);
    scf::IfOp::create(b, leader, [&](OpBuilder &iob, Location loc) {
      LocBuilder b(loc, iob);
      for (int64_t r = 0; r < g; ++r) {
        Value rr = cIndex(b, r);
        vector::StoreOp::create(b, acc[r], smem, ValueRange{warp, rr, e0});
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
              vector::LoadOp::create(b, f32Vec(b), smem,
                                     ValueRange{ww, rr, e0}));
        }
        // No visible key: output 0, lse = -inf.
        Value empty =
            arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, lr, cF32(b, 0));
        Value inv = arith::SelectOp::create(
            b, empty, cF32(b, 0.0f),
            arith::DivFOp::create(b, cF32(b, 1.0f), lr));
        Value o = narrow(b, arith::MulFOp::create(b, accr, splat(b, inv)));
        vector::StoreOp::create(b, o, out, ValueRange{row, heads[r], e0},
                                /*nontemporal=*/false, llvm::MaybeAlign(16));
        Value rowLse = arith::SelectOp::create(
            b, empty, negInf(b),
            arith::AddFOp::create(b, mr, math::LogOp::create(b, lr)));
        Value first =
            arith::CmpIOp::create(b, arith::CmpIPredicate::eq, laneInGroup, c0);
        scf::IfOp::create(b, first, [&](OpBuilder &fob, Location loc) {
          LocBuilder b(loc, fob);
          memref::StoreOp::create(b, rowLse, lse, ValueRange{row, heads[r]});
          scf::YieldOp::create(b);
        });
      }
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
        int64_t bytes = warps * g * (view.getHeadDim() + 4) * 4;
        if (bytes > 48 * 1024)
          reason = "at most 48 KiB of static shared memory; " +
                   std::to_string(static_cast<int64_t>(warps)) +
                   " warps need " + std::to_string(bytes) +
                   " bytes here (use fewer warps)";
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
    for (auto &[op, name] : kernels) {
      VariantOp variant = resolveVariant(op, op.getVariantAttr());
      PagedKVType view = cast<PagedKVType>(op.getViews().front().getType());
      auto numQoHeads = static_cast<int64_t>(op.getNumQoHeads());
      auto numKvHeads = static_cast<int64_t>(op.getNumKvHeads());
      DecodeShape shape{view.getHeadDim(),
                        view.getPageSize(),
                        numQoHeads,
                        numKvHeads,
                        numQoHeads / numKvHeads,
                        static_cast<int64_t>(warps),
                        static_cast<int64_t>(unroll),
                        view.getElementType(),
                        op.getEffectiveScale()};
      auto func = DecodeKernel(op, variant, shape).build(kb, name);
      // What the host needs to launch it.
      func->setAttr(
          "attn.launch",
          kb.getDictionaryAttr({
              kb.getNamedAttr("grid",
                              kb.getStringAttr("requests x num_kv_heads")),
              kb.getNamedAttr("block", kb.getI64IntegerAttr(32 * warps)),
              kb.getNamedAttr("variant", op.getVariantAttr()),
          }));
      kb.setInsertionPointAfter(func);
    }
  }
};

} // namespace
