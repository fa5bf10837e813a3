//===- KVCopies.cpp - the tensor-core decode's K/V staging ring -----------===//
//
// Each warp stages its tiles in its own ring of S slots, in one of three
// layouts (bindRing): 16-byte cp.async pieces, whole rows (bulk row copies)
// or swizzled 64-column boxes (tensor copies, BulkCopies.cpp). The key loop
// (KernelBuilder::buildStagedLoop) issues, commits and waits for a tile's
// copies through issueTile, commitTile and waitTile; page ids come one
// iteration ahead, the page of key lane % 16 per lane.
//
//===----------------------------------------------------------------------===//

#include "TensorCoreDecodeBuilder.h"

#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

using namespace mlir;

namespace flashir::conversion::kernels {

void TensorCoreDecodeBuilder::bindRing(LocBuilder &b) {
  // cp.async: [warp][stage][piece][lane][16 bytes]. Row bulk copies: whole
  // rows, [warp][stage][K or V][key][D + 8] (the padding spreads the 64-byte
  // K fragment reads of 8 rows over all banks, but leaves copies that are
  // not 128-byte aligned: the H200's L2 then served ~12% more sectors than
  // the rows hold, with ~20% hits). Tensor copies: [warp][stage][K or V]
  // [box][key][boxColumns], rows of 128 (64, 32) bytes whose 16-byte chunks
  // the copy engine swizzles (chunk ^ key % 8, (key / 2) % 4, (key / 4) % 2),
  // 1024-byte aligned: aligned copies and fragment reads conflict-free (at
  // most two-way with the narrower boxes); columns from D to the box's end
  // are zeros the copy engine fills in.
  if (tensor) {
    Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, f.buf);
    Value align = cIndex(b, kSwizzleAlign);
    Value misalign = arith::RemUIOp::create(b, base, cIndex(b, kSwizzleAlign));
    Value shift = arith::SubIOp::create(b, align, misalign);
    ringShift = arith::RemUIOp::create(b, shift, cIndex(b, kSwizzleAlign));
    stage = memref::ViewOp::create(
        b,
        MemRefType::get({W, S, 2, boxes, kTileKeys, boxColumns}, s.element,
                        MemRefLayoutAttrInterface(), workgroup),
        f.buf, ringShift, ValueRange{});
  } else if (bulk) {
    stage = memref::ViewOp::create(
        b,
        MemRefType::get({W, S, 2, kTileKeys, rowStride}, s.element,
                        MemRefLayoutAttrInterface(), workgroup),
        f.buf, c0, ValueRange{});
  } else {
    stage = memref::ViewOp::create(
        b,
        MemRefType::get({W, S, layout.slots(), 32, kVec}, s.element,
                        MemRefLayoutAttrInterface(), workgroup),
        f.buf, c0, ValueRange{});
  }
}

Value TensorCoreDecodeBuilder::clampKey(LocBuilder &b, Value j) {
  return arith::MinSIOp::create(b, j, arith::SubIOp::create(b, f.kEnd, c1));
}

Value TensorCoreDecodeBuilder::lanePage(LocBuilder &b, Value it) {
  Value t0 = tileStart(b, it);
  Value j = clampKey(
      b, arith::AddIOp::create(
             b, t0, arith::RemUIOp::create(b, lane, cIndex(b, kTileKeys))));
  return kernel.poolPage32(
      b, f,
      arith::AddIOp::create(
          b, f.pageBegin, arith::DivUIOp::create(b, j, cIndex(b, s.pageSize))));
}

Value TensorCoreDecodeBuilder::seqOf(LocBuilder &b, Value it) {
  return arith::AddIOp::create(b, seqBase, it);
}

void TensorCoreDecodeBuilder::issueTile(LocBuilder &b, Value it, Value pageId) {
  if (tensor) {
    issueTensorBoxes(b, it, seqOf(b, it), pageId);
  } else if (bulk) {
    issueBulkRows(b, it, seqOf(b, it), pageId);
  } else {
    // Every lane is done reading the pieces others staged in the slot these
    // copies overwrite.
    if (keysShared)
      NVVM::SyncWarpOp::create(b, fullMask);
    issuePieces(b, it, pageId);
  }
}

Value TensorCoreDecodeBuilder::commitTile(LocBuilder &b) {
  if (bulk)
    return Value();
  return nvgpu::DeviceAsyncCreateGroupOp::create(b, nvgpuToken, ValueRange{});
}

void TensorCoreDecodeBuilder::waitTile(LocBuilder &b, Value it, Value token) {
  if (bulk) {
    waitBulk(b, seqOf(b, it));
    return;
  }
  nvgpu::DeviceAsyncWaitOp::create(b, token, b.getI32IntegerAttr(S - 1));
  // The pieces other lanes staged are complete and visible.
  if (keysShared)
    NVVM::SyncWarpOp::create(b, fullMask);
}

void TensorCoreDecodeBuilder::issuePieces(LocBuilder &b, Value it,
                                          Value pageId) {
  Value t0 = tileStart(b, it);
  Value ring = arith::RemUIOp::create(b, it, cIndex(b, S));
  // (page, slot) of key `tileKey` (0..15) of the tile.
  auto locate = [&](Value tileKey) -> std::pair<Value, Value> {
    Value page = gpu::ShuffleOp::create(
                     b, pageId, arith::IndexCastOp::create(b, i32, tileKey),
                     shuffleWidth, gpu::ShuffleMode::IDX)
                     .getShuffleResult();
    Value key = clampKey(b, arith::AddIOp::create(b, t0, tileKey));
    Value slot = arith::RemUIOp::create(b, key, cIndex(b, s.pageSize));
    return {arith::IndexCastOp::create(b, b.getIndexType(), page), slot};
  };
  // A piece past column D (`valid` false) copies nothing from column 0 and
  // zero-fills its 16 bytes.
  auto copy = [&](Value pool, int64_t piece, Value page, Value slot, Value d,
                  Value valid) {
    Value srcElements;
    if (valid) {
      Value full = cIndex(b, kVec), none = cIndex(b, 0);
      srcElements = arith::SelectOp::create(b, valid, full, none);
      d = arith::SelectOp::create(b, valid, d, none);
    }
    nvgpu::DeviceAsyncCopyOp::create(
        b, stage, ValueRange{warp, ring, cIndex(b, piece), lane, c0}, pool,
        ValueRange{page, slot, f.kvHead, d}, b.getIndexAttr(kVec), srcElements,
        /*bypassL1=*/b.getUnitAttr());
  };
  Value tig8 = arith::MulIOp::create(b, tig, cIndex(b, kVec));
  for (int64_t h = 0; h < 2; ++h) {
    auto [page, slot] = locate(arith::AddIOp::create(b, gid, cIndex(b, 8 * h)));
    for (int64_t c = 0; c < kPieces; ++c) {
      Value d = arith::AddIOp::create(b, tig8, cIndex(b, 32 * c));
      copy(f.kPool, h * kPieces + c, page, slot, d, kColumnValid(b, c));
    }
  }
  Value gid8 = arith::MulIOp::create(b, gid, cIndex(b, kVec));
  Value tig2 = arith::MulIOp::create(b, tig, cIndex(b, 2));
  for (auto [qk, offset] : llvm::enumerate(kVKeys)) {
    auto [page, slot] =
        locate(arith::AddIOp::create(b, tig2, cIndex(b, offset)));
    for (int64_t c = 0; c < vPieces; ++c) {
      Value d = arith::AddIOp::create(b, gid8, cIndex(b, 64 * c));
      copy(f.vPool, kSlots + qk * vPieces + c, page, slot, d,
           vColumnValid(b, c));
    }
  }
}

} // namespace flashir::conversion::kernels
