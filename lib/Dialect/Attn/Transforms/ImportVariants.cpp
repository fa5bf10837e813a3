//===- ImportVariants.cpp - materialise standard variants -----------------===//

#include "flashir/Dialect/Attn/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/SetVector.h"

namespace flashir::attn {
#define GEN_PASS_DEF_ATTNIMPORTVARIANTS
#include "flashir/Dialect/Attn/Transforms/Passes.h.inc"
} // namespace flashir::attn

using namespace mlir;
using namespace flashir::attn;

namespace {
struct ImportVariantsPass
    : flashir::attn::impl::AttnImportVariantsBase<ImportVariantsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);

    // Every variant named by an op or a state type, in first-use order so the
    // output is deterministic.
    llvm::SetVector<StringAttr> used;
    auto noteType = [&](Type type) {
      if (auto state = dyn_cast<StateType>(type))
        used.insert(state.getVariant().getAttr());
    };
    module.walk([&](Operation *op) {
      if (auto ref = op->getAttrOfType<FlatSymbolRefAttr>("variant"))
        if (isa<AttnDialect>(op->getDialect()))
          used.insert(ref.getAttr());
      llvm::for_each(op->getOperandTypes(), noteType);
      llvm::for_each(op->getResultTypes(), noteType);
    });

    auto *dialect = getContext().getLoadedDialect<AttnDialect>();
    OpBuilder builder = OpBuilder::atBlockBegin(module.getBody());
    for (StringAttr name : used) {
      if (symbols.lookup(name))
        continue;
      VariantOp library = dialect->lookupStandardVariant(name.getValue());
      if (!library) {
        module.emitError("variant '")
            << name.getValue()
            << "' is used but defined neither in the module nor in the "
               "standard library";
        return signalPassFailure();
      }
      builder.clone(*library.getOperation());
    }
  }
};
} // namespace
