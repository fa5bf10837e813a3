//===- MBarrierRing.h - a multi-stage ring of mbarriers ---------*- C++ -*-===//
//
// The arithmetic of a producer/consumer ring of `stages` shared-memory
// slots, each with a "full" mbarrier (the producer's copies landed) and an
// "empty" one (every consumer is done with the slot): the slot and the
// phase parity the n-th use of the ring waits on. mbarrier.try_wait.parity
// P succeeds once the phase of parity P has completed, i.e. while the
// barrier's current phase parity differs from P: a fresh barrier (phase 0)
// lets a wait on parity 1 pass, so the producer's first pass over the ring
// does not block. Plain data, unit-tested on a model of the barriers; no
// MLIR. The plan: docs/HopperPrefillPlan.md, section 2.1.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHIR_LIB_CONVERSION_ATTNTOGPU_PARTS_MBARRIERRING_H
#define FLASHIR_LIB_CONVERSION_ATTNTOGPU_PARTS_MBARRIERRING_H

#include <cstdint>

namespace flashir::conversion::parts {

struct MBarrierRing {
  int64_t stages = 2;
  /// Consumer warpgroups that release each slot.
  int64_t consumers = 1;

  struct Wait {
    int64_t slot = 0, parity = 0;
  };

  /// What the consumers wait on before reading use `seq` (0, 1, ...): the
  /// slot's full barrier, in the phase that use completes.
  Wait consumerWait(int64_t seq) const {
    return {seq % stages, (seq / stages) % 2};
  }
  /// What the producer waits on before refilling the slot for use `seq`:
  /// the slot's empty barrier, released by the previous use's consumers
  /// (passing at once on the first pass).
  Wait producerWait(int64_t seq) const {
    Wait w = consumerWait(seq);
    w.parity ^= 1;
    return w;
  }
  /// Arrivals that complete a phase: the full barrier's one elected
  /// producer thread (arrive.expect_tx; the copies' bytes complete the
  /// transaction count), the empty barrier's one thread per consumer
  /// warpgroup.
  static constexpr int64_t fullArrivals() { return 1; }
  int64_t emptyArrivals() const { return consumers; }
};

} // namespace flashir::conversion::parts

#endif // FLASHIR_LIB_CONVERSION_ATTNTOGPU_PARTS_MBARRIERRING_H
