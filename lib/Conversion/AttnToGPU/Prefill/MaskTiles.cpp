//===- MaskTiles.cpp - key tiles under a packed-bit mask ------------------===//
//
// With a packed-bit mask (parts::PackedBitMask) the prefill kernel first
// classifies its key tiles: lane l of a warp reads the bits of tile 32 g + l
// of every row of the warp, 64 at a time, two ballots make the group's
// classes (no key visible, every key visible) words of bits, and lane 0
// merges them into the CTA's shared bit sets. The key loop then runs from
// the first tile with a visible key to the last, skips the arithmetic of
// tiles with none (their copies still go out: the ring's schedule stays the
// same), adds no mask on tiles whose keys are all visible, and elsewhere
// tests each score's bit in a register (one 64-bit window per lane row)
// instead of a byte load per score.
//
//===----------------------------------------------------------------------===//

#include "PrefillBuilder.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;

namespace flashir::conversion::prefill {

using parts::BitWindows;

// Values are built in statements: sibling builder calls as arguments would
// order the IR by the host compiler's evaluation order.

namespace {

Value boolConst(LocBuilder &b, bool v) {
  return arith::ConstantOp::create(b, b.getBoolAttr(v));
}

Value negate(LocBuilder &b, Value pred) {
  Value yes = boolConst(b, true);
  return arith::XOrIOp::create(b, pred, yes);
}

/// Bits [0, n) of 64, n in 0..64 (i64).
Value lowBits(LocBuilder &b, Value n) {
  Value all = cI64(b, -1);
  Value one = cI64(b, 1);
  Value c63 = cI64(b, 63);
  Value amount = arith::MinSIOp::create(b, n, c63);
  Value shifted = arith::ShLIOp::create(b, one, amount);
  Value below = arith::SubIOp::create(b, shifted, one);
  Value c64 = cI64(b, 64);
  Value full = arith::CmpIOp::create(b, arith::CmpIPredicate::sge, n, c64);
  return arith::SelectOp::create(b, full, all, below);
}

/// vote.sync over the warp: i1, or the ballot's i32.
Value vote(LocBuilder &b, Value pred, NVVM::VoteSyncKind kind) {
  Value everyLane = cI32(b, -1);
  Type result = kind == NVVM::VoteSyncKind::ballot ? Type(b.getI32Type())
                                                   : Type(b.getI1Type());
  return NVVM::VoteSyncOp::create(b, result, everyLane, pred, kind);
}

/// `lhs pred rhs` for index values.
Value cmpIndex(LocBuilder &b, arith::CmpIPredicate pred, Value lhs,
               int64_t rhs) {
  Value bound = cIndex(b, rhs);
  return arith::CmpIOp::create(b, pred, lhs, bound);
}

} // namespace

void PrefillBuilder::bindPackedMask(LocBuilder &b) {
  Value bits = paramsOf.front()[packedMask->buffer];
  bitWindows.emplace(b, bits);
  rowBits.resize(R);
  for (int64_t ri = 0; ri < R; ++ri)
    rowBits[ri] = hooks.maskTerm(b, packedMask->rowBit, qpos[ri], c0,
                                 headOf[ri], paramsOf[ri]);
}

std::pair<Value, Value> PrefillBuilder::keysMask(LocBuilder &b, Value t0,
                                                 int64_t window) {
  // Keys [lo, hi) of the window's 64: those < kEnd (and, for aligned
  // split chunks, >= kBegin).
  Value windowStart = cIndex(b, 64 * window);
  Value first = arith::AddIOp::create(b, t0, windowStart);
  auto clampedFrom = [&](Value bound) {
    Value count = arith::SubIOp::create(b, bound, first);
    Value n = toI64(b, count);
    Value zero = cI64(b, 0);
    Value atLeast0 = arith::MaxSIOp::create(b, n, zero);
    Value most = cI64(b, std::min<int64_t>(64, KV - 64 * window));
    return arith::MinSIOp::create(b, atLeast0, most).getResult();
  };
  Value keys = lowBits(b, clampedFrom(f.kEnd));
  if (alignedChunks) {
    Value before = lowBits(b, clampedFrom(f.kBegin));
    Value all = cI64(b, -1);
    Value notBefore = arith::XOrIOp::create(b, before, all);
    keys = arith::AndIOp::create(b, keys, notBefore);
  }
  Value low = arith::TruncIOp::create(b, b.getI32Type(), keys);
  Value c32 = cI64(b, 32);
  Value upper = arith::ShRUIOp::create(b, keys, c32);
  Value high = arith::TruncIOp::create(b, b.getI32Type(), upper);
  return {low, high};
}

void PrefillBuilder::classifyKeyTiles(LocBuilder &b) {
  const int64_t words = parts::kClassifiedTiles / 32;
  Type i32 = b.getI32Type();
  tileClasses = func.addWorkgroupAttribution(
      MemRefType::get({2 * words + 2}, i32, MemRefLayoutAttrInterface(),
                      workgroup),
      k.op.getLoc());
  // [0, words): every key visible (starts all set); [words, 2 words): some
  // key visible; then the first and last tile with one.
  Value total = cIndex(b, 2 * words + 2);
  Value step = cIndex(b, threads);
  buildForStep(
      b, tid, total, step, {}, [&](LocBuilder &b, Value i, ValueRange) {
        Value allWord = cmpIndex(b, arith::CmpIPredicate::ult, i, words);
        Value ones = cI32(b, -1);
        Value zero = cI32(b, 0);
        Value init = arith::SelectOp::create(b, allWord, ones, zero);
        Value isFirst = cmpIndex(b, arith::CmpIPredicate::eq, i, 2 * words);
        Value noTile = cI32(b, INT32_MAX);
        init = arith::SelectOp::create(b, isFirst, noTile, init);
        Value isLast = cmpIndex(b, arith::CmpIPredicate::eq, i, 2 * words + 1);
        init = arith::SelectOp::create(b, isLast, ones, init);
        memref::StoreOp::create(b, init, tileClasses, ValueRange{i});
        return SmallVector<Value>();
      });
  gpu::BarrierOp::create(b);
  Value classifiable = cIndex(b, parts::kClassifiedTiles);
  Value scanned = arith::MinUIOp::create(b, numTiles, classifiable);
  classifyWarpTiles(b, scanned);
  gpu::BarrierOp::create(b);
  restrictKeyTiles(b);
}

PrefillBuilder::MaskRow PrefillBuilder::maskRow(LocBuilder &b, Value r) {
  auto [token, rowHead] = tokenAndHead(b, r);
  Value inTile = cmpIndex(b, arith::CmpIPredicate::ult, r, s.prefillRows);
  Value asked =
      arith::CmpIOp::create(b, arith::CmpIPredicate::ult, token, f.numQ);
  Value valid = arith::AndIOp::create(b, inTile, asked);
  Value position = arith::AddIOp::create(b, token, f.keysTotal);
  Value rowQpos = arith::SubIOp::create(b, position, f.numQ);
  SmallVector<Value> params = k.paramValues(b, f, rowHead);
  Value bit =
      hooks.maskTerm(b, packedMask->rowBit, rowQpos, c0, rowHead, params);
  return {bit, valid};
}

void PrefillBuilder::classifyWarpTiles(LocBuilder &b, Value scanned) {
  // Lane l takes tile 32 g + l of group g and every row of the warp: a
  // row's windows of 32 consecutive tiles are one contiguous read, the
  // rows' loads are independent, and ballots make the group's classes
  // words of bits.
  SmallVector<MaskRow> rows;
  for (int64_t i = 0; i < rowsPerWarp; ++i) {
    Value offset = cIndex(b, i);
    Value r = arith::AddIOp::create(b, warpRow, offset);
    rows.push_back(maskRow(b, r));
  }
  Value lane0 = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, lane, c0);
  Value c31 = cIndex(b, 31);
  Value scannedUp = arith::AddIOp::create(b, scanned, c31);
  Value c32 = cIndex(b, 32);
  Value groups = arith::DivUIOp::create(b, scannedUp, c32);
  buildFor(b, c0, groups, [&](LocBuilder &b, Value g) {
    Value groupStart = arith::MulIOp::create(b, g, c32);
    Value t = arith::AddIOp::create(b, groupStart, lane);
    Value exists =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, t, scanned);
    Value t0 = tileStart(b, t);
    SmallVector<std::pair<Value, Value>> keys;
    SmallVector<Value> starts;
    for (int64_t w = 0; w * 64 < KV; ++w) {
      keys.push_back(keysMask(b, t0, w));
      Value windowStart = cIndex(b, 64 * w);
      Value key0 = arith::AddIOp::create(b, t0, windowStart);
      starts.push_back(toI64(b, key0));
    }
    // Every row's windows are loaded together (their latencies overlap).
    SmallVector<Value> at;
    for (const MaskRow &row : rows)
      for (Value start : starts)
        at.push_back(arith::AddIOp::create(b, row.bit, start));
    SmallVector<std::pair<Value, Value>> windows = bitWindows->loadAll(b, at);
    Value allKeys = boolConst(b, true);
    Value anyKey = boolConst(b, false);
    for (auto [ri, row] : llvm::enumerate(rows)) {
      Value rowAll = boolConst(b, true);
      Value rowAny = boolConst(b, false);
      for (size_t w = 0; w < keys.size(); ++w) {
        std::pair<Value, Value> bits = windows[ri * keys.size() + w];
        for (auto [word, key] : {std::pair(bits.first, keys[w].first),
                                 std::pair(bits.second, keys[w].second)}) {
          Value seen = arith::AndIOp::create(b, word, key);
          Value every =
              arith::CmpIOp::create(b, arith::CmpIPredicate::eq, seen, key);
          rowAll = arith::AndIOp::create(b, rowAll, every);
          Value zero = cI32(b, 0);
          Value some =
              arith::CmpIOp::create(b, arith::CmpIPredicate::ne, seen, zero);
          rowAny = arith::OrIOp::create(b, rowAny, some);
        }
      }
      Value skipped = negate(b, row.valid);
      rowAll = arith::OrIOp::create(b, rowAll, skipped);
      allKeys = arith::AndIOp::create(b, allKeys, rowAll);
      rowAny = arith::AndIOp::create(b, rowAny, row.valid);
      anyKey = arith::OrIOp::create(b, anyKey, rowAny);
    }
    anyKey = arith::AndIOp::create(b, anyKey, exists);
    Value allBits = vote(b, allKeys, NVVM::VoteSyncKind::ballot);
    Value anyBits = vote(b, anyKey, NVVM::VoteSyncKind::ballot);
    Value zero = cI32(b, 0);
    Value someTile =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ne, anyBits, zero);
    Value group32 = toI32(b, groupStart);
    Value low = LLVM::CountTrailingZerosOp::create(b, b.getI32Type(), anyBits,
                                                   /*is_zero_poison=*/false);
    Value firstTile = arith::AddIOp::create(b, group32, low);
    Value high = LLVM::CountLeadingZerosOp::create(b, b.getI32Type(), anyBits,
                                                   /*is_zero_poison=*/false);
    Value c31i = cI32(b, 31);
    Value top = arith::SubIOp::create(b, c31i, high);
    Value lastTile = arith::AddIOp::create(b, group32, top);
    auto atomic = [&](Value cond, arith::AtomicRMWKind kind, Value value,
                      int64_t slot, Value index) {
      Value mine = arith::AndIOp::create(b, lane0, cond);
      buildIf(
          b, mine,
          [&](LocBuilder &b) {
            Value at = index;
            if (slot) {
              Value base = cIndex(b, slot);
              at = arith::AddIOp::create(b, base, index);
            }
            memref::AtomicRMWOp::create(b, kind, value, tileClasses,
                                        ValueRange{at});
            return SmallVector<Value>();
          },
          [](LocBuilder &) { return SmallVector<Value>(); });
    };
    const int64_t words = parts::kClassifiedTiles / 32;
    Value yes = boolConst(b, true);
    atomic(yes, arith::AtomicRMWKind::andi, allBits, 0, g);
    atomic(someTile, arith::AtomicRMWKind::ori, anyBits, words, g);
    atomic(someTile, arith::AtomicRMWKind::mins, firstTile, 2 * words, c0);
    atomic(someTile, arith::AtomicRMWKind::maxs, lastTile, 2 * words + 1, c0);
  });
}

void PrefillBuilder::restrictKeyTiles(LocBuilder &b) {
  const int64_t words = parts::kClassifiedTiles / 32;
  Value firstSlot = cIndex(b, 2 * words);
  Value first = memref::LoadOp::create(b, tileClasses, ValueRange{firstSlot});
  Value lastSlot = cIndex(b, 2 * words + 1);
  Value last = memref::LoadOp::create(b, tileClasses, ValueRange{lastSlot});
  // Tiles past the classified ones are visited as partly visible.
  Value total = toI32(b, numTiles);
  Value classifiable = cI32(b, parts::kClassifiedTiles);
  Value unclassified =
      arith::CmpIOp::create(b, arith::CmpIPredicate::sgt, total, classifiable);
  Value firstOrRest = arith::MinSIOp::create(b, first, classifiable);
  first = arith::SelectOp::create(b, unclassified, firstOrRest, first);
  Value one = cI32(b, 1);
  Value lastTile = arith::SubIOp::create(b, total, one);
  last = arith::SelectOp::create(b, unclassified, lastTile, last);
  Value span = arith::SubIOp::create(b, last, first);
  Value spanTiles = arith::AddIOp::create(b, span, one);
  Value zero = cI32(b, 0);
  Value count = arith::MaxSIOp::create(b, spanTiles, zero);
  Value none = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, count, zero);
  Value base = arith::SelectOp::create(b, none, zero, first);
  classBase = arith::IndexCastOp::create(b, b.getIndexType(), base);
  kTileBegin = tileStart(b, classBase);
  numTiles = arith::IndexCastOp::create(b, b.getIndexType(), count);
}

Value PrefillBuilder::tileClass(LocBuilder &b, Value it, bool allVisible) {
  const int64_t words = parts::kClassifiedTiles / 32;
  Value t = arith::AddIOp::create(b, it, classBase);
  Value classified =
      cmpIndex(b, arith::CmpIPredicate::ult, t, parts::kClassifiedTiles);
  Value lastClassified = cIndex(b, parts::kClassifiedTiles - 1);
  Value tc = arith::MinUIOp::create(b, t, lastClassified);
  Value c32 = cIndex(b, 32);
  Value word = arith::DivUIOp::create(b, tc, c32);
  if (!allVisible) {
    Value wordsIndex = cIndex(b, words);
    word = arith::AddIOp::create(b, word, wordsIndex);
  }
  Value bits = memref::LoadOp::create(b, tileClasses, ValueRange{word});
  Value inWord = arith::RemUIOp::create(b, tc, c32);
  Value shift = toI32(b, inWord);
  Value shifted = arith::ShRUIOp::create(b, bits, shift);
  Value one = cI32(b, 1);
  Value bit = arith::AndIOp::create(b, shifted, one);
  Value zero = cI32(b, 0);
  Value set = arith::CmpIOp::create(b, arith::CmpIPredicate::ne, bit, zero);
  // Unclassified tiles: some key visible, not every one.
  if (allVisible)
    return arith::AndIOp::create(b, set, classified);
  return arith::OrIOp::create(b, set, negate(b, classified));
}

SmallVector<PrefillBuilder::KeyVisibility>
PrefillBuilder::packedVisibility(LocBuilder &b, Value laneKey) {
  assert(mma.atom.n == 8 && laneCols == 2 && "a lane's keys 8 nt + e");
  // The lane's keys laneCol + 8 nt + e: bit 8 (nt % 8) + e of window nt / 8
  // of its row; every row's windows are loaded together.
  int64_t perRow = (sTiles + 7) / 8;
  SmallVector<Value> at;
  for (int64_t ri = 0; ri < R; ++ri)
    for (int64_t w = 0; w < perRow; ++w) {
      Value windowStart = cIndex(b, 64 * w);
      Value key = arith::AddIOp::create(b, laneKey, windowStart);
      Value key64 = toI64(b, key);
      at.push_back(arith::AddIOp::create(b, rowBits[ri], key64));
    }
  SmallVector<std::pair<Value, Value>> windows = bitWindows->loadAll(b, at);
  SmallVector<KeyVisibility> rows;
  for (int64_t ri = 0; ri < R; ++ri) {
    SmallVector<std::pair<Value, Value>> own(
        windows.begin() + ri * perRow, windows.begin() + (ri + 1) * perRow);
    rows.push_back([own](LocBuilder &b, Value, int64_t nt, int64_t e) {
      return BitWindows::test(b, own[nt / 8], 8 * (nt % 8) + e);
    });
  }
  return rows;
}

SmallVector<Value> PrefillBuilder::visibleTileBody(
    LocBuilder &b, Value it, ValueRange carried,
    function_ref<SmallVector<Value>(LocBuilder &)> body,
    function_ref<void(LocBuilder &)> skipped) {
  if (!packedMask)
    return body(b);
  Value visible = tileClass(b, it, /*allVisible=*/false);
  return llvm::to_vector(buildIf(b, visible, body, [&](LocBuilder &b) {
    skipped(b);
    return llvm::to_vector(carried);
  }));
}

} // namespace flashir::conversion::prefill
