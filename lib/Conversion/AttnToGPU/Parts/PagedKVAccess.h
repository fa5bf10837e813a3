//===- PagedKVAccess.h - where a paged KV cache's rows live ---*- C++ -*-===//
//
// The address arithmetic of a paged KV pool, computed once from the view
// type and shared by every kernel family: the element strides of (page,
// slot in the page, KV head, column) for the NHD ([pages, page, heads, dim])
// and HND ([pages, heads, page, dim]) layouts, the row of a key, and what a
// copy may assume (rows of one head contiguous in a page, tiles a tensor map
// can describe and its box). Kernels index pools in the logical (page, slot,
// head, dim) order; an HND pool is a memref with these strides. A ragged
// view's contiguous rows are one-token NHD pages without a page table. No
// MLIR: unit-tested on its own.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHIR_LIB_CONVERSION_ATTNTOGPU_PARTS_PAGEDKVACCESS_H
#define FLASHIR_LIB_CONVERSION_ATTNTOGPU_PARTS_PAGEDKVACCESS_H

#include <array>
#include <cstdint>

namespace flashir::conversion::parts {

struct PagedKVAccess {
  /// HND: [pages, heads, page, dim]; else NHD: [pages, page, heads, dim].
  bool headMajor = false;
  int64_t pageSize = 1, numHeads = 1, headDim = 1;
  /// attn.ragged_kv: the keys' contiguous [tokens, heads, dim] rows, read as
  /// one-token NHD pages in token order with no page table (key j of
  /// request r is page indptr[r] + j).
  bool ragged = false;

  /// The access plan of a ragged view's rows.
  static PagedKVAccess raggedRows(int64_t numHeads, int64_t headDim) {
    return {false, 1, numHeads, headDim, true};
  }
  /// Whether kernels look pages up in a page table (indices).
  bool hasPageTable() const { return !ragged; }

  /// Element strides of the logical (page, slot, head, column) indices.
  std::array<int64_t, 4> strides() const {
    if (headMajor)
      return {numHeads * pageSize * headDim, headDim, pageSize * headDim, 1};
    return {pageSize * numHeads * headDim, numHeads * headDim, headDim, 1};
  }
  /// The pool's extents in memory order (what the host allocates).
  std::array<int64_t, 3> physicalInner() const {
    if (headMajor)
      return {numHeads, pageSize, headDim};
    return {pageSize, numHeads, headDim};
  }
  /// Row (in units of headDim elements) of key `slot` of page `page`, head
  /// `head`.
  int64_t row(int64_t page, int64_t slot, int64_t head) const {
    std::array<int64_t, 4> s = strides();
    return (page * s[0] + slot * s[1] + head * s[2]) / headDim;
  }
  /// Rows between consecutive keys of one head in a page.
  int64_t slotRowStride() const { return strides()[1] / headDim; }
  /// Whether a head's keys of one page are consecutive rows (one bulk copy
  /// can move several).
  bool headRowsContiguous() const { return headMajor || numHeads == 1; }
  /// Whether tensor copies of whole `tileKeys`-key tiles can serve the
  /// pool (abi::kvTensorMap describes it in either layout): tiles never
  /// cross a page.
  bool tensorMapTiles(int64_t tileKeys) const {
    return pageSize % tileKeys == 0;
  }
  /// The columns of a tensor map's box over 16-bit rows: 64, 32 or 16 (box
  /// rows of 128, 64 or 32 bytes, each the span of the swizzle of that
  /// size), the widest of those that pad the row to the fewest columns (the
  /// zero columns past the head dim take ring space and copy bandwidth).
  int64_t tensorMapBoxColumns() const {
    int64_t best = 64;
    for (int64_t columns : {32, 16})
      if (padded(columns) < padded(best))
        best = columns;
    return best;
  }
  /// The boxes of one row.
  int64_t tensorMapBoxes() const {
    int64_t columns = tensorMapBoxColumns();
    return (headDim + columns - 1) / columns;
  }
  /// The tensor map's box for one tile of `tileKeys` keys and `boxColumns`
  /// columns of one head, in abi::kvTensorMap's dimension order.
  std::array<int64_t, 3> tensorMapBox(int64_t tileKeys,
                                      int64_t boxColumns) const {
    if (headMajor)
      return {boxColumns, tileKeys, 1};
    return {boxColumns, 1, tileKeys};
  }

  /// Whether tensor copies of `tileKeys`-key tiles can move 8-key groups
  /// over every 64-column box at once (abi::kvTensorMap's grouped map, one
  /// box per page or tile): paged pools with pages of whole groups that
  /// hold or divide the tile, head dims of two or more whole boxes (with
  /// one box, the three-extent box is the same copy).
  bool tensorMapGroups(int64_t tileKeys) const {
    return !ragged && pageSize % 8 == 0 && tileKeys % 8 == 0 &&
           (tileKeys % pageSize == 0 || pageSize % tileKeys == 0) &&
           headDim % 64 == 0 && headDim >= 128;
  }
  /// The grouped map's box for a tile of `tileKeys` keys, in its dimension
  /// order: (64 columns, 8 keys, every column box, 1 head, groups) NHD,
  /// (64, 8, every column box, groups, 1 page) HND; groups of the page or
  /// of the tile, whichever is smaller.
  std::array<int64_t, 5> tensorMapGroupBox(int64_t tileKeys) const {
    int64_t groups = (pageSize < tileKeys ? pageSize : tileKeys) / 8;
    if (headMajor)
      return {64, 8, headDim / 64, groups, 1};
    return {64, 8, headDim / 64, 1, groups};
  }

private:
  int64_t padded(int64_t columns) const {
    return (headDim + columns - 1) / columns * columns;
  }
};

} // namespace flashir::conversion::parts

#endif // FLASHIR_LIB_CONVERSION_ATTNTOGPU_PARTS_PAGEDKVACCESS_H
