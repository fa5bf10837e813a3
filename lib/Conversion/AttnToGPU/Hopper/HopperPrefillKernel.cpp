//===- HopperPrefillKernel.cpp - the sm_90a wgmma prefill kernel ----------===//
//
// Prefill on sm_90a's warpgroup MMA (the WgmmaPrefill family), one CTA per
// (request, tile of qRows query rows, query head) as the mma.sync prefill
// kernel's grid (KernelBuilder::bindPrefillFrame): with fused head groups
// per KV head, the rows then (token, query head of the group) pairs; split
// KV, per chunk of a request's keys, writing partial states. 128 * (1 +
// s.consumers) threads in warpgroup roles (registers: registerSplit):
//  - warpgroup 0, the producer (setmaxnreg down):
//    one elected thread copies the CTA's K and V tiles of s.kvTile keys
//    by tensor copies through the host's tensor maps (kv_maps) into a ring
//    of s.stages slots, 128-byte swizzled; each slot's K and V have a full
//    mbarrier (the copies' bytes land) and an empty one (each consumer
//    warpgroup is done with it): MBarrierRing.h; pages the boxes cannot
//    tile are gathered by all its threads with cp.async (Gather.cpp);
//  - warpgroups 1.., the consumers (setmaxnreg up),
//    64 query rows each: their Q rows in a swizzled tile, then per key
//    tile S = Q.K^T (wgmma, both operands in shared memory), the online
//    softmax in registers (base 2, the scale folded into one fma per
//    score), O += P.V with P as the register A operand (the accumulators
//    converted in place) and V's tile MN-major. The loop is software
//    pipelined (Consumer.cpp): tile j's Q.K^T runs beside tile j-1's P.V.
// Keys past the request's end are masked; their V rows (a copy reads
// whatever follows) are zeroed before P.V reads them. A causal mask
// (bottom-right aligned) skips the tiles past the CTA's last row and masks
// only tiles past its first row's position; the CTAs then run the longest
// q tiles first.
// Persistent (persistent-prefill): one CTA per SM walks the grid's q tiles
// (the launched x and y, every head: the host may launch fewer heads'
// planes), the ring's uses carrying from one q tile to the next
// (forEachTile).
//===----------------------------------------------------------------------===//

#include "HopperPrefillBuilder.h"

#include "../Parts/AsyncProxy.h"
#include "../Parts/CausalMask.h"

using namespace mlir;

namespace flashir::conversion {

namespace hopper {

RegisterSplit registerSplit(int64_t consumers, ProducerLoad load) {
  // Any other split would leave a consumer waiting forever in setmaxnreg.
  if (consumers == 4 && load == ProducerLoad::Copies)
    return {24, 112};
  if (consumers != 2)
    llvm::report_fatal_error("the wgmma prefill kernel takes two consumer "
                             "warpgroups, or four with a plain producer");
  switch (load) {
  case ProducerLoad::Copies:
    return {24, 240};
  case ProducerLoad::Addresses:
    return {40, 232};
  case ProducerLoad::Gather:
    return {64, 216};
  }
  llvm_unreachable("unknown producer load");
}

int64_t hopperPrefillSharedBytes(int64_t qRows, int64_t kvTile, int64_t headDim,
                                 int64_t stages, int64_t elementBytes) {
  int64_t tiles = (qRows + 2 * stages * kvTile) * headDim * elementBytes;
  // Four barriers per slot; the dynamic buffer is 16-byte aligned, the
  // swizzled tiles need 1024.
  return tiles + 4 * stages * 8 + parts::SwizzledTile::kAlign - 16;
}

static parts::MmaType mmaType(Type element) {
  return element.isBF16() ? parts::MmaType::bf16 : parts::MmaType::f16;
}

HopperPrefillBuilder::HopperPrefillBuilder(KernelBuilder &kernel)
    : k(kernel), s(kernel.s), ctx(kernel.op.getContext()),
      f32(Float32Type::get(ctx)), D(s.headDim), KV(s.kvTile), S(s.stages),
      P(s.pageSize), elementBytes(s.element.getIntOrFloatBitWidth() / 8),
      qRows(s.prefillRows), fused(s.fusedHeadGroups),
      tokens(fused ? s.prefillRows / s.group : s.prefillRows),
      gather(!s.tensorCopy),
      boxRows(gather            ? 1
              : s.access.ragged ? s.kvTile
                                : std::min(s.pageSize, s.kvTile)),
      rowBoxes(s.kvTile / boxRows), ringImage{s.kvTile, s.headDim,
                                              parts::SmemSwizzle::B128,
                                              s.groupedRing},
      scoreAtom(*parts::WgmmaAtom::of(s.kvTile, mmaType(s.element))),
      outputAtom(*parts::WgmmaAtom::of(s.headDim, mmaType(s.element))),
      scoreMma(scoreAtom, s.element),
      outputMma(outputAtom, s.element), ring{s.stages, s.consumers},
      consumers(s.consumers) {
  tileBytes = KV * D * elementBytes;
  qBytes = qRows * D * elementBytes;
  barrierOffset = qBytes + 2 * S * tileBytes;
  maskKind = parts::classifyMask(k.variant.getMask());
  skipsTiles = maskKind != parts::CausalMask::None;
  causal = maskKind == parts::CausalMask::Exact;
  hookMask = !k.variant.getMask().empty() && !causal;
  rawScores = k.variant.getLogits().empty() && s.scale > 0;
  factor = rawScores ? s.scale * kernels::kLog2E : 1.0f;
  lazyMax = D > 128 && !k.hooks.sigmoid();
  warpgroupMasks = causal && (KV < qRows || (D > 64 && !fused));
}

gpu::GPUFuncOp HopperPrefillBuilder::build(OpBuilder &moduleBuilder,
                                           StringRef name) {
  func = k.createKernel(moduleBuilder, name,
                        hopperPrefillSharedBytes(qRows, KV, D, S, elementBytes),
                        /*dynamicShared=*/true);
  // setmaxnreg needs the register count at entry, which ptxas knows from
  // .maxntid.
  int32_t threads = static_cast<int32_t>(32 * s.warps);
  func->setAttr("nvvm.maxntid", DenseI32ArrayAttr::get(ctx, {threads, 1, 1}));
  func->setAttr("nvvm.minctasm",
                IntegerAttr::get(IntegerType::get(ctx, 32), 1));
  Block &entry = func.getBody().front();
  OpBuilder ob = OpBuilder::atBlockBegin(&entry);
  LocBuilder b(k.op.getLoc(), ob);
  c0 = cIndex(b, 0);
  c1 = cIndex(b, 1);
  if (s.persistent) {
    f = k.bindPrefillArguments(b, func);
    bindWorkers(b);
  } else {
    bindFrame(b);
  }
  bindThread(b, gpu::ThreadIdOp::create(b, gpu::Dimension::x));
  bindSharedMemory(b);
  if (!s.persistent) {
    planKeyTiles(b);
    ringBase = c0;
  }
  // Split kernels' producers also hold their chunk's bounds: at 24
  // registers ptxas spills that frame. Below head dim 256 the spill costs
  // more than the 8 consumer registers given up; at 256 O's accumulators
  // need all 240 (and a gather's consumers spill at 216, less at 232).
  ProducerLoad load = gather && gatherPasses(P) > 1 && D < 256
                          ? ProducerLoad::Gather
                      : gather || s.persistent || (s.chunked && D < 256)
                          ? ProducerLoad::Addresses
                          : ProducerLoad::Copies;
  RegisterSplit registers = registerSplit(consumers, load);
  // The roles: warpgroup-uniform branches (setmaxnreg is warpgroup-wide).
  Value producer = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, wg, c0);
  scf::IfOp::create(
      b, producer,
      [&](OpBuilder &pb, Location loc) {
        LocBuilder b(loc, pb);
        NVVM::SetMaxRegisterOp::create(b, registers.producer,
                                       NVVM::SetMaxRegisterAction::decrease);
        forEachTile(b, [&](LocBuilder &b) {
          if (gather)
            gatherTiles(b);
          else
            produce(b);
        });
        scf::YieldOp::create(b);
      },
      [&](OpBuilder &cb, Location loc) {
        LocBuilder b(loc, cb);
        NVVM::SetMaxRegisterOp::create(b, registers.consumer,
                                       NVVM::SetMaxRegisterAction::increase);
        forEachTile(b, [&](LocBuilder &b) { consume(b); });
        scf::YieldOp::create(b);
      });
  return func;
}

void HopperPrefillBuilder::bindFrame(LocBuilder &b) {
  KernelBuilder::PrefillTile t =
      k.bindPrefillFrame(b, f, func, skipsTiles, fused, tokens);
  qTile = t.qTile;
  head = t.head;
  rowBase = t.rowBase;
}

void HopperPrefillBuilder::bindWorkers(LocBuilder &b) {
  // The grid's z extent is a ceiling: the host may launch fewer heads'
  // planes (the `persistent` fact), so the grid walked is the launched x and
  // y with every head. The first min(%nsmid, launched) CTAs are the workers
  // (one per SM: the layout takes most of an SM's shared memory); the rest
  // leave at once, before any barrier.
  grid = k.prefillGrid(b);
  worker = k.linearPosition(b, grid);
  Value launched = arith::MulIOp::create(
      b, arith::MulIOp::create(b, grid.x, grid.y), grid.z);
  grid.z = cIndex(b, fused ? s.numKvHeads : s.numQoHeads);
  Value sms = arith::IndexCastUIOp::create(
      b, b.getIndexType(), NVVM::SmDimOp::create(b, b.getI32Type()));
  workers = arith::MinUIOp::create(b, sms, launched);
  Value isWorker =
      arith::CmpIOp::create(b, arith::CmpIPredicate::ult, worker, workers);
  scf::IfOp guard = scf::IfOp::create(b, isWorker, /*withElseRegion=*/false);
  gpu::ReturnOp::create(b);
  b.setInsertionPointToStart(&guard.getThenRegion().front());
}

void HopperPrefillBuilder::bindThread(LocBuilder &b, Value thread) {
  tid = thread;
  wg = arith::DivUIOp::create(b, tid, cIndex(b, parts::WgmmaAtom::kThreads));
  wgThread =
      arith::RemUIOp::create(b, tid, cIndex(b, parts::WgmmaAtom::kThreads));
  warpInWg = arith::DivUIOp::create(b, wgThread, cIndex(b, 32));
  lane = arith::RemUIOp::create(b, tid, cIndex(b, 32));
}

void HopperPrefillBuilder::forEachTile(LocBuilder &b,
                                       function_ref<void(LocBuilder &)> body) {
  if (!s.persistent) {
    body(b);
    return;
  }
  Value planes = arith::MulIOp::create(b, grid.x, grid.y);
  Value gridTiles = arith::MulIOp::create(b, planes, grid.z);
  bool longestFirst = k.longestFirst(skipsTiles);
  Value thread = tid, group = wg, groupThread = wgThread, warp = warpInWg,
        threadLane = lane;
  // The ring's uses carry across q tiles: the producer fills the next
  // tile's slots while the consumers finish this one.
  auto runTile = [&](LocBuilder &b, Value linear,
                     ValueRange uses) -> SmallVector<Value> {
    KernelBuilder::GridPosition pos =
        k.prefillGridPosition(b, grid, linear, longestFirst,
                              /*acrossHeads=*/true);
    KernelBuilder::PrefillTile t = k.loadPrefillTile(b, f, pos, fused, tokens);
    return llvm::to_vector(buildIf(
        b, t.any,
        [&](LocBuilder &b) -> SmallVector<Value> {
          qTile = t.qTile;
          head = t.head;
          rowBase = t.rowBase;
          planKeyTiles(b);
          ringBase = uses[0];
          // An opaque tid per q tile: values derived from it would
          // otherwise be hoisted out of the loop and held in registers
          // across every tile.
          Value pinned = parts::Wgmma::pinOperands(
              b, {arith::IndexCastUIOp::create(b, b.getI32Type(), thread)})[0];
          bindThread(b,
                     arith::IndexCastUIOp::create(b, b.getIndexType(), pinned));
          body(b);
          return {arith::AddIOp::create(b, uses[0], numTiles)};
        },
        [&](LocBuilder &) -> SmallVector<Value> { return {uses[0]}; }));
  };
  if (!longestFirst) {
    buildForStep(b, worker, gridTiles, workers, ValueRange{c0}, runTile);
  } else {
    // Longest first, a worker's tiles shrink round by round: odd rounds
    // are walked from the other end, so that the workers' sums of keys even
    // out (a plain stride gives one worker the longest tile of every round).
    Value mirrored = arith::SubIOp::create(
        b, arith::SubIOp::create(b, workers, cIndex(b, 1)), worker);
    buildForStep(
        b, c0, gridTiles, workers, ValueRange{c0},
        [&](LocBuilder &b, Value base, ValueRange uses) -> SmallVector<Value> {
          Value round = arith::DivUIOp::create(b, base, workers);
          Value odd = arith::TruncIOp::create(
              b, b.getI1Type(),
              arith::IndexCastUIOp::create(b, b.getI64Type(), round));
          Value linear = arith::AddIOp::create(
              b, base, arith::SelectOp::create(b, odd, mirrored, worker));
          Value inGrid = arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                               linear, gridTiles);
          return llvm::to_vector(buildIf(
              b, inGrid,
              [&](LocBuilder &b) { return runTile(b, linear, uses); },
              [&](LocBuilder &) -> SmallVector<Value> { return {uses[0]}; }));
        });
  }
  tid = thread;
  wg = group;
  wgThread = groupThread;
  warpInWg = warp;
  lane = threadLane;
}

Value HopperPrefillBuilder::keyPosition(LocBuilder &b, Value token) {
  Value keysBefore = arith::SubIOp::create(b, f.keysTotal, f.numQ);
  return arith::AddIOp::create(b, keysBefore, token);
}

Value HopperPrefillBuilder::causalEnd(LocBuilder &b, Value position) {
  Value next = arith::AddIOp::create(b, position, c1);
  return arith::MinSIOp::create(b, f.kEnd, next);
}

void HopperPrefillBuilder::planKeyTiles(LocBuilder &b) {
  firstQpos = keyPosition(b, rowBase);
  kLoopEnd = f.kEnd;
  if (skipsTiles) {
    // Keys past the CTA's last row's position are hidden from every row.
    Value pastLast = arith::MinUIOp::create(
        b, arith::AddIOp::create(b, rowBase, cIndex(b, tokens)), f.numQ);
    Value visible = keyPosition(b, pastLast);
    kLoopEnd = arith::MinSIOp::create(b, arith::MaxSIOp::create(b, visible, c0),
                                      f.kEnd);
  }
  // A box of a page starts at the page's first key (a tile's, where pages
  // hold whole tiles); keys before the chunk's first are masked. The
  // gather's tiles start at any key.
  kTileBegin = f.kBegin;
  if (s.chunked && boxRows > 1)
    kTileBegin = arith::SubIOp::create(
        b, f.kBegin, arith::RemUIOp::create(b, f.kBegin, cIndex(b, boxRows)));
  numTiles = tilesUpTo(b, kLoopEnd, /*partial=*/true);
}

Value HopperPrefillBuilder::tilesUpTo(LocBuilder &b, Value end, bool partial) {
  Value span =
      arith::MaxSIOp::create(b, arith::SubIOp::create(b, end, kTileBegin), c0);
  if (partial)
    span = arith::AddIOp::create(b, span, cIndex(b, KV - 1));
  return arith::DivUIOp::create(b, span, cIndex(b, KV));
}

void HopperPrefillBuilder::bindSharedMemory(LocBuilder &b) {
  Value base = arith::IndexCastOp::create(
      b, b.getI64Type(),
      memref::ExtractAlignedPointerAsIndexOp::create(b, f.buf));
  Value zero = arith::ConstantOp::create(b, b.getI64IntegerAttr(0));
  Value negated = arith::SubIOp::create(b, zero, base);
  Value alignMask = arith::ConstantOp::create(
      b, b.getI64IntegerAttr(parts::SwizzledTile::kAlign - 1));
  Value shift = arith::AndIOp::create(b, negated, alignMask);
  alignedAddress = arith::AddIOp::create(b, base, shift);
  auto workgroup =
      gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  layout = memref::ViewOp::create(
      b,
      MemRefType::get({barrierOffset / elementBytes}, s.element,
                      MemRefLayoutAttrInterface(), workgroup),
      f.buf, arith::IndexCastOp::create(b, b.getIndexType(), shift),
      ValueRange{});
  // Thread 0 initialises the barriers: a full barrier completes on the
  // producer's expect-tx arrival and the copies' bytes (gather: on each
  // producer thread's copies), an empty one on one arrival per consumer
  // warpgroup.
  Value first = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, tid, c0);
  scf::IfOp::create(b, first, [&](OpBuilder &ib, Location loc) {
    LocBuilder b(loc, ib);
    for (Operand operand : {Operand::K, Operand::V})
      for (int64_t slot = 0; slot < S; ++slot) {
        parts::mbarrierInit(b, barrier(b, operand, true, cIndex(b, slot)),
                            gather ? parts::WgmmaAtom::kThreads
                                   : parts::MBarrierRing::fullArrivals());
        parts::mbarrierInit(b, barrier(b, operand, false, cIndex(b, slot)),
                            ring.emptyArrivals());
      }
    scf::YieldOp::create(b);
  });
  parts::fenceAsyncShared(b);
  gpu::BarrierOp::create(b);
}

Value HopperPrefillBuilder::tileStart(LocBuilder &b, Value it) {
  return arith::AddIOp::create(b, kTileBegin,
                               arith::MulIOp::create(b, it, cIndex(b, KV)));
}

std::pair<Value, Value> HopperPrefillBuilder::tokenAndHead(LocBuilder &b,
                                                           Value row) {
  return k.prefillRow(b, f, rowBase, head, fused, row);
}

Value HopperPrefillBuilder::sharedAddress(LocBuilder &b, Value offset) {
  return arith::AddIOp::create(
      b, alignedAddress, arith::IndexCastOp::create(b, b.getI64Type(), offset));
}

Value HopperPrefillBuilder::barrier(LocBuilder &b, Operand operand, bool full,
                                    Value slot) {
  int64_t group = 2 * static_cast<int64_t>(operand) + (full ? 0 : 1);
  Value index = arith::AddIOp::create(b, cIndex(b, group * S), slot);
  Value first = cIndex(b, barrierOffset);
  Value within = arith::MulIOp::create(b, index, cIndex(b, 8));
  Value offset = arith::AddIOp::create(b, first, within);
  return parts::pointerTo(b, sharedAddress(b, offset), parts::kSharedSpace);
}

Value HopperPrefillBuilder::tileOffset(LocBuilder &b, Operand operand,
                                       Value slot) {
  Value index = arith::AddIOp::create(
      b, cIndex(b, static_cast<int64_t>(operand) * S), slot);
  Value first = cIndex(b, qBytes);
  Value within = arith::MulIOp::create(b, index, cIndex(b, tileBytes));
  return arith::AddIOp::create(b, first, within);
}

std::pair<Value, Value> HopperPrefillBuilder::slotAndParity(LocBuilder &b,
                                                            Value tile) {
  Value it = arith::AddIOp::create(b, ringBase, tile);
  Value slot = arith::RemUIOp::create(b, it, cIndex(b, S));
  Value phase = arith::DivUIOp::create(b, it, cIndex(b, S));
  Value parity = arith::IndexCastOp::create(
      b, b.getI32Type(), arith::RemUIOp::create(b, phase, cIndex(b, 2)));
  return {slot, parity};
}

} // namespace hopper

gpu::GPUFuncOp
kernels::KernelBuilder::buildHopperPrefill(OpBuilder &moduleBuilder,
                                           StringRef name) {
  return hopper::HopperPrefillBuilder(*this).build(moduleBuilder, name);
}

} // namespace flashir::conversion
