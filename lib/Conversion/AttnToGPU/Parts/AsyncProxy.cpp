//===- AsyncProxy.cpp - mbarriers, tensor copies, proxy fences ------------===//

#include "AsyncProxy.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;

namespace flashir::conversion::parts {

Value pointerTo(LocBuilder &b, Value address, unsigned space) {
  return LLVM::IntToPtrOp::create(
      b, LLVM::LLVMPointerType::get(b.getContext(), space), address);
}

Value sharedClusterPointer(LocBuilder &b, Value address) {
  return LLVM::AddrSpaceCastOp::create(
      b, LLVM::LLVMPointerType::get(b.getContext(), kSharedClusterSpace),
      pointerTo(b, address, kSharedSpace));
}

void fenceAsyncShared(LocBuilder &b) {
  MLIRContext *ctx = b.getContext();
  NVVM::FenceProxyOp::create(
      b, NVVM::ProxyKindAttr::get(ctx, NVVM::ProxyKind::async_shared),
      NVVM::SharedSpaceAttr::get(ctx, NVVM::SharedSpace::shared_cta));
}

static Value i32Constant(LocBuilder &b, int64_t v) {
  return arith::ConstantOp::create(
      b, b.getI32IntegerAttr(static_cast<int32_t>(v)));
}

void mbarrierInit(LocBuilder &b, Value barrier, int64_t arrivals) {
  NVVM::MBarrierInitOp::create(b, barrier, i32Constant(b, arrivals), Value());
}

void mbarrierExpectTx(LocBuilder &b, Value barrier, int64_t bytes) {
  NVVM::MBarrierArriveExpectTxOp::create(
      b, Type(), barrier, i32Constant(b, bytes),
      NVVM::MemScopeKindAttr::get(b.getContext(), NVVM::MemScopeKind::CTA),
      b.getBoolAttr(false), Value());
}

void mbarrierArrive(LocBuilder &b, Value barrier) {
  NVVM::MBarrierArriveOp::create(b, Type(), barrier, Value(),
                                 NVVM::MemScopeKind::CTA, false);
}

void mbarrierWait(LocBuilder &b, Value barrier, Value parity) {
  NVVM::MBarrierTryWaitParityOp::create(b, barrier, parity,
                                        i32Constant(b, 10000000));
}

void copyTensorBox(LocBuilder &b, Value dst, Value map, ValueRange coords,
                   Value barrier) {
  NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(
      b, sharedClusterPointer(b, dst), map, coords, barrier, ValueRange{},
      Value(), Value(), NVVM::TMALoadMode::TILE, false,
      NVVM::CTAGroupKindAttr(), Value());
}

} // namespace flashir::conversion::parts
