//===- PagedKVAccessTest.cpp - paged KV address arithmetic ----------------===//

#include "../../lib/Conversion/AttnToGPU/Parts/PagedKVAccess.h"
#include "flashir/ABI/KernelABI.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

using flashir::abi::KvTensorMap;
using flashir::abi::kvTensorMap;
using flashir::conversion::parts::PagedKVAccess;

namespace {

// The strides address exactly the element a row-major array of the
// physical shape holds at (page, slot, head, column): filled with its own
// coordinates, every element reads back where the strides say, for both
// layouts over page sizes 1, 3, 16 and ragged head counts.
TEST(PagedKVAccess, StridesMatchThePhysicalLayout) {
  for (bool hnd : {false, true})
    for (int64_t page : {1, 3, 16})
      for (int64_t heads : {1, 3, 8}) {
        PagedKVAccess a{hnd, page, heads, 8};
        int64_t pages = 4;
        std::vector<int64_t> pool(size_t(pages * page * heads * 8));
        // Write coordinates in physical order.
        auto inner = a.physicalInner();
        for (int64_t p = 0; p < pages; ++p)
          for (int64_t x = 0; x < inner[0]; ++x)
            for (int64_t y = 0; y < inner[1]; ++y)
              for (int64_t c = 0; c < 8; ++c) {
                int64_t slot = hnd ? y : x, head = hnd ? x : y;
                int64_t flat = ((p * inner[0] + x) * inner[1] + y) * 8 + c;
                pool[size_t(flat)] = ((p * 1000 + slot) * 100 + head) * 10 + c;
              }
        auto s = a.strides();
        for (int64_t p = 0; p < pages; ++p)
          for (int64_t slot = 0; slot < page; ++slot)
            for (int64_t head = 0; head < heads; ++head) {
              int64_t at = p * s[0] + slot * s[1] + head * s[2] + 3 * s[3];
              EXPECT_EQ(pool[size_t(at)],
                        ((p * 1000 + slot) * 100 + head) * 10 + 3)
                  << "hnd " << hnd << " page " << page << " heads " << heads;
              EXPECT_EQ(a.row(p, slot, head) * 8, at - 3);
            }
      }
}

TEST(PagedKVAccess, CopyFacts) {
  PagedKVAccess nhd{false, 16, 8, 128}, hnd{true, 16, 8, 128};
  EXPECT_EQ(nhd.slotRowStride(), 8);
  EXPECT_EQ(hnd.slotRowStride(), 1);
  EXPECT_FALSE(nhd.headRowsContiguous());
  EXPECT_TRUE(hnd.headRowsContiguous());
  EXPECT_TRUE((PagedKVAccess{false, 16, 1, 64}).headRowsContiguous());
  EXPECT_TRUE(nhd.tensorMapTiles(16));
  EXPECT_FALSE(nhd.tensorMapTiles(32));
  EXPECT_TRUE(hnd.tensorMapTiles(16));
  EXPECT_FALSE((PagedKVAccess{true, 8, 8, 128}).tensorMapTiles(16));
  // Any head dim: columns past it read as zeros.
  EXPECT_TRUE((PagedKVAccess{false, 16, 8, 96}).tensorMapTiles(16));
  EXPECT_EQ(nhd.tensorMapBox(16, 64), (std::array<int64_t, 3>{64, 1, 16}));
  EXPECT_EQ(hnd.tensorMapBox(16, 64), (std::array<int64_t, 3>{64, 16, 1}));
  // Consecutive keys of one page: one row apart in HND, Hkv rows in NHD.
  EXPECT_EQ(hnd.row(2, 5, 3) + 1, hnd.row(2, 6, 3));
  EXPECT_EQ(nhd.row(2, 5, 3) + 8, nhd.row(2, 6, 3));
}

// A ragged view's rows: token t of head h is row t * heads + h of the
// contiguous [tokens, heads, dim] keys, with no page table, as one-token
// NHD pages address them.
TEST(PagedKVAccess, RaggedRowsAreOneTokenPages) {
  PagedKVAccess ragged = PagedKVAccess::raggedRows(3, 40);
  EXPECT_FALSE(ragged.hasPageTable());
  EXPECT_TRUE((PagedKVAccess{false, 1, 3, 40}).hasPageTable());
  EXPECT_EQ(ragged.pageSize, 1);
  EXPECT_FALSE(ragged.headMajor);
  for (int64_t token : {0, 1, 7, 1000})
    for (int64_t head = 0; head < 3; ++head)
      EXPECT_EQ(ragged.row(token, 0, head), token * 3 + head);
  EXPECT_EQ(ragged.strides(), (std::array<int64_t, 4>{120, 120, 40, 1}));
}

// A box at tensor-map coordinates (column, x, y) covers the pool elements
// the kernel asks for: the `tileKeys` keys from slot `slot` of page `page`,
// head `head`, at abi::kvTensorMap's byte strides.
TEST(PagedKVAccess, TensorMapCoversTile) {
  for (bool hnd : {false, true}) {
    PagedKVAccess a{hnd, 32, 3, 72};
    KvTensorMap map = kvTensorMap(hnd, a.pageSize, a.numHeads, a.headDim,
                                  /*numPages=*/5, 2, 64);
    EXPECT_EQ(map.swizzleBytes, 128);
    std::array<int64_t, 3> box = a.tensorMapBox(16, 64);
    int64_t page = 4, slot = 16, head = 2;
    // The kernel's coordinates of the tile's first key.
    int64_t x = hnd ? slot : head;
    int64_t y = hnd ? page * a.numHeads + head : page * a.pageSize + slot;
    for (int64_t key = 0; key < 16; ++key) {
      int64_t bx = hnd ? x + key : x, by = hnd ? y : y + key;
      EXPECT_EQ(box[hnd ? 1 : 2], 16);
      int64_t bytes =
          bx * int64_t(map.strides[0]) + by * int64_t(map.strides[1]);
      EXPECT_EQ(bytes, a.row(page, slot + key, head) * a.headDim * 2)
          << "hnd " << hnd << " key " << key;
    }
    EXPECT_EQ(map.dims[0], 72u);
    EXPECT_EQ(map.dims[1] * map.dims[2], uint64_t(5 * 32 * 3));
  }
  EXPECT_EQ(kvTensorMap(false, 16, 8, 96, 1, 2, 32).swizzleBytes, 64);
  EXPECT_EQ(kvTensorMap(true, 16, 8, 72, 1, 2, 16).swizzleBytes, 32);
}

// A grouped box at the kernel's coordinates covers the keys of one page
// (or tile) of one head: element (column c, key) at the grouped map's byte
// strides is where the pool keeps it.
TEST(PagedKVAccess, GroupedTensorMapCoversPage) {
  for (bool hnd : {false, true})
    for (int64_t pageSize : {16, 256}) {
      PagedKVAccess a{hnd, pageSize, 3, 128};
      int64_t tileKeys = 128, numPages = 5;
      ASSERT_TRUE(a.tensorMapGroups(tileKeys));
      KvTensorMap map = kvTensorMap(hnd, a.pageSize, a.numHeads, a.headDim,
                                    numPages, 2, 64, /*grouped=*/true);
      EXPECT_EQ(map.rank, 5u);
      EXPECT_EQ(map.swizzleBytes, 128);
      std::array<int64_t, 5> box = a.tensorMapGroupBox(tileKeys);
      int64_t keys = box[1] * (hnd ? box[3] : box[4]);
      EXPECT_EQ(keys, std::min(pageSize, tileKeys));
      EXPECT_EQ(box[0] * box[2], a.headDim);
      int64_t page = 3, slot = pageSize > tileKeys ? tileKeys : 0, head = 2;
      // The kernel's coordinates of the box's first key (column, slot in
      // group and column box 0).
      std::array<int64_t, 5> at =
          hnd ? std::array<int64_t, 5>{0, 0, 0, slot / 8,
                                       page * a.numHeads + head}
              : std::array<int64_t, 5>{0, 0, 0, head,
                                       (page * pageSize + slot) / 8};
      for (int64_t key = 0; key < keys; ++key)
        for (int64_t c = 0; c < a.headDim; c += 7) {
          std::array<int64_t, 5> e = at;
          e[0] += c % 64;
          e[1] += key % 8;
          e[2] += c / 64;
          e[hnd ? 3 : 4] += key / 8;
          for (int d = 0; d < 5; ++d)
            ASSERT_LT(uint64_t(e[d]), map.dims[d]) << d;
          int64_t bytes = e[0] * 2;
          for (int d = 1; d < 5; ++d)
            bytes += e[d] * int64_t(map.strides[d - 1]);
          EXPECT_EQ(bytes, (a.row(page, slot + key, head) * a.headDim + c) * 2)
              << "hnd " << hnd << " key " << key << " column " << c;
        }
    }
  EXPECT_FALSE((PagedKVAccess{false, 16, 8, 64}.tensorMapGroups(128)));
  EXPECT_FALSE((PagedKVAccess{false, 24, 8, 128}.tensorMapGroups(128)));
  EXPECT_FALSE(PagedKVAccess::raggedRows(8, 128).tensorMapGroups(128));
  EXPECT_TRUE((PagedKVAccess{true, 8, 8, 256}.tensorMapGroups(64)));
}

// Boxes pad a row to the fewest columns, the widest box among equals.
TEST(PagedKVAccess, TensorMapBoxColumns) {
  struct Case {
    int64_t headDim, columns, boxes;
  } cases[] = {{64, 64, 1},  {128, 64, 2}, {256, 64, 4}, {96, 32, 3},
               {160, 32, 5}, {192, 64, 3}, {72, 16, 5},  {80, 16, 5},
               {16, 16, 1},  {48, 16, 3},  {32, 32, 1},  {224, 32, 7}};
  for (Case c : cases) {
    PagedKVAccess a{false, 16, 8, c.headDim};
    EXPECT_EQ(a.tensorMapBoxColumns(), c.columns) << c.headDim;
    EXPECT_EQ(a.tensorMapBoxes(), c.boxes) << c.headDim;
    EXPECT_GE(c.columns * c.boxes, c.headDim);
    EXPECT_LT(c.columns * c.boxes - c.headDim, 16) << c.headDim;
  }
}

} // namespace
