//===- RaiseFromLinalg.cpp - linalg attention to attn.attention -----------===//
//
// Recognises the attention an ML front end emits on tensors,
//
//   S = batch_matmul(Q, Kᵀ)            (outs: a zero fill)
//   S = S * c  or  S / c               (optional elementwise linalg.generic)
//   S = select(j > i, -inf, S)         (optional causal mask, Lq = Lk)
//   P = linalg.softmax(S) over the last dimension (or spelled out:
//       exp(S - max) / sum as four linalg.generic ops)
//   O = batch_matmul(P, V)             (outs: a zero fill)
//
// with Kᵀ either a linalg.transpose of K (permutation [0, 2, 1]) or
// batch_matmul's own indexing maps, and rewrites it into attn.attention
// @plain (@causal with the mask) over ragged views: every batch index becomes a
// request with one head (GQA: K and V broadcast to g heads -> a request per
// KV head with g query heads), the scale becomes the op's `scale`. Anything
// else is left as it is: every intermediate must have exactly one use, shapes
// must be static and agree, element types must match.
//
//===----------------------------------------------------------------------===//

#include "flashir/Dialect/Attn/IR/Attn.h"
#include "flashir/Dialect/Attn/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/Builders.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/CheckedArithmetic.h"

#include <cmath>
#include <limits>

namespace flashir::attn {
#define GEN_PASS_DEF_ATTNRAISEFROMLINALG
#include "flashir/Dialect/Attn/Transforms/Passes.h.inc"
} // namespace flashir::attn

using namespace mlir;
using namespace flashir::attn;

namespace {

/// A float constant, or nothing.
std::optional<double> constantFloat(Value v) {
  FloatAttr attr;
  if (auto cst = v.getDefiningOp<arith::ConstantOp>())
    attr = dyn_cast<FloatAttr>(cst.getValue());
  if (!attr)
    return std::nullopt;
  return attr.getValueAsDouble();
}

/// `init` is a linalg.fill of 0.0 (a matmul then computes a plain product).
bool isZeroFill(Value init) {
  auto fill = init.getDefiningOp<linalg::FillOp>();
  if (!fill)
    return false;
  std::optional<double> v = constantFloat(fill.getInputs()[0]);
  return v && *v == 0.0;
}

/// What an elementwise generic over the scores does to them.
enum class MaskKind { None, Additive, Boolean };

struct ScoreMap {
  double scale = 1.0;
  bool causal = false; ///< scores with key index > query index become -inf
  /// A mask tensor like the scores: added (additive) or selecting which
  /// scores stay (boolean, i1).
  MaskKind mask = MaskKind::None;
};

/// `v` is linalg.index `dim` of the enclosing generic.
bool isIndex(Value v, int64_t dim) {
  auto index = v.getDefiningOp<linalg::IndexOp>();
  return index && static_cast<int64_t>(index.getDim()) == dim;
}

/// `cond` is "key index > query index" (dims 2 and 1 of the scores).
bool isKeyAfterQuery(Value cond) {
  auto cmp = cond.getDefiningOp<arith::CmpIOp>();
  if (!cmp)
    return false;
  using P = arith::CmpIPredicate;
  Value l = cmp.getLhs(), r = cmp.getRhs();
  P p = cmp.getPredicate();
  return ((p == P::sgt || p == P::ugt) && isIndex(l, 2) && isIndex(r, 1)) ||
         ((p == P::slt || p == P::ult) && isIndex(l, 1) && isIndex(r, 2));
}

bool isNegInfinity(Value v) {
  std::optional<double> c = constantFloat(v);
  return c && std::isinf(*c) && *c < 0;
}

/// An elementwise generic over [B, Lq, Lk] scores computing x * c, c * x,
/// x / c (c constant), the causal mask select(j > i, -inf, ·), or both;
/// nothing for anything else.
std::optional<ScoreMap> scoreMapOf(linalg::GenericOp g) {
  if (g.getNumDpsInputs() < 1 || g.getNumDpsInputs() > 2 ||
      g.getNumDpsInits() != 1 || g.getNumLoops() != 3 ||
      g.getNumLoops() != g.getNumParallelLoops() ||
      !llvm::all_of(g.getIndexingMapsArray(),
                    [](AffineMap m) { return m.isIdentity(); }))
    return std::nullopt;
  Block &body = g.getRegion().front();
  unsigned numInputs = g.getNumDpsInputs();
  if (!body.getArgument(numInputs).use_empty())
    return std::nullopt;
  // The second input, if any, is a mask tensor.
  Value maskArg = numInputs == 2 ? body.getArgument(1) : Value();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  if (yield.getValues().size() != 1)
    return std::nullopt;
  // Walk back from the yielded value to the score argument; every op of
  // the body must be on that path (or feed the mask condition / be a
  // constant), so nothing else can hide in it.
  ScoreMap map;
  Value v = yield.getValues()[0];
  llvm::SmallPtrSet<Operation *, 8> used;
  bool scaled = false;
  while (v != body.getArgument(0)) {
    Operation *op = v.getDefiningOp();
    if (!op || op->getBlock() != &body)
      return std::nullopt;
    used.insert(op);
    if (auto add = dyn_cast<arith::AddFOp>(op); add && maskArg) {
      // Additive mask, applied after any scale (walking outside in).
      Value other = add.getLhs() == maskArg   ? add.getRhs()
                    : add.getRhs() == maskArg ? add.getLhs()
                                              : Value();
      if (!other || scaled || map.mask != MaskKind::None)
        return std::nullopt;
      map.mask = MaskKind::Additive;
      v = other;
      continue;
    }
    if (auto sel = dyn_cast<arith::SelectOp>(op);
        sel && maskArg && sel.getCondition() == maskArg) {
      if (map.mask != MaskKind::None || !isNegInfinity(sel.getFalseValue()))
        return std::nullopt;
      map.mask = MaskKind::Boolean;
      v = sel.getTrueValue();
      continue;
    }
    if (auto sel = dyn_cast<arith::SelectOp>(op)) {
      if (map.causal || !isKeyAfterQuery(sel.getCondition()) ||
          !isNegInfinity(sel.getTrueValue()))
        return std::nullopt;
      map.causal = true;
      Operation *cmp = sel.getCondition().getDefiningOp();
      used.insert(cmp);
      for (Value operand : cmp->getOperands())
        used.insert(operand.getDefiningOp());
      v = sel.getFalseValue();
      continue;
    }
    if (scaled)
      return std::nullopt;
    scaled = true;
    std::optional<double> c;
    if (auto mul = dyn_cast<arith::MulFOp>(op)) {
      if (mul.getLhs() == body.getArgument(0) ||
          mul.getLhs().getDefiningOp<arith::SelectOp>()) {
        c = constantFloat(mul.getRhs());
        v = mul.getLhs();
      } else {
        c = constantFloat(mul.getLhs());
        v = mul.getRhs();
      }
    } else if (auto div = dyn_cast<arith::DivFOp>(op)) {
      c = constantFloat(div.getRhs());
      if (c && *c != 0.0)
        c = 1.0 / *c;
      else
        c = std::nullopt;
      v = div.getLhs();
    }
    // Positive scales only: a negative one would turn -inf into +inf.
    if (!c || !(*c > 0.0))
      return std::nullopt;
    map.scale *= *c;
  }
  for (Operation &op : body.without_terminator())
    if (!used.contains(&op) && !isa<arith::ConstantOp>(op))
      return std::nullopt;
  if (maskArg && map.mask == MaskKind::None)
    return std::nullopt;
  return map;
}

/// K of a Q·Kᵀ batch_matmul: its second operand read transposed through
/// the op's indexing maps, or the input of a [0, 2, 1] linalg.transpose.
Value transposedOperand(linalg::BatchMatmulOp mm) {
  Value rhs = mm.getDpsInputs()[1];
  MLIRContext *ctx = mm.getContext();
  AffineExpr b, m, n, k;
  bindDims(ctx, b, m, n, k);
  auto map = [&](ArrayRef<AffineExpr> r) {
    return AffineMap::get(4, 0, r, ctx);
  };
  SmallVector<AffineMap> maps = mm.getIndexingMapsArray();
  if (maps ==
      SmallVector<AffineMap>{map({b, m, k}), map({b, n, k}), map({b, m, n})})
    return rhs;
  if (maps !=
      SmallVector<AffineMap>{map({b, m, k}), map({b, k, n}), map({b, m, n})})
    return {};
  auto transpose = rhs.getDefiningOp<linalg::TransposeOp>();
  if (!transpose || transpose.getPermutation() != ArrayRef<int64_t>{0, 2, 1} ||
      !transpose->hasOneUse())
    return {};
  return transpose.getInput();
}

bool hasDefaultMaps(linalg::BatchMatmulOp mm) {
  return mm.getIndexingMapsArray() ==
         linalg::BatchMatmulOp::getDefaultIndexingMaps(mm.getContext());
}

struct Match {
  Value q, k, v;
  double scale = 1.0;
  bool causal = false;
  /// GQA: K and V were broadcast to `group` query heads each (1: no GQA).
  int64_t group = 1;
  MaskKind maskKind = MaskKind::None;
  Value mask; ///< [B, Lq, Lk], like the scores
  linalg::BatchMatmulOp pv;
  SmallVector<Operation *> dead; // the matched chain, last first
};

/// GQA: `v` = collapse_shape [[0, 1], [2], [3]] of a linalg.broadcast of
/// [N, L, D] along dimension 1 to [N, g, L, D]. Returns (source, g).
std::optional<std::pair<Value, int64_t>> unbroadcast(Value v) {
  auto collapse = v.getDefiningOp<tensor::CollapseShapeOp>();
  if (!collapse || !collapse->hasOneUse())
    return std::nullopt;
  SmallVector<ReassociationIndices> groups = collapse.getReassociationIndices();
  if (groups != SmallVector<ReassociationIndices>{{0, 1}, {2}, {3}})
    return std::nullopt;
  auto broadcast = collapse.getSrc().getDefiningOp<linalg::BroadcastOp>();
  if (!broadcast || !broadcast->hasOneUse() ||
      broadcast.getDimensions() != ArrayRef<int64_t>{1})
    return std::nullopt;
  auto type = cast<RankedTensorType>(collapse.getSrc().getType());
  if (!type.hasStaticShape())
    return std::nullopt;
  return std::make_pair(broadcast.getInput(), type.getDimSize(1));
}

/// The body of `g` is one `Op` of its block arguments `a` and `b` (in either
/// order when `commutative`), yielded.
template <typename Op>
bool bodyIs(linalg::GenericOp g, unsigned a, unsigned b, bool commutative) {
  Block &body = g.getRegion().front();
  if (body.getOperations().size() != 2)
    return false;
  auto op = dyn_cast<Op>(body.front());
  if (!op || cast<linalg::YieldOp>(body.getTerminator()).getValues() !=
                 ValueRange{op->getResult(0)})
    return false;
  Value x = body.getArgument(a), y = body.getArgument(b);
  return (op->getOperand(0) == x && op->getOperand(1) == y) ||
         (commutative && op->getOperand(0) == y && op->getOperand(1) == x);
}

/// A generic over [B, Lq, Lk] with the given maps (identity or row
/// (d0, d1)) and iterators (the last one a reduction or not).
bool hasShape(linalg::GenericOp g, ArrayRef<bool> rowMaps, bool reduction) {
  MLIRContext *ctx = g.getContext();
  AffineMap id = AffineMap::getMultiDimIdentityMap(3, ctx);
  AffineMap row = AffineMap::get(
      3, 0, {getAffineDimExpr(0, ctx), getAffineDimExpr(1, ctx)}, ctx);
  SmallVector<AffineMap> maps = g.getIndexingMapsArray();
  if (maps.size() != rowMaps.size() || g.getNumLoops() != 3 ||
      g.getNumReductionLoops() != (reduction ? 1u : 0u) ||
      (reduction &&
       g.getIteratorTypesArray()[2] != utils::IteratorType::reduction))
    return false;
  for (auto [map, isRow] : llvm::zip_equal(maps, rowMaps))
    if (map != (isRow ? row : id))
      return false;
  return true;
}

/// The softmax input S of P = E / sum(E), E = exp(S - max(S)) spelled out
/// as four linalg.generic ops over the last dimension (max and sum over
/// fills of -inf and 0); their ops join `dead`.
Value decomposedSoftmaxInput(Value p, SmallVector<Operation *> &dead) {
  auto div = p.getDefiningOp<linalg::GenericOp>();
  if (!div || div.getNumDpsInputs() != 2 || !div->hasOneUse() ||
      !hasShape(div, {false, true, false}, false) ||
      !bodyIs<arith::DivFOp>(div, 0, 1, false))
    return {};
  Value e = div.getDpsInputs()[0], l = div.getDpsInputs()[1];
  auto sum = l.getDefiningOp<linalg::GenericOp>();
  if (!sum || sum.getNumDpsInputs() != 1 || !sum->hasOneUse() ||
      sum.getDpsInputs()[0] != e || !hasShape(sum, {false, true}, true) ||
      !bodyIs<arith::AddFOp>(sum, 0, 1, true) ||
      !isZeroFill(sum.getDpsInits()[0]))
    return {};
  auto exp = e.getDefiningOp<linalg::GenericOp>();
  if (!exp || exp.getNumDpsInputs() != 2 ||
      !llvm::hasNItems(exp->getUses(), 2) ||
      !hasShape(exp, {false, true, false}, false))
    return {};
  Block &body = exp.getRegion().front();
  auto expOp = body.getOperations().size() == 3
                   ? dyn_cast<math::ExpOp>(*std::next(body.begin()))
                   : math::ExpOp();
  auto sub = body.front().getNumResults()
                 ? dyn_cast<arith::SubFOp>(body.front())
                 : arith::SubFOp();
  if (!expOp || !sub || sub.getLhs() != body.getArgument(0) ||
      sub.getRhs() != body.getArgument(1) || expOp.getOperand() != sub ||
      cast<linalg::YieldOp>(body.getTerminator()).getValues() !=
          ValueRange{expOp.getResult()})
    return {};
  Value s = exp.getDpsInputs()[0], mx = exp.getDpsInputs()[1];
  auto max = mx.getDefiningOp<linalg::GenericOp>();
  if (!max || max.getNumDpsInputs() != 1 || !max->hasOneUse() ||
      max.getDpsInputs()[0] != s || !hasShape(max, {false, true}, true) ||
      !(bodyIs<arith::MaximumFOp>(max, 0, 1, true) ||
        bodyIs<arith::MaxNumFOp>(max, 0, 1, true)))
    return {};
  auto fill = max.getDpsInits()[0].getDefiningOp<linalg::FillOp>();
  std::optional<double> init =
      fill ? constantFloat(fill.getInputs()[0]) : std::nullopt;
  if (!init || !std::isinf(*init) || *init > 0)
    return {};
  dead.append({div, sum, exp, max});
  return s;
}

/// Every user of `op`'s results is already part of the match (the scores
/// feed both the max and the exponential of a spelled-out softmax).
bool usedOnlyBy(Operation *op, ArrayRef<Operation *> matched) {
  for (Operation *user : op->getUsers())
    if (!llvm::is_contained(matched, user))
      return false;
  return true;
}

std::optional<Match> match(linalg::BatchMatmulOp pv) {
  Match m;
  m.pv = pv;
  if (!hasDefaultMaps(m.pv) || !isZeroFill(m.pv.getDpsInits()[0]) ||
      m.pv->getNumResults() != 1)
    return std::nullopt;
  Value p = m.pv.getDpsInputs()[0];
  m.v = m.pv.getDpsInputs()[1];
  m.dead = {m.pv};
  Value s;
  if (auto softmax = p.getDefiningOp<linalg::SoftmaxOp>()) {
    if (softmax.getDimension() != 2 || !softmax->hasOneUse())
      return std::nullopt;
    m.dead.push_back(softmax);
    s = softmax.getInput();
  } else {
    if (!p.getDefiningOp() || !p.getDefiningOp()->hasOneUse())
      return std::nullopt;
    s = decomposedSoftmaxInput(p, m.dead);
    if (!s)
      return std::nullopt;
  }
  auto sType = dyn_cast<RankedTensorType>(s.getType());
  if (!sType || sType.getRank() != 3 || !sType.hasStaticShape())
    return std::nullopt;
  // At most two elementwise steps (scale, causal mask, in either order or
  // fused in one generic).
  // Additive masks must come after every scale (s * c + M, not (s + M) *
  // c); one mask at most, and not together with the causal mask.
  for (int steps = 0; steps < 3; ++steps) {
    if (auto add = s.getDefiningOp<linalg::AddOp>()) {
      Value a = add.getDpsInputs()[0], b = add.getDpsInputs()[1];
      if (!usedOnlyBy(add, m.dead) || m.maskKind != MaskKind::None ||
          m.scale != 1.0)
        return std::nullopt;
      // The scores are the operand a matmul or a scale produces.
      bool scoresFirst = a.getDefiningOp<linalg::BatchMatmulOp>() ||
                         a.getDefiningOp<linalg::GenericOp>();
      m.maskKind = MaskKind::Additive;
      m.mask = scoresFirst ? b : a;
      m.dead.push_back(add);
      s = scoresFirst ? a : b;
      continue;
    }
    auto g = s.getDefiningOp<linalg::GenericOp>();
    if (!g)
      break;
    std::optional<ScoreMap> sm = scoreMapOf(g);
    if (!sm || !usedOnlyBy(g, m.dead) || (sm->causal && m.causal) ||
        (sm->mask != MaskKind::None && m.maskKind != MaskKind::None) ||
        (sm->mask == MaskKind::Additive && m.scale != 1.0))
      return std::nullopt;
    m.scale *= sm->scale;
    m.causal |= sm->causal;
    if (sm->mask != MaskKind::None) {
      m.maskKind = sm->mask;
      m.mask = g.getDpsInputs()[1];
    }
    m.dead.push_back(g);
    s = g.getDpsInputs()[0];
  }
  if (m.causal && m.maskKind != MaskKind::None)
    return std::nullopt;
  auto qk = s.getDefiningOp<linalg::BatchMatmulOp>();
  if (!qk || !usedOnlyBy(qk, m.dead) || !isZeroFill(qk.getDpsInits()[0]))
    return std::nullopt;
  m.q = qk.getDpsInputs()[0];
  m.k = transposedOperand(qk);
  if (!m.k)
    return std::nullopt;
  m.dead.push_back(qk);
  if (Operation *t = qk.getDpsInputs()[1].getDefiningOp<linalg::TransposeOp>();
      t && m.k != qk.getDpsInputs()[1])
    m.dead.push_back(t);
  // GQA: K and V broadcast to the same number of query heads.
  std::optional<std::pair<Value, int64_t>> gk = unbroadcast(m.k),
                                           gv = unbroadcast(m.v);
  if (gk && gv && gk->second == gv->second) {
    for (Value x : {m.k, m.v}) {
      Operation *collapse = x.getDefiningOp();
      m.dead.push_back(collapse);
      m.dead.push_back(collapse->getOperand(0).getDefiningOp());
    }
    m.k = gk->first;
    m.v = gv->first;
    m.group = gk->second;
  }

  // Shapes: Q [B, Lq, D], K [B, Lk, D], V [B, Lk, D], S [B, Lq, Lk]; one
  // element type (f16, bf16 or f32) everywhere; D even (attn types).
  auto qt = dyn_cast<RankedTensorType>(m.q.getType());
  auto kt = dyn_cast<RankedTensorType>(m.k.getType());
  auto vt = dyn_cast<RankedTensorType>(m.v.getType());
  auto ot = dyn_cast<RankedTensorType>(m.pv.getResult(0).getType());
  if (!qt || !kt || !vt || !ot || !qt.hasStaticShape() ||
      !kt.hasStaticShape() || !vt.hasStaticShape() || qt.getRank() != 3 ||
      kt.getRank() != 3 || vt.getRank() != 3)
    return std::nullopt;
  Type e = qt.getElementType();
  if (!(e.isF16() || e.isBF16() || e.isF32()) || kt.getElementType() != e ||
      vt.getElementType() != e || sType.getElementType() != e ||
      ot.getElementType() != e)
    return std::nullopt;
  int64_t batch = qt.getDimSize(0), lq = qt.getDimSize(1), d = qt.getDimSize(2),
          lk = kt.getDimSize(1);
  int64_t kvBatch = batch / m.group;
  if (batch % m.group != 0 ||
      kt.getShape() != ArrayRef<int64_t>{kvBatch, lk, d} ||
      vt.getShape() != ArrayRef<int64_t>{kvBatch, lk, d} ||
      sType.getShape() != ArrayRef<int64_t>{batch, lq, lk} ||
      ot.getShape() != ArrayRef<int64_t>{batch, lq, d} || d % 2 != 0 ||
      batch < 1)
    return std::nullopt;
  // The views' indptr and page ids are i32: a batch whose tokens do not fit
  // stays as it is, with a warning (not silently). Within that bound the
  // mask's i64 offsets (at most qTokens x Lk < 2^62) fit too.
  std::optional<int64_t> qTokens = llvm::checkedMul(batch, lq),
                         kTokens = llvm::checkedMul(kvBatch, lk);
  constexpr int64_t kMaxI32 = std::numeric_limits<int32_t>::max();
  if (!qTokens || !kTokens || *qTokens > kMaxI32 || *kTokens > kMaxI32) {
    m.pv.emitWarning("attention not raised: ")
        << batch << " x " << lq << " query and " << kvBatch << " x " << lk
        << " key tokens exceed the views' i32 indices";
    return std::nullopt;
  }
  // The mask j > i is attn's bottom-right causal mask only when Lq = Lk.
  if (m.causal && lq != lk)
    return std::nullopt;
  if (m.mask) {
    auto mt = dyn_cast<RankedTensorType>(m.mask.getType());
    Type me = mt ? mt.getElementType() : Type();
    if (!mt || mt.getShape() != sType.getShape() ||
        (m.maskKind == MaskKind::Boolean && !me.isInteger(1)) ||
        (m.maskKind == MaskKind::Additive &&
         !(me.isF16() || me.isBF16() || me.isF32())))
      return std::nullopt;
  }
  return m;
}

/// [B, L, D] -> [B * L, 1 (x units), D] with a dynamic first dimension:
/// tokens with one head (units = 1) or one-token pages of one head (2).
Value withUnitDims(OpBuilder &b, Location loc, Value t, int64_t units) {
  auto type = cast<RankedTensorType>(t.getType());
  Type e = type.getElementType();
  int64_t rows = type.getDimSize(0) * type.getDimSize(1),
          d = type.getDimSize(2);
  Value flat = tensor::CollapseShapeOp::create(
      b, loc, RankedTensorType::get({rows, d}, e), t,
      ArrayRef<ReassociationIndices>{{0, 1}, {2}});
  SmallVector<int64_t> shape = {rows}, dynamic = {ShapedType::kDynamic};
  ReassociationIndices last;
  for (int64_t u = 0; u < units; ++u) {
    shape.push_back(1);
    dynamic.push_back(1);
    last.push_back(1 + u);
  }
  shape.push_back(d);
  dynamic.push_back(d);
  last.push_back(1 + units);
  Value expanded = tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get(shape, e), flat,
      ArrayRef<ReassociationIndices>{{0}, last});
  return tensor::CastOp::create(b, loc, RankedTensorType::get(dynamic, e),
                                expanded);
}

Value toTokens(OpBuilder &b, Location loc, Value t) {
  return withUnitDims(b, loc, t, 1);
}

/// [a * 0 + c, a * 1 + c, ..., a * (n - 1) + c] as tensor<?x`type`>,
/// generated rather than a constant: a batch can have billions of entries.
Value affineSequence(OpBuilder &b, Location loc, int64_t n, int64_t a,
                     int64_t c, IntegerType type) {
  auto tensorType = RankedTensorType::get({ShapedType::kDynamic}, type);
  Value size = arith::ConstantIndexOp::create(b, loc, n);
  return tensor::GenerateOp::create(
      b, loc, tensorType, ValueRange{size},
      [&](OpBuilder &nb, Location l, ValueRange idx) {
        Value i = arith::IndexCastOp::create(nb, l, type, idx[0]);
        Value step =
            arith::ConstantOp::create(nb, l, IntegerAttr::get(type, a));
        Value base =
            arith::ConstantOp::create(nb, l, IntegerAttr::get(type, c));
        Value v = arith::AddIOp::create(
            nb, l, arith::MulIOp::create(nb, l, i, step), base);
        tensor::YieldOp::create(nb, l, v);
      });
}

/// [0, len, 2 len, ..., batch len] as tensor<?xi32>.
Value uniformIndptr(OpBuilder &b, Location loc, int64_t batch, int64_t len) {
  return affineSequence(b, loc, batch + 1, len, 0, b.getI32Type());
}

/// [0, 1, ..., n) as tensor<?xi32>.
Value iota(OpBuilder &b, Location loc, int64_t n) {
  return affineSequence(b, loc, n, 1, 0, b.getI32Type());
}

/// [B, L, D] -> a pool of one-token pages [B * L, 1, 1, D].
Value toPages(OpBuilder &b, Location loc, Value t) {
  return withUnitDims(b, loc, t, 2);
}

/// [N * a, c, D] -> [N * c, a, D] through [N, a, c, D] -> [N, c, a, D]: with
/// (a, c) = (g, L) the query heads of a request move next to each other,
/// with (L, g) back.
Value swapMiddle(OpBuilder &b, Location loc, Value t, int64_t n, int64_t a,
                 int64_t c, int64_t d) {
  Type e = cast<RankedTensorType>(t.getType()).getElementType();
  Value expanded = tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get({n, a, c, d}, e), t,
      ArrayRef<ReassociationIndices>{{0, 1}, {2}, {3}});
  Value init =
      tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{n, c, a, d}, e);
  Value swapped = linalg::TransposeOp::create(b, loc, expanded, init,
                                              ArrayRef<int64_t>{0, 2, 1, 3})
                      ->getResult(0);
  return tensor::CollapseShapeOp::create(
      b, loc, RankedTensorType::get({n * c, a, d}, e), swapped,
      ArrayRef<ReassociationIndices>{{0, 1}, {2}, {3}});
}

/// The variant reading a mask tensor of element type `element` (additive)
/// or i1 (boolean) at row0[request] + qpos * stride + head * head_stride +
/// kpos; added to the module unless it has it already.
FailureOr<StringRef> maskVariant(ModuleOp module, MaskKind kind, Type element) {
  std::string type, name;
  llvm::raw_string_ostream(type) << element;
  name = kind == MaskKind::Boolean ? "raised_boolean_mask"
                                   : "raised_additive_mask_" + type;
  if (auto existing = module.lookupSymbol<VariantOp>(name))
    return existing.getSymName();
  std::string index = R"(
    %q = arith.index_cast %qpos : index to i64
    %k = arith.index_cast %kpos : index to i64
    %h = arith.index_cast %head : index to i64
    %a = arith.muli %q, %stride : i64
    %b = arith.muli %h, %hs : i64
    %c = arith.addi %row0, %a : i64
    %d = arith.addi %c, %b : i64
    %e = arith.addi %d, %k : i64
    %i = arith.index_cast %e : i64 to index
    %m = tensor.extract %bits[%i] : tensor<?xTYPE>)";
  std::string text =
      "attn.variant @" + name +
      " reduction softmax params(bits : tensor<?xTYPE> buffer, "
      "row0 : i64 per_request, stride : i64 scalar, head_stride : i64 "
      "scalar) {\n";
  if (kind == MaskKind::Boolean) {
    text += "  mask(%qpos: index, %kpos: index, %head: index, %bits: "
            "tensor<?xTYPE>, %row0: i64, %stride: i64, %hs: i64) {" +
            index + "\n    attn.yield %m : i1\n  }\n}\n";
  } else {
    text += "  logits(%s: f32, %qpos: index, %kpos: index, %head: index, "
            "%bits: tensor<?xTYPE>, %row0: i64, %stride: i64, %hs: i64) {" +
            index;
    text += element.isF32() ? "\n    %r = arith.addf %s, %m : f32"
                            : "\n    %mf = arith.extf %m : TYPE to f32\n"
                              "    %r = arith.addf %s, %mf : f32";
    text += "\n    attn.yield %r : f32\n  }\n}\n";
  }
  for (size_t at; (at = text.find("TYPE")) != std::string::npos;)
    text.replace(at, 4, type);
  OwningOpRef<ModuleOp> parsed =
      parseSourceString<ModuleOp>(text, ParserConfig(module.getContext()));
  if (!parsed)
    return failure();
  auto variant = cast<VariantOp>(parsed->getBody()->front());
  variant->moveBefore(module.getBody(), module.getBody()->begin());
  return variant.getSymName();
}

void rewrite(Match &m, bool paged) {
  OpBuilder b(m.pv);
  Location loc = m.pv.getLoc();
  MLIRContext *ctx = b.getContext();
  auto qt = cast<RankedTensorType>(m.q.getType());
  auto kt = cast<RankedTensorType>(m.k.getType());
  int64_t g = m.group, lq = qt.getDimSize(1), d = qt.getDimSize(2),
          lk = kt.getDimSize(1);
  int64_t requests = qt.getDimSize(0) / g;
  Type e = qt.getElementType();
  // Queries as tokens [requests * Lq, g, D]; GQA: request r's g heads are
  // batch indices r * g .. r * g + g - 1.
  Value qTokens =
      g == 1
          ? toTokens(b, loc, m.q)
          : Value(tensor::CastOp::create(
                b, loc, RankedTensorType::get({ShapedType::kDynamic, g, d}, e),
                swapMiddle(b, loc, m.q, requests, g, lq, d)));
  Value q = RaggedQOp::create(b, loc, RaggedQType::get(ctx, g, d, e), qTokens,
                              uniformIndptr(b, loc, requests, lq));
  Value kv;
  if (paged) {
    // One-token pages: request r owns pages [r * Lk, (r + 1) * Lk).
    // (Operands built one statement each: argument order is unspecified.)
    Value last = affineSequence(b, loc, requests, 0, 1, b.getI32Type());
    Value keys = toPages(b, loc, m.k);
    Value values = toPages(b, loc, m.v);
    Value indptr = uniformIndptr(b, loc, requests, lk);
    Value pages = iota(b, loc, requests * lk);
    kv = PagedKVOp::create(b, loc,
                           PagedKVType::get(ctx, 1, KVLayout::NHD, 1, d, e),
                           keys, values, indptr, pages, last);
  } else {
    Value keys = toTokens(b, loc, m.k);
    Value values = toTokens(b, loc, m.v);
    Value indptr = uniformIndptr(b, loc, requests, lk);
    kv = RaggedKVOp::create(b, loc, RaggedKVType::get(ctx, 1, d, e), keys,
                            values, indptr);
  }
  auto outType = RankedTensorType::get({ShapedType::kDynamic, g, d}, e);
  auto lseType =
      RankedTensorType::get({ShapedType::kDynamic, g}, b.getF32Type());
  StringRef variant = m.causal ? "causal" : "plain";
  SmallVector<Value> params;
  if (m.mask) {
    // Mask parameters: the mask flattened, where each request's rows start
    // (qpos is bottom-right aligned: row i has qpos = i + Lk - Lq), the
    // row stride and the head stride.
    auto mt = cast<RankedTensorType>(m.mask.getType());
    FailureOr<StringRef> name = maskVariant(m.pv->getParentOfType<ModuleOp>(),
                                            m.maskKind, mt.getElementType());
    if (failed(name))
      return;
    variant = *name;
    int64_t n = mt.getNumElements();
    Value flat = tensor::CollapseShapeOp::create(
        b, loc, RankedTensorType::get({n}, mt.getElementType()), m.mask,
        ArrayRef<ReassociationIndices>{{0, 1, 2}});
    params.push_back(tensor::CastOp::create(
        b, loc,
        RankedTensorType::get({ShapedType::kDynamic}, mt.getElementType()),
        flat));
    params.push_back(affineSequence(b, loc, requests, g * lq * lk,
                                    -(lk - lq) * lk, b.getI64Type()));
    params.push_back(
        arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(lk)));
    params.push_back(
        arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(lq * lk)));
  }
  auto attention = AttentionOp::create(
      b, loc, TypeRange{outType, lseType}, q, ValueRange{kv}, params, Value(),
      Value(), Value(), FlatSymbolRefAttr::get(ctx, variant),
      b.getF32FloatAttr(static_cast<float>(m.scale)), b.getI64IntegerAttr(g),
      b.getI64IntegerAttr(1), DenseBoolArrayAttr(), UnitAttr(),
      TileConfigAttr());
  int64_t rows = requests * lq;
  Value o = tensor::CastOp::create(
      b, loc, RankedTensorType::get({rows, g, d}, e), attention.getResult(0));
  if (g == 1) {
    o = tensor::CollapseShapeOp::create(
        b, loc, RankedTensorType::get({rows, d}, e), o,
        ArrayRef<ReassociationIndices>{{0}, {1, 2}});
    o = tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get({requests, lq, d}, e), o,
        ArrayRef<ReassociationIndices>{{0, 1}, {2}});
  } else {
    o = swapMiddle(b, loc, o, requests, lq, g, d);
  }
  m.pv.getResult(0).replaceAllUsesWith(o);
  for (Operation *op : m.dead)
    if (op->use_empty())
      op->erase();
}

struct AttnRaiseFromLinalgPass
    : flashir::attn::impl::AttnRaiseFromLinalgBase<AttnRaiseFromLinalgPass> {
  using AttnRaiseFromLinalgBase::AttnRaiseFromLinalgBase;
  void runOnOperation() override {
    SmallVector<Match> matches;
    getOperation()->walk([&](linalg::BatchMatmulOp pv) {
      if (std::optional<Match> m = match(pv))
        matches.push_back(*m);
    });
    for (Match &m : matches)
      rewrite(m, pagedKv);
  }
};

} // namespace
