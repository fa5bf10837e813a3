//===- CausalMask.h - how a mask hook relates to causality -----*- C++ -*-===//
//
// The prefill kernels skip key tiles and masks by what a variant's mask hook
// provably does with positions: keep only keys at or before the query's
// position (a causal mask, alone or in a conjunction such as a sliding
// window), or anything.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHIR_LIB_CONVERSION_ATTNTOGPU_PARTS_CAUSALMASK_H
#define FLASHIR_LIB_CONVERSION_ATTNTOGPU_PARTS_CAUSALMASK_H

#include "mlir/IR/Region.h"

namespace flashir::conversion::parts {

/// How a mask hook (block arguments qpos, kpos, ...) relates to causality.
enum class CausalMask {
  /// It may keep keys past the query position.
  None,
  /// It keeps only keys with kpos <= qpos: it yields a conjunction with
  /// such a term (sliding window): tiles past the CTA's last query position
  /// can be skipped.
  Implied,
  /// It yields exactly `kpos sle qpos` (or `qpos sge kpos`): tiles whose keys
  /// all precede the CTA's first query position need no mask at all.
  Exact,
};
CausalMask classifyMask(mlir::Region &mask);

} // namespace flashir::conversion::parts

#endif // FLASHIR_LIB_CONVERSION_ATTNTOGPU_PARTS_CAUSALMASK_H
