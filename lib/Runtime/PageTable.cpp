//===- PageTable.cpp - block-sparse-row page tables -----------------------===//

#include "flashir/Runtime/PageTable.h"

#include <algorithm>
#include <string>

namespace flashir::runtime {

static Status invalid(std::string message) {
  return Status::error(StatusCode::InvalidArgument, std::move(message));
}

Status validatePageTable(const PageTableRef &table, int64_t numPages,
                         int64_t pageSize) {
  if (pageSize < 1)
    return invalid("page_size must be >= 1, got " + std::to_string(pageSize));
  if (table.batchSize < 0)
    return invalid("batch size must be >= 0, got " +
                   std::to_string(table.batchSize));
  if (!table.indptr)
    return invalid("indptr is null");
  if (table.indptr[0] != 0)
    return invalid("indptr[0] must be 0, got " +
                   std::to_string(table.indptr[0]));
  if (table.batchSize > 0 && !table.lastPageLen)
    return invalid("last_page_len is null");
  for (int64_t i = 0; i < table.batchSize; ++i) {
    int32_t begin = table.indptr[i], end = table.indptr[i + 1];
    if (end < begin)
      return invalid("indptr decreases at request " + std::to_string(i) +
                     ": indptr[" + std::to_string(i) +
                     "] = " + std::to_string(begin) + " > indptr[" +
                     std::to_string(i + 1) + "] = " + std::to_string(end));
    if (end == begin)
      continue;
    int32_t last = table.lastPageLen[i];
    if (last < 1 || last > pageSize)
      return invalid("last_page_len[" + std::to_string(i) +
                     "] = " + std::to_string(last) + " is outside 1.." +
                     std::to_string(pageSize));
  }
  int64_t numIndices = table.indptr[table.batchSize];
  if (numIndices > 0 && !table.indices)
    return invalid("indices is null");
  // A branch-free min/max pass (vectorised; runs on every plan()), then
  // the first offending entry only when there is one.
  int32_t lo = 0, hi = 0;
  if (numIndices > 0)
    lo = hi = table.indices[0];
  for (int64_t j = 0; j < numIndices; ++j) {
    lo = std::min(lo, table.indices[j]);
    hi = std::max(hi, table.indices[j]);
  }
  if (lo >= 0 && hi < numPages)
    return Status::ok();
  for (int64_t j = 0; j < numIndices; ++j) {
    int32_t page = table.indices[j];
    if (page < 0 || page >= numPages)
      return invalid(
          "indices[" + std::to_string(j) + "] = " + std::to_string(page) +
          " is outside the page pool [0, " + std::to_string(numPages) + ")");
  }
  return Status::ok();
}

int64_t kvLength(const PageTableRef &table, int64_t pageSize, int64_t i) {
  int64_t pages = int64_t(table.indptr[i + 1]) - table.indptr[i];
  if (pages <= 0)
    return 0;
  return (pages - 1) * pageSize + table.lastPageLen[i];
}

std::vector<int64_t> kvLengths(const PageTableRef &table, int64_t pageSize) {
  std::vector<int64_t> lengths(table.batchSize);
  for (int64_t i = 0; i < table.batchSize; ++i)
    lengths[i] = kvLength(table, pageSize, i);
  return lengths;
}

Status locateToken(const PageTableRef &table, int64_t pageSize, int64_t i,
                   int64_t t, TokenLocation &location) {
  if (i < 0 || i >= table.batchSize)
    return Status::error(StatusCode::OutOfRange,
                         "request " + std::to_string(i) + " is outside [0, " +
                             std::to_string(table.batchSize) + ")");
  int64_t length = kvLength(table, pageSize, i);
  if (t < 0 || t >= length)
    return Status::error(StatusCode::OutOfRange,
                         "token " + std::to_string(t) + " is outside [0, " +
                             std::to_string(length) + ") of request " +
                             std::to_string(i));
  location.page = table.indices[table.indptr[i] + t / pageSize];
  location.slot = static_cast<int32_t>(t % pageSize);
  return Status::ok();
}

} // namespace flashir::runtime
