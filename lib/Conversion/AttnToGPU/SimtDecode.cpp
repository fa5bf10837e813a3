//===- SimtDecode.cpp - the CUDA-core decode kernel -----------------------===//
//
// CUDA-core decode kernel (FlashInfer's design): one CTA per (request, KV
// head) serves the g = Hq/Hkv query heads of that KV head, so every K/V row
// it loads from the paged cache is used g times. Lanes split the head
// dimension into 16-byte vectors (8 f16/bf16 elements, one `ld.global.v4`
// each); a key group of D/8 lanes computes one key's score with a
// butterfly warp reduction; the warp's key groups and the CTA's warps each
// keep an online-softmax state that are merged at the end (shuffles, then
// shared memory). All address arithmetic is written in upstream dialects;
// the variant's logits and mask hooks are inlined. Runs on every chip
// (register double buffering on sm_75, a cp.async ring on sm_80+).
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

using namespace mlir;

namespace flashir::conversion::kernels {

/// Builds the CUDA-core decode kernel of a KernelBuilder: the lanes' key
/// groups and rows (bindLanes, bindKeyRange, bindRowOwners), then per query
/// row its fragments, the key loop (registerLoop or stagedLoop around
/// processKeys) and the merge of the lanes' and warps' states.
class SimtDecodeBuilder {
public:
  explicit SimtDecodeBuilder(KernelBuilder &kernel)
      : k(kernel), s(kernel.s), hooks(kernel.hooks),
        ctx(kernel.op.getContext()), D(s.headDim), g(s.group), W(s.warps),
        U(s.unroll), S(s.stages) {}

  gpu::GPUFuncOp build(OpBuilder &moduleBuilder, StringRef name);

private:
  using Frame = KernelBuilder::Frame;

  /// The lanes' key groups, columns and the staging ring.
  void bindLanes(LocBuilder &b);
  /// The keys each warp walks and its iterations.
  void bindKeyRange(LocBuilder &b);
  /// The row each lane owns after the transposing reduction, its head and
  /// parameters.
  void bindRowOwners(LocBuilder &b);

  /// 16 bytes of the lane's columns, zeros for lanes past D / 8.
  Value loadLaneColumns(LocBuilder &b, Value memref, ValueRange indices);
  Value headOf(LocBuilder &b, int64_t r);
  Value jBaseOf(LocBuilder &b, Value it);
  Value keyIndex(LocBuilder &b, Value jBase, int64_t u);
  /// Key u of an iteration, clamped to the last key (only called for
  /// iterations < numIter, so kEnd > kBegin).
  Value keySafe(LocBuilder &b, Value jBase, int64_t u);
  /// The page of each of the U keys of iteration `it` (page-table loads).
  SmallVector<Value> pagesOf(LocBuilder &b, Value it);
  Value slotOf(LocBuilder &b, Value jBase, int64_t u);
  /// Row r's value of `v`, read from the first lane owning row r in this
  /// key group (every owner holds the same value).
  Value fromOwner(LocBuilder &b, Value v, int64_t r);
  Value shufflePiece(LocBuilder &b, Value raw, Value srcLane);
  Value laneOfColumn(LocBuilder &b, Value col);
  /// A key hook's partners of the lane's 8 columns (half a head away), from
  /// the key group's other lanes.
  Value partnerColumns(LocBuilder &b, Value raw);

  /// Query row `i` of the request: fragments, key loop, merge, store.
  void buildRow(LocBuilder &b, Value i);
  /// The query fragments of the g rows of token `row`, pre-scaled by
  /// scale * log2(e): scores live in the base-2 domain.
  void loadQueries(LocBuilder &b, Value row);
  /// One iteration's keys folded into the state (see the definition).
  void processKeys(LocBuilder &b, SmallVector<Value> &state, Value jBase,
                   ArrayRef<Value> kRaw, ArrayRef<Value> vRaw);
  /// The key loop with register double buffering (every chip).
  ValueRange registerLoop(LocBuilder &b, SmallVector<Value> inits);
  /// The key loop over a cp.async ring (sm_80+).
  ValueRange stagedLoop(LocBuilder &b, ArrayRef<Value> inits);
  /// Merges the warp's key groups and then the warps (shared memory) and
  /// writes row `i`.
  void mergeAndStore(LocBuilder &b, ValueRange finalState, Value i);

  KernelBuilder &k;
  const KernelShape &s;
  VariantHooks &hooks;
  MLIRContext *ctx;
  int64_t D, g, W, U, S;

  Frame f;
  Value c0, c1, smem, stage;
  Value tid, warp, lane, keyGroup, laneInGroup, e0, hasColumns, zeroRaw;
  VectorType rawType;
  int64_t groupLanes = 0, keysPerIter = 0;
  Value start, step, numIter;
  int64_t rowsPow2 = 0, lanesPerRow = 0;
  Value ownHead, groupBase;
  SmallVector<Value> ownParams, upperHalf;
  /// Per query row: its position, fragments and zero accumulator.
  Value qpos, zeroVec;
  SmallVector<Value> qFrag;
};

gpu::GPUFuncOp KernelBuilder::buildSimt(OpBuilder &moduleBuilder,
                                        StringRef name) {
  return SimtDecodeBuilder(*this).build(moduleBuilder, name);
}

gpu::GPUFuncOp SimtDecodeBuilder::build(OpBuilder &moduleBuilder,
                                        StringRef name) {
  // One 16-byte aligned workgroup buffer, viewed twice: the cp.async staging
  // ring while the warps walk the keys, then the warps' states for the final
  // merge (a barrier separates the two uses).
  gpu::GPUFuncOp func = k.createKernel(
      moduleBuilder, name, sharedMemoryBytes(s), /*dynamicShared=*/false);
  Block &entry = func.getBody().front();
  OpBuilder ob = OpBuilder::atBlockBegin(&entry);
  LocBuilder b(k.op.getLoc(), ob);
  f = k.loadFrame(b, func, /*dynamicShared=*/false);
  c0 = cIndex(b, 0);
  c1 = cIndex(b, 1);
  bindLanes(b);
  bindKeyRange(b);
  bindRowOwners(b);
  buildFor(b, c0, f.numQ, [&](LocBuilder &b, Value i) { buildRow(b, i); });
  k.waitInLastCta(b);
  gpu::ReturnOp::create(b);
  return func;
}

void SimtDecodeBuilder::bindLanes(LocBuilder &b) {
  auto workgroup =
      gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  smem = k.statesView(b, f);
  // Per warp, stage, key (K and V) and lane: the lane's 16 bytes.
  if (S > 0)
    stage = memref::ViewOp::create(
        b,
        MemRefType::get({W, S, 2 * U, 32, kVec}, s.element,
                        MemRefLayoutAttrInterface(), workgroup),
        f.buf, c0, ValueRange{});

  tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  // Key groups of D / 8 lanes rounded up to a power of two: the lanes past
  // D / 8 (`hasColumns` false) load nothing, hold zeros and store nothing.
  groupLanes = simtGroupLanes(D);
  keysPerIter = 32 / groupLanes;
  warp = arith::DivUIOp::create(b, tid, cIndex(b, 32));
  lane = arith::RemUIOp::create(b, tid, cIndex(b, 32));
  keyGroup = arith::DivUIOp::create(b, lane, cIndex(b, groupLanes));
  laneInGroup = arith::RemUIOp::create(b, lane, cIndex(b, groupLanes));
  e0 = arith::MulIOp::create(b, laneInGroup, cIndex(b, kVec));
  if (groupLanes * kVec != D) {
    hasColumns =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, e0, cIndex(b, D));
    e0 = arith::SelectOp::create(b, hasColumns, e0, c0);
  }
  rawType = VectorType::get({kVec}, s.element);
  zeroRaw = arith::ConstantOp::create(
      b, DenseElementsAttr::get(rawType, b.getZeroAttr(s.element)));
}

Value SimtDecodeBuilder::loadLaneColumns(LocBuilder &b, Value memref,
                                         ValueRange indices) {
  Value v = k.loadRaw(b, memref, indices);
  if (!hasColumns)
    return v;
  return arith::SelectOp::create(b, hasColumns, v, zeroRaw).getResult();
}

Value SimtDecodeBuilder::headOf(LocBuilder &b, int64_t r) {
  Value base = arith::MulIOp::create(b, f.kvHead, cIndex(b, g));
  return arith::AddIOp::create(b, base, cIndex(b, r));
}

// Each warp walks its own keys: iteration `it` covers keys
// [jBase, jBase + keysPerIter * U) with jBase = start + it * step, where
// key group `keyGroup` takes keys jBase + u * keysPerIter + keyGroup. The
// trip count is uniform per warp (shuffles need every lane): keys past the
// end load a valid key (the last one) and are masked out. The keys are the
// CTA's: all of the request's, or its chunk's.
void SimtDecodeBuilder::bindKeyRange(LocBuilder &b) {
  start = arith::AddIOp::create(
      b, f.kBegin, arith::MulIOp::create(b, warp, cIndex(b, keysPerIter * U)));
  step = cIndex(b, W * keysPerIter * U);
  Value rem = arith::SubIOp::create(b, f.kEnd, start);
  Value anyKey = arith::CmpIOp::create(b, arith::CmpIPredicate::sgt, rem, c0);
  numIter = arith::SelectOp::create(
      b, anyKey,
      arith::DivUIOp::create(
          b, arith::AddIOp::create(b, rem, cIndex(b, W * keysPerIter * U - 1)),
          step),
      c0);
}

Value SimtDecodeBuilder::jBaseOf(LocBuilder &b, Value it) {
  return arith::AddIOp::create(b, start, arith::MulIOp::create(b, it, step));
}

Value SimtDecodeBuilder::keyIndex(LocBuilder &b, Value jBase, int64_t u) {
  return arith::AddIOp::create(
      b, jBase, arith::AddIOp::create(b, cIndex(b, u * keysPerIter), keyGroup));
}

Value SimtDecodeBuilder::keySafe(LocBuilder &b, Value jBase, int64_t u) {
  Value key = keyIndex(b, jBase, u);
  return arith::MinSIOp::create(b, key, arith::SubIOp::create(b, f.kEnd, c1));
}

SmallVector<Value> SimtDecodeBuilder::pagesOf(LocBuilder &b, Value it) {
  Value jBase = jBaseOf(b, it);
  SmallVector<Value> ids;
  for (int64_t u = 0; u < U; ++u) {
    Value key = keySafe(b, jBase, u);
    Value page = arith::DivUIOp::create(b, key, cIndex(b, s.pageSize));
    ids.push_back(
        k.poolPage(b, f, arith::AddIOp::create(b, f.pageBegin, page)));
  }
  return ids;
}

Value SimtDecodeBuilder::slotOf(LocBuilder &b, Value jBase, int64_t u) {
  Value key = keySafe(b, jBase, u);
  return arith::RemUIOp::create(b, key, cIndex(b, s.pageSize));
}

void SimtDecodeBuilder::bindRowOwners(LocBuilder &b) {
  Type i32 = IntegerType::get(ctx, 32);
  // Rows padded to a power of two for the transposing reduction; lane t of
  // a key group owns row t / (groupLanes / rowsPow2).
  rowsPow2 = static_cast<int64_t>(llvm::PowerOf2Ceil(g));
  lanesPerRow = groupLanes / rowsPow2;
  Value ownRow = arith::DivUIOp::create(b, laneInGroup, cIndex(b, lanesPerRow));
  // Padding rows take a real head's parameters (never used).
  Value headBase = arith::MulIOp::create(b, f.kvHead, cIndex(b, g));
  ownHead = arith::AddIOp::create(
      b, headBase, arith::MinUIOp::create(b, ownRow, cIndex(b, g - 1)));
  ownParams = k.paramValues(b, f, ownHead);
  for (int64_t off = groupLanes / 2, n = rowsPow2; n > 1; off /= 2, n /= 2)
    upperHalf.push_back(arith::CmpIOp::create(
        b, arith::CmpIPredicate::ne,
        arith::AndIOp::create(b, laneInGroup, cIndex(b, off)), c0));
  groupBase = arith::IndexCastOp::create(
      b, i32, arith::MulIOp::create(b, keyGroup, cIndex(b, groupLanes)));
}

Value SimtDecodeBuilder::fromOwner(LocBuilder &b, Value v, int64_t r) {
  if (rowsPow2 == 1)
    return v;
  Value src = arith::AddIOp::create(
      b, groupBase,
      arith::ConstantOp::create(
          b, b.getI32IntegerAttr(static_cast<int32_t>(r * lanesPerRow))));
  return gpu::ShuffleOp::create(
             b, v, src, arith::ConstantOp::create(b, b.getI32IntegerAttr(32)),
             gpu::ShuffleMode::IDX)
      .getShuffleResult();
}

// One 16-byte piece where D/2 is a multiple of 8, else the halves of two.
Value SimtDecodeBuilder::shufflePiece(LocBuilder &b, Value raw, Value srcLane) {
  Type i32 = IntegerType::get(ctx, 32);
  auto words = VectorType::get({4}, i32);
  Value packed = vector::BitCastOp::create(b, words, raw);
  Value width = arith::ConstantOp::create(b, b.getI32IntegerAttr(32));
  SmallVector<Value> moved;
  for (int64_t w = 0; w < 4; ++w) {
    Value word = vector::ExtractOp::create(b, packed, w);
    moved.push_back(
        gpu::ShuffleOp::create(b, word, srcLane, width, gpu::ShuffleMode::IDX)
            .getShuffleResult());
  }
  Value unpacked = vector::FromElementsOp::create(b, words, moved);
  return vector::BitCastOp::create(b, rawType, unpacked);
}

Value SimtDecodeBuilder::laneOfColumn(LocBuilder &b, Value col) {
  Type i32 = IntegerType::get(ctx, 32);
  Value inGroup = arith::DivUIOp::create(b, col, cIndex(b, kVec));
  Value index = arith::IndexCastOp::create(b, i32, inGroup);
  return arith::AddIOp::create(b, groupBase, index);
}

Value SimtDecodeBuilder::partnerColumns(LocBuilder &b, Value raw) {
  int64_t half = D / 2, off = half % kVec;
  Value shifted = arith::AddIOp::create(b, e0, cIndex(b, half - off));
  Value base = arith::RemUIOp::create(b, shifted, cIndex(b, D));
  Value first = shufflePiece(b, raw, laneOfColumn(b, base));
  if (off == 0)
    return first;
  Value next = arith::AddIOp::create(b, base, cIndex(b, kVec));
  next = arith::RemUIOp::create(b, next, cIndex(b, D));
  Value second = shufflePiece(b, raw, laneOfColumn(b, next));
  SmallVector<int64_t> order;
  for (int64_t e = 0; e < kVec; ++e)
    order.push_back(off + e);
  return vector::ShuffleOp::create(b, first, second, order);
}

void SimtDecodeBuilder::loadQueries(LocBuilder &b, Value row) {
  qFrag.clear();
  for (int64_t r = 0; r < g; ++r) {
    Value head = headOf(b, r);
    Value qRaw = loadLaneColumns(b, f.q, {row, head, e0});
    if (hooks.hasQuery()) {
      Value rot =
          k.loadRotated(b, e0, [&](LocBuilder &b, Value col, int64_t w) {
            return k.loadColumns(b, f.q, {row, head}, col, w);
          });
      qRaw = k.applyRowHook(b, /*isKey=*/false, qRaw, rot, e0, qpos, head,
                            k.paramValues(b, f, head));
      if (hasColumns)
        qRaw = arith::SelectOp::create(b, hasColumns, qRaw, zeroRaw);
    }
    Value qRow = k.widen(b, qRaw);
    qFrag.push_back(
        arith::MulFOp::create(b, qRow, k.splat(b, cF32(b, s.scale * kLog2E))));
  }
}

void SimtDecodeBuilder::buildRow(LocBuilder &b, Value i) {
  Value row = arith::AddIOp::create(b, f.qBegin, i);
  qpos = arith::SubIOp::create(b, arith::AddIOp::create(b, i, f.keysTotal),
                               f.numQ);
  loadQueries(b, row);
  // Carried: the lane's own row's m and l, then acc of every row.
  zeroVec = k.splat(b, cF32(b, 0.0f));
  // Sigmoid keeps m = 0: its states merge by plain sums.
  SmallVector<Value> inits = {hooks.sigmoid() ? cF32(b, 0.0f) : negInf(b),
                              cF32(b, 0.0f)};
  for (int64_t r = 0; r < g; ++r)
    inits.push_back(zeroVec);
  ValueRange finalState =
      S == 0 ? registerLoop(b, inits) : stagedLoop(b, inits);
  mergeAndStore(b, finalState, i);
}

// Each key's g partial dot products are reduced over the key's lanes by a
// transposing butterfly (each step halves the rows a lane keeps), so every
// lane ends with the full score of one row (its own row) after
// log2(groupLanes) shuffles in total; the online softmax runs once per lane
// for that row, and the rows' rescale factors and probabilities are then
// broadcast from their owners to the lanes holding the accumulators.
void SimtDecodeBuilder::processKeys(LocBuilder &b, SmallVector<Value> &state,
                                    Value jBase, ArrayRef<Value> kRaw,
                                    ArrayRef<Value> vRaw) {
  SmallVector<Value> js, inRange, ks, vs;
  for (int64_t u = 0; u < U; ++u) {
    Value j = keyIndex(b, jBase, u);
    js.push_back(j);
    inRange.push_back(
        arith::CmpIOp::create(b, arith::CmpIPredicate::slt, j, f.kEnd));
    Value key = kRaw[u];
    if (hooks.hasKey()) {
      Value rot = partnerColumns(b, key);
      key = k.applyRowHook(b, /*isKey=*/true, key, rot, e0,
                           k.hookKeyPosition(b, f, j), f.kvHead, ownParams);
      if (hasColumns)
        key = arith::SelectOp::create(b, hasColumns, key, zeroRaw);
    }
    ks.push_back(k.widen(b, key));
    vs.push_back(k.widen(b, vRaw[u]));
  }
  SmallVector<Value> own;
  for (int64_t u = 0; u < U; ++u) {
    SmallVector<Value> vals;
    for (int64_t r = 0; r < rowsPow2; ++r)
      vals.push_back(r < g ? k.dot(b, qFrag[r], ks[u]) : cF32(b, 0.0f));
    int64_t off = groupLanes / 2;
    for (size_t step = 0; vals.size() > 1; ++step, off /= 2) {
      size_t half = vals.size() / 2;
      SmallVector<Value> kept;
      for (size_t x = 0; x < half; ++x) {
        Value send = arith::SelectOp::create(b, upperHalf[step], vals[x],
                                             vals[half + x]);
        Value keep = arith::SelectOp::create(b, upperHalf[step], vals[half + x],
                                             vals[x]);
        kept.push_back(
            arith::AddFOp::create(b, keep, k.shuffleXor(b, send, off)));
      }
      vals = std::move(kept);
    }
    Value score = vals.front();
    for (; off >= 1; off /= 2)
      score = arith::AddFOp::create(b, score, k.shuffleXor(b, score, off));
    if (hooks.hasLogits()) {
      // Hooks see natural-domain logits.
      Value natural = arith::MulFOp::create(b, score, cF32(b, kLn2));
      Value logit = hooks.logits(
          b, natural, qpos, k.hookKeyPosition(b, f, js[u]), ownHead, ownParams);
      score = arith::MulFOp::create(b, logit, cF32(b, kLog2E));
    }
    Value keep = inRange[u];
    if (Value visible = hooks.mask(b, qpos, k.hookKeyPosition(b, f, js[u]),
                                   ownHead, ownParams))
      keep = arith::AndIOp::create(b, keep, visible);
    own.push_back(arith::SelectOp::create(b, keep, score, negInf(b)));
  }
  Value m = state[0], l = state[1];
  // Sigmoid: p = sigmoid(s), no maximum and no rescale (c stays null);
  // masked keys weigh 0.
  Value mNew = m, mSafe, c;
  if (!hooks.sigmoid()) {
    for (Value x : own)
      mNew = arith::MaxNumFOp::create(b, mNew, x);
    // exp2(-inf - mSafe) = 0 without a NaN when every score is -inf.
    Value noMax = isNegInf(b, mNew);
    mSafe = arith::SelectOp::create(b, noMax, cF32(b, 0.0f), mNew);
    c = math::Exp2Op::create(b, arith::SubFOp::create(b, m, mSafe));
    l = arith::MulFOp::create(b, l, c);
  }
  SmallVector<Value> p;
  for (Value x : own) {
    p.push_back(hooks.sigmoid() ? k.sigmoidBase2(b, x)
                                : Value(math::Exp2Op::create(
                                      b, arith::SubFOp::create(b, x, mSafe))));
    l = arith::AddFOp::create(b, l, p.back());
  }
  state[0] = mNew;
  state[1] = l;
  for (int64_t r = 0; r < g; ++r) {
    Value acc = state[2 + r];
    if (c)
      acc = arith::MulFOp::create(b, acc, k.splat(b, fromOwner(b, c, r)));
    for (int64_t u = 0; u < U; ++u)
      acc = vector::FMAOp::create(b, vs[u], k.splat(b, fromOwner(b, p[u], r)),
                                  acc);
    state[2 + r] = acc;
  }
}

// The loads of the next iteration are issued before this iteration's
// arithmetic.
ValueRange SimtDecodeBuilder::registerLoop(LocBuilder &b,
                                           SmallVector<Value> inits) {
  size_t numState = inits.size();
  auto loadKeys = [&](LocBuilder &b, Value it) {
    SmallVector<Value> ids = pagesOf(b, it);
    Value jBase = jBaseOf(b, it);
    SmallVector<Value> kv;
    for (int64_t u = 0; u < U; ++u) {
      Value slot = slotOf(b, jBase, u);
      kv.push_back(loadLaneColumns(b, f.kPool, {ids[u], slot, f.kvHead, e0}));
      kv.push_back(loadLaneColumns(b, f.vPool, {ids[u], slot, f.kvHead, e0}));
    }
    return kv;
  };
  Value hasKeys =
      arith::CmpIOp::create(b, arith::CmpIPredicate::sgt, numIter, c0);
  SmallVector<Value> first = llvm::to_vector(buildIf(
      b, hasKeys, [&](LocBuilder &b) { return loadKeys(b, c0); },
      [&](LocBuilder &b) { return SmallVector<Value>(2 * U, zeroRaw); }));
  inits.append(first);
  return buildFor(
      b, c0, numIter, inits, [&](LocBuilder &b, Value it, ValueRange carried) {
        Value itNext = arith::AddIOp::create(b, it, c1);
        // The last iteration reloads its own keys (valid memory).
        SmallVector<Value> nextRaw =
            loadKeys(b, arith::MinSIOp::create(
                            b, itNext, arith::SubIOp::create(b, numIter, c1)));
        SmallVector<Value> state(carried.take_front(numState)), kRaw, vRaw;
        for (int64_t u = 0; u < U; ++u) {
          kRaw.push_back(carried[numState + 2 * u]);
          vRaw.push_back(carried[numState + 2 * u + 1]);
        }
        processKeys(b, state, jBaseOf(b, it), kRaw, vRaw);
        state.append(nextRaw);
        return state;
      });
}

// A ring of S stages per warp; each lane copies exactly the 16-byte pieces
// it reads back, so completion of its own copy groups is all the
// synchronisation needed. Iteration `it` issues the copies of iteration
// it + S - 1 (page ids loaded one iteration earlier, so the copies never
// wait on the page table), then waits for the group of iteration `it`.
ValueRange SimtDecodeBuilder::stagedLoop(LocBuilder &b, ArrayRef<Value> inits) {
  Type tokenType = nvgpu::DeviceAsyncTokenType::get(ctx);
  // Lanes past D / 8 zero-fill their 16 bytes.
  Value srcElements;
  if (hasColumns) {
    Value full = cIndex(b, kVec), none = cIndex(b, 0);
    srcElements = arith::SelectOp::create(b, hasColumns, full, none);
  }
  auto issue = [&](LocBuilder &b, Value it, ArrayRef<Value> ids) {
    Value jBase = jBaseOf(b, it);
    Value ring = arith::RemUIOp::create(b, it, cIndex(b, S));
    Value pools[] = {f.kPool, f.vPool};
    for (int64_t u = 0; u < U; ++u) {
      Value slot = slotOf(b, jBase, u);
      for (auto [kind, pool] : llvm::enumerate(pools))
        nvgpu::DeviceAsyncCopyOp::create(
            b, stage, ValueRange{warp, ring, cIndex(b, 2 * u + kind), lane, c0},
            pool, ValueRange{ids[u], slot, f.kvHead, e0}, b.getIndexAttr(kVec),
            srcElements, /*bypassL1=*/b.getUnitAttr());
    }
  };
  return k.buildStagedLoop(
      b, numIter, inits, SmallVector<Value>(U, c0),
      [&](LocBuilder &b, Value it) { return pagesOf(b, it); }, issue,
      [&](LocBuilder &b) -> Value {
        return nvgpu::DeviceAsyncCreateGroupOp::create(b, tokenType,
                                                       ValueRange{});
      },
      [&](LocBuilder &b, Value, Value token) {
        nvgpu::DeviceAsyncWaitOp::create(b, token, b.getI32IntegerAttr(S - 1));
      },
      [&](LocBuilder &b, Value it, ValueRange carried) {
        Value ring = arith::RemUIOp::create(b, it, cIndex(b, S));
        SmallVector<Value> kRaw, vRaw;
        for (int64_t u = 0; u < U; ++u)
          for (int64_t kind = 0; kind < 2; ++kind)
            (kind ? vRaw : kRaw)
                .push_back(vector::LoadOp::create(
                    b, VectorType::get({kVec}, s.element), stage,
                    ValueRange{warp, ring, cIndex(b, 2 * u + kind), lane, c0},
                    /*nontemporal=*/false, llvm::MaybeAlign(16)));
        SmallVector<Value> state(carried);
        processKeys(b, state, jBaseOf(b, it), kRaw, vRaw);
        return state;
      });
}

// Lanes d, d + groupLanes, ... hold the same dims: shuffles merge the
// warp's key groups, then shared memory the warps.
void SimtDecodeBuilder::mergeAndStore(LocBuilder &b, ValueRange finalState,
                                      Value i) {
  SmallVector<Value> m, l, acc;
  for (int64_t r = 0; r < g; ++r) {
    // Row r's m (back to the natural domain) and l from its owner.
    Value mBase2 = fromOwner(b, finalState[0], r);
    m.push_back(arith::MulFOp::create(b, mBase2, cF32(b, kLn2)));
    l.push_back(fromOwner(b, finalState[1], r));
    acc.push_back(finalState[2 + r]);
    for (int64_t off = groupLanes; off < 32; off *= 2) {
      Value accOther = zeroVec;
      for (int64_t e = 0; e < kVec; ++e) {
        Value x = vector::ExtractOp::create(b, acc[r], e);
        accOther =
            vector::InsertOp::create(b, k.shuffleXor(b, x, off), accOther, e);
      }
      Value mOther = k.shuffleXor(b, m[r], off);
      Value lOther = k.shuffleXor(b, l[r], off);
      k.merge(b, m[r], l[r], acc[r], mOther, lOther, accOther);
    }
  }
  // Every warp is done with the staging ring (it aliases the states) and
  // the previous row's readers are done.
  gpu::BarrierOp::create(b);
  Value leader =
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, keyGroup, c0);
  if (hasColumns)
    leader = arith::AndIOp::create(b, leader, hasColumns);
  scf::IfOp::create(b, leader, [&](OpBuilder &iob, Location loc) {
    LocBuilder b(loc, iob);
    for (int64_t r = 0; r < g; ++r) {
      Value rr = cIndex(b, r);
      vector::StoreOp::create(b, acc[r], smem, ValueRange{warp, rr, e0},
                              /*nontemporal=*/false, llvm::MaybeAlign(16));
      memref::StoreOp::create(b, m[r], smem,
                              ValueRange{warp, rr, cIndex(b, D)});
      memref::StoreOp::create(b, l[r], smem,
                              ValueRange{warp, rr, cIndex(b, D + 1)});
    }
    scf::YieldOp::create(b);
  });
  k.writeRows(b, f, smem, warp, lane, i);
}

} // namespace flashir::conversion::kernels
