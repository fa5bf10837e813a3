//===- ImportVariants.cpp - materialise standard variants -----------------===//

#include "flashir/Dialect/Attn/Transforms/Passes.h"

#include "mlir/IR/AttrTypeSubElements.h"
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

    // Every variant named by an op or by a state type anywhere (operands,
    // results, block arguments, type attributes such as function signatures),
    // in first-use order so the output is deterministic.
    llvm::SetVector<StringAttr> used;
    AttrTypeWalker walker;
    walker.addWalk(
        [&](StateType state) { used.insert(state.getVariant().getAttr()); });
    module.walk([&](Operation *op) {
      if (isa<AttnDialect>(op->getDialect()))
        if (auto ref = op->getAttrOfType<FlatSymbolRefAttr>("variant"))
          used.insert(ref.getAttr());
      walker.walk(op->getAttrDictionary());
      for (Type type : op->getResultTypes())
        walker.walk(type);
      for (Region &region : op->getRegions())
        for (Block &block : region)
          for (Type type : block.getArgumentTypes())
            walker.walk(type);
    });

    if (used.empty())
      return;
    auto *dialect = getContext().getOrLoadDialect<AttnDialect>();
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
