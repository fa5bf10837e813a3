//===- MergeStates.h - attention-state merges with a merge kernel -*- C++
//-*-===//
//
// Merges attention states (eq. 6 of the design) outside a split-KV step: n
// states per row, as FlashInfer's merge_state(s) take them, through a
// bundle's split-KV merge kernel (one CTA per (row, query head)).
//
//===----------------------------------------------------------------------===//

#ifndef FLASHIR_RUNTIME_MERGESTATES_H
#define FLASHIR_RUNTIME_MERGESTATES_H

#include "flashir/Runtime/Launcher.h"

namespace flashir::runtime {

/// Device buffers of a merge: `rows` rows of `statesPerRow` states each.
struct MergeBuffers {
  /// int32 [rows + 1]: 0, 1, ..., rows (each row one request of one row).
  const void *rowIndptr = nullptr;
  /// int32 [rows + 1]: 0, n, 2n, ..., rows * n (n = statesPerRow).
  const void *stateIndptr = nullptr;
  /// [rows * n, Hq, D] in the kernel's element type: row r's states at
  /// r * n ... r * n + n - 1; [rows * n, Hq] f32 log-sum-exps.
  void *states = nullptr, *stateLse = nullptr;
  /// [rows, Hq, D] and [rows, Hq] f32: the merged states.
  void *out = nullptr, *lse = nullptr;
  int64_t rows = 0, statesPerRow = 0;
};

/// Launches `mergeKernel` of `bundle` on `buffers` (statesPerRow >= 2: the
/// kernel leaves a row of one state to the split kernel that wrote it).
Status mergeStates(KernelBundle &bundle, const std::string &mergeKernel,
                   const MergeBuffers &buffers, void *stream);

} // namespace flashir::runtime

#endif // FLASHIR_RUNTIME_MERGESTATES_H
