//===- PageTableTest.cpp - page table helpers -----------------------------===//

#include "flashir/Runtime/PageTable.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

using namespace flashir::runtime;

namespace {

struct Table {
  std::vector<int32_t> indptr, indices, last;
  PageTableRef ref() const {
    return {indptr.data(), indices.data(), last.data(),
            static_cast<int64_t>(last.size())};
  }
};

// Three requests over a pool of 8 pages of 4 tokens: 2 pages (5 tokens),
// empty, 1 page (4 tokens). Page 7 is shared by requests 0 and 2.
Table example() { return {{0, 2, 2, 3}, {7, 2, 7}, {1, 0, 4}}; }

TEST(PageTable, LengthsByHand) {
  Table t = example();
  ASSERT_TRUE(validatePageTable(t.ref(), 8, 4).isOk());
  EXPECT_EQ(kvLength(t.ref(), 4, 0), 5); // (2-1)*4 + 1
  EXPECT_EQ(kvLength(t.ref(), 4, 1), 0); // no pages
  EXPECT_EQ(kvLength(t.ref(), 4, 2), 4); // one full page
  EXPECT_EQ(kvLengths(t.ref(), 4), (std::vector<int64_t>{5, 0, 4}));
}

TEST(PageTable, PageSizeOne) {
  Table t{{0, 3}, {5, 1, 5}, {1}};
  ASSERT_TRUE(validatePageTable(t.ref(), 6, 1).isOk());
  EXPECT_EQ(kvLength(t.ref(), 1, 0), 3);
}

TEST(PageTable, LocateTokenFollowsEquation7) {
  // The seed's example: pages [7, 2], 4 tokens per page; logical token 5 is
  // on the second page at slot 1, i.e. physical token 2*4+1 = 9.
  Table t{{0, 2}, {7, 2}, {4}};
  TokenLocation loc;
  ASSERT_TRUE(locateToken(t.ref(), 4, 0, 5, loc).isOk());
  EXPECT_EQ(loc.page, 2);
  EXPECT_EQ(loc.slot, 1);
  EXPECT_EQ(loc.page * 4 + loc.slot, 9);
  ASSERT_TRUE(locateToken(t.ref(), 4, 0, 0, loc).isOk());
  EXPECT_EQ(loc.page, 7);
  EXPECT_EQ(loc.slot, 0);
}

TEST(PageTable, LocateTokenOutOfRange) {
  Table t = example();
  TokenLocation loc;
  Status s = locateToken(t.ref(), 4, 0, 5, loc);
  EXPECT_EQ(s.code(), StatusCode::OutOfRange);
  EXPECT_NE(s.message().find("token 5"), std::string::npos);
  EXPECT_EQ(locateToken(t.ref(), 4, 1, 0, loc).code(), StatusCode::OutOfRange);
  EXPECT_EQ(locateToken(t.ref(), 4, 3, 0, loc).code(), StatusCode::OutOfRange);
  EXPECT_EQ(locateToken(t.ref(), 4, 0, -1, loc).code(), StatusCode::OutOfRange);
}

TEST(PageTable, RejectsDecreasingIndptr) {
  Table t{{0, 2, 1}, {0, 1}, {1, 1}};
  Status s = validatePageTable(t.ref(), 4, 4);
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_NE(s.message().find("indptr decreases at request 1"),
            std::string::npos)
      << s.message();
}

TEST(PageTable, RejectsNonZeroStart) {
  Table t{{1, 2}, {0, 1}, {1}};
  EXPECT_NE(validatePageTable(t.ref(), 4, 4).message().find("indptr[0]"),
            std::string::npos);
}

TEST(PageTable, RejectsPageOutOfPool) {
  Table t{{0, 2}, {0, 4}, {1}};
  Status s = validatePageTable(t.ref(), 4, 4);
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_NE(s.message().find("indices[1] = 4"), std::string::npos)
      << s.message();
  t.indices[1] = -1;
  EXPECT_FALSE(validatePageTable(t.ref(), 4, 4).isOk());
}

TEST(PageTable, RejectsLastPageLen) {
  Table t{{0, 1}, {0}, {0}};
  Status s = validatePageTable(t.ref(), 1, 4);
  EXPECT_NE(s.message().find("last_page_len[0] = 0 is outside 1..4"),
            std::string::npos)
      << s.message();
  t.last[0] = 5;
  EXPECT_FALSE(validatePageTable(t.ref(), 1, 4).isOk());
  t.last[0] = 4;
  EXPECT_TRUE(validatePageTable(t.ref(), 1, 4).isOk());
}

TEST(PageTable, EmptyRequestIgnoresLastPageLen) {
  Table t{{0, 0, 0}, {}, {0, 99}};
  ASSERT_TRUE(validatePageTable(t.ref(), 1, 4).isOk());
  EXPECT_EQ(kvLengths(t.ref(), 4), (std::vector<int64_t>{0, 0}));
}

TEST(PageTable, RejectsBadPageSize) {
  Table t = example();
  EXPECT_FALSE(validatePageTable(t.ref(), 8, 0).isOk());
}

// Random tables: the lengths agree with counting tokens through locateToken,
// and every located token is inside the pool.
TEST(PageTable, RandomTablesAgreeWithTokenWalk) {
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 200; ++trial) {
    int64_t pageSize = std::uniform_int_distribution<int>(1, 64)(rng);
    int64_t numPages = std::uniform_int_distribution<int>(1, 40)(rng);
    int64_t batch = std::uniform_int_distribution<int>(0, 8)(rng);
    Table t;
    t.indptr.push_back(0);
    for (int64_t i = 0; i < batch; ++i) {
      int pages = std::uniform_int_distribution<int>(0, 6)(rng);
      for (int p = 0; p < pages; ++p)
        t.indices.push_back(
            std::uniform_int_distribution<int>(0, numPages - 1)(rng));
      t.indptr.push_back(static_cast<int32_t>(t.indices.size()));
      t.last.push_back(pages ? std::uniform_int_distribution<int>(
                                   1, static_cast<int>(pageSize))(rng)
                             : 0);
    }
    ASSERT_TRUE(validatePageTable(t.ref(), numPages, pageSize).isOk());
    for (int64_t i = 0; i < batch; ++i) {
      int64_t count = 0;
      TokenLocation loc;
      while (locateToken(t.ref(), pageSize, i, count, loc).isOk()) {
        ASSERT_GE(loc.page, 0);
        ASSERT_LT(loc.page, numPages);
        ASSERT_LT(loc.slot, pageSize);
        ++count;
      }
      int pages = t.indptr[i + 1] - t.indptr[i];
      int64_t expected = pages ? (pages - 1) * pageSize + t.last[i] : 0;
      EXPECT_EQ(count, expected);
      EXPECT_EQ(kvLength(t.ref(), pageSize, i), expected);
    }
  }
}

} // namespace
