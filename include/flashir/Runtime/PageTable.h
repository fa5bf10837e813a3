//===- PageTable.h - block-sparse-row page tables ---------------*- C++ -*-===//
//
// Host-side helpers for the paged KV views of the attn dialect: validation of
// a page table, per-request KV lengths and the logical-to-physical token map
// (seed 000, eq. 7). No LLVM/MLIR dependency.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHIR_RUNTIME_PAGETABLE_H
#define FLASHIR_RUNTIME_PAGETABLE_H

#include "flashir/Runtime/Status.h"

#include <cstdint>
#include <vector>

namespace flashir::runtime {

/// A page table in the layout the kernels read: request i owns pages
/// indices[indptr[i] .. indptr[i+1]); its last page holds lastPageLen[i]
/// tokens. All arrays are borrowed.
struct PageTableRef {
  const int32_t *indptr = nullptr;      // [batchSize + 1]
  const int32_t *indices = nullptr;     // [indptr[batchSize]]
  const int32_t *lastPageLen = nullptr; // [batchSize]
  int64_t batchSize = 0;
};

/// Checks a page table against a pool of `numPages` pages of `pageSize`
/// tokens: indptr starts at 0 and never decreases, every page id is in
/// [0, numPages), and every non-empty request has 1 <= last_page_len <=
/// pageSize (an empty request's last_page_len is ignored). The message names
/// the first offending request.
Status validatePageTable(const PageTableRef &table, int64_t numPages,
                         int64_t pageSize);

/// KV length of request `i` of a valid table:
/// (indptr[i+1] - indptr[i] - 1) * pageSize + lastPageLen[i], or 0 for a
/// request without pages.
int64_t kvLength(const PageTableRef &table, int64_t pageSize, int64_t i);

/// KV lengths of every request of a valid table.
std::vector<int64_t> kvLengths(const PageTableRef &table, int64_t pageSize);

/// Physical location of a request's logical token (eq. 7).
struct TokenLocation {
  int32_t page; // Physical page id.
  int32_t slot; // Token slot within the page.
};

/// Maps logical token `t` of request `i` to its physical page and slot.
/// Fails with OutOfRange if `t` is not in [0, kvLength(i)).
Status locateToken(const PageTableRef &table, int64_t pageSize, int64_t i,
                   int64_t t, TokenLocation &location);

} // namespace flashir::runtime

#endif // FLASHIR_RUNTIME_PAGETABLE_H
