//===- ChipTest.cpp - target chips and the tile heuristic -----------------===//

#include "flashir/Target/Chip.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>

using namespace flashir::target;

namespace {

const ChipInfo &chip(std::string_view name) {
  const ChipInfo *info = lookupChip(name);
  EXPECT_NE(info, nullptr) << name;
  return *info;
}

TileRequest request(int64_t headDim, ElementType type, int64_t avgQoLen,
                    int64_t groupSize = 1, bool fused = false) {
  TileRequest r;
  r.headDim = headDim;
  r.elementType = type;
  r.avgQoLen = avgQoLen;
  r.groupSize = groupSize;
  r.fusedHeadGroups = fused;
  return r;
}

TileChoice select(std::string_view chipName, const TileRequest &r) {
  TileSelection s = selectTile(chip(chipName), r);
  EXPECT_TRUE(s.ok) << chipName << ": " << s.reason;
  return s.choice;
}

bool contains(const std::string &haystack, const std::string &needle) {
  return haystack.find(needle) != std::string::npos;
}

//===----------------------------------------------------------------------===//
// The chip table
//===----------------------------------------------------------------------===//

TEST(Chip, EveryChipFound) {
  struct Expected {
    const char *name;
    int cc;
    int64_t sms;
  };
  for (Expected e : {Expected{"sm_75", 75, 40}, Expected{"sm_80", 80, 108},
                     Expected{"sm_86", 86, 84}, Expected{"sm_89", 89, 142},
                     Expected{"sm_90a", 90, 132}}) {
    const ChipInfo *info = lookupChip(e.name);
    ASSERT_NE(info, nullptr) << e.name;
    EXPECT_EQ(info->name, e.name);
    EXPECT_EQ(info->computeCapability, e.cc);
    EXPECT_EQ(info->numSMs, e.sms);
    EXPECT_FALSE(info->part.empty());
    EXPECT_EQ(info->maxRegistersPerThread, 255);
    EXPECT_EQ(info->registersPerSM, 65536);
    EXPECT_EQ(info->maxThreadsPerBlock, 1024);
    EXPECT_LE(info->maxSharedMemoryPerBlock, info->sharedMemoryPerSM);
  }
  EXPECT_EQ(allChips().size(), 5u);
  EXPECT_EQ(validChipNames(), "sm_75, sm_80, sm_86, sm_89, sm_90a");
}

TEST(Chip, UnknownChipIsNull) {
  EXPECT_EQ(lookupChip("sm_99"), nullptr);
  EXPECT_EQ(lookupChip(""), nullptr);
  EXPECT_EQ(lookupChip("SM_80"), nullptr);
  // wgmma needs the `a` target: plain sm_90 is not a FlashIR target.
  EXPECT_EQ(lookupChip("sm_90"), nullptr);
  EXPECT_EQ(lookupChip("sm_80 "), nullptr);
}

TEST(Chip, SharedMemoryAndThreadLimits) {
  EXPECT_EQ(chip("sm_75").maxSharedMemoryPerBlock, 64 * 1024);
  EXPECT_EQ(chip("sm_75").sharedMemoryPerSM, 64 * 1024);
  EXPECT_EQ(chip("sm_75").maxThreadsPerSM, 1024);
  EXPECT_EQ(chip("sm_80").maxSharedMemoryPerBlock, 163 * 1024);
  EXPECT_EQ(chip("sm_80").sharedMemoryPerSM, 164 * 1024);
  EXPECT_EQ(chip("sm_80").maxThreadsPerSM, 2048);
  EXPECT_EQ(chip("sm_86").maxSharedMemoryPerBlock, 99 * 1024);
  EXPECT_EQ(chip("sm_86").maxThreadsPerSM, 1536);
  EXPECT_EQ(chip("sm_89").maxSharedMemoryPerBlock, 99 * 1024);
  EXPECT_EQ(chip("sm_89").maxThreadsPerSM, 1536);
  EXPECT_EQ(chip("sm_90a").maxSharedMemoryPerBlock, 227 * 1024);
  EXPECT_EQ(chip("sm_90a").sharedMemoryPerSM, 228 * 1024);
  EXPECT_EQ(chip("sm_90a").maxThreadsPerSM, 2048);
}

TEST(Chip, Instructions) {
  for (const ChipInfo &info : allChips()) {
    bool ampere = info.computeCapability >= 80;
    bool hopper = info.name == "sm_90a";
    EXPECT_TRUE(info.hasMmaM16N8K8F16) << info.name;
    EXPECT_TRUE(info.hasLdmatrix) << info.name;
    EXPECT_EQ(info.hasMmaM16N8K16, ampere) << info.name;
    EXPECT_EQ(info.hasCpAsync, ampere) << info.name;
    EXPECT_EQ(info.hasBF16, ampere) << info.name;
    EXPECT_EQ(info.hasWgmma, hopper) << info.name;
    EXPECT_EQ(info.hasTma, hopper) << info.name;
    EXPECT_EQ(info.hasMbarrierTx, hopper) << info.name;
    EXPECT_EQ(stagesForChip(info), ampere ? 2 : 1) << info.name;
  }
}

TEST(Chip, ElementTypes) {
  EXPECT_EQ(elementBytes(ElementType::F16), 2);
  EXPECT_EQ(elementBytes(ElementType::BF16), 2);
  EXPECT_EQ(elementBytes(ElementType::F32), 4);
  EXPECT_EQ(elementTypeName(ElementType::BF16), "bf16");
}

//===----------------------------------------------------------------------===//
// The budget
//===----------------------------------------------------------------------===//

TEST(Budget, ByHandSm80Prefill) {
  // q = 128, kv = 64, 8 warps (16 rows each), 2 stages, head_dim 128, f16 on
  // sm_80 -- the prefill kernel's budget:
  //   shared memory = 2 stages * 2 (K, V) * 64 * (128 + 8) * 2 = 69632 bytes
  //                   (Q stays in registers with 16 rows per warp);
  //   registers     = 128*128/256 (O) + 128*64/256 (S) + 48 = 64+32+48 = 144;
  //   CTAs per SM   = min(167936 / (69632 + 1024) = 2,
  //                       65536 / (144 * 256) = 1, 2048 / 256 = 8, 32) = 1.
  TileBudget b = estimate(chip("sm_80"), TileChoice{128, 64, 8, 2}, 128, 2);
  EXPECT_EQ(b.sharedMemoryBytes, 69632);
  EXPECT_EQ(b.registersPerThread, 144);
  EXPECT_EQ(b.threads, 256);
  EXPECT_TRUE(b.fitsSharedMemory);
  EXPECT_TRUE(b.fitsRegisters);
  EXPECT_TRUE(b.fits());
  EXPECT_EQ(b.ctasPerSM, 1);
  EXPECT_EQ(b.residentWarps(), 8);
}

TEST(Budget, ByHandSm90aThirtyTwoRowsPerWarp) {
  // q = 128 on 4 warps (32 rows each: Q in shared memory), kv = 64, 2
  // stages, head_dim 128, bf16 on sm_90a:
  //   shared memory = 69632 (K/V ring) + 128 * (128 + 8) * 2 (Q) = 104448;
  //   registers     = 128*128/128 + 128*64/128 + 48 = 128+64+48 = 240;
  //   CTAs per SM   = min(233472 / (104448 + 1024) = 2,
  //                       65536 / (240 * 128) = 2, 2048 / 128 = 16, 32) = 2.
  TileBudget b = estimate(chip("sm_90a"), TileChoice{128, 64, 4, 2}, 128, 2);
  EXPECT_EQ(b.sharedMemoryBytes, 104448);
  EXPECT_EQ(b.sharedMemoryBytes,
            prefillSharedMemoryBytes(128, 64, 4, 2, 128, 2));
  EXPECT_EQ(b.registersPerThread, 240);
  EXPECT_EQ(b.threads, 128);
  EXPECT_EQ(b.ctasPerSM, 2);
  EXPECT_EQ(b.residentWarps(), 8);
  // The same tile does not fit sm_86's 101376 bytes per CTA.
  EXPECT_FALSE(estimate(chip("sm_86"), TileChoice{128, 64, 4, 2}, 128, 2)
                   .fitsSharedMemory);
  // 16 rows per warp keep Q in registers unless the tiles ask for q_shared:
  // d256, q 64 on 4 warps, kv 32: 67584 (ring) + 64 * 264 * 2 (Q) bytes.
  EXPECT_EQ(prefillSharedMemoryBytes(64, 32, 4, 2, 256, 2), 67584);
  EXPECT_EQ(prefillSharedMemoryBytes(64, 32, 4, 2, 256, 2, /*qShared=*/true),
            101376);
}

TEST(Budget, PrefillPadsHeadDimsToSixteen) {
  // The prefill kernel computes over the head dim rounded up to 16 (the k of
  // m16n8k16): d72 rows are staged as 80 columns + 8 of padding.
  EXPECT_EQ(prefillPaddedHeadDim(16), 16);
  EXPECT_EQ(prefillPaddedHeadDim(72), 80);
  EXPECT_EQ(prefillPaddedHeadDim(80), 80);
  EXPECT_EQ(prefillPaddedHeadDim(200), 208);
  // q = 64 on 4 warps, kv = 64, 2 stages, d72 bf16: 2 * 2 * 64 * 88 * 2.
  EXPECT_EQ(prefillSharedMemoryBytes(64, 64, 4, 2, 72, 2), 45056);
  EXPECT_EQ(prefillSharedMemoryBytes(64, 64, 4, 2, 80, 2), 45056);
  // Registers: O over 80 columns, 64*80/128 + 64*64/128 + 48 = 120.
  TileBudget b = estimate(chip("sm_80"), TileChoice{64, 64, 4, 2}, 72, 2);
  EXPECT_EQ(b.sharedMemoryBytes, 45056);
  EXPECT_EQ(b.registersPerThread, 120);
}

TEST(Budget, ByHandSm75SixteenRows) {
  // q = 16, kv = 64, 1 stage, head_dim 64, f16 on sm_75: the prefill kernel
  // runs 16 rows on 1 warp whatever tile.warps says:
  //   shared memory = 1 * 2 * 64 * (64 + 8) * 2 = 18432;
  //   registers     = 16*64/32 + 16*64/32 + 48 = 32 + 32 + 48 = 112;
  //   CTAs per SM   = min(65536 / 18432 = 3, 65536 / (112*32) = 18,
  //                       1024 / 32 = 32, 16) = 3.
  TileBudget b = estimate(chip("sm_75"), TileChoice{16, 64, 4, 1}, 64, 2);
  EXPECT_EQ(b.sharedMemoryBytes, 18432);
  EXPECT_EQ(b.threads, 32);
  EXPECT_EQ(b.registersPerThread, 112);
  EXPECT_EQ(b.ctasPerSM, 3);
  EXPECT_EQ(b.residentWarps(), 3);
}

TEST(Budget, ByHandDecodeRow) {
  // q = 1 (the decode kernels, their own shared-memory model): 1 stage * 64
  // keys * 64 * 2 bytes * 2 (K, V) + 1 * 64 * 2 (Q) = 16512 bytes;
  // registers 1 + 1 + 48 on 128 threads.
  TileBudget b = estimate(chip("sm_75"), TileChoice{1, 64, 4, 1}, 64, 2);
  EXPECT_EQ(b.sharedMemoryBytes, 16512);
  EXPECT_EQ(b.threads, 128);
  EXPECT_EQ(b.registersPerThread, 50);
}

TEST(Budget, LimitsAreChecked) {
  // Exactly the per-block limit fits; more does not.
  // q = 64, kv = 32, 1 stage, d = 784, f16 on sm_86:
  // 2 * 32 * (784 + 8) * 2 = 101376; d = 785 is staged as 800 columns
  // (prefillPaddedHeadDim).
  TileBudget exact = estimate(chip("sm_86"), TileChoice{64, 32, 4, 1}, 784, 2);
  EXPECT_EQ(exact.sharedMemoryBytes, 101376);
  EXPECT_TRUE(exact.fitsSharedMemory);
  TileBudget over = estimate(chip("sm_86"), TileChoice{64, 32, 4, 1}, 785, 2);
  EXPECT_EQ(over.sharedMemoryBytes, 2 * 32 * (800 + 8) * 2);
  EXPECT_FALSE(over.fitsSharedMemory);
  EXPECT_FALSE(over.fits());
  EXPECT_EQ(over.ctasPerSM, 0);
  // 128 rows of head_dim 1024 on 4 warps: 1024 + 64 + 48 registers.
  TileBudget regs =
      estimate(chip("sm_90a"), TileChoice{128, 32, 4, 1}, 1024, 1);
  EXPECT_EQ(regs.registersPerThread, 1024 + 32 + 48);
  EXPECT_FALSE(regs.fitsRegisters);
}

//===----------------------------------------------------------------------===//
// The heuristic
//===----------------------------------------------------------------------===//

TEST(Select, DecodeUnfusedUsesOneRow) {
  for (const ChipInfo &info : allChips()) {
    TileSelection s =
        selectTile(info, request(128, ElementType::F16, 1, /*g=*/8, false));
    ASSERT_TRUE(s.ok) << info.name << ": " << s.reason;
    EXPECT_EQ(s.effectiveRows, 1);
    EXPECT_EQ(s.choice.q, 1) << info.name;
    EXPECT_EQ(s.choice.warps, 4) << info.name;
    EXPECT_EQ(s.choice.stages, stagesForChip(info)) << info.name;
  }
  EXPECT_EQ(select("sm_80", request(128, ElementType::F16, 1)),
            (TileChoice{1, 64, 4, 2}));
  EXPECT_EQ(select("sm_80", request(64, ElementType::F16, 1)),
            (TileChoice{1, 128, 4, 2}));
}

TEST(Select, DecodeFusedGroupOfEightUses16Rows) {
  for (const ChipInfo &info : allChips()) {
    TileSelection s =
        selectTile(info, request(128, ElementType::F16, 1, /*g=*/8, true));
    ASSERT_TRUE(s.ok) << info.name << ": " << s.reason;
    EXPECT_EQ(s.effectiveRows, 8);
    EXPECT_EQ(s.choice.q, 16) << info.name;
  }
  // One warp of 16 rows per CTA: no kv reaches 8 resident warps, kv = 32
  // packs the most CTAs (4) per SM.
  EXPECT_EQ(select("sm_80", request(128, ElementType::F16, 1, 8, true)),
            (TileChoice{16, 32, 1, 2}));
  // A group of 1 fused is still one row.
  EXPECT_EQ(select("sm_80", request(128, ElementType::F16, 1, 1, true)).q, 1);
}

TEST(Select, QTileCoversTheEffectiveRows) {
  struct Case {
    int64_t avg, g;
    bool fused;
    int64_t q;
  };
  for (Case c :
       {Case{1, 1, false, 1}, Case{2, 1, false, 16}, Case{16, 1, false, 16},
        Case{17, 1, false, 32}, Case{32, 1, false, 32}, Case{33, 1, false, 64},
        Case{64, 1, false, 64}, Case{65, 1, false, 128},
        Case{100000, 1, false, 128}, Case{2, 8, true, 16}, Case{3, 8, true, 32},
        Case{4, 8, true, 32}, Case{5, 8, true, 64}, Case{9, 8, true, 128},
        Case{3, 8, false, 16},
        // avg * g saturates instead of overflowing.
        Case{INT64_MAX / 2, 8, true, 128}}) {
    TileChoice t =
        select("sm_90a", request(64, ElementType::F16, c.avg, c.g, c.fused));
    EXPECT_EQ(t.q, c.q) << "avg " << c.avg << " g " << c.g << " fused "
                        << c.fused;
    // 4 warps of 32 rows at q = 128 (d 64 on sm_90a), else 16 rows each.
    EXPECT_EQ(t.warps, c.q == 1 || c.q == 128 ? 4 : c.q / 16);
  }
}

TEST(Select, PrefillUsesLargeTilesWithinBudget) {
  for (const ChipInfo &info : allChips()) {
    for (int64_t d : {64, 128}) {
      TileSelection s = selectTile(info, request(d, ElementType::F16, 512));
      ASSERT_TRUE(s.ok) << info.name << ": " << s.reason;
      EXPECT_TRUE(s.choice.q == 128 || s.choice.q == 64) << info.name;
      EXPECT_TRUE(estimate(info, s.choice, d, 2).fits()) << info.name;
      EXPECT_LE(s.budget.sharedMemoryBytes, info.maxSharedMemoryPerBlock);
    }
  }
  // 32 rows per warp where cp.async exists (the H200's best: kv 64 at
  // d 128, 2 CTAs per SM); sm_75 keeps 16 rows per warp.
  EXPECT_EQ(select("sm_80", request(64, ElementType::F16, 512)),
            (TileChoice{128, 64, 4, 2}));
  EXPECT_EQ(select("sm_80", request(128, ElementType::F16, 512)),
            (TileChoice{128, 32, 4, 2}));
  EXPECT_EQ(select("sm_90a", request(128, ElementType::BF16, 512)),
            (TileChoice{128, 64, 4, 2}));
  EXPECT_EQ(select("sm_75", request(128, ElementType::F16, 512)),
            (TileChoice{128, 64, 8, 1}));
  // sm_86's 99 KiB per CTA cannot hold the 32-row tile with 64-key tiles.
  EXPECT_EQ(select("sm_86", request(128, ElementType::BF16, 512)),
            (TileChoice{128, 64, 8, 2}));
}

TEST(Select, HeadDim256IsSmallerOnTuring) {
  TileChoice turing = select("sm_75", request(256, ElementType::F16, 512));
  TileChoice ampere = select("sm_80", request(256, ElementType::F16, 512));
  TileChoice hopper = select("sm_90a", request(256, ElementType::F16, 512));
  // d 256 keeps 16 rows per warp (O would need 256 registers with 32). Q
  // goes to shared memory where the chip holds it next to the ring: sm_90a
  // (2 * 2 * 64 * 264 * 2 + 128 * 264 * 2 = 202752 bytes), not sm_80
  // (166912 allowed), where Q stays in registers next to 32-key tiles'
  // scores, nor sm_75 (no cp.async).
  EXPECT_EQ(turing, (TileChoice{128, 32, 8, 1}));
  EXPECT_EQ(ampere, (TileChoice{128, 32, 8, 2}));
  EXPECT_EQ(hopper, (TileChoice{128, 64, 8, 2, /*qShared=*/true}));
  EXPECT_EQ(estimate(chip("sm_90a"), hopper, 256, 2).sharedMemoryBytes, 202752);
  EXPECT_LE(turing.q * turing.kv, ampere.q * ampere.kv);
}

TEST(Select, Bf16OnTuringIsRefused) {
  TileSelection s =
      selectTile(chip("sm_75"), request(128, ElementType::BF16, 1));
  EXPECT_FALSE(s.ok);
  EXPECT_EQ(s.reason, "sm_75 has no bf16 tensor-core instructions");
  EXPECT_TRUE(selectTile(chip("sm_80"), request(128, ElementType::BF16, 1)).ok);
}

TEST(Select, OversizedHeadDimNamesTheBudget) {
  // Decode, d = 1024 on sm_75: 1 * 32 * 1024 * 2 * 2 + 1 * 1024 * 2 bytes.
  TileSelection s =
      selectTile(chip("sm_75"), request(1024, ElementType::F16, 1));
  ASSERT_FALSE(s.ok);
  EXPECT_EQ(s.reason, "head_dim 1024 (f16) needs 133120 bytes of shared "
                      "memory for the smallest tile (q = 1, kv = 32, 1 "
                      "stage), sm_75 allows 65536");
  // Prefill, d = 4096 on sm_90a: 2 stages * 2 * 32 * (4096 + 8) * 2.
  s = selectTile(chip("sm_90a"), request(4096, ElementType::F16, 512));
  ASSERT_FALSE(s.ok);
  EXPECT_EQ(s.reason, "head_dim 4096 (f16) needs 1050624 bytes of shared "
                      "memory for the smallest tile (q = 16, kv = 32, 2 "
                      "stages), sm_90a allows 232448");
}

TEST(Select, InvalidRequests) {
  EXPECT_FALSE(selectTile(chip("sm_80"), request(0, ElementType::F16, 1)).ok);
  EXPECT_FALSE(selectTile(chip("sm_80"), request(64, ElementType::F16, 0)).ok);
  EXPECT_FALSE(
      selectTile(chip("sm_80"), request(64, ElementType::F16, 1, 0, true)).ok);
}

TEST(Select, EverySelectionFitsItsBudget) {
  const int64_t qTiles[] = {1, 16, 32, 64, 128};
  for (const ChipInfo &info : allChips()) {
    for (int64_t d : {16, 64, 72, 80, 96, 128, 160, 192, 256}) {
      for (ElementType type :
           {ElementType::F16, ElementType::BF16, ElementType::F32}) {
        for (int64_t avg : {1, 2, 7, 16, 33, 100, 512, 4096}) {
          for (int64_t g : {1, 3, 4, 8, 32}) {
            for (bool fused : {false, true}) {
              TileRequest r = request(d, type, avg, g, fused);
              TileSelection s = selectTile(info, r);
              std::string where = std::string(info.name) + " d" +
                                  std::to_string(d) + " " +
                                  std::string(elementTypeName(type)) + " avg" +
                                  std::to_string(avg) + " g" +
                                  std::to_string(g) + (fused ? " fused" : "");
              if (type == ElementType::BF16 && !info.hasBF16) {
                EXPECT_FALSE(s.ok) << where;
                continue;
              }
              if (!s.ok) {
                // Only f32 may run out of budget at these head dims, and
                // then the reason names it.
                EXPECT_EQ(type, ElementType::F32) << where << ": " << s.reason;
                EXPECT_TRUE(contains(s.reason, "needs")) << where;
                continue;
              }
              TileBudget b = estimate(info, s.choice, d, elementBytes(type));
              EXPECT_TRUE(b.fits()) << where;
              EXPECT_GE(b.ctasPerSM, 1) << where;
              EXPECT_LE(b.sharedMemoryBytes, info.maxSharedMemoryPerBlock)
                  << where;
              EXPECT_LE(b.registersPerThread, info.maxRegistersPerThread)
                  << where;
              EXPECT_TRUE(std::find(std::begin(qTiles), std::end(qTiles),
                                    s.choice.q) != std::end(qTiles))
                  << where;
              EXPECT_TRUE(s.choice.kv == 32 || s.choice.kv == 64 ||
                          s.choice.kv == 128)
                  << where;
              EXPECT_EQ(s.choice.q == 1, effectiveRows(r) == 1) << where;
              EXPECT_EQ(s.choice.stages, stagesForChip(info)) << where;
              EXPECT_EQ(s.choice.warps,
                        warpsForTile(info, s.choice.q, d, elementBytes(type)))
                  << where;
            }
          }
        }
      }
    }
  }
}

} // namespace
