//===- Passes.td - attn dialect passes ----------------------*- tablegen -*-===//

#ifndef FLASHIR_DIALECT_ATTN_TRANSFORMS_PASSES_TD
#define FLASHIR_DIALECT_ATTN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def AttnImportVariants : Pass<"attn-import-variants", "::mlir::ModuleOp"> {
  let summary = "Copy the standard variants a module uses into it";
  let description = [{
    Every module may name the standard variants (`@plain`, `@causal`,
    `@sliding_window`, `@soft_cap`, `@alibi`, `@custom_mask`, `@sigmoid`)
    without defining them. This pass copies the definition of each standard
    variant that the module references but does not define to the start of
    the module, so that later passes see every variant as ordinary IR. A
    variant the module defines itself is never replaced.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::math::MathDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

#endif // FLASHIR_DIALECT_ATTN_TRANSFORMS_PASSES_TD
