//===- ExternalizeDynamicShared.cpp - extern dynamic shared memory --------===//
//
// Gives the zero-length address-space-3 globals that stand for a kernel's
// dynamic shared memory external linkage, so NVPTX declares them as
// `.extern .shared` arrays (see the pass description).
//
//===----------------------------------------------------------------------===//

#include "flashir/Conversion/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace flashir {
#define GEN_PASS_DEF_EXTERNALIZEDYNAMICSHARED
#include "flashir/Conversion/Passes.h.inc"
} // namespace flashir

using namespace mlir;

namespace {

struct ExternalizeDynamicSharedPass
    : flashir::impl::ExternalizeDynamicSharedBase<
          ExternalizeDynamicSharedPass> {
  void runOnOperation() override {
    WalkResult result = getOperation().walk([](LLVM::GlobalOp global) {
      // The verifier lets a global whose `addr_space` is not an integer
      // through with no address space at all; getAddrSpace() assumes one.
      if (!global.getAddrSpaceAttr()) {
        global.emitOpError("needs an integer addr_space");
        return WalkResult::interrupt();
      }
      auto array = dyn_cast<LLVM::LLVMArrayType>(global.getGlobalType());
      if (global.getAddrSpace() !=
              static_cast<unsigned>(NVVM::NVVMMemorySpace::Shared) ||
          !array || array.getNumElements() != 0 || global.getValueOrNull() ||
          !global.getInitializerRegion().empty())
        return WalkResult::advance();
      global.setLinkage(LLVM::Linkage::External);
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
