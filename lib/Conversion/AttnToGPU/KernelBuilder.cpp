//===- KernelBuilder.cpp - the attention kernels' common parts ------------===//
//
// What every attention kernel shares: which attention ops the GPU supports,
// the kernel ABI, the per-CTA request/chunk quantities, the decode kernels'
// final merge of the warps' states and their staged key loop (the split-KV
// merge kernel is MergeKernel.cpp, the prefill kernels' frame
// PrefillFrame.cpp).
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

#include <algorithm>

using namespace mlir;

namespace flashir::conversion::kernels {

int64_t sharedMemoryBytes(bool tensorCores, bool bulkCopy, bool tensorCopy,
                          int64_t warps, int64_t group, int64_t headDim,
                          int64_t unroll, int64_t stages,
                          int64_t elementBytes) {
  int64_t states = warps * group * (headDim + 4) * 4;
  // Per warp and stage: the CUDA-core kernel stages 2 * unroll keys per
  // 16-byte lane piece; the tensor-core one a tile of K and V rows (padded
  // by 16 bytes with row bulk copies; swizzled, unpadded, with tensor copies,
  // whose 1024-byte-aligned ring starts up to 1008 bytes into the buffer).
  // Bulk copies add one 8-byte mbarrier per warp and stage at the end.
  if (!tensorCores)
    return std::max(states,
                    warps * stages * 2 * unroll * 32 * kVec * elementBytes);
  // Tensor copies land whole boxes.
  int64_t boxed = tensorCopyBoxes(headDim) * tensorCopyBoxColumns(headDim);
  int64_t row = (tensorCopy ? boxed
                 : bulkCopy ? headDim + 8
                            : headDim) *
                elementBytes;
  int64_t staging = warps * stages * 2 * kTileKeys * row;
  // cp.async stages each lane's pieces, zero-filled past D.
  if (!bulkCopy)
    staging = warps * stages * TensorCoreDecodeLayout(headDim, group).slots() *
              32 * kVec * elementBytes;
  if (tensorCopy)
    staging += kSwizzleAlign - 16;
  return std::max(states, staging) + (bulkCopy ? warps * stages * 8 : 0);
}
int64_t sharedMemoryBytes(const KernelShape &s) {
  return sharedMemoryBytes(s.tensorCores, s.bulkCopy, s.tensorCopy, s.warps,
                           s.group, s.headDim, s.unroll, s.stages,
                           s.element.getIntOrFloatBitWidth() / 8);
}

/// Why `op` cannot become a decode kernel, or an empty string.
PagedKVType kvViewType(AttentionOp op) {
  Type type = op.getViews().front().getType();
  if (auto paged = dyn_cast<PagedKVType>(type))
    return paged;
  auto ragged = cast<RaggedKVType>(type);
  return PagedKVType::get(op.getContext(), 1, KVLayout::NHD,
                          ragged.getNumHeads(), ragged.getHeadDim(),
                          ragged.getElementType());
}

std::string unsupportedReason(AttentionOp op, VariantOp variant) {
  for (Value view : op.getViews())
    if (!isa_and_nonnull<PagedKVOp, RaggedKVOp>(view.getDefiningOp()))
      return "KV views defined by attn.paged_kv or attn.ragged_kv";
  for (Value view : op.getViews())
    if (view.getType() != op.getViews().front().getType())
      return "KV views of one type (page size, layout, heads, head dim, "
             "element type)";
  if (op.getViews().size() > 1 && op.getChunkIndptr())
    return "one KV view for split-KV chunks";
  PagedKVType view = kvViewType(op);
  if (!view.getElementType().isF16() && !view.getElementType().isBF16())
    return "f16 or bf16 elements";
  if (!op.getQueries().getDefiningOp<RaggedQOp>())
    return "queries defined by attn.ragged_q";
  if (op.getAttendedViews())
    return "no attended_views";
  Value output;
  if (op.getChunkIndptr()) {
    // Split-KV: the chunk states must be merged and finalized right away
    // (the merge kernel does both).
    auto merge = op->hasOneUse()
                     ? dyn_cast<MergeChunksOp>(*op->getUsers().begin())
                     : MergeChunksOp();
    FinalizeOp finalize;
    if (merge && merge->hasOneUse())
      finalize = dyn_cast<FinalizeOp>(*merge->getUsers().begin());
    if (!finalize || merge.getChunkIndptr() != op.getChunkIndptr() ||
        merge.getQueries() != op.getQueries())
      return "split-KV chunk states that go to one attn.merge_chunks (same "
             "queries and chunk_indptr) and then one attn.finalize";
    output = finalize.getOutput();
  } else {
    if (op.getNumResults() != 2)
      return "an (output, lse) result, or chunk states merged by "
             "attn.merge_chunks and attn.finalize";
    output = op.getResult(0);
  }
  if (cast<RankedTensorType>(output.getType()).getElementType() !=
      view.getElementType())
    return "an output of the KV element type";
  if (variant.getReduction() != ReductionKind::Softmax &&
      variant.getReduction() != ReductionKind::Sigmoid)
    return "a softmax or sigmoid variant";
  for (VariantParamAttr param : variant.getParamList()) {
    if (param.getKind() != ParamKind::Buffer) {
      if (!param.getType().isIntOrFloat())
        return "integer or float scalar, per-request and per-head parameters";
      continue;
    }
    auto tensor = dyn_cast<RankedTensorType>(param.getType());
    if (!tensor || tensor.getRank() != 1 ||
        !tensor.getElementType().isIntOrFloat())
      return "buffer parameters of one dimension";
  }
  // A K fragment serves every query head of the group.
  if (!variant.getKey().empty())
    for (auto [param, arg] :
         llvm::zip_equal(variant.getParamList(),
                         variant.getKey().front().getArguments().drop_front(5)))
      if (param.getKind() == ParamKind::PerHead && !arg.use_empty())
        return "a key hook without per-head parameters (a KV head's keys serve "
               "every query head of its group)";
  return VariantHooks(variant).bufferUseReason();
}

int64_t simtGroupLanes(int64_t headDim) {
  return static_cast<int64_t>(llvm::PowerOf2Ceil(headDim / kVec));
}

std::string decodeShapeReason(int64_t headDim, int64_t group,
                              bool tensorCores) {
  if (headDim % kVec != 0 || headDim < 16 || headDim > 256)
    return "head_dim a multiple of 8 from 16 to 256";
  if (tensorCores) {
    // The accumulators stay in registers across the key loop.
    TensorCoreDecodeLayout layout(headDim, group);
    if (layout.accumulators() > kMaxAccumulators)
      return "at most " + std::to_string(kMaxAccumulators) +
             " f32 accumulators per lane in the tensor-core kernel; " +
             std::to_string(group) + " query heads per KV head at head_dim " +
             std::to_string(headDim) + " need " +
             std::to_string(layout.accumulators());
    return "";
  }
  // The transposing score reduction ends with one row per lane of a key
  // group; every row's query and accumulator stay in registers.
  int64_t most = std::min<int64_t>(simtGroupLanes(headDim), 16);
  if (group > most)
    return "at most " + std::to_string(most) +
           " query heads per KV head in the CUDA-core kernel at head_dim " +
           std::to_string(headDim) + " (the tensor-core kernel takes more)";
  return "";
}

gpu::GPUFuncOp KernelBuilder::createKernel(OpBuilder &moduleBuilder,
                                           StringRef name, int64_t bufferBytes,
                                           bool dynamicShared) {
  MLIRContext *ctx = op.getContext();
  LocBuilder mb(op.getLoc(), moduleBuilder);
  Type i32 = mb.getI32Type(), f32 = mb.getF32Type();
  int64_t dyn = ShapedType::kDynamic, D = s.headDim;
  // The pools in (page, slot, head, column) order; an HND pool
  // ([pages, heads, page, dim] in memory) through its strides.
  MemRefLayoutAttrInterface poolLayout;
  if (s.access.headMajor)
    poolLayout = StridedLayoutAttr::get(ctx, 0, s.access.strides());
  auto poolType = MemRefType::get({dyn, s.pageSize, s.numKvHeads, D}, s.element,
                                  poolLayout);
  // Kernel ABI (recorded in the bundle manifest): abi::fixedArgs' roles,
  // then the variant's parameters. A ragged view's rows are one-token pages
  // in token order: no page table. Split-KV: chunk c covers keys
  // [chunk_starts[c], chunk_ends[c]) of request chunk_request[c]; its
  // partial state of query row i goes to row c + C * i of partial_o /
  // partial_lse (C = number of chunks; O in the element type, half the
  // bytes the merge reads), unless it is the request's only chunk: then the
  // final rows go to out / lse. The CTAs at grid position p serve chunk
  // chunk_order[p] (the planner's dispatch order). kv_maps: two 128-byte
  // CUtensorMap objects (K then V pool) the host encodes; read only by
  // kernels that stage tiles with tensor copies (KernelShape).
  auto typeOf = [&](abi::ArgRole role) -> Type {
    switch (role) {
    case abi::ArgRole::Q:
    case abi::ArgRole::PartialO:
    case abi::ArgRole::Out:
      return MemRefType::get({dyn, s.numQoHeads, D}, s.element);
    case abi::ArgRole::KPool:
    case abi::ArgRole::VPool:
      return poolType;
    case abi::ArgRole::PartialLse:
    case abi::ArgRole::Lse:
      return MemRefType::get({dyn, s.numQoHeads}, f32);
    case abi::ArgRole::KvMaps:
      return MemRefType::get({2, 16}, mb.getI64Type());
    default:
      return MemRefType::get({dyn}, i32);
    }
  };
  roles = abi::fixedArgs(abi::KernelKind::Decode, s.chunked,
                         /*ragged=*/!s.access.hasPageTable(), s.numViews);
  SmallVector<Type> args;
  argNames.clear();
  for (const abi::FixedArg &arg : roles) {
    args.push_back(typeOf(arg.role));
    argNames.push_back(arg.name());
  }
  for (VariantParamAttr param : variant.getParamList()) {
    Type type = param.getType();
    if (auto buffer = dyn_cast<RankedTensorType>(type))
      type = MemRefType::get(buffer.getShape(), buffer.getElementType());
    else if (param.getKind() != ParamKind::Scalar)
      type = MemRefType::get({dyn}, type);
    args.push_back(type);
    argNames.push_back(param.getName().str());
  }
  auto workgroup =
      gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  SmallVector<Type> attributions;
  if (!dynamicShared)
    attributions.push_back(MemRefType::get(
        {bufferBytes}, mb.getI8Type(), MemRefLayoutAttrInterface(), workgroup));
  auto func = gpu::GPUFuncOp::create(mb, name, FunctionType::get(ctx, args, {}),
                                     attributions);
  if (!dynamicShared)
    func.setWorkgroupAttributionAttr(0, StringAttr::get(ctx, "llvm.align"),
                                     mb.getI64IntegerAttr(16));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), mb.getUnitAttr());
  func.setKnownBlockSizeAttr(
      mb.getDenseI32ArrayAttr({int32_t(32 * s.warps), 1, 1}));
  if (s.minBlocksPerSM > 0)
    func->setAttr("nvvm.minctasm", mb.getI32IntegerAttr(s.minBlocksPerSM));
  return func;
}

KernelBuilder::Frame KernelBuilder::bindArguments(LocBuilder &b,
                                                  gpu::GPUFuncOp func,
                                                  bool dynamicShared) {
  Frame f;
  f.func = func;
  // The merge kernel's CTAs may start once every CTA here has: they wait for
  // this grid's completion before reading its states, and in the meantime
  // take over the SMs this grid's tail leaves idle.
  if (s.dependentLaunch)
    NVVM::GriddepcontrolOp::create(b,
                                   NVVM::GridDepActionKind::launch_dependents);
  f.entry = &func.getBody().front();
  // The fixed arguments by role (createKernel's order), then the variant's
  // parameters. Every view's arguments go to f.views; view 0 is current.
  f.views.resize(s.numViews);
  for (auto [index, fixed] : llvm::enumerate(roles)) {
    Value arg = f.entry->getArgument(index);
    if (abi::isViewRole(fixed.role)) {
      Frame::View &view = f.views[fixed.view];
      switch (fixed.role) {
      case abi::ArgRole::KPool:
        view.kPool = arg;
        break;
      case abi::ArgRole::VPool:
        view.vPool = arg;
        break;
      case abi::ArgRole::KvIndptr:
        view.indptr = arg;
        break;
      case abi::ArgRole::KvIndices:
        view.indices = arg;
        break;
      default:
        view.lastPageLen = arg;
      }
      continue;
    }
    switch (fixed.role) {
    case abi::ArgRole::Q:
      f.q = arg;
      break;
    case abi::ArgRole::QoIndptr:
      f.qoIndptr = arg;
      break;
    case abi::ArgRole::ChunkIndptr:
      f.chunkIndptr = arg;
      break;
    case abi::ArgRole::ChunkRequest:
      f.chunkRequest = arg;
      break;
    case abi::ArgRole::ChunkStarts:
      f.chunkStarts = arg;
      break;
    case abi::ArgRole::ChunkEnds:
      f.chunkEnds = arg;
      break;
    case abi::ArgRole::ChunkOrder:
      f.chunkOrder = arg;
      break;
    case abi::ArgRole::PartialO:
      f.partialO = arg;
      break;
    case abi::ArgRole::PartialLse:
      f.partialLse = arg;
      break;
    case abi::ArgRole::Out:
      f.out = arg;
      break;
    case abi::ArgRole::Lse:
      f.lse = arg;
      break;
    case abi::ArgRole::KvMaps:
      f.kvMaps = arg;
      break;
    default:
      break;
    }
  }
  const Frame::View &first = f.views.front();
  f.kPool = first.kPool;
  f.vPool = first.vPool;
  f.indptr = first.indptr;
  f.indices = first.indices;
  f.lastPageLen = first.lastPageLen;
  f.params = variant.getParamList();
  f.firstParam = roles.size();
  if (dynamicShared)
    f.buf = gpu::DynamicSharedMemoryOp::create(
        b, MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                           MemRefLayoutAttrInterface(),
                           gpu::AddressSpaceAttr::get(
                               b.getContext(), gpu::AddressSpace::Workgroup)));
  else
    f.buf = func.getWorkgroupAttributions().front();
  return f;
}

std::pair<Value, Value> KernelBuilder::viewKeys(LocBuilder &b, const Frame &f,
                                                Value indptr,
                                                Value lastPageLen) {
  Value c0 = cIndex(b, 0), c1 = cIndex(b, 1);
  Value pageBegin = loadIndex(b, indptr, f.req);
  Value pages = arith::SubIOp::create(
      b, loadIndex(b, indptr, arith::AddIOp::create(b, f.req, c1)), pageBegin);
  // A ragged view: its tokens are its one-token pages.
  if (!s.access.hasPageTable())
    return {pageBegin, pages};
  Value anyPage =
      arith::CmpIOp::create(b, arith::CmpIPredicate::sgt, pages, c0);
  Value fullPages = arith::SubIOp::create(b, pages, c1);
  Value fullKeys = arith::MulIOp::create(b, fullPages, cIndex(b, s.pageSize));
  Value numKv = arith::SelectOp::create(
      b, anyPage,
      arith::AddIOp::create(b, fullKeys, loadIndex(b, lastPageLen, f.req)), c0);
  return {pageBegin, numKv};
}

void KernelBuilder::loadRequestKeys(LocBuilder &b, Frame &f) {
  std::tie(f.pageBegin, f.numKv) = viewKeys(b, f, f.indptr, f.lastPageLen);
  f.keysTotal = f.numKv;
  if (f.views.size() == 1)
    return;
  Frame::View &first = f.views.front();
  first.pageBegin = f.pageBegin;
  first.numKv = f.numKv;
  first.keyOffset = cIndex(b, 0);
  for (Frame::View &view : llvm::drop_begin(f.views)) {
    std::tie(view.pageBegin, view.numKv) =
        viewKeys(b, f, view.indptr, view.lastPageLen);
    view.keyOffset = f.keysTotal;
    f.keysTotal = arith::AddIOp::create(b, f.keysTotal, view.numKv);
  }
  f.keyOffset = first.keyOffset;
}

void KernelBuilder::selectView(Frame &f, int64_t v) {
  const Frame::View &view = f.views[v];
  f.kPool = view.kPool;
  f.vPool = view.vPool;
  f.indptr = view.indptr;
  f.indices = view.indices;
  f.lastPageLen = view.lastPageLen;
  f.pageBegin = view.pageBegin;
  f.numKv = view.numKv;
  f.keyOffset = view.keyOffset;
  f.kEnd = view.numKv;
}

Value KernelBuilder::hookKeyPosition(LocBuilder &b, const Frame &f, Value key) {
  Value pos = hookPosition(b, key, f.kEnd);
  if (!f.keyOffset)
    return pos;
  return arith::AddIOp::create(b, pos, f.keyOffset);
}

KernelBuilder::Frame KernelBuilder::loadFrame(LocBuilder &b,
                                              gpu::GPUFuncOp func,
                                              bool dynamicShared) {
  Frame f = bindArguments(b, func, dynamicShared);
  Value c1 = cIndex(b, 1);
  f.block = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  f.kvHead = gpu::BlockIdOp::create(b, gpu::Dimension::y);
  if (s.headsInnermost) {
    // CTAs start in linear order, x fastest. Read linear = x + X * y as
    // (block, head) with the head fastest: the CTAs running together then
    // serve every KV head of a few requests and read whole token rows of
    // the same pages instead of one head's slice of many requests' pages.
    Value linear = arith::AddIOp::create(
        b, f.block,
        arith::MulIOp::create(b, gpu::GridDimOp::create(b, gpu::Dimension::x),
                              f.kvHead));
    Value heads = cIndex(b, s.numKvHeads);
    f.block = arith::DivUIOp::create(b, linear, heads);
    f.kvHead = arith::RemUIOp::create(b, linear, heads);
  }
  if (s.chunked)
    f.block = loadIndex(b, f.chunkOrder, f.block);
  f.req = s.chunked ? loadIndex(b, f.chunkRequest, f.block) : f.block;
  Value next = arith::AddIOp::create(b, f.req, c1);
  f.qBegin = loadIndex(b, f.qoIndptr, f.req);
  f.numQ = arith::SubIOp::create(b, loadIndex(b, f.qoIndptr, next), f.qBegin);
  loadRequestKeys(b, f);
  loadKeyRange(b, f, next);
  return f;
}

void KernelBuilder::loadKeyRange(LocBuilder &b, Frame &f, Value nextRequest) {
  Value c0 = cIndex(b, 0), c1 = cIndex(b, 1);
  f.kBegin = c0;
  f.kEnd = f.numKv;
  if (!s.chunked)
    return;
  auto clampKeys = [&](Value v, Value lo) {
    return arith::MinSIOp::create(b, arith::MaxSIOp::create(b, v, lo), f.numKv);
  };
  f.kBegin = clampKeys(loadIndex(b, f.chunkStarts, f.block), c0);
  f.kEnd = clampKeys(loadIndex(b, f.chunkEnds, f.block), f.kBegin);
  Value chunksEnd = loadIndex(b, f.chunkIndptr, nextRequest);
  Value chunks =
      arith::SubIOp::create(b, chunksEnd, loadIndex(b, f.chunkIndptr, f.req));
  f.direct = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, chunks, c1);
  // C from the metadata, not from the chunk arrays' sizes: a runner may pass
  // arrays padded past a step's chunks (the cascade's capacity).
  Value indptr = f.chunkIndptr;
  f.numChunks = loadIndex(
      b, indptr,
      arith::SubIOp::create(b, memref::DimOp::create(b, indptr, 0), c1));
}

SmallVector<Value> KernelBuilder::paramValues(LocBuilder &b, const Frame &f,
                                              Value head) {
  SmallVector<Value> values;
  for (auto [index, param] : llvm::enumerate(f.params)) {
    Value arg = f.entry->getArgument(f.firstParam + index);
    if (param.getKind() == ParamKind::Scalar ||
        param.getKind() == ParamKind::Buffer)
      values.push_back(arg);
    else
      values.push_back(memref::LoadOp::create(
          b, arg,
          ValueRange{param.getKind() == ParamKind::PerRequest ? f.req : head}));
  }
  return values;
}

Value KernelBuilder::loadColumns(LocBuilder &b, Value memref, ValueRange prefix,
                                 Value column, int64_t width) {
  SmallVector<Value> indices(prefix);
  indices.push_back(column);
  int64_t elementBytes = s.element.getIntOrFloatBitWidth() / 8;
  return vector::LoadOp::create(b, VectorType::get({width}, s.element), memref,
                                indices, /*nontemporal=*/false,
                                llvm::MaybeAlign(width * elementBytes));
}

Value KernelBuilder::loadRotated(
    LocBuilder &b, Value d0,
    function_ref<Value(LocBuilder &, Value, int64_t)> read) {
  int64_t D = s.headDim, half = D / 2;
  auto columnAt = [&](int64_t offset) -> Value {
    Value c = arith::AddIOp::create(b, d0, cIndex(b, half + offset));
    return arith::RemUIOp::create(b, c, cIndex(b, D));
  };
  if (half % kVec == 0)
    return read(b, columnAt(0), kVec);
  // D/2 = 4 mod 8: the partners are two 4-column halves of different
  // pieces (the second may wrap around to column 0).
  Value low = read(b, columnAt(0), kVec / 2);
  Value high = read(b, columnAt(kVec / 2), kVec / 2);
  return vector::ShuffleOp::create(b, low, high,
                                   ArrayRef<int64_t>{0, 1, 2, 3, 4, 5, 6, 7});
}

Value KernelBuilder::hookPosition(LocBuilder &b, Value pos, Value end) {
  if (!hooks.readsBuffers())
    return pos;
  return arith::MinSIOp::create(b, pos,
                                arith::SubIOp::create(b, end, cIndex(b, 1)));
}

Value KernelBuilder::applyRowHook(LocBuilder &b, bool isKey, Value x,
                                  Value xRot, Value d0, Value pos, Value head,
                                  ValueRange params) {
  Value wide = widen(b, x), wideRot = widen(b, xRot);
  auto type = cast<VectorType>(wide.getType());
  SmallVector<Value> elements;
  for (int64_t e = 0; e < type.getNumElements(); ++e) {
    Value xe = vector::ExtractOp::create(b, wide, e);
    Value rot = vector::ExtractOp::create(b, wideRot, e);
    Value dim = arith::AddIOp::create(b, d0, cIndex(b, e));
    elements.push_back(isKey ? hooks.key(b, xe, rot, dim, pos, head, params)
                             : hooks.query(b, xe, rot, dim, pos, head, params));
  }
  Value result = vector::FromElementsOp::create(b, type, elements);
  return narrow(b, result);
}

Value KernelBuilder::finalOutput(LocBuilder &b, Value o, Value l, Value e0,
                                 Value head) {
  auto type = cast<VectorType>(o.getType());
  if (hooks.sigmoid())
    o = arith::MulFOp::create(b, o, vector::BroadcastOp::create(b, type, l));
  if (!hooks.hasOutput())
    return o;
  SmallVector<Value> elements;
  for (int64_t e = 0; e < type.getNumElements(); ++e) {
    Value oe = vector::ExtractOp::create(b, o, e);
    Value dim = arith::AddIOp::create(b, e0, cIndex(b, e));
    elements.push_back(hooks.output(b, oe, dim, head));
  }
  return vector::FromElementsOp::create(b, type, elements);
}

Value KernelBuilder::statesView(LocBuilder &b, const Frame &f) {
  auto workgroup =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  return memref::ViewOp::create(
      b,
      MemRefType::get({s.warps, s.group, s.headDim + 4}, b.getF32Type(),
                      MemRefLayoutAttrInterface(), workgroup),
      f.buf, cIndex(b, 0), ValueRange{});
}

void KernelBuilder::writeRows(LocBuilder &b, const Frame &f, Value smem,
                              Value warp, Value lane, Value i) {
  int64_t D = s.headDim, g = s.group, W = s.warps;
  gpu::BarrierOp::create(b);
  Value c0 = cIndex(b, 0);
  Value writingLane = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, lane,
                                            cIndex(b, D / kVec));
  Value writer = arith::AndIOp::create(
      b, writingLane,
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, warp, c0));
  scf::IfOp::create(b, writer, [&](OpBuilder &iob, Location loc) {
    LocBuilder b(loc, iob);
    Value e0 = arith::MulIOp::create(b, lane, cIndex(b, kVec));
    Value zeroVec = splat(b, cF32(b, 0.0f));
    for (int64_t r = 0; r < g; ++r) {
      Value rr = cIndex(b, r);
      Value head = arith::AddIOp::create(
          b, arith::MulIOp::create(b, f.kvHead, cIndex(b, g)), rr);
      Value mr = negInf(b), lr = cF32(b, 0.0f), accr = zeroVec;
      for (int64_t w = 0; w < W; ++w) {
        Value ww = cIndex(b, w);
        Value mw =
            memref::LoadOp::create(b, smem, ValueRange{ww, rr, cIndex(b, D)});
        Value lw = memref::LoadOp::create(b, smem,
                                          ValueRange{ww, rr, cIndex(b, D + 1)});
        Value accw =
            vector::LoadOp::create(b, f32Vec(b), smem, ValueRange{ww, rr, e0},
                                   /*nontemporal=*/false, llvm::MaybeAlign(16));
        merge(b, mr, lr, accr, mw, lw, accw);
      }
      // No visible key: output 0, lse = -inf.
      Value empty =
          arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, lr, cF32(b, 0));
      Value zero = cF32(b, 0.0f);
      Value inv = arith::SelectOp::create(
          b, empty, zero, arith::DivFOp::create(b, cF32(b, 1.0f), lr));
      Value o = arith::MulFOp::create(b, accr, splat(b, inv));
      // Partial states keep the normalised o; out gets the final output.
      Value oFinal = finalOutput(b, o, lr, e0, head);
      Value noLse = negInf(b);
      Value rowLse = arith::SelectOp::create(
          b, empty, noLse,
          arith::AddFOp::create(b, mr, math::LogOp::create(b, lr)));
      // Row `row` of `out`/`lse` or of the partial states.
      auto store = [&](LocBuilder &b, Value outMem, Value lseMem, Value row) {
        Value value = outMem == f.out ? oFinal : o;
        vector::StoreOp::create(b, narrow(b, value), outMem,
                                ValueRange{row, head, e0},
                                /*nontemporal=*/false, llvm::MaybeAlign(16));
        Value first =
            arith::CmpIOp::create(b, arith::CmpIPredicate::eq, lane, c0);
        scf::IfOp::create(b, first, [&](OpBuilder &fob, Location loc) {
          LocBuilder b(loc, fob);
          memref::StoreOp::create(b, rowLse, lseMem, ValueRange{row, head});
          scf::YieldOp::create(b);
        });
      };
      storeRow(b, f, i, store);
    }
    scf::YieldOp::create(b);
  });
  gpu::BarrierOp::create(b);
}

void KernelBuilder::waitInLastCta(LocBuilder &b) {
  if (!s.dependentLaunch)
    return;
  Value last;
  for (gpu::Dimension d :
       {gpu::Dimension::x, gpu::Dimension::y, gpu::Dimension::z}) {
    Value block = gpu::BlockIdOp::create(b, d);
    Value grid = gpu::GridDimOp::create(b, d);
    Value isLast =
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, block,
                              arith::SubIOp::create(b, grid, cIndex(b, 1)));
    last = last ? arith::AndIOp::create(b, last, isLast).getResult() : isLast;
  }
  scf::IfOp::create(b, last, [&](OpBuilder &wb, Location loc) {
    LocBuilder b(loc, wb);
    NVVM::GriddepcontrolOp::create(b, NVVM::GridDepActionKind::wait);
    scf::YieldOp::create(b);
  });
}

void KernelBuilder::storeRow(
    LocBuilder &b, const Frame &f, Value i,
    function_ref<void(LocBuilder &, Value, Value, Value)> store) {
  Value finalRow = arith::AddIOp::create(b, f.qBegin, i);
  if (!s.chunked) {
    store(b, f.out, f.lse, finalRow);
    return;
  }
  // A request's only chunk writes its final rows; the merge kernel skips
  // such requests.
  scf::IfOp::create(
      b, f.direct,
      [&](OpBuilder &tb, Location loc) {
        LocBuilder b(loc, tb);
        store(b, f.out, f.lse, finalRow);
        scf::YieldOp::create(b);
      },
      [&](OpBuilder &eb, Location loc) {
        LocBuilder b(loc, eb);
        Value partialRow = arith::AddIOp::create(
            b, f.block, arith::MulIOp::create(b, f.numChunks, i));
        store(b, f.partialO, f.partialLse, partialRow);
        scf::YieldOp::create(b);
      });
}

ValueRange KernelBuilder::buildStagedLoop(
    LocBuilder &b, Value numIter, ArrayRef<Value> inits,
    ArrayRef<Value> noPages,
    function_ref<SmallVector<Value>(LocBuilder &, Value)> pagesOf,
    function_ref<void(LocBuilder &, Value, ArrayRef<Value>)> issue,
    function_ref<Value(LocBuilder &)> commit,
    function_ref<void(LocBuilder &, Value, Value)> wait,
    function_ref<SmallVector<Value>(LocBuilder &, Value, ValueRange)> body) {
  int64_t S = s.stages;
  Value c0 = cIndex(b, 0), c1 = cIndex(b, 1);
  auto ifIter = [&](LocBuilder &b, Value it,
                    function_ref<SmallVector<Value>(LocBuilder &)> thenFn,
                    function_ref<SmallVector<Value>(LocBuilder &)> elseFn) {
    return buildIf(
        b, arith::CmpIOp::create(b, arith::CmpIPredicate::slt, it, numIter),
        thenFn, elseFn);
  };
  auto nothing = [](LocBuilder &) { return SmallVector<Value>(); };
  for (int64_t st = 0; st + 1 < S; ++st) {
    Value it = cIndex(b, st);
    ifIter(
        b, it,
        [&](LocBuilder &b) {
          issue(b, it, pagesOf(b, it));
          return SmallVector<Value>();
        },
        nothing);
    commit(b);
  }
  Value itFirst = cIndex(b, S - 1);
  SmallVector<Value> loopInits(inits);
  llvm::append_range(
      loopInits,
      ifIter(
          b, itFirst, [&](LocBuilder &b) { return pagesOf(b, itFirst); },
          [&](LocBuilder &) { return llvm::to_vector(noPages); }));
  size_t numState = inits.size();
  return buildFor(
      b, c0, numIter, loopInits,
      [&](LocBuilder &b, Value it, ValueRange carried) {
        SmallVector<Value> ids(carried.drop_front(numState));
        Value itIssue = arith::AddIOp::create(b, it, cIndex(b, S - 1));
        ifIter(
            b, itIssue,
            [&](LocBuilder &b) {
              issue(b, itIssue, ids);
              return SmallVector<Value>();
            },
            nothing);
        Value token = commit(b);
        Value itPages = arith::AddIOp::create(b, itIssue, c1);
        SmallVector<Value> nextIds = llvm::to_vector(ifIter(
            b, itPages, [&](LocBuilder &b) { return pagesOf(b, itPages); },
            [&](LocBuilder &) { return ids; }));
        wait(b, it, token);
        SmallVector<Value> state = body(b, it, carried.take_front(numState));
        state.append(nextIds);
        return state;
      });
}

} // namespace flashir::conversion::kernels
