//===- ChunkMerge.cpp - merging split-KV chunk states ---------------------===//
//
// What the merge kernel and the decode kernels that merge their own
// requests (fusedMerge) share: a batch of chunk states merged into a
// running state by eq. (6), and the merged row's store. And the decode
// kernels' in-kernel merge: each CTA of a request's chunk adds the chunk's
// keys to a ticket per (request, KV head) after writing its partial state;
// the CTA whose keys complete the request's merges every chunk's state,
// so no merge kernel (and no dependent-grid hop) follows the kernel.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

#include <algorithm>

using namespace mlir;

namespace flashir::conversion::kernels {

SmallVector<Value> KernelBuilder::mergeChunkBatch(LocBuilder &b, Value partialO,
                                                  Value partialLse, Value base,
                                                  Value c, Value step,
                                                  Value cEnd, Value head,
                                                  Value e0, int64_t unroll,
                                                  ValueRange state) {
  Type rawType = VectorType::get({kVec}, s.element);
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
              loadRaw(b, partialO, ValueRange{prow, head, e0})};
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
  Value scale = expDiff(b, state[0], m);
  Value l = arith::MulFOp::create(b, state[1], scale);
  Value acc = arith::MulFOp::create(b, state[2], splat(b, scale));
  for (int64_t u = 0; u < unroll; ++u) {
    ValueRange merged = buildIf(
        b, valids[u],
        [&](LocBuilder &b) {
          Value w = expDiff(b, lses[u], m);
          Value lNew = arith::AddFOp::create(b, l, w);
          Value o = widen(b, os[u]);
          return SmallVector<Value>{
              lNew, math::FmaOp::create(b, o, splat(b, w), acc)};
        },
        [&](LocBuilder &) {
          return SmallVector<Value>{l, acc};
        });
    l = merged[0];
    acc = merged[1];
  }
  return SmallVector<Value>{m, l, acc};
}

void KernelBuilder::storeMergedRow(LocBuilder &b, Value out, Value lse,
                                   Value row, Value head, Value e0, Value lane,
                                   Value m, Value l, Value acc) {
  auto [empty, o] = normalized(b, l, acc);
  // Sigmoid: the sum of the chunks' outputs, o * l * e^m (0 when empty).
  Value total =
      hooks.sigmoid()
          ? arith::MulFOp::create(b, l, math::ExpOp::create(b, m)).getResult()
          : l;
  o = finalOutput(b, o, total, e0, head);
  vector::StoreOp::create(b, narrow(b, o), out, ValueRange{row, head, e0},
                          /*nontemporal=*/false, llvm::MaybeAlign(16));
  Value noLse = negInf(b);
  Value rowLse = arith::SelectOp::create(
      b, empty, noLse, arith::AddFOp::create(b, m, math::LogOp::create(b, l)));
  scf::IfOp::create(
      b, arith::CmpIOp::create(b, arith::CmpIPredicate::eq, lane, cIndex(b, 0)),
      [&](OpBuilder &fob, Location loc) {
        LocBuilder b(loc, fob);
        memref::StoreOp::create(b, rowLse, lse, ValueRange{row, head});
        scf::YieldOp::create(b);
      });
}

namespace {

/// Whether the CTA of `chunk` with keys [kBegin, kEnd) of the request's
/// `total` completes its ticket (thread 0's view): it adds its keys to the
/// ticket and resets the ticket when they complete the request's. A request
/// without keys is merged by the CTA of its last chunk, without a ticket.
Value takeTicket(LocBuilder &b, Value tickets, Value slot, Value total,
                 Value kBegin, Value kEnd, Value chunk, Value lastChunk) {
  Value c0 = cIndex(b, 0);
  Value mine = arith::SubIOp::create(b, kEnd, kBegin);
  Value noKeys = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, total, c0);
  auto i32Of = [&](Value index) -> Value {
    return arith::IndexCastOp::create(b, b.getI32Type(), index);
  };
  return buildIf(
      b, noKeys,
      [&](LocBuilder &b) -> SmallVector<Value> {
        return {arith::CmpIOp::create(b, arith::CmpIPredicate::eq, chunk,
                                      lastChunk)};
      },
      [&](LocBuilder &b) -> SmallVector<Value> {
        Value some = arith::CmpIOp::create(b, arith::CmpIPredicate::ugt, mine,
                                           cIndex(b, 0));
        return {buildIf(
            b, some,
            [&](LocBuilder &b) -> SmallVector<Value> {
              Value before = memref::AtomicRMWOp::create(
                  b, arith::AtomicRMWKind::addi, i32Of(mine), tickets,
                  ValueRange{slot});
              Value after = arith::AddIOp::create(b, before, i32Of(mine));
              Value done = arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                                 after, i32Of(total));
              // Every other chunk of the request has added its keys: the
              // ticket is free for the next launch.
              scf::IfOp::create(b, done, [&](OpBuilder &rb, Location loc) {
                LocBuilder b(loc, rb);
                memref::AtomicRMWOp::create(
                    b, arith::AtomicRMWKind::assign,
                    arith::ConstantOp::create(b, b.getI32IntegerAttr(0)),
                    tickets, ValueRange{slot});
                scf::YieldOp::create(b);
              });
              return {done};
            },
            [&](LocBuilder &b) -> SmallVector<Value> {
              return {arith::ConstantOp::create(b, b.getBoolAttr(false))};
            })[0]};
      })[0];
}

} // namespace

void KernelBuilder::mergeInLastCta(LocBuilder &b, const Frame &f) {
  if (!s.fusedMerge)
    return;
  int64_t D = s.headDim;
  Value c0 = cIndex(b, 0), c1 = cIndex(b, 1);
  Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  // The decision goes through the states buffer's padding (column D + 2 of
  // warp 0's first row), which writeRows' last barrier left free.
  Value flags = statesView(b, f);
  SmallVector<Value, 3> flagAt = {c0, c0, cIndex(b, D + 2)};
  Value cEnd = loadIndex(b, f.chunkIndptr, arith::AddIOp::create(b, f.req, c1));
  Value hasRows =
      arith::CmpIOp::create(b, arith::CmpIPredicate::ugt, f.numQ, c0);
  Value notDirect = arith::XOrIOp::create(
      b, f.direct, arith::ConstantOp::create(b, b.getBoolAttr(true)));
  Value merges = arith::AndIOp::create(b, hasRows, notDirect);
  // The partial states this CTA wrote are performed at GPU scope before its
  // ticket is taken.
  NVVM::MembarOp::create(b, NVVM::MemScopeKind::GPU);
  gpu::BarrierOp::create(b);
  Value first = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, tid, c0);
  scf::IfOp::create(b, first, [&](OpBuilder &tb, Location loc) {
    LocBuilder b(loc, tb);
    Value last = buildIf(
        b, merges,
        [&](LocBuilder &b) -> SmallVector<Value> {
          Value slot = arith::AddIOp::create(
              b, arith::MulIOp::create(b, f.req, cIndex(b, s.numKvHeads)),
              f.kvHead);
          return {takeTicket(b, f.mergeTickets, slot, f.numKv, f.kBegin, f.kEnd,
                             f.block, arith::SubIOp::create(b, cEnd, c1))};
        },
        [&](LocBuilder &b) -> SmallVector<Value> {
          return {arith::ConstantOp::create(b, b.getBoolAttr(false))};
        })[0];
    Value one = cF32(b, 1.0f);
    Value zero = cF32(b, 0.0f);
    memref::StoreOp::create(b, arith::SelectOp::create(b, last, one, zero),
                            flags, flagAt);
    scf::YieldOp::create(b);
  });
  gpu::BarrierOp::create(b);
  Value flag = memref::LoadOp::create(b, flags, flagAt);
  Value isLast =
      arith::CmpFOp::create(b, arith::CmpFPredicate::ONE, flag, cF32(b, 0.0f));
  // Every thread has its decision before the staging below overwrites it.
  gpu::BarrierOp::create(b);
  scf::IfOp::create(b, isLast, [&](OpBuilder &mb, Location loc) {
    LocBuilder b(loc, mb);
    // A cascade's prefix kernel (the grid this one was launched behind)
    // wrote the request's other chunks.
    if (s.dependentLaunch)
      NVVM::GriddepcontrolOp::create(b, NVVM::GridDepActionKind::wait);
    // The other CTAs' states, released by their tickets, are acquired.
    NVVM::MembarOp::create(b, NVVM::MemScopeKind::GPU);
    buildFor(b, c0, f.numQ,
             [&](LocBuilder &b, Value i) { mergeStagedRow(b, f, i, tid); });
    scf::YieldOp::create(b);
  });
}

void KernelBuilder::mergeStagedRow(LocBuilder &b, const Frame &f, Value i,
                                   Value tid) {
  int64_t D = s.headDim, g = s.group, threads = 32 * s.warps;
  int64_t lanes = D / kVec, units = g * lanes;
  int64_t unitsPerThread = (units + threads - 1) / threads;
  int64_t elementBytes = s.element.getIntOrFloatBitWidth() / 8;
  // Chunks staged at a time: the workgroup buffer short of the ring's
  // barriers (at most 8 stages a warp), o rows first, then the lse values.
  int64_t bytes = sharedMemoryBytes(s) - 64 * s.warps;
  int64_t perChunk = g * D * elementBytes + g * 4;
  int64_t batch = std::max<int64_t>(1, bytes / perChunk);
  int64_t lseOffset = (batch * g * D * elementBytes + 15) / 16 * 16;
  auto workgroup =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  Value oStage = memref::ViewOp::create(
      b,
      MemRefType::get({batch, g, D}, s.element, MemRefLayoutAttrInterface(),
                      workgroup),
      f.buf, cIndex(b, 0), ValueRange{});
  Value lseStage = memref::ViewOp::create(
      b,
      MemRefType::get({batch, g}, b.getF32Type(), MemRefLayoutAttrInterface(),
                      workgroup),
      f.buf, cIndex(b, lseOffset), ValueRange{});
  Value c0 = cIndex(b, 0), c1 = cIndex(b, 1);
  Value cBegin = loadIndex(b, f.chunkIndptr, f.req);
  Value cEnd = loadIndex(b, f.chunkIndptr, arith::AddIOp::create(b, f.req, c1));
  Value base = arith::MulIOp::create(b, f.numChunks, i);
  Value headBase = arith::MulIOp::create(b, f.kvHead, cIndex(b, g));
  // The thread's units: 8 columns of one query head each.
  SmallVector<Value> unitValid, unitHead, unitRow, unitE0, unitColumn;
  for (int64_t u = 0; u < unitsPerThread; ++u) {
    Value unit = arith::AddIOp::create(b, tid, cIndex(b, u * threads));
    unitValid.push_back(arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                              unit, cIndex(b, units)));
    Value clamped = arith::MinUIOp::create(b, unit, cIndex(b, units - 1));
    unitRow.push_back(arith::DivUIOp::create(b, clamped, cIndex(b, lanes)));
    unitHead.push_back(arith::AddIOp::create(b, headBase, unitRow.back()));
    unitColumn.push_back(arith::RemUIOp::create(b, clamped, cIndex(b, lanes)));
    unitE0.push_back(
        arith::MulIOp::create(b, unitColumn.back(), cIndex(b, kVec)));
  }
  SmallVector<Value> inits;
  for (int64_t u = 0; u < unitsPerThread; ++u)
    inits.append({negInf(b), cF32(b, 0.0f), splat(b, cF32(b, 0.0f))});
  Type tokenType = nvgpu::DeviceAsyncTokenType::get(b.getContext());
  ValueRange merged = buildForStep(
      b, cBegin, cEnd, cIndex(b, batch), inits,
      [&](LocBuilder &b, Value cb, ValueRange state) -> SmallVector<Value> {
        Value left = arith::SubIOp::create(b, cEnd, cb);
        Value n = arith::MinUIOp::create(b, cIndex(b, batch), left);
        // Every state's bytes in flight at once: 16-byte pieces of o (L2
        // only), then the lse values.
        Value pieces = arith::MulIOp::create(b, n, cIndex(b, units));
        buildForStep(
            b, tid, pieces, cIndex(b, threads), {},
            [&](LocBuilder &b, Value p, ValueRange) -> SmallVector<Value> {
              Value c = arith::DivUIOp::create(b, p, cIndex(b, units));
              Value rem = arith::RemUIOp::create(b, p, cIndex(b, units));
              Value r = arith::DivUIOp::create(b, rem, cIndex(b, lanes));
              Value column = arith::RemUIOp::create(b, rem, cIndex(b, lanes));
              Value e0 = arith::MulIOp::create(b, column, cIndex(b, kVec));
              Value row = arith::AddIOp::create(
                  b, base, arith::AddIOp::create(b, cb, c));
              nvgpu::DeviceAsyncCopyOp::create(
                  b, tokenType, oStage, ValueRange{c, r, e0}, f.partialO,
                  ValueRange{row, arith::AddIOp::create(b, headBase, r), e0},
                  b.getIndexAttr(kVec), Value(), b.getUnitAttr());
              return {};
            });
        Value lses = arith::MulIOp::create(b, n, cIndex(b, g));
        buildForStep(
            b, tid, lses, cIndex(b, threads), {},
            [&](LocBuilder &b, Value p, ValueRange) -> SmallVector<Value> {
              Value c = arith::DivUIOp::create(b, p, cIndex(b, g));
              Value r = arith::RemUIOp::create(b, p, cIndex(b, g));
              Value row = arith::AddIOp::create(
                  b, base, arith::AddIOp::create(b, cb, c));
              nvgpu::DeviceAsyncCopyOp::create(
                  b, tokenType, lseStage, ValueRange{c, r}, f.partialLse,
                  ValueRange{row, arith::AddIOp::create(b, headBase, r)},
                  b.getIndexAttr(1), Value(), UnitAttr());
              return {};
            });
        Value token =
            nvgpu::DeviceAsyncCreateGroupOp::create(b, tokenType, ValueRange{});
        nvgpu::DeviceAsyncWaitOp::create(b, token, b.getI32IntegerAttr(0));
        gpu::BarrierOp::create(b);
        SmallVector<Value> next;
        for (int64_t u = 0; u < unitsPerThread; ++u) {
          ValueRange st = buildFor(
              b, c0, n, state.slice(3 * u, 3),
              [&](LocBuilder &b, Value c, ValueRange run) {
                Value m = run[0], l = run[1], acc = run[2];
                Value lse = memref::LoadOp::create(b, lseStage,
                                                   ValueRange{c, unitRow[u]});
                Value o =
                    widen(b, vector::LoadOp::create(
                                 b, VectorType::get({kVec}, s.element), oStage,
                                 ValueRange{c, unitRow[u], unitE0[u]}));
                merge(b, m, l, acc, lse, cF32(b, 1.0f), o);
                return SmallVector<Value>{m, l, acc};
              });
          next.append(st.begin(), st.end());
        }
        // The next batch's copies overwrite these.
        gpu::BarrierOp::create(b);
        return next;
      });
  Value row = arith::AddIOp::create(b, f.qBegin, i);
  for (int64_t u = 0; u < unitsPerThread; ++u)
    scf::IfOp::create(b, unitValid[u], [&](OpBuilder &sb, Location loc) {
      LocBuilder b(loc, sb);
      storeMergedRow(b, f.out, f.lse, row, unitHead[u], unitE0[u],
                     unitColumn[u], merged[3 * u], merged[3 * u + 1],
                     merged[3 * u + 2]);
      scf::YieldOp::create(b);
    });
}

} // namespace flashir::conversion::kernels
