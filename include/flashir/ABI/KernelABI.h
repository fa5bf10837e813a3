//===- KernelABI.h - the contract between kernels and hosts -----*- C++ -*-===//
//
// What a generated attention kernel expects from the host that launches it:
// its kind, its grid, the role of each argument and the launch facts. The GPU
// conversion writes it (as #attn.launch), flashir-bundle turns it into
// manifest.json, and the runtime, the C API and the Python package read it
// back (Manifest.h). No LLVM or MLIR: the runtime builds without them.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHIR_ABI_KERNELABI_H
#define FLASHIR_ABI_KERNELABI_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace flashir::abi {

/// The manifest's ABI version. 4: kernel kinds, argument roles, a split
/// kernel names its merge kernel, launch facts per target only. 5: a kernel
/// may attend several KV views (one group of view arguments per view). 6: a
/// target may hold one module per kernel ("modules"); kernels say whether
/// their variant is position-free.
inline constexpr int64_t kAbiVersion = 6;

/// What a kernel computes. Decode and prefill kernels attend over the paged
/// KV cache (one or a tile of query rows per CTA); merge kernels combine a
/// split kernel's partial states.
enum class KernelKind { Decode, Prefill, Merge };

std::string_view kindName(KernelKind kind);
std::optional<KernelKind> parseKind(std::string_view name);

/// The CTA grid, x to z: one CTA row per request or per split-KV chunk,
/// optionally per tile of query tokens, and per query or KV head.
enum class GridRows { Requests, Chunks };
enum class GridHeads { QoHeads, KvHeads };

struct Grid {
  GridRows rows = GridRows::Requests;
  bool qTiles = false;
  GridHeads heads = GridHeads::KvHeads;

  /// "requests x num_kv_heads", "chunks x q_tiles x num_qo_heads", ...
  std::string str() const;
  static std::optional<Grid> parse(std::string_view text);
  bool operator==(const Grid &o) const {
    return rows == o.rows && qTiles == o.qTiles && heads == o.heads;
  }
  bool operator!=(const Grid &o) const { return !(*this == o); }
};

/// The role of a kernel argument; Param: a variant parameter (after the
/// fixed arguments, in the variant's declaration order).
enum class ArgRole {
  Q,
  QoIndptr,
  KPool,
  VPool,
  KvIndptr,
  KvIndices,
  LastPageLen,
  ChunkIndptr,
  ChunkRequest,
  ChunkStarts,
  ChunkEnds,
  ChunkOrder,
  PartialO,
  PartialLse,
  Out,
  Lse,
  KvMaps,
  Param,
};

/// How a variant parameter reaches the kernel: a scalar, one value per
/// request or per query head (arrays of at least batch / Hq entries), or a
/// whole buffer (None for fixed arguments).
enum class ParamKind { None, Scalar, PerRequest, PerHead, Buffer };

std::string_view paramKindName(ParamKind kind);
std::optional<ParamKind> parseParamKind(std::string_view name);

/// The argument name of a fixed role ("q", "k_pool", "indptr", ...).
std::string_view roleName(ArgRole role);
std::optional<ArgRole> parseRole(std::string_view name);

/// Whether `role` describes one KV view (k_pool, v_pool, indptr, indices,
/// last_page_len): a kernel over several views takes one group per view.
bool isViewRole(ArgRole role);

/// One fixed argument: its role and, for view roles, the view it belongs to.
struct FixedArg {
  ArgRole role = ArgRole::Param;
  int64_t view = 0;
  /// The argument's name: the role's, with "_<view>" after it for views
  /// past the first ("k_pool", "k_pool_1", ...).
  std::string name() const;
  bool operator==(const FixedArg &o) const {
    return role == o.role && view == o.view;
  }
};

/// The fixed arguments of a kernel, in order: decode and prefill kernels
/// take q, qo_indptr, then per KV view k_pool ... last_page_len (over ragged
/// views, whose keys are contiguous rows: k_pool ... indptr, no page table),
/// a split kernel's chunk arrays and partial states, then out, lse and
/// kv_maps; merge kernels the partial states and out / lse.
std::vector<FixedArg> fixedArgs(KernelKind kind, bool split,
                                bool ragged = false, int64_t numViews = 1);

/// Whether a decode or prefill kernel whose arguments are named `argNames`
/// reads ragged views: it takes no page table (no `indices`).
bool raggedSignature(const std::vector<std::string> &argNames);
/// The KV views of a decode or prefill kernel whose arguments are named
/// `argNames`: 1 + the "indptr_<v>" names.
int64_t viewsOfSignature(const std::vector<std::string> &argNames);

/// The grid a kernel of `kind` launches over: split kernels over chunks,
/// prefill kernels over q tiles, per KV head (decode; prefill with fused
/// head groups) or query head (merge; other prefill kernels).
Grid gridOf(KernelKind kind, bool split, bool perKvHead);

/// The z extent to launch a `persistent` prefill kernel's (x, y, z) grid
/// with on a device of `sms` SMs: enough heads' planes for one CTA per SM
/// (the kernel's workers; the rest of each plane exits at once), at most
/// z. Where x * y is 0 or `sms` unknown (< 1), z.
unsigned persistentGridZ(int64_t sms, unsigned x, unsigned y, unsigned z);

struct KernelArg {
  std::string name;
  ArgRole role = ArgRole::Param;
  bool memref = false;        // else a scalar
  std::string element;        // "bf16", "i32", "f32", ...
  std::vector<int64_t> shape; // -1: dynamic
  ParamKind paramKind = ParamKind::None;
  /// View roles: the KV view (0 first).
  int64_t view = 0;
};

/// Bytes of one `element` ("bf16", "f16", "f32", "i32", ...); 0 if unknown.
int64_t elementBytes(const std::string &element);

/// The tensor map the host encodes over a K or V pool for kernels with
/// tensor copies (a `tensor_map_box`), innermost dimension first. Rank 3
/// (a box of three extents): NHD pools as (column, KV head, page *
/// page_size + slot), HND pools as (column, slot, page * num_kv_heads +
/// head); columns past the head dim read as zeros (the box may be wider
/// than the row). Rank 5 (grouped: five extents; head dims of whole
/// 64-column boxes, pages of whole 8-key groups), keys in 8-key groups so
/// that one box brings several groups over every column box: NHD as
/// (column, slot in group, column box, KV head, (page * page_size + slot) /
/// 8), HND as (column, slot in group, column box, slot / 8, page *
/// num_kv_heads + head).
struct KvTensorMap {
  unsigned rank;
  uint64_t dims[5];
  /// Byte strides of dimensions 1 and up.
  uint64_t strides[4];
  /// The shared-memory swizzle span: the box's row bytes (128, 64 or 32).
  int64_t swizzleBytes;
};
KvTensorMap kvTensorMap(bool hnd, int64_t pageSize, int64_t numKvHeads,
                        int64_t headDim, int64_t numPages, int64_t elementBytes,
                        int64_t boxColumns, bool grouped = false);

/// One kernel's chip-independent ABI.
struct KernelInfo {
  std::string name;
  KernelKind kind = KernelKind::Decode;
  Grid grid;
  int64_t block = 0;
  /// Keys per key group and iteration (decode kernels; 0: not given).
  int64_t unroll = 0;
  /// Prefill kernels: query rows per CTA, tokens per q tile (the grid's y
  /// extent divides by it) and keys per K/V tile.
  int64_t qRows = 0, qTokens = 0, kvTile = 0;
  std::string variant;
  /// The variant neither masks keys nor reads positions (no mask, query or
  /// key hook; a logits hook that ignores qpos and kpos): the kernel may
  /// attend keys at any offset, e.g. a shared prefix for many requests.
  bool positionFree = false;
  /// Split kernels: the merge kernel that combines their partial states.
  std::string mergeKernel;
  /// The pools' layout in memory: HND ([pages, heads, page, dim]) when
  /// true, else NHD ([pages, page, heads, dim]). The k_pool / v_pool shapes
  /// are given in the logical (pages, page, heads, dim) order either way.
  bool hnd = false;
  /// A ragged view: the pools are the keys' contiguous rows [tokens, 1,
  /// heads, dim] (one-token pages in token order), `indptr` holds token
  /// offsets and there is no page table (no indices, no last_page_len).
  bool ragged = false;
  std::vector<KernelArg> args;

  /// Whether the kernel writes partial states per split-KV chunk (a
  /// decode or prefill kernel with partial_o).
  bool split() const {
    return kind != KernelKind::Merge && grid.rows == GridRows::Chunks;
  }
  /// The argument with a fixed `role` (of KV view `view`), or null.
  const KernelArg *arg(ArgRole role, int64_t view = 0) const;
  /// Its position, or -1.
  int64_t argIndex(ArgRole role, int64_t view = 0) const;
  /// The KV views a decode or prefill kernel attends (keys concatenated in
  /// view order); 0 for merge kernels.
  int64_t numViews() const;
  /// The variant parameters (arguments after the fixed ones).
  int64_t numParams() const;
  /// Shapes the kernel was built for (q [rows, Hq, D], pools [pages, page,
  /// Hkv, D]; merge kernels: partial_o [rows, Hq, D]); 0 if unknown.
  int64_t numQoHeads() const;
  int64_t headDim() const;
  int64_t numKvHeads() const;
  int64_t pageSize() const;
  /// The element type of q (partial_o for merge kernels).
  std::string element() const;
};

/// Why a kernel of `kind` over `grid` whose arguments are named `argNames`
/// (the fixed ones by roleName, then variant parameters) breaks the ABI, or
/// an empty string. `namesMergeKernel`: whether it names a merge kernel
/// (split kernels must).
std::string verifySignature(KernelKind kind, const Grid &grid,
                            const std::vector<std::string> &argNames,
                            bool namesMergeKernel, int64_t qTokens);

/// Why `kernel` breaks the ABI (fixed arguments out of order or of the wrong
/// rank, a grid that does not fit its kind, a split kernel without a merge
/// kernel...), or an empty string.
std::string verifyKernel(const KernelInfo &kernel);

} // namespace flashir::abi

#endif // FLASHIR_ABI_KERNELABI_H
