//===- AttnDialectTest.cpp - attn dialect C++ API -------------------------===//

#include "flashir/Dialect/Attn/IR/Attn.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace mlir;
using namespace flashir::attn;

namespace {

class AttnDialectTest : public ::testing::Test {
protected:
  AttnDialectTest() {
    ctx.getOrLoadDialect<AttnDialect>();
    ctx.getOrLoadDialect<func::FuncDialect>();
  }
  AttnDialect *dialect() { return ctx.getLoadedDialect<AttnDialect>(); }
  MLIRContext ctx;
};

TEST_F(AttnDialectTest, StandardLibraryHasEveryVariant) {
  struct Expected {
    const char *name;
    ReductionKind reduction;
    size_t params;
    bool mask, logits;
  };
  const Expected expected[] = {
      {"plain", ReductionKind::Softmax, 0, false, false},
      {"causal", ReductionKind::Softmax, 0, true, false},
      {"sliding_window", ReductionKind::Softmax, 1, true, false},
      {"soft_cap", ReductionKind::Softmax, 1, true, true},
      {"alibi", ReductionKind::Softmax, 1, true, true},
      {"custom_mask", ReductionKind::Softmax, 3, true, false},
      {"sigmoid", ReductionKind::Sigmoid, 1, false, true},
  };
  for (const Expected &e : expected) {
    VariantOp v = dialect()->lookupStandardVariant(e.name);
    ASSERT_TRUE(v) << e.name;
    EXPECT_EQ(v.getReduction(), e.reduction) << e.name;
    EXPECT_EQ(v.getParamList().size(), e.params) << e.name;
    EXPECT_EQ(!v.getMask().empty(), e.mask) << e.name;
    EXPECT_EQ(!v.getLogits().empty(), e.logits) << e.name;
    EXPECT_TRUE(v.isMergeable()) << e.name;
  }
  EXPECT_FALSE(dialect()->lookupStandardVariant("no_such_variant"));
}

// Sibling modules are verified on the context's thread pool; each resolves
// @causal from the standard library, which is parsed (and verified, on the
// same pool) on first use. A lock held across that parse deadlocked when the
// waiting thread picked up the other module's task (issue 22). Every
// iteration uses a fresh context, so every one parses the library again.
TEST(AttnDialectThreadingTest, SiblingModulesResolveStandardVariants) {
  std::string module = R"(
    module {
      func.func @a(%n: index) -> !attn.state<heads = 1, head_dim = 2, @causal> {
        %s = attn.empty_state @causal %n
            : !attn.state<heads = 1, head_dim = 2, @causal>
        return %s : !attn.state<heads = 1, head_dim = 2, @causal>
      }
    })";
  std::string source;
  for (int i = 0; i < 8; ++i)
    source += module;
  for (int iteration = 0; iteration < 200; ++iteration) {
    MLIRContext ctx;
    ASSERT_TRUE(ctx.isMultithreadingEnabled());
    ctx.getOrLoadDialect<AttnDialect>();
    ctx.getOrLoadDialect<func::FuncDialect>();
    OwningOpRef<ModuleOp> parsed =
        parseSourceString<ModuleOp>(source, ParserConfig(&ctx));
    ASSERT_TRUE(parsed) << "iteration " << iteration;
    EXPECT_TRUE(
        ctx.getLoadedDialect<AttnDialect>()->lookupStandardVariant("causal"));
  }
}

TEST_F(AttnDialectTest, MergeRules) {
  EXPECT_TRUE(isMergeable(ReductionKind::Softmax));
  EXPECT_TRUE(isMergeable(ReductionKind::Sigmoid));
  EXPECT_FALSE(isMergeable(ReductionKind::Sparsemax));
}

TEST_F(AttnDialectTest, TypeVerifiersRejectBadParameters) {
  std::string diag;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
    diag = d.str();
    return success();
  });
  auto parse = [&](const char *text) {
    diag.clear();
    return parseType(text, &ctx);
  };
  EXPECT_TRUE(parse("!attn.paged_kv<page_size = 16, layout = nhd, heads = 8, "
                    "head_dim = 128, f16>"));
  EXPECT_FALSE(parse("!attn.paged_kv<page_size = 0, layout = nhd, heads = 8, "
                     "head_dim = 128, f16>"));
  EXPECT_NE(diag.find("page_size must be >= 1"), std::string::npos) << diag;
  EXPECT_FALSE(parse("!attn.ragged_kv<heads = 0, head_dim = 128, f16>"));
  EXPECT_NE(diag.find("heads must be >= 1"), std::string::npos) << diag;
  EXPECT_FALSE(parse("!attn.ragged_q<heads = 8, head_dim = 127, f16>"));
  EXPECT_NE(diag.find("head_dim must be an even number in 2..1024"),
            std::string::npos)
      << diag;
  EXPECT_FALSE(parse("!attn.ragged_kv<heads = 8, head_dim = 128, i8>"));
  EXPECT_NE(diag.find("element type must be f16, bf16 or f32"),
            std::string::npos)
      << diag;
}

TEST_F(AttnDialectTest, DefaultScaleIsInverseSqrtHeadDim) {
  const char *src = R"mlir(
    func.func @f(%q: !attn.ragged_q<heads = 4, head_dim = 80, f16>,
                 %kv: !attn.ragged_kv<heads = 2, head_dim = 80, f16>)
        -> (tensor<?x4x80xf16>, tensor<?x4xf32>) {
      %o, %lse = attn.attention @causal(%q, %kv)
          {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64}
          : !attn.ragged_q<heads = 4, head_dim = 80, f16>,
            !attn.ragged_kv<heads = 2, head_dim = 80, f16>
          -> tensor<?x4x80xf16>, tensor<?x4xf32>
      return %o, %lse : tensor<?x4x80xf16>, tensor<?x4xf32>
    }
  )mlir";
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(src, &ctx);
  ASSERT_TRUE(module);
  AttentionOp op;
  module->walk([&](AttentionOp a) { op = a; });
  ASSERT_TRUE(op);
  EXPECT_FLOAT_EQ(op.getEffectiveScale(), 1.0f / std::sqrt(80.0f));
  EXPECT_FALSE(op.returnsState());
  VariantOp variant = resolveVariant(op, op.getVariantAttr());
  ASSERT_TRUE(variant);
  EXPECT_EQ(variant.getSymName(), "causal");
}

} // namespace
