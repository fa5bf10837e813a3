//===- Chip.cpp - NVIDIA target chips and the tile budget -----------------===//
//
// Sources of the numbers below:
//  - Per compute capability (shared memory per SM and per block, resident
//    blocks/threads per SM, registers): CUDA C++ Programming Guide,
//    "Technical Specifications per Compute Capability"; the Turing, Ampere,
//    Ada and Hopper tuning guides (shared memory per SM / per block, the 1 KB
//    the runtime reserves per block from sm_80 on,
//    cudaDevAttrReservedSharedMemoryPerBlock).
//  - SM counts: NVIDIA product pages / whitepapers of the named parts:
//    T4 (TU104, 2560 CUDA cores = 40 SMs x 64), A100 SXM4 (108 SMs, A100
//    whitepaper), A40 (GA102, 10752 CUDA cores = 84 SMs x 128; RTX A6000 and
//    RTX 3090 Ti have 84 as well, RTX 3090 has 82, A10 has 72), L40S (AD102,
//    18176 CUDA cores = 142 SMs x 128; L40 has 142 too, RTX 4090 has 128),
//    H100 SXM5 (132 SMs, H100 whitepaper; H200 SXM has 132 as well).
//  - Instructions: PTX ISA, "Warp-level matrix instructions" (mma m16n8k8
//    f16 from sm_75, m16n8k16 and bf16 from sm_80, ldmatrix from sm_75),
//    cp.async from sm_80, wgmma / cp.async.bulk.tensor / mbarrier tx-count
//    for sm_90a (wgmma needs the `a` target).
//
//===----------------------------------------------------------------------===//

#include "flashir/Target/Chip.h"

#include <algorithm>
#include <limits>

namespace flashir::target {

namespace {
constexpr int64_t KiB = 1024;

constexpr std::array<ChipInfo, kNumChips> kChips = {{
    // Turing. Shared memory: 64 KB per SM, all of it opt-in for one block;
    // no runtime reservation per block.
    {"sm_75",
     "Tesla T4",
     75,
     40,
     /*maxSharedMemoryPerBlock=*/64 * KiB,
     /*sharedMemoryPerSM=*/64 * KiB,
     /*reservedSharedMemoryPerBlock=*/0,
     /*registersPerSM=*/64 * KiB,
     /*maxRegistersPerThread=*/255,
     /*maxThreadsPerSM=*/1024,
     /*maxThreadsPerBlock=*/1024,
     /*maxBlocksPerSM=*/16,
     /*hasMmaM16N8K8F16=*/true,
     /*hasMmaM16N8K16=*/false,
     /*hasLdmatrix=*/true,
     /*hasCpAsync=*/false,
     /*hasBF16=*/false,
     /*hasWgmma=*/false,
     /*hasTma=*/false,
     /*hasMbarrierTx=*/false},
    // Ampere GA100: 164 KB per SM, 163 KB opt-in per block.
    {"sm_80",
     "A100 SXM4",
     80,
     108,
     /*maxSharedMemoryPerBlock=*/163 * KiB,
     /*sharedMemoryPerSM=*/164 * KiB,
     /*reservedSharedMemoryPerBlock=*/1 * KiB,
     /*registersPerSM=*/64 * KiB,
     /*maxRegistersPerThread=*/255,
     /*maxThreadsPerSM=*/2048,
     /*maxThreadsPerBlock=*/1024,
     /*maxBlocksPerSM=*/32,
     /*hasMmaM16N8K8F16=*/true,
     /*hasMmaM16N8K16=*/true,
     /*hasLdmatrix=*/true,
     /*hasCpAsync=*/true,
     /*hasBF16=*/true,
     /*hasWgmma=*/false,
     /*hasTma=*/false,
     /*hasMbarrierTx=*/false},
    // Ampere GA10x: 100 KB per SM, 99 KB opt-in per block.
    {"sm_86",
     "A40",
     86,
     84,
     /*maxSharedMemoryPerBlock=*/99 * KiB,
     /*sharedMemoryPerSM=*/100 * KiB,
     /*reservedSharedMemoryPerBlock=*/1 * KiB,
     /*registersPerSM=*/64 * KiB,
     /*maxRegistersPerThread=*/255,
     /*maxThreadsPerSM=*/1536,
     /*maxThreadsPerBlock=*/1024,
     /*maxBlocksPerSM=*/16,
     /*hasMmaM16N8K8F16=*/true,
     /*hasMmaM16N8K16=*/true,
     /*hasLdmatrix=*/true,
     /*hasCpAsync=*/true,
     /*hasBF16=*/true,
     /*hasWgmma=*/false,
     /*hasTma=*/false,
     /*hasMbarrierTx=*/false},
    // Ada AD10x: 100 KB per SM, 99 KB opt-in per block.
    {"sm_89",
     "L40S",
     89,
     142,
     /*maxSharedMemoryPerBlock=*/99 * KiB,
     /*sharedMemoryPerSM=*/100 * KiB,
     /*reservedSharedMemoryPerBlock=*/1 * KiB,
     /*registersPerSM=*/64 * KiB,
     /*maxRegistersPerThread=*/255,
     /*maxThreadsPerSM=*/1536,
     /*maxThreadsPerBlock=*/1024,
     /*maxBlocksPerSM=*/24,
     /*hasMmaM16N8K8F16=*/true,
     /*hasMmaM16N8K16=*/true,
     /*hasLdmatrix=*/true,
     /*hasCpAsync=*/true,
     /*hasBF16=*/true,
     /*hasWgmma=*/false,
     /*hasTma=*/false,
     /*hasMbarrierTx=*/false},
    // Hopper GH100: 228 KB per SM, 227 KB opt-in per block.
    {"sm_90a",
     "H100 SXM5",
     90,
     132,
     /*maxSharedMemoryPerBlock=*/227 * KiB,
     /*sharedMemoryPerSM=*/228 * KiB,
     /*reservedSharedMemoryPerBlock=*/1 * KiB,
     /*registersPerSM=*/64 * KiB,
     /*maxRegistersPerThread=*/255,
     /*maxThreadsPerSM=*/2048,
     /*maxThreadsPerBlock=*/1024,
     /*maxBlocksPerSM=*/32,
     /*hasMmaM16N8K8F16=*/true,
     /*hasMmaM16N8K16=*/true,
     /*hasLdmatrix=*/true,
     /*hasCpAsync=*/true,
     /*hasBF16=*/true,
     /*hasWgmma=*/true,
     /*hasTma=*/true,
     /*hasMbarrierTx=*/true},
}};

/// The q tile candidates of the FA2 template (seed 000 sec. 5).
constexpr int64_t kQTiles[] = {1, 16, 32, 64, 128};
/// The kv tile candidates, in order of preference.
constexpr int64_t kKvTiles[] = {128, 64, 32};
/// Head dims from which 16-rows-per-warp tiles keep Q in shared memory.
constexpr int64_t kSharedQHeadDim = 256;

/// Registers are allocated per warp in units of 256, i.e. 8 per thread.
constexpr int64_t kRegisterGranularityPerThread = 8;

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// a * b, saturating at INT64_MAX (both non-negative).
int64_t satMul(int64_t a, int64_t b) {
  if (a != 0 && b > std::numeric_limits<int64_t>::max() / a)
    return std::numeric_limits<int64_t>::max();
  return a * b;
}

std::string describe(const TileChoice &tile) {
  return "(q = " + std::to_string(tile.q) +
         ", kv = " + std::to_string(tile.kv) + ", " +
         std::to_string(tile.stages) +
         (tile.stages == 1 ? " stage" : " stages") +
         (tile.qShared ? ", Q in shared memory)" : ")");
}
} // namespace

const std::array<ChipInfo, kNumChips> &allChips() { return kChips; }

const ChipInfo *lookupChip(std::string_view name) {
  for (const ChipInfo &chip : kChips)
    if (chip.name == name)
      return &chip;
  return nullptr;
}

std::string validChipNames() {
  std::string names;
  for (const ChipInfo &chip : kChips) {
    if (!names.empty())
      names += ", ";
    names += chip.name;
  }
  return names;
}

int64_t elementBytes(ElementType type) {
  switch (type) {
  case ElementType::F16:
  case ElementType::BF16:
    return 2;
  case ElementType::F32:
    return 4;
  }
  return 4;
}

std::string_view elementTypeName(ElementType type) {
  switch (type) {
  case ElementType::F16:
    return "f16";
  case ElementType::BF16:
    return "bf16";
  case ElementType::F32:
    return "f32";
  }
  return "?";
}

TileBudget estimate(const ChipInfo &chip, const TileChoice &tile,
                    int64_t headDim, int64_t bytes) {
  TileBudget budget;
  if (tile.q >= 16) {
    // The prefill kernel as convert-attn-to-gpu builds it: 32 rows per warp
    // where the tile asks exactly that, else q / 16 warps; the tile's
    // cp.async stages (1: one K and one V slot, staggered), 1 synchronous
    // slot without cp.async.
    int64_t warps = tile.q == 32 * tile.warps ? tile.warps : tile.q / 16;
    int64_t stages = chip.hasCpAsync ? tile.stages : 1;
    budget.threads = 32 * warps;
    budget.sharedMemoryBytes = prefillSharedMemoryBytes(
        tile.q, tile.kv, warps, stages, headDim, bytes, tile.qShared);
  } else {
    budget.threads = 32 * tile.warps;
    int64_t rowBytes = satMul(headDim, bytes);
    int64_t kvBytes = satMul(satMul(satMul(tile.stages, tile.kv), rowBytes), 2);
    int64_t qBytes = satMul(tile.q, rowBytes);
    budget.sharedMemoryBytes =
        kvBytes > std::numeric_limits<int64_t>::max() - qBytes
            ? std::numeric_limits<int64_t>::max()
            : kvBytes + qBytes;
  }
  int64_t threads = std::max<int64_t>(budget.threads, 1);
  // The prefill kernel accumulates O over the padded head dim.
  int64_t accDim = tile.q >= 16 ? prefillPaddedHeadDim(headDim) : headDim;
  budget.registersPerThread = ceilDiv(satMul(tile.q, accDim), threads) +
                              ceilDiv(satMul(tile.q, tile.kv), threads) +
                              kRegisterOverhead;

  int64_t allocatedRegisters =
      ceilDiv(budget.registersPerThread, kRegisterGranularityPerThread) *
      kRegisterGranularityPerThread;
  budget.fitsSharedMemory =
      budget.sharedMemoryBytes <= chip.maxSharedMemoryPerBlock;
  budget.fitsThreads =
      budget.threads >= 32 && budget.threads <= chip.maxThreadsPerBlock;
  budget.fitsRegisters =
      budget.registersPerThread <= chip.maxRegistersPerThread &&
      satMul(allocatedRegisters, budget.threads) <= chip.registersPerSM;
  if (!budget.fits())
    return budget;

  int64_t bySharedMemory =
      chip.sharedMemoryPerSM /
      (budget.sharedMemoryBytes + chip.reservedSharedMemoryPerBlock);
  int64_t byRegisters =
      chip.registersPerSM / (allocatedRegisters * budget.threads);
  int64_t byThreads = chip.maxThreadsPerSM / budget.threads;
  budget.ctasPerSM =
      std::min({bySharedMemory, byRegisters, byThreads, chip.maxBlocksPerSM});
  return budget;
}

int64_t effectiveRows(const TileRequest &request) {
  if (!request.fusedHeadGroups)
    return request.avgQoLen;
  return satMul(request.avgQoLen, request.groupSize);
}

int64_t prefillSharedMemoryBytes(int64_t q, int64_t kv, int64_t warps,
                                 int64_t stages, int64_t headDim,
                                 int64_t elementBytes, bool qShared) {
  int64_t row =
      satMul(prefillPaddedHeadDim(headDim) + kPrefillRowPad, elementBytes);
  int64_t bytes = satMul(satMul(satMul(stages, 2), kv), row);
  if (q <= 16 * warps && !qShared)
    return bytes;
  int64_t qBytes = satMul(q, row);
  return bytes > std::numeric_limits<int64_t>::max() - qBytes
             ? std::numeric_limits<int64_t>::max()
             : bytes + qBytes;
}

int64_t warpsForTile(const ChipInfo &chip, int64_t q, int64_t headDim,
                     int64_t elementBytes) {
  if (q < 16)
    return 4;
  if (q == 128 && chip.hasCpAsync && elementBytes == 2 && headDim <= 128 &&
      prefillSharedMemoryBytes(q, 64, 4, 2, headDim, elementBytes) <=
          chip.maxSharedMemoryPerBlock)
    return 4;
  return q / 16;
}

int64_t stagesForChip(const ChipInfo &chip) { return chip.hasCpAsync ? 2 : 1; }

TileSelection selectTile(const ChipInfo &chip, const TileRequest &request) {
  TileSelection result;
  std::string chipName(chip.name);
  auto fail = [&](std::string reason) {
    result.ok = false;
    result.reason = std::move(reason);
    return result;
  };

  if (request.headDim < 1)
    return fail("head_dim must be >= 1, got " +
                std::to_string(request.headDim));
  if (request.avgQoLen < 1)
    return fail("the average query length must be >= 1, got " +
                std::to_string(request.avgQoLen));
  if (request.groupSize < 1)
    return fail("the head group size must be >= 1, got " +
                std::to_string(request.groupSize));
  if (request.elementType == ElementType::BF16 && !chip.hasBF16)
    return fail(chipName + " has no bf16 tensor-core instructions");

  int64_t bytes = elementBytes(request.elementType);
  int64_t rows = effectiveRows(request);
  result.effectiveRows = rows;

  // The smallest candidate covering `rows`, capped at 128.
  int64_t startQ = 128;
  for (int64_t q : kQTiles) {
    if (q >= rows) {
      startQ = q;
      break;
    }
  }
  int64_t stages = stagesForChip(chip);

  // Wide heads with 16 rows per warp on 8+ warps and 64+-key tiles keep Q in
  // shared memory where the chip holds it next to the chosen ring: Q's
  // registers (d / 4 per lane) would sit next to O's (d / 2) and the scores,
  // and spill (H200, d 256, 128 rows on 8 warps: 0.85x -> 0.98x
  // FlashAttention-2 with 64-key tiles). Where it does not fit with as many
  // CTAs per SM (sm_80's 163 KB), Q stays in registers and the tile narrows
  // to 32 keys, whose scores leave room for it (H200, sm_80 code, d 256:
  // 0.89x with 64-key tiles, 1.02x with 32; 64 rows on 4 warps 0.96-0.99x).
  auto withSharedQ = [&](TileSelection &selected) -> TileSelection & {
    TileChoice shared = selected.choice;
    shared.qShared = true;
    if (request.headDim < kSharedQHeadDim || shared.warps < 8 ||
        shared.q != 16 * shared.warps || shared.kv < 64 || !chip.hasCpAsync)
      return selected;
    TileBudget budget = estimate(chip, shared, request.headDim, bytes);
    if (budget.fits() && budget.ctasPerSM >= selected.budget.ctasPerSM) {
      selected.choice = shared;
      selected.budget = budget;
      return selected;
    }
    TileChoice narrow = selected.choice;
    narrow.kv = 32;
    budget = estimate(chip, narrow, request.headDim, bytes);
    if (budget.fits() && budget.ctasPerSM >= selected.budget.ctasPerSM) {
      selected.choice = narrow;
      selected.budget = budget;
    }
    return selected;
  };
  TileChoice smallest;
  for (int64_t q = startQ;; q /= 2) {
    int64_t warps = warpsForTile(chip, q, request.headDim, bytes);
    bool haveFit = false;
    TileChoice firstFit;
    TileBudget firstFitBudget;
    for (int64_t kv : kKvTiles) {
      TileChoice tile{q, kv, warps, stages};
      smallest = tile;
      TileBudget budget = estimate(chip, tile, request.headDim, bytes);
      if (!budget.fits())
        continue;
      if (budget.residentWarps() >= kTargetResidentWarps) {
        result.ok = true;
        result.choice = tile;
        result.budget = budget;
        return withSharedQ(result);
      }
      // Short of the target, the most resident warps (the larger kv on a
      // tie): small-q tiles have few warps per CTA, so the ring's size
      // decides how many CTAs share an SM.
      if (!haveFit || budget.residentWarps() > firstFitBudget.residentWarps()) {
        haveFit = true;
        firstFit = tile;
        firstFitBudget = budget;
      }
    }
    if (haveFit) {
      result.ok = true;
      result.choice = firstFit;
      result.budget = firstFitBudget;
      return withSharedQ(result);
    }
    // q = 1 (decode) and q = 16 are the smallest tiles of their paths.
    if (q <= 16)
      break;
  }

  // Name the budget that the smallest configuration exceeds.
  TileBudget budget = estimate(chip, smallest, request.headDim, bytes);
  std::string prefix = "head_dim " + std::to_string(request.headDim) + " (" +
                       std::string(elementTypeName(request.elementType)) +
                       ") needs ";
  std::string what = " for the smallest tile " + describe(smallest) + ", ";
  if (!budget.fitsSharedMemory)
    return fail(prefix + std::to_string(budget.sharedMemoryBytes) +
                " bytes of shared memory" + what + chipName + " allows " +
                std::to_string(chip.maxSharedMemoryPerBlock));
  if (budget.registersPerThread > chip.maxRegistersPerThread)
    return fail(prefix + std::to_string(budget.registersPerThread) +
                " registers per thread" + what + chipName + " allows " +
                std::to_string(chip.maxRegistersPerThread));
  if (!budget.fitsRegisters)
    return fail(prefix + std::to_string(budget.registersPerThread) +
                " registers per thread x " + std::to_string(budget.threads) +
                " threads" + what + chipName + " has " +
                std::to_string(chip.registersPerSM) + " per SM");
  return fail(prefix + std::to_string(budget.threads) + " threads" + what +
              chipName + " allows " + std::to_string(chip.maxThreadsPerBlock));
}

} // namespace flashir::target
