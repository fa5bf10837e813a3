//===- PrefillFrame.cpp - what a prefill kernel's CTA serves --------------===//
//
// The prefill kernels' frame, shared by the mma.sync and wgmma kernels: the
// arguments, the grid's positions (x: request or split chunk, y: q tile, z:
// head; causal kernels renumbered longest first), and what a position
// serves: its request, queries, pages, keys and the rows of a q tile.
// One-CTA kernels bind their block's position (bindPrefillFrame); the
// persistent wgmma kernel walks several (HopperPrefillKernel.cpp).
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;

namespace flashir::conversion::kernels {

KernelBuilder::Frame KernelBuilder::bindPrefillArguments(LocBuilder &b,
                                                         gpu::GPUFuncOp func) {
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
  return bindArguments(b, func, /*dynamicShared=*/true);
}

KernelBuilder::PrefillTile
KernelBuilder::bindPrefillFrame(LocBuilder &b, Frame &f, gpu::GPUFuncOp func,
                                bool keysGrow, bool fused, int64_t tokens) {
  f = bindPrefillArguments(b, func);
  GridPosition pos{gpu::BlockIdOp::create(b, gpu::Dimension::x),
                   gpu::BlockIdOp::create(b, gpu::Dimension::y),
                   gpu::BlockIdOp::create(b, gpu::Dimension::z)};
  if (longestFirst(keysGrow)) {
    PrefillGrid grid = prefillGrid(b);
    pos = prefillGridPosition(b, grid, linearPosition(b, grid), true);
  }
  PrefillTile t = loadPrefillTile(b, f, pos, fused, tokens);
  // Every thread of a CTA past its request's rows leaves together.
  scf::IfOp guard = scf::IfOp::create(b, t.any, /*withElseRegion=*/false);
  gpu::ReturnOp::create(b);
  b.setInsertionPointToStart(&guard.getThenRegion().front());
  return t;
}

KernelBuilder::PrefillGrid KernelBuilder::prefillGrid(LocBuilder &b) {
  return {gpu::GridDimOp::create(b, gpu::Dimension::x),
          gpu::GridDimOp::create(b, gpu::Dimension::y),
          gpu::GridDimOp::create(b, gpu::Dimension::z)};
}

Value KernelBuilder::linearPosition(LocBuilder &b, const PrefillGrid &grid) {
  Value y = gpu::BlockIdOp::create(b, gpu::Dimension::y);
  Value z = gpu::BlockIdOp::create(b, gpu::Dimension::z);
  Value plane =
      arith::AddIOp::create(b, y, arith::MulIOp::create(b, grid.y, z));
  Value x = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  return arith::AddIOp::create(b, x, arith::MulIOp::create(b, grid.x, plane));
}

KernelBuilder::GridPosition
KernelBuilder::prefillGridPosition(LocBuilder &b, const PrefillGrid &grid,
                                   Value linear, bool longestFirst,
                                   bool acrossHeads) {
  GridPosition pos;
  pos.block = arith::RemUIOp::create(b, linear, grid.x);
  Value rest = arith::DivUIOp::create(b, linear, grid.x);
  if (!longestFirst) {
    pos.qTile = arith::RemUIOp::create(b, rest, grid.y);
    pos.head = arith::DivUIOp::create(b, rest, grid.y);
    return pos;
  }
  // Longest first within each band of the query heads that share a KV
  // head: the CTAs in flight together read few KV heads' keys (L2 reuse),
  // and each band's short tiles run beside the next band's long ones.
  // (Fused head groups: a head of the grid is a KV head, bands of one.) The
  // grid's z, num_qo_heads, is a multiple of the band: a bijection. The
  // persistent walk takes one band of every head (`acrossHeads`): the q
  // tile slowest, so each round of its static stride holds tiles of about
  // one length.
  int64_t band = s.fusedHeadGroups ? 1 : s.group;
  if (acrossHeads)
    band = s.fusedHeadGroups ? s.numKvHeads : s.numQoHeads;
  // Across heads the band is the whole grid: `rest` is already in it.
  Value bandIndex, inBand = rest;
  if (!acrossHeads) {
    Value bandCtas = grid.y;
    if (band > 1)
      bandCtas = arith::MulIOp::create(b, grid.y, cIndex(b, band));
    bandIndex = arith::DivUIOp::create(b, rest, bandCtas);
    inBand = arith::RemUIOp::create(b, rest, bandCtas);
  }
  Value fromLast = inBand;
  pos.head = bandIndex;
  if (band > 1) {
    fromLast = arith::DivUIOp::create(b, inBand, cIndex(b, band));
    pos.head = arith::RemUIOp::create(b, inBand, cIndex(b, band));
    if (bandIndex) {
      Value bandStart = arith::MulIOp::create(b, bandIndex, cIndex(b, band));
      pos.head = arith::AddIOp::create(b, bandStart, pos.head);
    }
  }
  if (!pos.head) // one head, walked across
    pos.head = cIndex(b, 0);
  Value lastTile = arith::SubIOp::create(b, grid.y, cIndex(b, 1));
  pos.qTile = arith::SubIOp::create(b, lastTile, fromLast);
  return pos;
}

KernelBuilder::PrefillTile
KernelBuilder::loadPrefillTile(LocBuilder &b, Frame &f, const GridPosition &pos,
                               bool fused, int64_t tokens) {
  f.block = pos.block;
  if (s.chunked)
    f.block = loadIndex(b, f.chunkOrder, f.block);
  f.req = s.chunked ? loadIndex(b, f.chunkRequest, f.block) : f.block;
  PrefillTile t;
  t.qTile = pos.qTile;
  t.head = pos.head;
  f.kvHead =
      fused ? t.head
            : arith::DivUIOp::create(b, t.head, cIndex(b, s.group)).getResult();
  Value next = arith::AddIOp::create(b, f.req, cIndex(b, 1));
  f.qBegin = loadIndex(b, f.qoIndptr, f.req);
  f.numQ = arith::SubIOp::create(b, loadIndex(b, f.qoIndptr, next), f.qBegin);
  // The request's pages and (split-KV) its chunk's keys: loaded next to
  // qo_indptr, not after the tile's guard waits for it (one round trip less
  // before the first page ids and copies).
  loadRequestKeys(b, f);
  loadKeyRange(b, f, next);
  t.rowBase = arith::MulIOp::create(b, t.qTile, cIndex(b, tokens));
  t.any =
      arith::CmpIOp::create(b, arith::CmpIPredicate::ult, t.rowBase, f.numQ);
  return t;
}

std::pair<Value, Value> KernelBuilder::prefillRow(LocBuilder &b, const Frame &f,
                                                  Value rowBase, Value head,
                                                  bool fused, Value r) {
  if (!fused)
    return {arith::AddIOp::create(b, rowBase, r), head};
  Value g = cIndex(b, s.group);
  Value token =
      arith::AddIOp::create(b, rowBase, arith::DivUIOp::create(b, r, g));
  Value headBase = arith::MulIOp::create(b, f.kvHead, cIndex(b, s.group));
  return {token,
          arith::AddIOp::create(
              b, headBase, arith::RemUIOp::create(b, r, cIndex(b, s.group)))};
}

} // namespace flashir::conversion::kernels
