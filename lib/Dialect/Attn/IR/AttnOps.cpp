//===- AttnOps.cpp - attn dialect operations ------------------------------===//

#include "flashir/Dialect/Attn/IR/Attn.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"

#include <cmath>

using namespace mlir;
using namespace flashir::attn;

//===----------------------------------------------------------------------===//
// VariantOp
//===----------------------------------------------------------------------===//

namespace {
enum HookIndex : unsigned { kQuery, kKey, kLogits, kMask, kOutput, kNumHooks };
} // namespace

ArrayRef<StringRef> VariantOp::getHookNames() {
  static const StringRef kNames[] = {"query", "key", "logits", "mask",
                                     "output"};
  return kNames;
}

/// Types of the leading block arguments of each hook, before the parameters.
static SmallVector<Type> getHookContextTypes(MLIRContext *ctx, unsigned hook) {
  Type f32 = Float32Type::get(ctx);
  Type idx = IndexType::get(ctx);
  switch (hook) {
  case kQuery:
  case kKey:
    return {f32, f32, idx, idx, idx};
  case kLogits:
    return {f32, idx, idx, idx};
  case kMask:
    return {idx, idx, idx};
  default:
    return {f32, idx, idx};
  }
}

unsigned VariantOp::getNumHookContextArgs(unsigned index) {
  static const unsigned kCounts[] = {5, 5, 4, 3, 3};
  return kCounts[index];
}

SmallVector<VariantParamAttr> VariantOp::getParamList() {
  return llvm::to_vector(getParams().getAsRange<VariantParamAttr>());
}

ParseResult VariantOp::parse(OpAsmParser &parser, OperationState &result) {
  MLIRContext *ctx = parser.getContext();
  StringAttr name;
  if (parser.parseSymbolName(name, getSymNameAttrName(result.name),
                             result.attributes))
    return failure();

  // reduction <kind>
  std::string reductionName;
  SMLoc reductionLoc;
  if (parser.parseKeyword("reduction") ||
      parser.getCurrentLocation(&reductionLoc) ||
      parser.parseKeywordOrString(&reductionName))
    return failure();
  std::optional<ReductionKind> reduction =
      symbolizeReductionKind(reductionName);
  if (!reduction)
    return parser.emitError(reductionLoc, "unknown reduction '")
           << reductionName << "'; expected softmax, sigmoid or sparsemax";
  result.addAttribute(getReductionAttrName(result.name),
                      ReductionKindAttr::get(ctx, *reduction));

  // params(name : type kind, ...)
  SmallVector<Attribute> params;
  if (succeeded(parser.parseOptionalKeyword("params"))) {
    auto parseParam = [&]() -> ParseResult {
      std::string paramName, kindName;
      Type type;
      SMLoc loc = parser.getCurrentLocation();
      if (parser.parseKeywordOrString(&paramName) || parser.parseColon() ||
          parser.parseType(type) || parser.parseKeywordOrString(&kindName))
        return failure();
      std::optional<ParamKind> kind = symbolizeParamKind(kindName);
      if (!kind)
        return parser.emitError(loc, "unknown parameter kind '")
               << kindName
               << "'; expected scalar, per_request, per_head or buffer";
      auto attr = getCheckedVariantParam([&] { return parser.emitError(loc); },
                                         ctx, paramName, type, *kind);
      if (!attr)
        return failure();
      params.push_back(attr);
      return success();
    };
    if (parser.parseCommaSeparatedList(OpAsmParser::Delimiter::Paren,
                                       parseParam))
      return failure();
  }
  result.addAttribute(getParamsAttrName(result.name),
                      ArrayAttr::get(ctx, params));

  if (parser.parseOptionalAttrDictWithKeyword(result.attributes))
    return failure();

  // { hook(args) { body } ... }
  SmallVector<Region *> regions;
  for (unsigned i = 0; i < kNumHooks; ++i)
    regions.push_back(result.addRegion());
  if (parser.parseLBrace())
    return failure();
  while (failed(parser.parseOptionalRBrace())) {
    std::string hook;
    SMLoc loc = parser.getCurrentLocation();
    if (parser.parseKeywordOrString(&hook))
      return failure();
    const auto *it = llvm::find(getHookNames(), hook);
    if (it == getHookNames().end())
      return parser.emitError(loc, "unknown hook '")
             << hook << "'; expected query, key, logits, mask or output";
    Region *region = regions[it - getHookNames().begin()];
    if (!region->empty())
      return parser.emitError(loc, "hook '") << hook << "' is defined twice";
    SmallVector<OpAsmParser::Argument> args;
    if (parser.parseArgumentList(args, OpAsmParser::Delimiter::Paren,
                                 /*allowType=*/true) ||
        parser.parseRegion(*region, args))
      return failure();
    if (region->empty())
      return parser.emitError(loc, "hook '") << hook << "' has an empty body";
  }
  return success();
}

void VariantOp::print(OpAsmPrinter &p) {
  p << ' ';
  p.printSymbolName(getSymName());
  p << " reduction " << stringifyReductionKind(getReduction());
  if (!getParams().empty()) {
    p << " params(";
    llvm::interleaveComma(getParamList(), p, [&](VariantParamAttr param) {
      p.printKeywordOrString(param.getName());
      p << " : " << param.getType() << ' '
        << stringifyParamKind(param.getKind());
    });
    p << ')';
  }
  p.printOptionalAttrDictWithKeyword(
      (*this)->getAttrs(),
      {getSymNameAttrName(), getReductionAttrName(), getParamsAttrName()});
  p << " {";
  bool any = false;
  for (auto [index, region] : llvm::enumerate((*this)->getRegions())) {
    if (region.empty())
      continue;
    any = true;
    p.increaseIndent();
    p.printNewline();
    p << getHookNames()[index] << '(';
    llvm::interleaveComma(region.getArguments(), p, [&](BlockArgument arg) {
      p.printRegionArgument(arg);
    });
    p << ") ";
    p.printRegion(region, /*printEntryBlockArgs=*/false);
    p.decreaseIndent();
  }
  if (any)
    p.printNewline();
  p << '}';
}

LogicalResult VariantOp::verify() {
  llvm::StringSet<> names;
  for (VariantParamAttr param : getParamList())
    if (!names.insert(param.getName()).second)
      return emitOpError("declares parameter '")
             << param.getName() << "' more than once";
  return success();
}

LogicalResult VariantOp::verifyRegions() {
  MLIRContext *ctx = getContext();
  SmallVector<VariantParamAttr> params = getParamList();
  for (auto [index, region] : llvm::enumerate((*this)->getRegions())) {
    if (region.empty())
      continue;
    StringRef hook = getHookNames()[index];
    SmallVector<Type> expected = getHookContextTypes(ctx, index);
    // The output hook runs after reduction, where no request is in scope.
    if (index != kOutput)
      for (VariantParamAttr param : params)
        expected.push_back(param.getType());

    Block &block = region.front();
    if (block.getNumArguments() != expected.size())
      return emitOpError("'")
             << hook << "' hook expects " << expected.size()
             << " block arguments (" << getNumHookContextArgs(index)
             << " context + " << (index == kOutput ? 0 : params.size())
             << " parameters), got " << block.getNumArguments();
    for (auto [i, arg, type] : llvm::enumerate(block.getArguments(), expected))
      if (arg.getType() != type)
        return emitOpError("'")
               << hook << "' hook argument #" << i << " must be of type "
               << type << ", got " << arg.getType();

    // Hooks are inlined anywhere, any number of times (per key, per row,
    // on the CPU and the GPU): they must be side-effect free.
    for (Operation &inner : block.without_terminator()) {
      WalkResult impure = inner.walk([&](Operation *nested) {
        if (isa<AttnDialect>(nested->getDialect()) || !isPure(nested))
          return WalkResult::interrupt();
        return WalkResult::advance();
      });
      if (impure.wasInterrupted())
        return inner.emitOpError("cannot be used in the '")
               << hook
               << "' hook of a variant: hooks must be pure "
                  "(no side effects, no attn ops)";
    }

    auto yield = dyn_cast<YieldOp>(block.getTerminator());
    if (!yield)
      return emitOpError("'") << hook << "' hook must end with attn.yield";
    Type resultType = index == kMask ? Type(IntegerType::get(ctx, 1))
                                     : Type(Float32Type::get(ctx));
    if (yield.getValues().size() != 1 ||
        yield.getValues().front().getType() != resultType)
      return yield.emitOpError("'")
             << hook << "' hook must yield exactly one " << resultType;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Views
//===----------------------------------------------------------------------===//

/// Checks a tensor dimension against the value a view type requires.
/// `owner` names where the expected value comes from ("the view's",
/// "the state's", "the attention's").
static LogicalResult checkDim(Operation *op, StringRef what,
                              RankedTensorType type, unsigned dim,
                              int64_t expected, StringRef name,
                              StringRef owner = "the view's") {
  int64_t actual = type.getDimSize(dim);
  if (ShapedType::isDynamic(actual))
    return op->emitOpError() << what << " dimension " << dim << " (" << name
                             << ") must be static, got " << type;
  if (actual != expected)
    return op->emitOpError()
           << what << " dimension " << dim << " (" << name << ") is " << actual
           << ", but " << owner << " " << name << " is " << expected;
  return success();
}

/// Checks a pair of K/V (or a single Q) tensors of a ragged layout
/// `[tokens, heads, head_dim]`.
static LogicalResult verifyTokenTensor(Operation *op, StringRef what,
                                       RankedTensorType type, int64_t numHeads,
                                       int64_t headDim, Type elementType) {
  if (type.getRank() != 3)
    return op->emitOpError()
           << "expects " << what
           << " of rank 3 ([tokens, heads, head_dim]), got " << type;
  if (type.getElementType() != elementType)
    return op->emitOpError()
           << what << " element type " << type.getElementType()
           << " does not match the view's element type " << elementType;
  if (failed(checkDim(op, what, type, 1, numHeads, "heads")) ||
      failed(checkDim(op, what, type, 2, headDim, "head_dim")))
    return failure();
  return success();
}

/// Checks K/V page pools against a paged view type.
static LogicalResult verifyPagePools(Operation *op, Type k, Type v,
                                     PagedKVType view) {
  auto kType = cast<RankedTensorType>(k);
  if (kType != v)
    return op->emitOpError("K and V page pools must have the same type, got ")
           << kType << " and " << v;
  bool nhd = view.getLayout() == KVLayout::NHD;
  if (kType.getRank() != 4)
    return op->emitOpError("expects 4-D page pools (")
           << (nhd ? "[pages, page_size, heads, head_dim]"
                   : "[pages, heads, page_size, head_dim]")
           << " for layout " << stringifyKVLayout(view.getLayout()) << "), got "
           << kType;
  if (kType.getElementType() != view.getElementType())
    return op->emitOpError("page pool element type ")
           << kType.getElementType()
           << " does not match the view's element type "
           << view.getElementType();
  unsigned pageDim = nhd ? 1 : 2, headsDim = nhd ? 2 : 1;
  if (failed(checkDim(op, "page pool", kType, pageDim, view.getPageSize(),
                      "page_size")) ||
      failed(checkDim(op, "page pool", kType, headsDim, view.getNumHeads(),
                      "heads")) ||
      failed(
          checkDim(op, "page pool", kType, 3, view.getHeadDim(), "head_dim")))
    return failure();
  return success();
}

LogicalResult PagedKVOp::verify() {
  return verifyPagePools(*this, getKPages().getType(), getVPages().getType(),
                         getType());
}

LogicalResult SharedPagedKVOp::verify() {
  return verifyPagePools(*this, getKPages().getType(), getVPages().getType(),
                         getType());
}

LogicalResult RaggedKVOp::verify() {
  if (getKeys().getType() != getValues().getType())
    return emitOpError("keys and values must have the same type, got ")
           << getKeys().getType() << " and " << getValues().getType();
  RaggedKVType view = getType();
  return verifyTokenTensor(
      *this, "keys", cast<RankedTensorType>(getKeys().getType()),
      view.getNumHeads(), view.getHeadDim(), view.getElementType());
}

LogicalResult RaggedQOp::verify() {
  RaggedQType view = getType();
  return verifyTokenTensor(
      *this, "queries", cast<RankedTensorType>(getQueries().getType()),
      view.getNumHeads(), view.getHeadDim(), view.getElementType());
}

//===----------------------------------------------------------------------===//
// Shared state/result checks
//===----------------------------------------------------------------------===//

namespace {
struct HeadShape {
  int64_t numHeads, headDim;
  Type elementType; // Null for views without one (states).
};
} // namespace

static HeadShape getViewShape(Type type) {
  if (auto paged = dyn_cast<PagedKVType>(type))
    return {paged.getNumHeads(), paged.getHeadDim(), paged.getElementType()};
  auto ragged = cast<RaggedKVType>(type);
  return {ragged.getNumHeads(), ragged.getHeadDim(), ragged.getElementType()};
}

/// Checks `output` ([rows, heads, head_dim], float element) and `lse`
/// ([rows, heads], f32) against a head shape. `outputF32` requires f32 output.
static LogicalResult verifyOutputAndLse(Operation *op, Type outputType,
                                        Type lseType, int64_t numHeads,
                                        int64_t headDim, bool outputF32,
                                        StringRef owner) {
  auto output = dyn_cast<RankedTensorType>(outputType);
  if (!output || output.getRank() != 3 ||
      !isa<FloatType>(output.getElementType()))
    return op->emitOpError("output must be a rank-3 float tensor [rows, ")
           << numHeads << ", " << headDim << "], got " << outputType;
  if (!isSupportedElementType(output.getElementType()))
    return op->emitOpError("output element type must be f16, bf16 or f32, "
                           "got ")
           << output.getElementType();
  if (outputF32 && !output.getElementType().isF32())
    return op->emitOpError("state output must be f32, got ") << outputType;
  auto lse = dyn_cast<RankedTensorType>(lseType);
  if (!lse || lse.getRank() != 2 || !lse.getElementType().isF32())
    return op->emitOpError("lse must be a rank-2 f32 tensor [rows, ")
           << numHeads << "], got " << lseType;
  if (failed(checkDim(op, "output", output, 1, numHeads, "heads", owner)) ||
      failed(checkDim(op, "output", output, 2, headDim, "head_dim", owner)) ||
      failed(checkDim(op, "lse", lse, 1, numHeads, "heads", owner)))
    return failure();
  int64_t rows = output.getDimSize(0), lseRows = lse.getDimSize(0);
  if (!ShapedType::isDynamic(rows) && !ShapedType::isDynamic(lseRows) &&
      rows != lseRows)
    return op->emitOpError("output has ")
           << rows << " rows but lse has " << lseRows;
  return success();
}

/// Resolves `ref` for `op`, reporting a missing or non-variant symbol.
static FailureOr<VariantOp> lookupVariant(Operation *op,
                                          FlatSymbolRefAttr ref) {
  if (VariantOp variant = resolveVariant(op, ref))
    return variant;
  if (SymbolTable::lookupNearestSymbolFrom(op, ref))
    return op->emitOpError("'")
           << ref.getValue() << "' does not reference an attn.variant";
  return op->emitOpError("'")
         << ref.getValue()
         << "' does not reference a variant defined in this module or in the "
            "standard library";
}

/// Resolves the variant of an op that produces or consumes states and checks
/// that its reduction has a merge rule.
static FailureOr<VariantOp> lookupMergeableVariant(Operation *op,
                                                   FlatSymbolRefAttr ref) {
  FailureOr<VariantOp> variant = lookupVariant(op, ref);
  if (failed(variant))
    return failure();
  if (!variant->isMergeable())
    return op->emitOpError("variant '")
           << ref.getValue() << "' has reduction '"
           << stringifyReductionKind(variant->getReduction())
           << "', which has no merge rule: its attention states cannot be "
              "split, composed or merged";
  return variant;
}

static LogicalResult checkStateVariant(Operation *op, StateType type,
                                       FlatSymbolRefAttr variant) {
  if (type.getVariant() != variant)
    return op->emitOpError("state type is of variant '")
           << type.getVariant().getValue() << "', but the op names '"
           << variant.getValue() << "'";
  return success();
}

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

float AttentionOp::getEffectiveScale() {
  if (std::optional<APFloat> scale = getScale())
    return scale->convertToFloat();
  return 1.0f /
         std::sqrt(static_cast<float>(getQueries().getType().getHeadDim()));
}

LogicalResult AttentionOp::verify() {
  if (getViews().empty())
    return emitOpError("expects at least one KV view");
  int64_t numQoHeads = getNumQoHeads(), numKvHeads = getNumKvHeads();
  if (numQoHeads < 1 || numKvHeads < 1)
    return emitOpError("head counts must be >= 1, got num_qo_heads = ")
           << numQoHeads << ", num_kv_heads = " << numKvHeads;
  if (numQoHeads % numKvHeads != 0)
    return emitOpError("num_qo_heads (")
           << numQoHeads << ") must be a multiple of num_kv_heads ("
           << numKvHeads << ")";

  RaggedQType q = getQueries().getType();
  if (q.getNumHeads() != numQoHeads)
    return emitOpError("num_qo_heads (")
           << numQoHeads << ") does not match the queries' heads ("
           << q.getNumHeads() << ")";

  HeadShape kv = getViewShape(getViews().front().getType());
  for (auto [index, view] : llvm::enumerate(getViews())) {
    HeadShape shape = getViewShape(view.getType());
    if (shape.numHeads != kv.numHeads || shape.headDim != kv.headDim ||
        shape.elementType != kv.elementType)
      return emitOpError("KV view #")
             << index << " (" << view.getType() << ") disagrees with view #0 ("
             << getViews().front().getType()
             << ") on heads, head_dim or element type";
  }
  if (kv.numHeads != numKvHeads)
    return emitOpError("num_kv_heads (")
           << numKvHeads << ") does not match the KV views' heads ("
           << kv.numHeads << ")";
  if (kv.headDim != q.getHeadDim())
    return emitOpError("query head_dim (")
           << q.getHeadDim() << ") does not match the KV head_dim ("
           << kv.headDim << ")";
  if (kv.elementType != q.getElementType())
    return emitOpError("query element type ")
           << q.getElementType() << " does not match the KV element type "
           << kv.elementType;

  if (std::optional<APFloat> scale = getScale()) {
    if (!scale->isFiniteNonZero() || scale->isNegative())
      return emitOpError("scale must be a positive finite number, got ")
             << scale->convertToDouble();
  }

  if (std::optional<ArrayRef<bool>> attended = getAttendedViews()) {
    if (attended->size() != getViews().size())
      return emitOpError("attended_views has ")
             << attended->size() << " entries, but there are "
             << getViews().size() << " views";
    if (!llvm::is_contained(*attended, true))
      return emitOpError("attended_views must attend at least one view");
  }

  int chunkOperands =
      bool(getChunkIndptr()) + bool(getChunkStarts()) + bool(getChunkEnds());
  if (chunkOperands != 0 && chunkOperands != 3)
    return emitOpError("chunks need chunk_indptr, chunk_starts and chunk_ends");
  if (chunkOperands) {
    auto parts = getNumResults() == 1
                     ? dyn_cast<ChunkedStateType>(getResult(0).getType())
                     : ChunkedStateType();
    if (!parts)
      return emitOpError("an attention split into chunks returns one "
                         "!attn.chunked_state");
    if (parts.getNumHeads() != numQoHeads ||
        parts.getHeadDim() != q.getHeadDim() ||
        parts.getVariant() != getVariantAttr())
      return emitOpError("result ")
             << parts << " does not match the attention (" << numQoHeads
             << " heads of dim " << q.getHeadDim() << ", variant '"
             << getVariant() << "')";
    return success();
  }
  if (getNumResults() == 1 && isa<ChunkedStateType>(getResult(0).getType()))
    return emitOpError("an !attn.chunked_state result needs chunks(...)");

  if (getNumResults() == 1) {
    auto state = dyn_cast<StateType>(getResult(0).getType());
    if (!state)
      return emitOpError("a single result must be an !attn.state, got ")
             << getResult(0).getType();
    if (state.getNumHeads() != numQoHeads ||
        state.getHeadDim() != q.getHeadDim())
      return emitOpError("result state has ")
             << state.getNumHeads() << " heads of dim " << state.getHeadDim()
             << ", expected " << numQoHeads << " of dim " << q.getHeadDim();
    return checkStateVariant(*this, state, getVariantAttr());
  }
  if (getNumResults() != 2)
    return emitOpError("expects two results (output, lse) or one !attn.state, "
                       "got ")
           << getNumResults();
  return verifyOutputAndLse(*this, getResult(0).getType(),
                            getResult(1).getType(), numQoHeads, q.getHeadDim(),
                            /*outputF32=*/false, "the attention's");
}

LogicalResult
AttentionOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<VariantOp> variant =
      returnsState() || getChunkIndptr()
          ? lookupMergeableVariant(*this, getVariantAttr())
          : lookupVariant(*this, getVariantAttr());
  if (failed(variant))
    return failure();

  SmallVector<VariantParamAttr> params = variant->getParamList();
  if (params.size() != getParams().size())
    return emitOpError("variant '")
           << getVariant() << "' declares " << params.size()
           << " parameter(s), but " << getParams().size() << " were given";
  int64_t numQoHeads = getNumQoHeads();
  for (auto [index, decl, value] : llvm::enumerate(params, getParams())) {
    Type type = value.getType();
    Type t = decl.getType();
    bool ok = false;
    std::string expected;
    llvm::raw_string_ostream os(expected);
    switch (decl.getKind()) {
    case ParamKind::Scalar:
    case ParamKind::Buffer:
      ok = type == t;
      os << t;
      break;
    case ParamKind::PerRequest: {
      auto tensor = dyn_cast<RankedTensorType>(type);
      ok = tensor && tensor.getRank() == 1 && tensor.getElementType() == t;
      os << "tensor<?x" << t << ">";
      break;
    }
    case ParamKind::PerHead: {
      auto tensor = dyn_cast<RankedTensorType>(type);
      ok = tensor && tensor.getRank() == 1 && tensor.getElementType() == t &&
           (tensor.isDynamicDim(0) || tensor.getDimSize(0) == numQoHeads);
      os << "tensor<" << numQoHeads << "x" << t << ">";
      break;
    }
    }
    if (!ok)
      return emitOpError("parameter #")
             << index << " ('" << decl.getName() << "', "
             << stringifyParamKind(decl.getKind()) << ") must be of type "
             << expected << ", got " << type;
  }
  return success();
}

void flashir::attn::replaceAttentionWithState(OpBuilder &b, AttentionOp op,
                                              Value state) {
  if (op.returnsState()) {
    op.getResult(0).replaceAllUsesWith(state);
  } else {
    auto fin = FinalizeOp::create(b, op.getLoc(), op.getResult(0).getType(),
                                  op.getResult(1).getType(), state);
    op.getResult(0).replaceAllUsesWith(fin.getOutput());
    op.getResult(1).replaceAllUsesWith(fin.getLse());
  }
  op.erase();
}

//===----------------------------------------------------------------------===//
// State ops
//===----------------------------------------------------------------------===//

LogicalResult EmptyStateOp::verify() {
  return checkStateVariant(*this, getType(), getVariantAttr());
}

LogicalResult EmptyStateOp::verifySymbolUses(SymbolTableCollection &) {
  return lookupMergeableVariant(*this, getVariantAttr());
}

LogicalResult MakeStateOp::verify() {
  StateType state = getType();
  if (failed(verifyOutputAndLse(
          *this, getOutput().getType(), getLse().getType(), state.getNumHeads(),
          state.getHeadDim(), /*outputF32=*/true, "the state's")))
    return failure();
  return checkStateVariant(*this, state, getVariantAttr());
}

LogicalResult MakeStateOp::verifySymbolUses(SymbolTableCollection &) {
  return lookupMergeableVariant(*this, getVariantAttr());
}

LogicalResult MergeOp::verify() {
  if (getStates().empty())
    return emitOpError("expects at least one state");
  StateType result = getType();
  for (auto [index, value] : llvm::enumerate(getStates())) {
    auto state = cast<StateType>(value.getType());
    if (state.getVariant() != result.getVariant())
      return emitOpError("cannot merge states of different variants: operand #")
             << index << " is of '" << state.getVariant().getValue()
             << "', the result of '" << result.getVariant().getValue() << "'";
    if (state.getNumHeads() != result.getNumHeads() ||
        state.getHeadDim() != result.getHeadDim())
      return emitOpError("operand #")
             << index << " has " << state.getNumHeads() << " heads of dim "
             << state.getHeadDim() << ", but the result has "
             << result.getNumHeads() << " of dim " << result.getHeadDim();
  }
  return success();
}

LogicalResult MergeOp::verifySymbolUses(SymbolTableCollection &) {
  return lookupMergeableVariant(*this, getType().getVariant());
}

OpFoldResult MergeOp::fold(FoldAdaptor) {
  // Merging a single state is the identity.
  if (getStates().size() == 1)
    return getStates().front();
  return {};
}

namespace {
/// Drops empty states from a merge: they are its identity element.
struct DropEmptyMergeOperands : OpRewritePattern<MergeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MergeOp op,
                                PatternRewriter &rewriter) const override {
    SmallVector<Value> kept;
    for (Value state : op.getStates())
      if (!state.getDefiningOp<EmptyStateOp>())
        kept.push_back(state);
    if (kept.size() == op.getStates().size())
      return failure();
    // All empty: the merge is one of them.
    if (kept.empty())
      kept.push_back(op.getStates().front());
    rewriter.replaceOpWithNewOp<MergeOp>(op, op.getType(), kept);
    return success();
  }
};
} // namespace

void MergeOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                          MLIRContext *context) {
  results.add<DropEmptyMergeOperands>(context);
}

LogicalResult MergeChunksOp::verify() {
  ChunkedStateType parts = getParts().getType();
  StateType result = getType();
  if (parts.getVariant() != result.getVariant() ||
      parts.getNumHeads() != result.getNumHeads() ||
      parts.getHeadDim() != result.getHeadDim())
    return emitOpError("result ")
           << result << " does not match the chunks " << parts;
  RaggedQType q = getQueries().getType();
  if (q.getNumHeads() != parts.getNumHeads() ||
      q.getHeadDim() != parts.getHeadDim())
    return emitOpError("queries ") << q << " do not match the chunks " << parts;
  return success();
}

LogicalResult MergeChunksOp::verifySymbolUses(SymbolTableCollection &) {
  return lookupMergeableVariant(*this, getType().getVariant());
}

LogicalResult UniformChunksOp::verify() {
  if (getViews().empty())
    return emitOpError("expects at least one KV view");
  if (getChunkSize() < 1)
    return emitOpError("chunk_size must be >= 1, got ") << getChunkSize();
  return success();
}

LogicalResult FinalizeOp::verify() {
  StateType state = getState().getType();
  return verifyOutputAndLse(*this, getOutput().getType(), getLse().getType(),
                            state.getNumHeads(), state.getHeadDim(),
                            /*outputF32=*/false, "the state's");
}

LogicalResult FinalizeOp::verifySymbolUses(SymbolTableCollection &) {
  // States exist only for reductions with a merge rule.
  return lookupMergeableVariant(*this, getState().getType().getVariant());
}

#define GET_OP_CLASSES
#include "flashir/Dialect/Attn/IR/AttnOps.cpp.inc"
