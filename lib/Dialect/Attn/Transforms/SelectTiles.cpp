//===- SelectTiles.cpp - choose the tile configuration per chip -----------===//
//
// Records `tiles = #attn.tiles<...>` on every attn.attention from the target
// chip's limits (flashir/Target/Chip.h, which holds the heuristic and the
// budget) and `attn.target = "<chip>"` on the module for later passes.
//
//===----------------------------------------------------------------------===//

#include "flashir/Dialect/Attn/Transforms/Passes.h"
#include "flashir/Target/Chip.h"

#include "mlir/IR/BuiltinOps.h"

#include <algorithm>
#include <optional>
#include <string>

namespace flashir::attn {
#define GEN_PASS_DEF_ATTNSELECTTILES
#include "flashir/Dialect/Attn/Transforms/Passes.h.inc"
} // namespace flashir::attn

using namespace mlir;
using namespace flashir::attn;
namespace target = flashir::target;

namespace {
/// The tile budget's element type for `type`, or nothing for a type the
/// budget does not know.
std::optional<target::ElementType> toElementType(Type type) {
  if (type.isF16())
    return target::ElementType::F16;
  if (type.isBF16())
    return target::ElementType::BF16;
  if (type.isF32())
    return target::ElementType::F32;
  return std::nullopt;
}

struct SelectTilesPass
    : flashir::attn::impl::AttnSelectTilesBase<SelectTilesPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();

    const target::ChipInfo *info = target::lookupChip(chip);
    if (!info) {
      module.emitError("attn-select-tiles: unknown chip '")
          << std::string(chip) << "'; valid chips are "
          << target::validChipNames();
      return signalPassFailure();
    }
    int64_t avgLen = avgQoLen;
    if (avgLen < 1) {
      module.emitError("attn-select-tiles: avg-qo-len must be >= 1, got ")
          << avgLen;
      return signalPassFailure();
    }

    bool anyFailed = false;
    module.walk([&](AttentionOp op) {
      RaggedQType queries = op.getQueries().getType();
      std::optional<target::ElementType> elementType =
          toElementType(queries.getElementType());
      if (!elementType) {
        op.emitOpError("cannot select tiles: element type ")
            << queries.getElementType() << " has no tile budget";
        anyFailed = true;
        return;
      }
      int64_t numKvHeads = std::max<int64_t>(op.getNumKvHeads(), 1);

      target::TileRequest request;
      request.headDim = queries.getHeadDim();
      request.elementType = *elementType;
      request.avgQoLen = avgLen;
      request.groupSize = std::max<int64_t>(op.getNumQoHeads() / numKvHeads, 1);
      request.fusedHeadGroups = op.getFusedHeadGroups();

      target::TileSelection selection = target::selectTile(*info, request);
      if (!selection.ok) {
        op.emitOpError("cannot select tiles: ") << selection.reason;
        anyFailed = true;
        return;
      }
      const target::TileChoice &tile = selection.choice;
      // Any configuration already present is replaced.
      op.setTilesAttr(
          TileConfigAttr::get(ctx, tile.q, tile.kv, tile.warps, tile.stages));
    });

    module->setAttr("attn.target",
                    StringAttr::get(ctx, std::string(info->name)));
    if (anyFailed)
      signalPassFailure();
  }
};
} // namespace
