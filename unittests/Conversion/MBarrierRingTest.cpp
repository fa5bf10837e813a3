//===- MBarrierRingTest.cpp - a producer/consumer mbarrier ring -----------===//

#include "../../lib/Conversion/AttnToGPU/Parts/MBarrierRing.h"

#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <vector>

using namespace flashir::conversion::parts;

namespace {

// An mbarrier: a phase completes when its expected arrivals have arrived;
// try_wait.parity P passes once the phase of parity P has completed (the
// current phase's parity differs from P).
struct ModelBarrier {
  int64_t expected = 1, pending = 1, phase = 0;
  void arrive() {
    if (--pending == 0) {
      ++phase;
      pending = expected;
    }
  }
  bool tryWaitParity(int64_t parity) const { return phase % 2 != parity; }
};

using ProducerWait = std::function<MBarrierRing::Wait(int64_t)>;

// Runs `uses` uses of a ring under a seeded random schedule of the producer
// and the consumers; returns false on a deadlock. Fails the test when a
// consumer reads a slot holding another use or the producer refills a slot
// a consumer has not released.
bool simulate(const MBarrierRing &ring, int64_t uses, unsigned seed,
              const ProducerWait &producerWait) {
  std::vector<ModelBarrier> full(ring.stages), empty(ring.stages);
  for (int64_t s = 0; s < ring.stages; ++s) {
    full[s] = {MBarrierRing::fullArrivals(), MBarrierRing::fullArrivals(), 0};
    empty[s] = {ring.emptyArrivals(), ring.emptyArrivals(), 0};
  }
  std::vector<int64_t> slot(ring.stages, -1);
  std::vector<int64_t> consumed(ring.consumers, 0);
  int64_t produced = 0;
  std::mt19937 gen(seed);
  while (true) {
    std::vector<int64_t> ready; // -1: the producer, else a consumer
    if (produced < uses) {
      MBarrierRing::Wait w = producerWait(produced);
      if (empty[w.slot].tryWaitParity(w.parity))
        ready.push_back(-1);
    }
    for (int64_t c = 0; c < ring.consumers; ++c)
      if (consumed[c] < uses) {
        MBarrierRing::Wait w = ring.consumerWait(consumed[c]);
        if (full[w.slot].tryWaitParity(w.parity))
          ready.push_back(c);
      }
    if (ready.empty())
      break;
    int64_t actor = ready[gen() % ready.size()];
    if (actor < 0) {
      MBarrierRing::Wait w = producerWait(produced);
      for (int64_t c = 0; c < ring.consumers; ++c)
        EXPECT_GE(consumed[c], produced - ring.stages + 1)
            << "use " << produced << " overwrites an unreleased slot";
      slot[w.slot] = produced++;
      full[w.slot].arrive();
    } else {
      MBarrierRing::Wait w = ring.consumerWait(consumed[actor]);
      EXPECT_EQ(slot[w.slot], consumed[actor]) << "consumer " << actor;
      ++consumed[actor];
      empty[w.slot].arrive();
    }
  }
  for (int64_t c : consumed)
    if (c != uses)
      return false;
  return produced == uses;
}

TEST(MBarrierRing, SlotsAndParities) {
  MBarrierRing ring{3, 2};
  EXPECT_EQ(ring.consumerWait(0).slot, 0);
  EXPECT_EQ(ring.consumerWait(0).parity, 0);
  EXPECT_EQ(ring.producerWait(0).parity, 1); // passes on a fresh barrier
  EXPECT_EQ(ring.consumerWait(4).slot, 1);
  EXPECT_EQ(ring.consumerWait(4).parity, 1);
  EXPECT_EQ(ring.producerWait(7).parity, 1);
  EXPECT_EQ(ring.emptyArrivals(), 2);
}

TEST(MBarrierRing, RandomSchedulesNeitherRaceNorDeadlock) {
  for (int64_t stages : {1, 2, 3, 4})
    for (int64_t consumers : {1, 2, 3})
      for (unsigned seed = 0; seed < 20; ++seed) {
        MBarrierRing ring{stages, consumers};
        EXPECT_TRUE(
            simulate(ring, 37, seed,
                     [&](int64_t seq) { return ring.producerWait(seq); }))
            << stages << " stages, " << consumers << " consumers";
      }
}

// The model catches a wrong parity: a producer waiting on the consumers'
// parity never starts.
TEST(MBarrierRing, TheModelCatchesAWrongParity) {
  MBarrierRing ring{2, 1};
  EXPECT_FALSE(simulate(ring, 5, 1,
                        [&](int64_t seq) { return ring.consumerWait(seq); }));
}

} // namespace
