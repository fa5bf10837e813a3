//===- CascadeTest.cpp - shared-prefix metadata ---------------------------===//

#include "flashir/Runtime/Cascade.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <set>

using namespace flashir::runtime;

namespace {

/// A suffix page table for requests of `lens` tokens (pages of 16).
struct Suffixes {
  std::vector<int32_t> indptr{0}, indices, last;
  Suffixes(const std::vector<int64_t> &lens) {
    for (int64_t n : lens) {
      int64_t pages = (n + 15) / 16;
      for (int64_t p = 0; p < pages; ++p)
        indices.push_back(int32_t(indices.size()));
      indptr.push_back(int32_t(indices.size()));
      last.push_back(int32_t(pages ? n - (pages - 1) * 16 : 0));
    }
  }
  PageTableRef ref() const {
    return {indptr.data(), indices.data(), last.data(), int64_t(last.size())};
  }
};

/// Checks the layout contract against the kernels' partial row c + C * i:
/// the prefill kernel's states, the decode kernel's launched chunks and the
/// merge kernel's reads.
void checkContract(const CascadeMetadata &m, int64_t prefixLen,
                   const std::vector<int64_t> &lens, int64_t maxRequests,
                   int64_t capacityChunks = 0, int64_t suffixCapacity = 0) {
  int64_t cp = m.prefixChunks, sc = m.suffixChunks, c = cp + sc,
          b = int64_t(lens.size()), r = maxRequests;
  int64_t scMax = suffixCapacity > 0 ? suffixCapacity : sc;
  int64_t cMax = (capacityChunks > 0 ? capacityChunks : cp) + scMax;
  // Every array has the capacity's size (the runner copies them whole).
  ASSERT_EQ(int64_t(m.prefixRequest.size()), cMax);
  ASSERT_EQ(int64_t(m.prefixOrder.size()), cMax);
  ASSERT_EQ(int64_t(m.request.size()), cMax * r);
  // Prefill side: one request of B rows; chunks tile [0, prefixLen).
  ASSERT_EQ(m.prefixQo, (std::vector<int32_t>{0, int32_t(b), int32_t(b)}));
  ASSERT_EQ(m.prefixChunkIndptr,
            (std::vector<int32_t>{0, int32_t(cp), int32_t(c)}));
  int64_t covered = 0;
  for (int64_t k = 0; k < cp; ++k) {
    EXPECT_EQ(m.prefixRequest[k], 0);
    EXPECT_EQ(m.prefixStarts[k], std::min(covered, prefixLen));
    EXPECT_GE(m.prefixEnds[k], m.prefixStarts[k]);
    covered = std::max<int64_t>(covered, m.prefixEnds[k]);
  }
  EXPECT_EQ(covered, prefixLen);
  for (int64_t k = cp; k < cMax; ++k) { // the padding request's empty chunks
    EXPECT_EQ(m.prefixRequest[k], 1);
    EXPECT_EQ(m.prefixEnds[k], 0);
  }
  // A capacity grid's positions: the step's chunks, then the padding
  // request's (no rows) -- never a second copy of a prefix chunk.
  for (int64_t p = 0; p < cMax; ++p)
    EXPECT_EQ(m.prefixOrder[p], p < cp ? p : cp) << "prefix position " << p;
  // Rows the prefill kernel writes: k + C * i (its C = chunkIndptr's last).
  std::set<int64_t> prefixRows;
  for (int64_t i = 0; i < b; ++i)
    for (int64_t k = 0; k < cp; ++k)
      prefixRows.insert(k + m.prefixChunkIndptr.back() * i);
  // Decode side: order is a permutation; every position a capacity grid
  // launches is a suffix chunk or a padding chunk, never a prefix row.
  ASSERT_EQ(int64_t(m.order.size()), cMax * r);
  std::vector<int32_t> sorted = m.order;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t k = 0; k < cMax * r; ++k)
    ASSERT_EQ(sorted[k], k);
  // A capacity grid's SMax r positions: request p / S's suffix chunk p % S
  // (they tile its keys in order), then padding.
  std::set<int64_t> suffixRows;
  for (int64_t p = 0; p < scMax * r; ++p) {
    int64_t chunk = m.order[p];
    EXPECT_EQ(prefixRows.count(chunk), 0u) << "position " << p;
    if (p < sc * b) {
      int64_t owner = p / sc, t = p % sc;
      EXPECT_EQ(chunk, c * owner + cp + t);
      EXPECT_EQ(m.request[chunk], owner);
      EXPECT_EQ(m.starts[chunk], t == 0 ? 0 : m.ends[chunk - 1]);
      EXPECT_GE(m.ends[chunk], m.starts[chunk]);
      if (t == sc - 1) {
        EXPECT_EQ(m.ends[chunk], lens[owner]);
      }
      suffixRows.insert(chunk);
    } else {
      EXPECT_GE(chunk, c * b);
      EXPECT_EQ(m.request[chunk], r); // the padding request: no rows
      EXPECT_EQ(m.ends[chunk], 0);
    }
  }
  // The merge kernel reads rows [chunkIndptr[q], chunkIndptr[q + 1]) of a
  // one-row request: exactly its Cp prefix states and its S suffix states.
  ASSERT_EQ(int64_t(m.chunkIndptr.size()), r + 2);
  ASSERT_EQ(int64_t(m.qo.size()), r + 2);
  for (int64_t q = 0; q <= r; ++q) { // r: the padding request
    int64_t rows = m.qo[q + 1] - m.qo[q];
    EXPECT_EQ(rows, q < b ? 1 : 0) << "request " << q;
    if (q == r)
      continue;
    std::set<int64_t> read;
    for (int64_t k = m.chunkIndptr[q]; k < m.chunkIndptr[q + 1]; ++k)
      read.insert(k);
    std::set<int64_t> expected;
    if (q < b) {
      for (int64_t k = 0; k < cp; ++k)
        expected.insert(k + c * q);
      for (int64_t t = 0; t < sc; ++t) {
        expected.insert(c * q + cp + t);
        EXPECT_TRUE(suffixRows.count(c * q + cp + t));
      }
    }
    EXPECT_EQ(read, expected) << "request " << q;
  }
  EXPECT_EQ(m.chunkIndptr.back(), c * r);
}

} // namespace

TEST(Cascade, MetadataPlacesEveryStateWhereTheMergeReadsIt) {
  Suffixes s({128, 0, 17, 1, 300});
  CascadeMetadata m;
  ASSERT_TRUE(buildCascadeMetadata(32768, 2048, {16}, s.ref(), 16, 8, m));
  checkContract(m, 32768, {128, 0, 17, 1, 300}, 8);
  EXPECT_EQ(m.prefixLast[0], 16);
  EXPECT_EQ(m.prefixKvIndptr, (std::vector<int32_t>{0, 2048, 2048}));
  std::mt19937 rng(5);
  for (int trial = 0; trial < 200; ++trial) {
    int64_t r = 1 + rng() % 40, b = 1 + rng() % r, cp = 2 + rng() % 20;
    int64_t prefix = 1 + rng() % 5000;
    std::vector<int64_t> lens;
    for (int64_t i = 0; i < b; ++i)
      lens.push_back(rng() % 400);
    Suffixes t(lens);
    CascadeMetadata mm;
    int64_t sc = 1 + rng() % 5;
    ASSERT_TRUE(buildCascadeMetadata(prefix, (prefix + 15) / 16, {cp, sc},
                                     t.ref(), 16, r, mm))
        << "trial " << trial;
    ASSERT_EQ(mm.prefixChunks, cp);
    ASSERT_EQ(mm.suffixChunks, sc);
    checkContract(mm, prefix, lens, r);
    EXPECT_EQ(mm.prefixLast[0], prefix - ((prefix + 15) / 16 - 1) * 16);
    // The same step with fewer chunks than a larger capacity holds.
    int64_t cap = cp + rng() % 20,
            planned = cascadePrefixChunks(prefix, 1 + rng() % 2000, cap);
    int64_t scCap = sc + rng() % 4,
            scPlanned =
                cascadeSuffixChunks(*std::max_element(lens.begin(), lens.end()),
                                    1 + rng() % 200, scCap);
    ASSERT_TRUE(buildCascadeMetadata(prefix, (prefix + 15) / 16,
                                     {planned, scPlanned, cap, scCap}, t.ref(),
                                     16, r, mm))
        << "trial " << trial;
    ASSERT_EQ(mm.prefixChunks, planned);
    ASSERT_EQ(mm.suffixChunks, scPlanned);
    checkContract(mm, prefix, lens, r, cap, scCap);
  }
}

TEST(Cascade, ShortPrefixesTakeFewerChunks) {
  EXPECT_EQ(cascadePrefixChunks(32768, 256, 16), 16);
  EXPECT_EQ(cascadePrefixChunks(1024, 256, 33), 4);
  EXPECT_EQ(cascadePrefixChunks(1025, 256, 33), 5);
  EXPECT_EQ(cascadePrefixChunks(100, 256, 33), 2); // at least 2
  EXPECT_EQ(cascadePrefixChunks(1024, 0, 33), 33); // minChunkKeys 0 acts as 1
}

TEST(Cascade, LongerSuffixesTakeMoreChunks) {
  EXPECT_EQ(cascadeSuffixChunks(128, 64, 4), 2);
  EXPECT_EQ(cascadeSuffixChunks(129, 64, 4), 3);
  EXPECT_EQ(cascadeSuffixChunks(4096, 64, 4), 4); // the capacity
  EXPECT_EQ(cascadeSuffixChunks(0, 64, 4), 1);    // at least 1
  EXPECT_EQ(cascadeSuffixChunks(5, 0, 4), 4);     // minChunkKeys 0 acts as 1
  // Keys [n t / S, n (t + 1) / S): a 5-token suffix in 4 chunks of 1, 1, 1
  // and 2 keys; a 1-token one, three empty chunks and its token.
  Suffixes s({5, 1});
  CascadeMetadata m;
  ASSERT_TRUE(buildCascadeMetadata(100, 7, {2, 4}, s.ref(), 16, 2, m));
  std::vector<int32_t> starts(m.starts.begin(), m.starts.begin() + 12),
      ends(m.ends.begin(), m.ends.begin() + 12);
  EXPECT_EQ(starts, (std::vector<int32_t>{0, 0, 0, 1, 2, 3, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(ends, (std::vector<int32_t>{0, 0, 1, 2, 3, 5, 0, 0, 0, 0, 0, 1}));
  checkContract(m, 100, {5, 1}, 2);
  // Empty suffixes in several chunks, below larger capacities.
  Suffixes empty({0, 3, 0});
  ASSERT_TRUE(
      buildCascadeMetadata(100, 7, {3, 3, 5, 4}, empty.ref(), 16, 4, m));
  checkContract(m, 100, {0, 3, 0}, 4, 5, 4);
}

TEST(Cascade, MetadataErrorsNameTheInput) {
  Suffixes s({5, 6});
  CascadeMetadata m;
  Status one = buildCascadeMetadata(100, 7, {1}, s.ref(), 16, 4, m);
  EXPECT_NE(one.message().find(">= 2 chunks"), std::string::npos);
  Status pages = buildCascadeMetadata(100, 6, {4}, s.ref(), 16, 4, m);
  EXPECT_NE(pages.message().find("takes 7 pages of 16, got 6"),
            std::string::npos)
      << pages.message();
  Status many = buildCascadeMetadata(100, 7, {4}, s.ref(), 16, 1, m);
  EXPECT_NE(many.message().find("1..1 (maxRequests)"), std::string::npos)
      << many.message();
  Status over = buildCascadeMetadata(100, 7, {5, 1, 4}, s.ref(), 16, 4, m);
  EXPECT_NE(over.message().find("5 prefix chunks exceed the capacity's 4"),
            std::string::npos)
      << over.message();
  Status suffixOver =
      buildCascadeMetadata(100, 7, {4, 3, 4, 2}, s.ref(), 16, 4, m);
  EXPECT_NE(suffixOver.message().find(
                "3 chunks per suffix are outside 1..2 (the capacity)"),
            std::string::npos)
      << suffixOver.message();
  Status noSuffixChunk =
      buildCascadeMetadata(100, 7, {4, 0}, s.ref(), 16, 4, m);
  EXPECT_NE(noSuffixChunk.message().find("a suffix needs >= 1 chunk, got 0"),
            std::string::npos)
      << noSuffixChunk.message();
  Suffixes none({});
  EXPECT_FALSE(buildCascadeMetadata(100, 7, {4}, none.ref(), 16, 4, m));
  EXPECT_FALSE(buildCascadeMetadata(0, 0, {4}, s.ref(), 16, 4, m));
}
