//===- KeyLoop.cpp - the prefill kernel's key loop schedules --------------===//
//
// Three schedules of copies, waits and barriers around tileBody:
//  - one stage (raw copies, S == 1): one K and one V slot, staggered as
//    FlashAttention-2 does: half the shared memory of two stages for a
//    second barrier per tile;
//  - the raw ring (raw copies, S >= 2): the wait and one barrier open each
//    iteration; tile it + S - 1's copies go out between the k-steps of tile
//    it's Q.K^T (and P.V at head dim 256);
//  - the staged loop (memref-indexed copies, sm_75): KernelBuilder's
//    buildStagedLoop, with the copies as one block and a barrier before a
//    slot is refilled.
//
//===----------------------------------------------------------------------===//

#include "PrefillBuilder.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

using namespace mlir;

namespace flashir::conversion::prefill {

static void commit(LocBuilder &b) { NVVM::CpAsyncCommitGroupOp::create(b); }

ValueRange PrefillBuilder::keyLoop(LocBuilder &b) {
  if (rawCopies && S == 1)
    return oneStageLoop(b);
  if (rawCopies)
    return rawRingLoop(b);
  return stagedLoop(b);
}

// Tile it's V copies go out before its Q.K^T, tile it + 1's K copies before
// its softmax and P.V. Two barriers per tile: at the top (K landed; every
// warp is done with the V slot) and after Q.K^T (V landed; every warp is
// done with the K slot). One copy group is in flight at each wait.
ValueRange PrefillBuilder::oneStageLoop(LocBuilder &b) {
  // Tile 0's page ids serve its K copies here and its V copies in the loop
  // (carried).
  SmallVector<Value> firstIds = pagesIf(b, c0, noPages);
  buildIf(
      b, arith::CmpIOp::create(b, arith::CmpIPredicate::slt, c0, numTiles),
      [&](LocBuilder &b) {
        RawTileCopies(*this, b, c0, firstIds, Value(), /*withK=*/true,
                      /*withV=*/false)
            .all(b);
        return SmallVector<Value>();
      },
      [](LocBuilder &) { return SmallVector<Value>(); });
  commit(b);
  SmallVector<Value> loopInits(inits);
  llvm::append_range(loopInits, firstIds);
  size_t numState = inits.size();
  ValueRange done = buildFor(
      b, c0, numTiles, loopInits,
      [&](LocBuilder &b, Value it, ValueRange carried) {
        NVVM::CpAsyncWaitGroupOp::create(b, 0);
        gpu::BarrierOp::create(b);
        SmallVector<Value> ids(carried.drop_front(numState));
        Value itNext = arith::AddIOp::create(b, it, c1);
        SmallVector<Value> nextIds = pagesIf(b, itNext, ids);
        // Bursts, as soon as their slot is free: a copy spread among
        // the MMAs would go out just before the wait that needs it.
        RawTileCopies(*this, b, it, ids, Value(), /*withK=*/false,
                      /*withV=*/true)
            .all(b);
        commit(b);
        Value nextValid = arith::CmpIOp::create(b, arith::CmpIPredicate::slt,
                                                itNext, numTiles);
        RawTileCopies kPass(*this, b, itNext, nextIds, nextValid,
                            /*withK=*/true, /*withV=*/false);
        // Each branch of a skipped tile's test copies its own.
        auto waitThenCopyK = [&](LocBuilder &b) {
          NVVM::CpAsyncWaitGroupOp::create(b, 0);
          gpu::BarrierOp::create(b);
          RawTileCopies(kPass).all(b);
        };
        ValueRange state0 = carried.take_front(numState);
        SmallVector<Value> state = visibleTileBody(
            b, it, state0,
            [&](LocBuilder &b) {
              return tileBody(b, it, state0, nullptr, waitThenCopyK, nullptr);
            },
            waitThenCopyK);
        commit(b);
        llvm::append_range(state, nextIds);
        return state;
      });
  NVVM::CpAsyncWaitGroupOp::create(b, 0);
  return done;
}

// The copies are spread among the MMAs rather than one burst that fills the
// load/store queue; the slot they refill was last read before the barrier,
// so no second barrier closes the iteration. The page ids of the tile after
// travel in the loop's carried values.
ValueRange PrefillBuilder::rawRingLoop(LocBuilder &b) {
  for (int64_t st = 0; st + 1 < S; ++st) {
    Value it = cIndex(b, st);
    buildIf(
        b, arith::CmpIOp::create(b, arith::CmpIPredicate::slt, it, numTiles),
        [&](LocBuilder &b) {
          issue(b, it, pagesOf(b, it));
          return SmallVector<Value>();
        },
        [](LocBuilder &) { return SmallVector<Value>(); });
    commit(b);
  }
  SmallVector<Value> loopInits(inits);
  llvm::append_range(loopInits, pagesIf(b, cIndex(b, S - 1), noPages));
  size_t numState = inits.size();
  ValueRange done = buildFor(
      b, c0, numTiles, loopInits,
      [&](LocBuilder &b, Value it, ValueRange carried) {
        NVVM::CpAsyncWaitGroupOp::create(b, S - 2);
        gpu::BarrierOp::create(b);
        SmallVector<Value> ids(carried.drop_front(numState));
        Value itIssue = arith::AddIOp::create(b, it, cIndex(b, S - 1));
        Value valid = arith::CmpIOp::create(b, arith::CmpIPredicate::slt,
                                            itIssue, numTiles);
        RawTileCopies tileCopies(*this, b, itIssue, ids, valid);
        ValueRange state0 = carried.take_front(numState);
        auto body = [&](LocBuilder &b) {
          // Each branch of a skipped tile's test copies its own.
          RawTileCopies copies(tileCopies);
          // Passes [k * passes / steps, (k + 1) * passes / steps) after
          // step first + k of `steps`.
          int64_t steps = kSteps + (spreadAll ? KV / 16 : 0);
          auto spread = [&](int64_t first) {
            return [&copies, first, steps, this](LocBuilder &b, int64_t k) {
              int64_t step = first + k;
              for (int64_t p = (step * copyPasses + steps - 1) / steps;
                   p < ((step + 1) * copyPasses + steps - 1) / steps; ++p)
                copies.pass(b, p);
            };
          };
          auto qkAt = spread(0), pvAt = spread(kSteps);
          return tileBody(b, it, state0, qkAt, nullptr,
                          spreadAll ? StepFn(pvAt) : nullptr);
        };
        SmallVector<Value> state =
            visibleTileBody(b, it, state0, body, [&](LocBuilder &b) {
              RawTileCopies(tileCopies).all(b);
            });
        commit(b);
        llvm::append_range(
            state, pagesIf(b, arith::AddIOp::create(b, itIssue, c1), ids));
        return state;
      });
  NVVM::CpAsyncWaitGroupOp::create(b, 0);
  return done;
}

ValueRange PrefillBuilder::stagedLoop(LocBuilder &b) {
  ValueRange done = k.buildStagedLoop(
      b, numTiles, inits, noPages,
      [&](LocBuilder &b, Value it) { return pagesOf(b, it); },
      [&](LocBuilder &b, Value it, ArrayRef<Value> pages) {
        issue(b, it, pages);
      },
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
        SmallVector<Value> next = visibleTileBody(
            b, it, carried,
            [&](LocBuilder &b) {
              return tileBody(b, it, carried, nullptr, nullptr, nullptr);
            },
            [](LocBuilder &) {});
        // Every warp is done with this slot before it is refilled.
        gpu::BarrierOp::create(b);
        return next;
      });
  // No copy may still be in flight when the CTA exits (the Q tile's group
  // when the request has no key tile).
  if (qToken)
    nvgpu::DeviceAsyncWaitOp::create(b, qToken, b.getI32IntegerAttr(0));
  return done;
}

} // namespace flashir::conversion::prefill
