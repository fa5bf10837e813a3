//===- MergeKernel.cpp - the split-KV merge kernel ------------------------===//
//
// One CTA per (request, query head) merges the request's chunk states (the
// partial O and lse a split-KV decode or prefill kernel wrote) row by row
// into out / lse, by eq. (6); requests with one chunk got their rows from
// the split kernel and are skipped. A decode merge (one row per request)
// runs G groups of D / 8 lanes in one warp: each group takes every G-th
// chunk, then group 0 merges the groups' states through shared memory. A
// split prefill's merge takes one row per group at a time.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

#include <algorithm>

using namespace mlir;

namespace flashir::conversion::kernels {

int64_t mergeGroups(int64_t headDim, bool manyRows) {
  // Decode merges (one row per request) run one warp per (request, head):
  // the whole grid stays resident (a 256-thread CTA of ~64 registers per
  // thread let only a quarter of a 64 x 32 grid in at once).
  int64_t lanes = headDim / kVec;
  return std::clamp<int64_t>((manyRows ? 256 : 32) / lanes, 1, 16);
}

/// The merge kernel, part by part; every part emits its ops in the order
/// the kernel always had.
class MergeKernelBuilder {
public:
  explicit MergeKernelBuilder(KernelBuilder &kernel);
  gpu::GPUFuncOp build(OpBuilder &moduleBuilder, StringRef name);

private:
  /// The kernel with its ABI (recorded in argNames) and the groups' states
  /// as its workgroup attribution.
  void createFunc(OpBuilder &moduleBuilder, StringRef name);
  /// The CTA's lane, group, request and head, the request's rows and chunks,
  /// and how many rows it merges.
  void bindFrame(LocBuilder &b);
  /// Merges row i's chunks first, first + step, ... below cEnd: (m, l, acc).
  SmallVector<Value> mergeChunks(LocBuilder &b, Value i, Value first,
                                 Value step);
  /// The running state merged with the `unroll` chunks c, c + step, ...
  /// (partial rows chunk + base).
  SmallVector<Value> mergeBatch(LocBuilder &b, Value base, Value c, Value step,
                                ValueRange state);
  /// Normalizes a merged state into row i of out / lse.
  void finish(LocBuilder &b, Value i, Value m, Value l, Value acc);
  /// The rows to merge: one (decode) or one per group at a time.
  void mergeRows(LocBuilder &b);
  /// One row: the groups' chains through shared memory, then group 0's
  /// merge of them.
  void mergeOneRow(LocBuilder &b);
  void mergeGroupStates(LocBuilder &b);

  KernelBuilder &kernel;
  const KernelShape &s;
  MLIRContext *ctx;
  int64_t D, lanes, G;
  // Merges row i's chunks `unroll` at a time: their loads do not depend on
  // the running state, so they are all in flight together, then one
  // rescale of the running state merges them (max first: no chain of
  // dependent exps). Nsight Compute found the merge bound by instruction
  // issue, not bytes: each load is guarded by the chunk's existence (a
  // missing one weighs 0; a group skips the loads of chunks past cEnd
  // instead of reloading the last one), and the weighted sums are fmas,
  // guarded as well although a missing chunk's weight is 0 (unguarded,
  // ptxas spills under the decode merges' nvvm.minctasm bound). Decode
  // bundles' merges (one warp per (request, head), G groups of D / 8 lanes)
  // load 16 at a time: G x 16 states of a one-row request in one round trip
  // (32 at d 128); split prefill's 256-thread CTAs of several rows keep 8.
  int64_t unroll;
  Type rawType;

  gpu::GPUFuncOp func;
  Value qoIndptr, chunkIndptr, partialO, partialLse, out, lse, states;
  Value c0, c1, cG, lane, group, head, e0, qBegin, cBegin, cEnd, numChunks;
  Value rowsToMerge, oneRow;
};

gpu::GPUFuncOp KernelBuilder::buildMerge(OpBuilder &moduleBuilder,
                                         StringRef name) {
  return MergeKernelBuilder(*this).build(moduleBuilder, name);
}

MergeKernelBuilder::MergeKernelBuilder(KernelBuilder &kernel)
    : kernel(kernel), s(kernel.s), ctx(kernel.op.getContext()), D(s.headDim),
      lanes(D / kVec), G(mergeGroups(D, s.prefillRows > 0)),
      unroll(s.prefillRows > 0 ? 8 : 16),
      rawType(VectorType::get({kVec}, s.element)) {}

gpu::GPUFuncOp MergeKernelBuilder::build(OpBuilder &moduleBuilder,
                                         StringRef name) {
  createFunc(moduleBuilder, name);
  Block &entry = func.getBody().front();
  OpBuilder ob = OpBuilder::atBlockBegin(&entry);
  LocBuilder b(kernel.op.getLoc(), ob);
  bindFrame(b);
  // One row (decode): the groups take every G-th chunk, then group 0 merges
  // their states through shared memory -- G short chains instead of one
  // long one. Several rows (split prefill): one row per group at a time.
  oneRow = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, rowsToMerge, c1);
  if (!s.dependentLaunch) {
    mergeRows(b);
  } else {
    // The states come from the preceding split kernel; launched early
    // (programmatic stream serialization), this grid sees them complete only
    // after griddepcontrol.wait. CTAs with nothing to merge do not wait.
    scf::IfOp::create(
        b, arith::CmpIOp::create(b, arith::CmpIPredicate::ne, rowsToMerge, c0),
        [&](OpBuilder &wob, Location loc) {
          LocBuilder b(loc, wob);
          NVVM::GriddepcontrolOp::create(b, NVVM::GridDepActionKind::wait);
          mergeRows(b);
          scf::YieldOp::create(b);
        });
  }
  gpu::ReturnOp::create(b);
  return func;
}

void MergeKernelBuilder::createFunc(OpBuilder &moduleBuilder, StringRef name) {
  LocBuilder mb(kernel.op.getLoc(), moduleBuilder);
  Type i32 = mb.getI32Type(), f32 = mb.getF32Type();
  int64_t dyn = ShapedType::kDynamic, H = s.numQoHeads;
  // abi::fixedArgs' merge roles: the index arrays, the partial states and
  // the outputs.
  kernel.roles = abi::fixedArgs(abi::KernelKind::Merge, /*split=*/true);
  SmallVector<Type> args;
  kernel.argNames.clear();
  for (const abi::FixedArg &arg : kernel.roles) {
    abi::ArgRole role = arg.role;
    bool rows = role == abi::ArgRole::PartialO || role == abi::ArgRole::Out;
    bool lse = role == abi::ArgRole::PartialLse || role == abi::ArgRole::Lse;
    args.push_back(rows  ? MemRefType::get({dyn, H, D}, s.element)
                   : lse ? MemRefType::get({dyn, H}, f32)
                         : MemRefType::get({dyn}, i32));
    kernel.argNames.push_back(arg.name());
  }
  // The groups' states of a one-row request: [group][acc | m, l, pad].
  auto workgroup =
      gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  Type statesType =
      MemRefType::get({G, D + 4}, f32, MemRefLayoutAttrInterface(), workgroup);
  func = gpu::GPUFuncOp::create(mb, name, FunctionType::get(ctx, args, {}),
                                TypeRange{statesType});
  func.setWorkgroupAttributionAttr(0, StringAttr::get(ctx, "llvm.align"),
                                   mb.getI64IntegerAttr(16));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), mb.getUnitAttr());
  func.setKnownBlockSizeAttr(
      mb.getDenseI32ArrayAttr({int32_t(lanes * G), 1, 1}));
  // One-warp CTAs, one per (request, head): 16 per SM (at most 128
  // registers a thread) keep a 64 x 32 grid in one wave on 132 SMs.
  if (s.prefillRows == 0)
    func->setAttr("nvvm.minctasm", mb.getI32IntegerAttr(16));
}

void MergeKernelBuilder::bindFrame(LocBuilder &b) {
  Block &entry = func.getBody().front();
  for (auto [index, fixed] : llvm::enumerate(kernel.roles)) {
    Value arg = entry.getArgument(index);
    switch (fixed.role) {
    case abi::ArgRole::QoIndptr:
      qoIndptr = arg;
      break;
    case abi::ArgRole::ChunkIndptr:
      chunkIndptr = arg;
      break;
    case abi::ArgRole::PartialO:
      partialO = arg;
      break;
    case abi::ArgRole::PartialLse:
      partialLse = arg;
      break;
    case abi::ArgRole::Out:
      out = arg;
      break;
    case abi::ArgRole::Lse:
      lse = arg;
      break;
    default:
      llvm_unreachable("a merge kernel has no other fixed arguments");
    }
  }
  states = func.getWorkgroupAttributions().front();
  // The grid launched after it (the cascade's next prefix kernel) may be
  // dispatched as this one's CTAs retire: it waits for this grid before it
  // reads or writes anything.
  if (s.dependentLaunch)
    NVVM::GriddepcontrolOp::create(b,
                                   NVVM::GridDepActionKind::launch_dependents);
  c0 = cIndex(b, 0);
  c1 = cIndex(b, 1);
  cG = cIndex(b, G);
  Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  lane = arith::RemUIOp::create(b, tid, cIndex(b, lanes));
  group = arith::DivUIOp::create(b, tid, cIndex(b, lanes));
  Value req = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  head = gpu::BlockIdOp::create(b, gpu::Dimension::y);
  e0 = arith::MulIOp::create(b, lane, cIndex(b, kVec));
  Value next = arith::AddIOp::create(b, req, c1);
  qBegin = kernel.loadIndex(b, qoIndptr, req);
  Value numQ =
      arith::SubIOp::create(b, kernel.loadIndex(b, qoIndptr, next), qBegin);
  cBegin = kernel.loadIndex(b, chunkIndptr, req);
  cEnd = kernel.loadIndex(b, chunkIndptr, next);
  numChunks = kernel.loadIndex(
      b, chunkIndptr,
      arith::SubIOp::create(b, memref::DimOp::create(b, chunkIndptr, 0), c1));
  // A request with one chunk got its rows from the decode kernel.
  Value single = arith::CmpIOp::create(
      b, arith::CmpIPredicate::eq, arith::SubIOp::create(b, cEnd, cBegin), c1);
  rowsToMerge = arith::SelectOp::create(b, single, c0, numQ);
}

SmallVector<Value> MergeKernelBuilder::mergeChunks(LocBuilder &b, Value i,
                                                   Value first, Value step) {
  Value base = arith::MulIOp::create(b, numChunks, i);
  SmallVector<Value> inits = {negInf(b), cF32(b, 0.0f),
                              kernel.splat(b, cF32(b, 0.0f))};
  return llvm::to_vector(buildForStep(
      b, first, cEnd, arith::MulIOp::create(b, step, cIndex(b, unroll)), inits,
      [&](LocBuilder &b, Value c, ValueRange state) {
        return mergeBatch(b, base, c, step, state);
      }));
}

SmallVector<Value> MergeKernelBuilder::mergeBatch(LocBuilder &b, Value base,
                                                  Value c, Value step,
                                                  ValueRange state) {
  SmallVector<Value> valids, lses, os;
  Value m = state[0];
  for (int64_t u = 0; u < unroll; ++u) {
    Value cu = arith::AddIOp::create(
        b, c, arith::MulIOp::create(b, step, cIndex(b, u)));
    valids.push_back(
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, cu, cEnd));
    Value prow = arith::AddIOp::create(b, cu, base);
    // A chunk's state: (lse, 1, normalised o); empty: lse = -inf.
    ValueRange loaded = buildIf(
        b, valids.back(),
        [&](LocBuilder &b) {
          return SmallVector<Value>{
              memref::LoadOp::create(b, partialLse, ValueRange{prow, head}),
              kernel.loadRaw(b, partialO, ValueRange{prow, head, e0})};
        },
        [&](LocBuilder &b) {
          return SmallVector<Value>{
              negInf(b),
              arith::ConstantOp::create(
                  b, DenseElementsAttr::get(cast<ShapedType>(rawType),
                                            b.getFloatAttr(s.element, 0.0)))};
        });
    lses.push_back(loaded[0]);
    os.push_back(loaded[1]);
    m = arith::MaxNumFOp::create(b, m, lses.back());
  }
  Value scale = kernel.expDiff(b, state[0], m);
  Value l = arith::MulFOp::create(b, state[1], scale);
  Value acc = arith::MulFOp::create(b, state[2], kernel.splat(b, scale));
  for (int64_t u = 0; u < unroll; ++u) {
    ValueRange merged = buildIf(
        b, valids[u],
        [&](LocBuilder &b) {
          Value w = kernel.expDiff(b, lses[u], m);
          Value lNew = arith::AddFOp::create(b, l, w);
          Value o = kernel.widen(b, os[u]);
          return SmallVector<Value>{
              lNew, math::FmaOp::create(b, o, kernel.splat(b, w), acc)};
        },
        [&](LocBuilder &) {
          return SmallVector<Value>{l, acc};
        });
    l = merged[0];
    acc = merged[1];
  }
  return SmallVector<Value>{m, l, acc};
}

void MergeKernelBuilder::finish(LocBuilder &b, Value i, Value m, Value l,
                                Value acc) {
  Value row = arith::AddIOp::create(b, qBegin, i);
  Value empty =
      arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, l, cF32(b, 0));
  Value zero = cF32(b, 0.0f);
  Value inv = arith::SelectOp::create(
      b, empty, zero, arith::DivFOp::create(b, cF32(b, 1.0f), l));
  Value o = arith::MulFOp::create(b, acc, kernel.splat(b, inv));
  // Sigmoid: the sum of the chunks' outputs, o * l * e^m (0 when empty).
  Value total =
      kernel.hooks.sigmoid()
          ? arith::MulFOp::create(b, l, math::ExpOp::create(b, m)).getResult()
          : l;
  o = kernel.finalOutput(b, o, total, e0, head);
  vector::StoreOp::create(b, kernel.narrow(b, o), out,
                          ValueRange{row, head, e0},
                          /*nontemporal=*/false, llvm::MaybeAlign(16));
  Value noLse = negInf(b);
  Value rowLse = arith::SelectOp::create(
      b, empty, noLse, arith::AddFOp::create(b, m, math::LogOp::create(b, l)));
  scf::IfOp::create(
      b, arith::CmpIOp::create(b, arith::CmpIPredicate::eq, lane, c0),
      [&](OpBuilder &fob, Location loc) {
        LocBuilder b(loc, fob);
        memref::StoreOp::create(b, rowLse, lse, ValueRange{row, head});
        scf::YieldOp::create(b);
      });
}

void MergeKernelBuilder::mergeRows(LocBuilder &b) {
  scf::IfOp::create(
      b, oneRow,
      [&](OpBuilder &tob, Location loc) {
        LocBuilder b(loc, tob);
        mergeOneRow(b);
        scf::YieldOp::create(b);
      },
      [&](OpBuilder &eob, Location loc) {
        LocBuilder b(loc, eob);
        buildForStep(b, group, rowsToMerge, cG, {},
                     [&](LocBuilder &b, Value i, ValueRange) {
                       SmallVector<Value> st = mergeChunks(b, i, cBegin, c1);
                       finish(b, i, st[0], st[1], st[2]);
                       return SmallVector<Value>();
                     });
        scf::YieldOp::create(b);
      });
}

void MergeKernelBuilder::mergeOneRow(LocBuilder &b) {
  Value cFirst = arith::AddIOp::create(b, cBegin, group);
  SmallVector<Value> st = mergeChunks(b, c0, cFirst, cG);
  vector::StoreOp::create(b, st[2], states, ValueRange{group, e0},
                          /*nontemporal=*/false, llvm::MaybeAlign(16));
  scf::IfOp::create(
      b, arith::CmpIOp::create(b, arith::CmpIPredicate::eq, lane, c0),
      [&](OpBuilder &fob, Location loc) {
        LocBuilder b(loc, fob);
        memref::StoreOp::create(b, st[0], states,
                                ValueRange{group, cIndex(b, D)});
        memref::StoreOp::create(b, st[1], states,
                                ValueRange{group, cIndex(b, D + 1)});
        scf::YieldOp::create(b);
      });
  gpu::BarrierOp::create(b);
  scf::IfOp::create(
      b, arith::CmpIOp::create(b, arith::CmpIPredicate::eq, group, c0),
      [&](OpBuilder &gob, Location loc) {
        LocBuilder b(loc, gob);
        mergeGroupStates(b);
        scf::YieldOp::create(b);
      });
}

void MergeKernelBuilder::mergeGroupStates(LocBuilder &b) {
  // Two passes (the maximum, then the weighted sums): no chain of dependent
  // exps.
  Value m = negInf(b), l = cF32(b, 0.0f), acc = kernel.splat(b, cF32(b, 0.0f));
  SmallVector<Value> ms;
  for (int64_t g = 0; g < G; ++g) {
    ms.push_back(memref::LoadOp::create(
        b, states, ValueRange{cIndex(b, g), cIndex(b, D)}));
    m = arith::MaxNumFOp::create(b, m, ms.back());
  }
  for (int64_t g = 0; g < G; ++g) {
    Value gg = cIndex(b, g), w = kernel.expDiff(b, ms[g], m);
    Value lg =
        memref::LoadOp::create(b, states, ValueRange{gg, cIndex(b, D + 1)});
    Value accg =
        vector::LoadOp::create(b, kernel.f32Vec(b), states, ValueRange{gg, e0},
                               /*nontemporal=*/false, llvm::MaybeAlign(16));
    l = math::FmaOp::create(b, lg, w, l);
    acc = math::FmaOp::create(b, accg, kernel.splat(b, w), acc);
  }
  finish(b, c0, m, l, acc);
}

} // namespace flashir::conversion::kernels
