//===- LaunchAttr.cpp - #attn.launch, the kernel ABI in IR ----------------===//
//
// The attribute's own checks (the kernel ABI's signature rules, shared with
// the manifest reader through flashir/ABI) and those that need the kernel it
// sits on (argument count, the merge kernel's symbol).
//
//===----------------------------------------------------------------------===//

#include "flashir/ABI/KernelABI.h"
#include "flashir/Dialect/Attn/IR/Attn.h"

#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace flashir::attn;

flashir::abi::KernelKind flashir::attn::toABIKind(KernelKind kind) {
  switch (kind) {
  case KernelKind::Decode:
    return flashir::abi::KernelKind::Decode;
  case KernelKind::Prefill:
    return flashir::abi::KernelKind::Prefill;
  case KernelKind::Merge:
    break;
  }
  return flashir::abi::KernelKind::Merge;
}

SmallVector<std::string> LaunchAttr::getArgNames() const {
  SmallVector<std::string> names;
  for (Attribute a : getArgs())
    names.push_back(cast<StringAttr>(a).str());
  return names;
}

LogicalResult LaunchAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, KernelKind kind,
    StringRef grid, int64_t block, FlatSymbolRefAttr variant, ArrayAttr args,
    FlatSymbolRefAttr mergeKernel, int64_t stages, int64_t unroll, bool, bool,
    DenseI64ArrayAttr tensorMapBox, int64_t dynamicSharedMemory, int64_t qRows,
    int64_t qTokens, int64_t kvTile, bool, bool, bool persistent) {
  std::optional<flashir::abi::Grid> parsed = flashir::abi::Grid::parse(grid);
  if (!parsed)
    return emitError() << "launch grid '" << grid
                       << "' is not one of the ABI's (e.g. 'requests x "
                          "num_kv_heads', 'chunks x q_tiles x num_qo_heads')";
  if (block < 1 || block > 1024)
    return emitError() << "launch block must be 1..1024 threads, got " << block;
  if (!variant)
    return emitError() << "launch needs the kernel's variant";
  std::vector<std::string> names;
  for (Attribute a : args) {
    auto name = dyn_cast<StringAttr>(a);
    if (!name)
      return emitError() << "launch args must be strings, got " << a;
    names.push_back(name.str());
  }
  std::string why = flashir::abi::verifySignature(
      toABIKind(kind), *parsed, names, static_cast<bool>(mergeKernel), qTokens);
  if (!why.empty())
    return emitError() << "launch of a " << stringifyKernelKind(kind)
                       << " kernel: " << why;
  for (auto [name, value] : {std::pair<const char *, int64_t>{"stages", stages},
                             {"unroll", unroll},
                             {"dynamic_shared_memory", dynamicSharedMemory},
                             {"q_rows", qRows},
                             {"q_tokens", qTokens},
                             {"kv_tile", kvTile}})
    if (value < 0)
      return emitError() << "launch " << name << " must be >= 0, got " << value;
  if (persistent && kind != KernelKind::Prefill)
    return emitError() << "launch of a " << stringifyKernelKind(kind)
                       << " kernel cannot be persistent (only prefill "
                          "kernels' CTAs walk their grid)";
  if (tensorMapBox && ((tensorMapBox.size() != 3 && tensorMapBox.size() != 5) ||
                       llvm::any_of(tensorMapBox.asArrayRef(), [](int64_t e) {
                         return e < 1 || e > 256;
                       })))
    return emitError()
           << "launch tensor_map_box needs three or five extents in 1..256";
  // abi::kvTensorMap's grouped map: 8-key groups.
  if (tensorMapBox && tensorMapBox.size() == 5 && tensorMapBox[1] != 8)
    return emitError() << "launch tensor_map_box of five extents groups 8 "
                          "keys (second extent), got "
                       << tensorMapBox[1];
  return success();
}

LogicalResult AttnDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  if (attr.getName() != "attn.launch")
    return success();
  auto launch = dyn_cast<LaunchAttr>(attr.getValue());
  if (!launch)
    return op->emitError("'attn.launch' must be an #attn.launch attribute");
  auto func = dyn_cast<FunctionOpInterface>(op);
  if (!func)
    return op->emitError("'attn.launch' belongs on a kernel function");
  // After the LLVM lowering the kernel takes memref descriptors expanded:
  // the names then stand for the ABI's arguments, not the function's.
  if (op->getName().getDialectNamespace() != "llvm" &&
      func.getNumArguments() != launch.getArgs().size())
    return op->emitError("'attn.launch' names ")
           << launch.getArgs().size() << " arguments; the kernel takes "
           << func.getNumArguments();
  if (FlatSymbolRefAttr merge = launch.getMergeKernel()) {
    Operation *target = SymbolTable::lookupNearestSymbolFrom(op, merge);
    auto mergeLaunch =
        target ? target->getAttrOfType<LaunchAttr>("attn.launch") : nullptr;
    if (!mergeLaunch || mergeLaunch.getKind() != KernelKind::Merge)
      return op->emitError("'attn.launch' names merge kernel ")
             << merge << ", which is not a merge kernel of this module";
  }
  return success();
}
