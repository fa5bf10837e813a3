//===- AsyncProxy.h - mbarriers, tensor copies, proxy fences ----*- C++ -*-===//
//
// The IR of sm_90's asynchronous proxy as the kernels use it: integer
// addresses as pointers (shared-window addresses, as descriptors and
// mbarriers take them), the shared::cluster form tensor copies write to,
// the fence that orders generic-proxy shared-memory accesses before the
// async proxy's, mbarrier phases (init, expect-tx, arrive, wait on a
// parity) and one tensor-copy box completing on an mbarrier. The ring
// arithmetic behind the barriers is MBarrierRing.h.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHIR_LIB_CONVERSION_ATTNTOGPU_PARTS_ASYNCPROXY_H
#define FLASHIR_LIB_CONVERSION_ATTNTOGPU_PARTS_ASYNCPROXY_H

#include "../../BuilderUtils.h"

namespace flashir::conversion::parts {

/// LLVM address spaces of the NVPTX backend.
constexpr unsigned kGlobalSpace = 1, kSharedSpace = 3, kSharedClusterSpace = 7;

/// An i64 `address` as a pointer in `space`.
Value pointerTo(LocBuilder &b, Value address, unsigned space);
/// The shared::cluster form (PTX 8.0) of shared address `address`: a CTA's
/// own shared window is part of its cluster's.
Value sharedClusterPointer(LocBuilder &b, Value address);
/// The async proxy (tensor copies, wgmma operands) sees the generic proxy's
/// shared-memory accesses so far.
void fenceAsyncShared(LocBuilder &b);

/// mbarrier operations on the barrier at shared pointer `barrier`.
void mbarrierInit(LocBuilder &b, Value barrier, int64_t arrivals);
/// One arrival that also expects `bytes` of copies' transactions.
void mbarrierExpectTx(LocBuilder &b, Value barrier, int64_t bytes);
/// One arrival.
void mbarrierArrive(LocBuilder &b, Value barrier);
/// Waits until the phase of parity `parity` (i32) has completed.
void mbarrierWait(LocBuilder &b, Value barrier, Value parity);

/// A tensor copy of the box at `coords` (i32, innermost first) of the
/// tensor map at generic pointer `map` to shared address `dst` (i64),
/// completing its bytes on `barrier`.
void copyTensorBox(LocBuilder &b, Value dst, Value map, ValueRange coords,
                   Value barrier);

} // namespace flashir::conversion::parts

#endif // FLASHIR_LIB_CONVERSION_ATTNTOGPU_PARTS_ASYNCPROXY_H
