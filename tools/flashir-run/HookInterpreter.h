//===- HookInterpreter.h - float64 evaluation of variant hooks --*- C++ -*-===//
//
// The reference for variants written only in IR (e.g. in a lit test): their
// hook regions are *interpreted* in float64 / int64, op by op, independently
// of the compiler's lowering. Standard variants do not go through this: the
// runner uses the hand-written hooks of the float64 reference library.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHIR_TOOLS_FLASHIR_RUN_HOOKINTERPRETER_H
#define FLASHIR_TOOLS_FLASHIR_RUN_HOOKINTERPRETER_H

#include "flashir/Dialect/Attn/IR/Attn.h"
#include "flashir/Reference/Reference.h"

#include <string>
#include <vector>

namespace flashir::run {

/// The value of one variant parameter, as the runner generated it.
struct ParamData {
  attn::ParamKind kind;
  mlir::Type type;        // Element type (buffer: the tensor's element).
  std::vector<double> f;  // Float values: 1 (scalar), B, or Hq entries.
  std::vector<int64_t> i; // Integer values, same shapes; buffer contents.
};

/// Builds reference hooks that interpret `variant`'s regions with `params`.
/// Fails (with a message) on an op the interpreter does not know.
runtime::Status interpretVariant(attn::VariantOp variant,
                                 const std::vector<ParamData> &params,
                                 reference::Variant &out);

} // namespace flashir::run

#endif // FLASHIR_TOOLS_FLASHIR_RUN_HOOKINTERPRETER_H
