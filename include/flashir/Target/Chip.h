//===- Chip.h - NVIDIA target chips and the tile budget ---------*- C++ -*-===//
//
// What `attn-select-tiles` knows about a target chip: per-SM and per-block
// limits, the instructions the kernels may use, and the shared-memory and
// register cost of an attention tile configuration (seed 000 sec. 5). No
// LLVM/MLIR dependency: the runtime and host tools may use it as well.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHIR_TARGET_CHIP_H
#define FLASHIR_TARGET_CHIP_H

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace flashir::target {

/// Limits and instruction set of one target chip. Every field but `numSMs`
/// is a fact of the compute capability (CUDA C++ Programming Guide,
/// "Technical Specifications per Compute Capability"); `numSMs` is a fact of
/// a product, named in `part`.
struct ChipInfo {
  std::string_view name; ///< the target name: "sm_75", ..., "sm_90a"
  std::string_view part; ///< the product `numSMs` is taken from
  int computeCapability; ///< 75, 80, 86, 89, 90
  int64_t numSMs;

  /// Largest dynamic shared memory one block may opt in to (bytes).
  int64_t maxSharedMemoryPerBlock;
  /// Shared memory of one SM (bytes), shared by its resident blocks.
  int64_t sharedMemoryPerSM;
  /// Shared memory the CUDA runtime reserves per resident block (bytes;
  /// cudaDevAttrReservedSharedMemoryPerBlock: 1 KB from sm_80 on).
  int64_t reservedSharedMemoryPerBlock;
  /// 32-bit registers of one SM.
  int64_t registersPerSM;
  /// Most 32-bit registers one thread may use.
  int64_t maxRegistersPerThread;
  int64_t maxThreadsPerSM;
  int64_t maxThreadsPerBlock;
  int64_t maxBlocksPerSM;

  // Instructions the kernels may use.
  bool hasMmaM16N8K8F16; ///< mma.sync.m16n8k8 f16 (sm_75+)
  bool hasMmaM16N8K16;   ///< mma.sync.m16n8k16 f16/bf16 (sm_80+)
  bool hasLdmatrix;      ///< ldmatrix (sm_75+)
  bool hasCpAsync;       ///< cp.async global->shared copies (sm_80+)
  bool hasBF16;          ///< bf16 tensor-core/arithmetic instructions (sm_80+)
  bool hasWgmma;         ///< wgmma.mma_async (sm_90a only)
  bool hasTma;           ///< cp.async.bulk.tensor (TMA) (sm_90a here)
  bool hasMbarrierTx;    ///< mbarrier expect-tx / complete-tx (sm_90a here)
};

inline constexpr size_t kNumChips = 5;

/// Every known chip, oldest first.
const std::array<ChipInfo, kNumChips> &allChips();

/// The chip named `name` ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90a"), or
/// null for any other name.
const ChipInfo *lookupChip(std::string_view name);

/// "sm_75, sm_80, sm_86, sm_89, sm_90a": the names lookupChip accepts.
std::string validChipNames();

/// Element types of queries and KV the tile budget knows.
enum class ElementType { F16, BF16, F32 };

/// Bytes of one element (2, 2 or 4).
int64_t elementBytes(ElementType type);

/// "f16", "bf16" or "f32".
std::string_view elementTypeName(ElementType type);

/// One tile configuration: `q` query rows (or fused head-group rows) and `kv`
/// keys per tile, `warps` per CTA, `stages` K/V buffers in flight, and
/// whether Q waits in shared memory: `#attn.tiles<q = .., kv = .., warps =
/// .., stages = .., q_shared = ..>`.
struct TileChoice {
  int64_t q = 0;
  int64_t kv = 0;
  int64_t warps = 0;
  int64_t stages = 0;
  /// Q in shared memory with 16 rows per warp too (`q_shared`).
  bool qShared = false;

  friend bool operator==(const TileChoice &a, const TileChoice &b) {
    return a.q == b.q && a.kv == b.kv && a.warps == b.warps &&
           a.stages == b.stages && a.qShared == b.qShared;
  }
  friend bool operator!=(const TileChoice &a, const TileChoice &b) {
    return !(a == b);
  }
};

/// Registers per thread `estimate` charges on top of the accumulators:
/// addresses, loop counters, the running max/sum of the rows a thread owns,
/// the Q/K/V/P fragments of one MMA step.
inline constexpr int64_t kRegisterOverhead = 48;

/// The resources one CTA of a tile configuration needs on a chip.
struct TileBudget {
  /// Shared memory of one CTA (bytes). Prefill tiles (q >= 16): exactly the
  /// prefill kernel's, prefillSharedMemoryBytes with its warps and stages
  /// (split-KV attentions get decode kernels, which check their own);
  /// q = 1: stages * kv * headDim * bytes * 2 (K and V) + q * headDim *
  /// bytes (Q).
  int64_t sharedMemoryBytes = 0;
  /// Estimated 32-bit registers per thread: the f32 output accumulator
  /// ceil(q * headDim / threads) (prefill tiles: prefillPaddedHeadDim) + the
  /// f32 scores ceil(q * kv / threads) + kRegisterOverhead.
  int64_t registersPerThread = 0;
  /// Threads of one CTA: 32 * warps (the prefill kernel's: tile.warps when
  /// q == 32 * tile.warps, else q / 16).
  int64_t threads = 0;
  /// CTAs of this configuration that can be resident on one SM at once
  /// (limited by shared memory, registers, threads and the block limit);
  /// 0 if one CTA does not fit.
  int64_t ctasPerSM = 0;

  bool fitsSharedMemory = false; ///< sharedMemoryBytes <= the per-block limit
  bool fitsRegisters = false;    ///< per-thread and per-SM register limits
  bool fitsThreads = false;      ///< threads <= the per-block thread limit

  bool fits() const { return fitsSharedMemory && fitsRegisters && fitsThreads; }
  /// Warps resident per SM: ctasPerSM * threads / 32.
  int64_t residentWarps() const { return ctasPerSM * (threads / 32); }
};

/// The cost of `tile` for a head dim of `headDim` elements of `elementBytes`
/// bytes, checked against the limits of `chip`.
TileBudget estimate(const ChipInfo &chip, const TileChoice &tile,
                    int64_t headDim, int64_t elementBytes);

/// What `selectTile` needs to know about one attention.
struct TileRequest {
  int64_t headDim = 0;
  ElementType elementType = ElementType::F16;
  /// Expected average query length per request (1 = decode).
  int64_t avgQoLen = 1;
  /// Query heads per KV head (num_qo_heads / num_kv_heads).
  int64_t groupSize = 1;
  /// Whether the group's query heads are folded into rows
  /// (`fused_head_groups`).
  bool fusedHeadGroups = false;
};

/// The outcome of `selectTile`: a configuration, or the reason none fits.
struct TileSelection {
  bool ok = false;
  TileChoice choice;
  TileBudget budget; ///< the budget of `choice` when ok
  int64_t effectiveRows = 0;
  std::string reason; ///< why nothing was chosen when !ok
};

/// Rows one request contributes to a query tile:
/// avgQoLen * groupSize when head groups are fused, else avgQoLen
/// (saturating at INT64_MAX).
int64_t effectiveRows(const TileRequest &request);

/// Elements the tensor-core prefill kernel pads each staged K/V (and Q) row
/// by, so the 8 rows an ldmatrix phase reads sit in 8 bank groups.
inline constexpr int64_t kPrefillRowPad = 8;

/// The head dim the tensor-core prefill kernel computes with: `headDim`
/// rounded up to 16 (the k of m16n8k16, the columns of one ldmatrix.x4
/// step). Its staged K/V/Q rows hold zeros past `headDim`; a row of
/// prefillPaddedHeadDim + kPrefillRowPad elements is an odd number of 16-byte
/// units, so ldmatrix phases stay free of bank conflicts.
inline int64_t prefillPaddedHeadDim(int64_t headDim) {
  return (headDim + 15) / 16 * 16;
}

/// Dynamic shared memory of the tensor-core prefill kernel
/// (convert-attn-to-gpu) for `q` rows on `warps` warps: a ring of `stages`
/// K/V tiles of `kv` padded rows (prefillPaddedHeadDim + kPrefillRowPad
/// elements), plus the padded Q tile when the warps own
/// 32 rows each (q == 32 * warps) or `qShared` (tiles' q_shared); saturates
/// at INT64_MAX.
int64_t prefillSharedMemoryBytes(int64_t q, int64_t kv, int64_t warps,
                                 int64_t stages, int64_t headDim,
                                 int64_t elementBytes, bool qShared = false);

/// Warps of a CTA with a `q`-row tile of head dim `headDim`: 4 for decode
/// (q = 1); for the prefill kernel 32 rows per warp (q = 128 on 4 warps, Q in
/// shared memory: half the K/V fragment loads and copies per product, 0.65x
/// -> 0.86x FlashAttention-2 at d 128 on the H200) where the chip has
/// cp.async, 16-bit elements, the head dim is at most 128 (O's accumulators fit
/// in registers) and 64-key tiles fit the shared memory; else 16 rows per warp
/// (q / 16 warps).
int64_t warpsForTile(const ChipInfo &chip, int64_t q, int64_t headDim,
                     int64_t elementBytes);

/// K/V pipeline stages: 2 where cp.async exists (sm_80+), else 1 (sm_75:
/// one slot filled by plain loads and stores).
int64_t stagesForChip(const ChipInfo &chip);

/// Minimum warps per SM the heuristic tries to keep resident (latency
/// hiding); see selectTile.
inline constexpr int64_t kTargetResidentWarps = 8;

/// Chooses the tile configuration of one attention on `chip`:
///
///  1. bf16 needs bf16 instructions (none on sm_75): refused.
///  2. rows = effectiveRows(request); q = the smallest of {1, 16, 32, 64, 128}
///     that covers rows, capped at 128 (q = 1, the CUDA-core path, only for
///     rows == 1).
///  3. warps = warpsForTile(q, headDim), stages = stagesForChip().
///  4. kv = the largest of {128, 64, 32} whose budget fits and keeps at least
///     kTargetResidentWarps warps resident per SM; failing that, the one that
///     fits with the most resident warps (the largest on a tie).
///  5. If no kv fits, q is halved (not below 16; q = 1 is never changed) and
///     step 3 repeats.
///
/// Fails, with a reason naming the budget that the smallest configuration
/// exceeds, when nothing fits.
TileSelection selectTile(const ChipInfo &chip, const TileRequest &request);

} // namespace flashir::target

#endif // FLASHIR_TARGET_CHIP_H
