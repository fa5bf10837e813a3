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
    auto badOverride = [&](StringRef name, int64_t value,
                           ArrayRef<int64_t> allowed) {
      if (value == 0 || llvm::is_contained(allowed, value))
        return false;
      std::string set;
      for (int64_t a : allowed)
        set += (set.empty() ? "" : ", ") + std::to_string(a);
      module.emitError("attn-select-tiles: ")
          << name << " must be one of " << set << " (or 0), got " << value;
      return true;
    };
    if (badOverride("q-tile", qTile, {1, 16, 32, 64, 128}) ||
        badOverride("kv-tile", kvTile, {32, 64, 128}) ||
        badOverride("tile-warps", tileWarps, {1, 2, 4, 8, 16}) ||
        badOverride("tile-stages", tileStages, {1, 2, 3, 4}))
      return signalPassFailure();

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
      // The decode kernels walk one KV view: attentions over several take
      // the prefill kernel's tiles of 16 or more rows.
      if (op.getViews().size() > 1) {
        int64_t rowsPerToken = request.fusedHeadGroups ? request.groupSize : 1;
        request.avgQoLen = std::max<int64_t>(
            request.avgQoLen, (16 + rowsPerToken - 1) / rowsPerToken);
      }

      target::TileSelection selection = target::selectTile(*info, request);
      if (!selection.ok) {
        op.emitOpError("cannot select tiles: ") << selection.reason;
        anyFailed = true;
        return;
      }
      target::TileChoice tile = selection.choice;
      if (qTile || kvTile || tileWarps || tileStages) {
        int64_t bytes = target::elementBytes(request.elementType);
        // Overridden tiles keep Q where the kernel puts it by default.
        tile.qShared = false;
        // A new q gets the warps the heuristic gives that q.
        if (qTile && qTile != tile.q)
          tile.warps =
              target::warpsForTile(*info, qTile, request.headDim, bytes);
        tile.q = qTile ? qTile : tile.q;
        tile.kv = kvTile ? kvTile : tile.kv;
        tile.warps = tileWarps ? tileWarps : tile.warps;
        tile.stages = tileStages ? tileStages : tile.stages;
        // The prefill kernel runs 16 or 32 rows per warp; other warps would
        // be recorded but not built.
        if (tile.q >= 16 && tile.warps * 16 != tile.q &&
            tile.warps * 32 != tile.q) {
          op.emitOpError("the overridden tile <q = ")
              << tile.q << ", warps = " << tile.warps
              << "> has no prefill kernel: it runs q / 16 = " << tile.q / 16
              << " warps of 16 rows"
              << (tile.q >= 32 ? " or q / 32 = " + std::to_string(tile.q / 32) +
                                     " warps of 32 rows"
                               : std::string());
          anyFailed = true;
          return;
        }
        target::TileBudget budget =
            target::estimate(*info, tile, request.headDim,
                             target::elementBytes(request.elementType));
        if (!budget.fits()) {
          op.emitOpError("the overridden tile <q = ")
              << tile.q << ", kv = " << tile.kv << ", warps = " << tile.warps
              << ", stages = " << tile.stages << "> exceeds the " << info->name
              << " budget: "
              << (!budget.fitsSharedMemory ? "shared memory"
                  : !budget.fitsRegisters  ? "registers"
                                           : "threads per block");
          anyFailed = true;
          return;
        }
      }
      // Any configuration already present is replaced.
      op.setTilesAttr(TileConfigAttr::get(ctx, tile.q, tile.kv, tile.warps,
                                          tile.stages, tile.qShared));
    });

    module->setAttr("attn.target",
                    StringAttr::get(ctx, std::string(info->name)));
    if (anyFailed)
      signalPassFailure();
  }
};
} // namespace
