//===- ManifestTest.cpp - the kernel ABI and manifest.json ----------------===//

#include "flashir/ABI/Manifest.h"
#include "flashir/ABI/Json.h"

#include <gtest/gtest.h>

using namespace flashir::abi;

namespace {

TEST(Json, ParsesNestedValues) {
  JsonValue v;
  std::string error;
  ASSERT_TRUE(JsonValue::parse(
      R"({"a": [1, -2.5e1, "x\"y"], "b": {"c": true, "d": null}})", v, error))
      << error;
  const JsonValue *a = v.get("a");
  ASSERT_TRUE(a && a->isArray());
  ASSERT_EQ(a->array().size(), 3u);
  EXPECT_EQ(a->array()[0].number(), 1);
  EXPECT_EQ(a->array()[1].number(), -25);
  EXPECT_EQ(a->array()[2].string(), "x\"y");
  ASSERT_TRUE(v.get("b") && v.get("b")->get("c"));
  EXPECT_EQ(v.get("missing"), nullptr);
}

TEST(Json, RejectsMalformedInput) {
  for (const char *bad :
       {"", "{", "[1,]", "{\"a\" 1}", "\"open", "{} x", "[\\u0041]", "nul"}) {
    JsonValue v;
    std::string error;
    EXPECT_FALSE(JsonValue::parse(bad, v, error)) << bad;
    EXPECT_NE(error.find("offset"), std::string::npos) << error;
  }
}

// What the writer writes, the reader reads back equal: escapes, integers
// past 2^31, fractions that need 17 digits, nesting, empty containers.
TEST(Json, WriterRoundTrips) {
  JsonValue root = JsonValue::makeObject();
  root.set("text", "quote \" backslash \\ newline\n tab\t");
  root.set("big", int64_t(1) << 40);
  root.set("negative", int64_t(-7));
  root.set("fraction", 0.1);
  root.set("tiny", 1e-300);
  root.set("flag", false);
  JsonValue list = JsonValue::makeArray();
  list.push(JsonValue::makeArray());
  list.push(JsonValue::makeObject());
  list.push(3.25);
  root.set("list", std::move(list));
  std::string text = root.write();
  JsonValue back;
  std::string error;
  ASSERT_TRUE(JsonValue::parse(text, back, error)) << error << "\n" << text;
  EXPECT_EQ(back.get("text")->string(),
            "quote \" backslash \\ newline\n tab\t");
  EXPECT_EQ(back.get("big")->number(), double(int64_t(1) << 40));
  EXPECT_EQ(back.get("negative")->number(), -7);
  EXPECT_EQ(back.get("fraction")->number(), 0.1);
  EXPECT_EQ(back.get("tiny")->number(), 1e-300);
  EXPECT_TRUE(back.get("flag")->isBool());
  EXPECT_FALSE(back.get("flag")->boolean());
  ASSERT_EQ(back.get("list")->array().size(), 3u);
  EXPECT_TRUE(back.get("list")->array()[0].isArray());
  EXPECT_TRUE(back.get("list")->array()[1].isObject());
  EXPECT_EQ(back.get("list")->array()[2].number(), 3.25);
  EXPECT_EQ(back.write(), text);
}

TEST(KernelABI, NamesRoundTrip) {
  for (KernelKind kind :
       {KernelKind::Decode, KernelKind::Prefill, KernelKind::Merge})
    EXPECT_EQ(parseKind(kindName(kind)), kind);
  EXPECT_FALSE(parseKind("decoder"));
  for (int r = 0; r <= int(ArgRole::Param); ++r)
    EXPECT_EQ(parseRole(roleName(ArgRole(r))), ArgRole(r));
  EXPECT_FALSE(parseRole("pool"));
  for (ParamKind kind : {ParamKind::Scalar, ParamKind::PerRequest,
                         ParamKind::PerHead, ParamKind::Buffer})
    EXPECT_EQ(parseParamKind(paramKindName(kind)), kind);
  EXPECT_FALSE(parseParamKind("none"));
  int grids = 0;
  for (GridRows rows : {GridRows::Requests, GridRows::Chunks})
    for (bool qTiles : {false, true})
      for (GridHeads heads : {GridHeads::QoHeads, GridHeads::KvHeads}) {
        Grid g{rows, qTiles, heads};
        EXPECT_EQ(Grid::parse(g.str()), g) << g.str();
        ++grids;
      }
  EXPECT_EQ(grids, 8);
  EXPECT_EQ((Grid{GridRows::Chunks, true, GridHeads::QoHeads}).str(),
            "chunks x q_tiles x num_qo_heads");
  EXPECT_FALSE(Grid::parse("requests x num_heads"));
  EXPECT_FALSE(Grid::parse("requests x num_kv_heads "));
}

TEST(KernelABI, FixedArguments) {
  EXPECT_EQ(fixedArgs(KernelKind::Decode, false).size(), 10u);
  EXPECT_EQ(fixedArgs(KernelKind::Prefill, true).size(), 17u);
  std::vector<FixedArg> merge = fixedArgs(KernelKind::Merge, false);
  ASSERT_EQ(merge.size(), 6u);
  EXPECT_EQ(merge[2].role, ArgRole::PartialO);
  std::vector<FixedArg> split = fixedArgs(KernelKind::Decode, true);
  EXPECT_EQ(split[11].role, ArgRole::ChunkOrder);
  EXPECT_EQ(split.back().role, ArgRole::KvMaps);
  // A ragged view's kernels take no page table.
  std::vector<FixedArg> ragged = fixedArgs(KernelKind::Prefill, false, true);
  ASSERT_EQ(ragged.size(), 8u);
  EXPECT_EQ(ragged[4].role, ArgRole::KvIndptr);
  EXPECT_EQ(ragged[5].role, ArgRole::Out);
  EXPECT_EQ(fixedArgs(KernelKind::Decode, true, true).size(), 15u);
}

/// The fixed arguments' names of a kernel of `kind`.
std::vector<std::string> names(KernelKind kind, bool split, bool ragged,
                               int64_t numViews = 1) {
  std::vector<std::string> out;
  for (const FixedArg &arg : fixedArgs(kind, split, ragged, numViews))
    out.push_back(arg.name());
  return out;
}

TEST(KernelABI, RaggedSignatures) {
  EXPECT_TRUE(raggedSignature(names(KernelKind::Decode, false, true)));
  EXPECT_FALSE(raggedSignature(names(KernelKind::Decode, false, false)));
  Grid decode = gridOf(KernelKind::Decode, false, true);
  EXPECT_EQ(verifySignature(KernelKind::Decode, decode,
                            names(KernelKind::Decode, false, true), false, 0),
            "");
  // A page table without last_page_len is neither signature.
  std::vector<std::string> broken = names(KernelKind::Decode, false, false);
  broken.erase(broken.begin() + 6);
  broken.push_back("cap");
  EXPECT_EQ(verifySignature(KernelKind::Decode, decode, broken, false, 0),
            "argument 6 is 'out', expected 'last_page_len'");
}

KernelArg memref(const FixedArg &arg, std::string element,
                 std::vector<int64_t> shape) {
  KernelArg a{arg.name(), arg.role, true, std::move(element), std::move(shape)};
  a.view = arg.view;
  return a;
}

/// The arguments of a kernel of `kind` for Hq 32, Hkv 8, D 128, page 16.
std::vector<KernelArg> argsOf(KernelKind kind, bool split, bool ragged = false,
                              int64_t numViews = 1) {
  std::vector<KernelArg> args;
  for (const FixedArg &arg : fixedArgs(kind, split, ragged, numViews)) {
    switch (arg.role) {
    case ArgRole::Q:
    case ArgRole::Out:
    case ArgRole::PartialO:
      args.push_back(memref(arg, "bf16", {-1, 32, 128}));
      break;
    case ArgRole::KPool:
    case ArgRole::VPool:
      args.push_back(memref(arg, "bf16", {-1, 16, 8, 128}));
      break;
    case ArgRole::Lse:
    case ArgRole::PartialLse:
      args.push_back(memref(arg, "f32", {-1, 32}));
      break;
    case ArgRole::KvMaps:
      args.push_back(memref(arg, "i64", {2, 16}));
      break;
    default:
      args.push_back(memref(arg, "i32", {-1}));
    }
  }
  return args;
}

TEST(KernelABI, SeveralViews) {
  // One group k_pool ... last_page_len per view, view 0's first.
  std::vector<FixedArg> two = fixedArgs(KernelKind::Prefill, false, false, 2);
  ASSERT_EQ(two.size(), 15u);
  EXPECT_EQ(two[6], (FixedArg{ArgRole::LastPageLen, 0}));
  EXPECT_EQ(two[7], (FixedArg{ArgRole::KPool, 1}));
  EXPECT_EQ(two[7].name(), "k_pool_1");
  EXPECT_EQ(two[11].name(), "last_page_len_1");
  EXPECT_EQ(two[12].role, ArgRole::Out);
  std::vector<FixedArg> ragged = fixedArgs(KernelKind::Decode, false, true, 3);
  ASSERT_EQ(ragged.size(), 14u);
  EXPECT_EQ(ragged[10].name(), "indptr_2");
  EXPECT_TRUE(isViewRole(ArgRole::LastPageLen));
  EXPECT_FALSE(isViewRole(ArgRole::QoIndptr));

  std::vector<std::string> twoNames =
      names(KernelKind::Prefill, false, false, 2);
  EXPECT_EQ(viewsOfSignature(twoNames), 2);
  Grid prefill = gridOf(KernelKind::Prefill, false, false);
  EXPECT_EQ(verifySignature(KernelKind::Prefill, prefill, twoNames, false, 16),
            "");
  // Split kernels attend one view (a chunk's keys would span the views).
  EXPECT_EQ(verifySignature(
                KernelKind::Prefill, gridOf(KernelKind::Prefill, true, false),
                names(KernelKind::Prefill, true, false, 2), true, 16),
            "a split kernel attends one KV view");
  // View 1's group out of order.
  std::swap(twoNames[7], twoNames[8]);
  EXPECT_EQ(verifySignature(KernelKind::Prefill, prefill, twoNames, false, 16),
            "argument 7 is 'v_pool_1', expected 'k_pool_1'");

  // The manifest keeps each argument's view; a view on a role that belongs
  // to no view is refused.
  KernelInfo k;
  k.name = "two_views_prefill_0";
  k.kind = KernelKind::Prefill;
  k.grid = prefill;
  k.block = 128;
  k.qRows = k.qTokens = 64;
  k.kvTile = 64;
  k.variant = "causal";
  k.args = argsOf(KernelKind::Prefill, false, false, 2);
  EXPECT_EQ(verifyKernel(k), "");
  EXPECT_EQ(k.numViews(), 2);
  EXPECT_EQ(k.argIndex(ArgRole::VPool, 1), 8);
  EXPECT_EQ(k.arg(ArgRole::KvIndices, 1)->name, "indices_1");
  EXPECT_EQ(k.arg(ArgRole::KvIndices, 2), nullptr);
  Manifest m;
  m.kernels.push_back(k);
  Manifest back;
  std::string error;
  ASSERT_TRUE(parseManifest(writeManifest(m), back, error)) << error;
  ASSERT_EQ(back.kernels.size(), 1u);
  EXPECT_EQ(back.kernels[0].numViews(), 2);
  EXPECT_EQ(back.kernels[0].args[9].view, 1);
  EXPECT_EQ(back.kernels[0].args[9].name, "indptr_1");
  k.args[9].view = 0;
  EXPECT_EQ(verifyKernel(k),
            "kernel 'two_views_prefill_0': argument 9 ('indptr_1') has role "
            "'indptr', expected 'indptr' of view 1");
}

/// A bundle as flashir-bundle writes one: a split decode kernel with a
/// scalar and a buffer parameter, its merge kernel, an unsplit prefill
/// kernel with fused head groups; two chips with different facts.
Manifest sampleManifest() {
  Manifest m;
  m.source = "kernels.mlir";
  KernelInfo decode;
  decode.name = "f_decode_0";
  decode.kind = KernelKind::Decode;
  decode.grid = gridOf(KernelKind::Decode, true, true);
  decode.block = 128;
  decode.unroll = 2;
  decode.variant = "soft_cap";
  decode.mergeKernel = "f_merge_0";
  decode.args = argsOf(KernelKind::Decode, true);
  decode.args.push_back(
      {"cap", ArgRole::Param, false, "f32", {}, ParamKind::Scalar});
  decode.args.push_back(
      {"window", ArgRole::Param, true, "i32", {-1}, ParamKind::PerRequest});
  decode.args.push_back(
      {"slopes", ArgRole::Param, true, "f32", {-1}, ParamKind::PerHead});
  decode.args.push_back(
      {"bits", ArgRole::Param, true, "i8", {4, -1}, ParamKind::Buffer});
  KernelInfo merge;
  merge.name = "f_merge_0";
  merge.kind = KernelKind::Merge;
  merge.grid = gridOf(KernelKind::Merge, false, false);
  merge.block = 16;
  merge.variant = "soft_cap";
  merge.args = argsOf(KernelKind::Merge, false);
  KernelInfo prefill;
  prefill.name = "g_prefill_1";
  prefill.kind = KernelKind::Prefill;
  prefill.grid = gridOf(KernelKind::Prefill, false, true);
  prefill.block = 128;
  prefill.qRows = 64;
  prefill.qTokens = 16;
  prefill.kvTile = 64;
  prefill.variant = "causal";
  prefill.hnd = true;
  prefill.args = argsOf(KernelKind::Prefill, false);
  // A decode kernel over a ragged view (contiguous rows, no page table).
  KernelInfo ragged;
  ragged.name = "h_decode_2";
  ragged.kind = KernelKind::Decode;
  ragged.grid = gridOf(KernelKind::Decode, false, true);
  ragged.block = 64;
  ragged.variant = "plain";
  ragged.ragged = true;
  ragged.positionFree = true;
  ragged.args = argsOf(KernelKind::Decode, false, true);
  m.kernels = {decode, merge, prefill, ragged};
  TargetInfo hopper;
  hopper.chip = "sm_90a";
  // One module per kernel on Hopper (cubins too), one module on Turing.
  for (const KernelInfo &k : m.kernels)
    hopper.modules.push_back(
        {k.name + ".sm_90a.ptx", k.name + ".sm_90a.cubin", {k.name}});
  hopper.compileMs = 123.5;
  KernelFacts &f = hopper.kernels["f_decode_0"];
  f.dynamicSharedMemoryBytes = 98304;
  f.stages = 3;
  f.tensorCores = f.bulkCopy = f.programmaticWait = true;
  f.completesAfterPredecessor = true;
  f.tensorMapBox = {64, 1, 16};
  f.hasCost = true;
  f.costAlpha = 2.5;
  f.costBeta = 0.01;
  hopper.kernels["g_prefill_1"].persistent = true;
  hopper.kernels["f_merge_0"].sharedMemoryBytes = 4224;
  hopper.kernels["f_merge_0"].programmaticWait = true;
  TargetInfo turing;
  turing.chip = "sm_75";
  turing.modules = {{"kernels.sm_75.ptx", "", {}}};
  turing.kernels["f_decode_0"].sharedMemoryBytes = 16384;
  m.targets = {hopper, turing};
  return m;
}

void expectSameKernel(const KernelInfo &a, const KernelInfo &b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.grid, b.grid);
  EXPECT_EQ(a.block, b.block);
  EXPECT_EQ(a.unroll, b.unroll);
  EXPECT_EQ(a.qRows, b.qRows);
  EXPECT_EQ(a.qTokens, b.qTokens);
  EXPECT_EQ(a.kvTile, b.kvTile);
  EXPECT_EQ(a.variant, b.variant);
  EXPECT_EQ(a.mergeKernel, b.mergeKernel);
  EXPECT_EQ(a.positionFree, b.positionFree);
  EXPECT_EQ(a.hnd, b.hnd);
  EXPECT_EQ(a.ragged, b.ragged);
  ASSERT_EQ(a.args.size(), b.args.size());
  for (size_t i = 0; i < a.args.size(); ++i) {
    EXPECT_EQ(a.args[i].name, b.args[i].name);
    EXPECT_EQ(a.args[i].role, b.args[i].role);
    EXPECT_EQ(a.args[i].view, b.args[i].view);
    EXPECT_EQ(a.args[i].memref, b.args[i].memref);
    EXPECT_EQ(a.args[i].element, b.args[i].element);
    EXPECT_EQ(a.args[i].shape, b.args[i].shape);
    EXPECT_EQ(a.args[i].paramKind, b.args[i].paramKind);
  }
}

void expectSameFacts(const KernelFacts &a, const KernelFacts &b) {
  EXPECT_EQ(a.sharedMemoryBytes, b.sharedMemoryBytes);
  EXPECT_EQ(a.dynamicSharedMemoryBytes, b.dynamicSharedMemoryBytes);
  EXPECT_EQ(a.stages, b.stages);
  EXPECT_EQ(a.tensorCores, b.tensorCores);
  EXPECT_EQ(a.bulkCopy, b.bulkCopy);
  EXPECT_EQ(a.programmaticWait, b.programmaticWait);
  EXPECT_EQ(a.completesAfterPredecessor, b.completesAfterPredecessor);
  EXPECT_EQ(a.persistent, b.persistent);
  EXPECT_EQ(a.tensorMapBox, b.tensorMapBox);
  EXPECT_EQ(a.hasCost, b.hasCost);
  EXPECT_EQ(a.costAlpha, b.costAlpha);
  EXPECT_EQ(a.costBeta, b.costBeta);
}

TEST(Manifest, RoundTrips) {
  Manifest m = sampleManifest();
  for (const KernelInfo &k : m.kernels)
    EXPECT_EQ(verifyKernel(k), "") << k.name;
  std::string text = writeManifest(m);
  Manifest back;
  std::string error;
  ASSERT_TRUE(parseManifest(text, back, error)) << error << "\n" << text;
  EXPECT_EQ(back.abiVersion, kAbiVersion);
  EXPECT_EQ(back.source, m.source);
  ASSERT_EQ(back.kernels.size(), m.kernels.size());
  for (size_t i = 0; i < m.kernels.size(); ++i)
    expectSameKernel(back.kernels[i], m.kernels[i]);
  ASSERT_EQ(back.targets.size(), m.targets.size());
  for (size_t t = 0; t < m.targets.size(); ++t) {
    EXPECT_EQ(back.targets[t].chip, m.targets[t].chip);
    ASSERT_EQ(back.targets[t].modules.size(), m.targets[t].modules.size());
    for (size_t i = 0; i < m.targets[t].modules.size(); ++i) {
      EXPECT_EQ(back.targets[t].modules[i].ptx, m.targets[t].modules[i].ptx);
      EXPECT_EQ(back.targets[t].modules[i].cubin,
                m.targets[t].modules[i].cubin);
      EXPECT_EQ(back.targets[t].modules[i].kernels,
                m.targets[t].modules[i].kernels);
    }
    EXPECT_EQ(back.targets[t].compileMs, m.targets[t].compileMs);
    for (const KernelInfo &k : m.kernels)
      expectSameFacts(back.targets[t].facts(k.name),
                      m.targets[t].facts(k.name));
  }
  EXPECT_EQ(writeManifest(back), text);
  // Each kernel is found in its own module, or in the chip's only one.
  const TargetInfo &hopper = back.targets[0], &turing = back.targets[1];
  for (const KernelInfo &k : m.kernels) {
    ASSERT_NE(hopper.moduleOf(k.name), nullptr);
    EXPECT_EQ(hopper.moduleOf(k.name)->ptx, k.name + ".sm_90a.ptx");
    EXPECT_EQ(turing.moduleOf(k.name), &turing.modules[0]);
  }
  EXPECT_EQ(hopper.moduleOf("nope"), nullptr);
  // Lookups by role and the shapes read through them.
  const KernelInfo &decode = back.kernels[0];
  EXPECT_TRUE(decode.split());
  EXPECT_FALSE(back.kernels[1].split());
  EXPECT_EQ(decode.argIndex(ArgRole::PartialO), 12);
  EXPECT_EQ(decode.argIndex(ArgRole::Param), -1);
  EXPECT_EQ(decode.numParams(), 4);
  EXPECT_EQ(decode.numQoHeads(), 32);
  EXPECT_EQ(decode.numKvHeads(), 8);
  EXPECT_EQ(decode.headDim(), 128);
  EXPECT_EQ(decode.pageSize(), 16);
  EXPECT_EQ(back.kernels[1].headDim(), 128);
  EXPECT_EQ(back.kernels[1].pageSize(), 0);
  EXPECT_EQ(back.find("f_merge_0"), &back.kernels[1]);
  EXPECT_EQ(back.target("sm_80"), nullptr);
}

/// parseManifest's error for `sample` after `edit`.
template <typename Edit> std::string errorAfter(Edit edit) {
  Manifest m = sampleManifest();
  edit(m);
  Manifest out;
  std::string error;
  EXPECT_FALSE(parseManifest(writeManifest(m), out, error));
  return error;
}

TEST(Manifest, RejectsBrokenABIs) {
  auto has = [](const std::string &error, const std::string &part) {
    return error.find(part) != std::string::npos;
  };
  std::string e = errorAfter([](Manifest &m) { m.abiVersion = 3; });
  EXPECT_TRUE(has(e, "bundle ABI version 3 is not this runtime's (6)")) << e;
  EXPECT_TRUE(has(e, "rebuild the bundle")) << e;
  e = errorAfter([](Manifest &m) {
    std::swap(m.kernels[0].args[2], m.kernels[0].args[3]);
  });
  EXPECT_TRUE(has(e, "argument 2 ('v_pool') has role 'v_pool', expected "
                     "'k_pool'"))
      << e;
  e = errorAfter([](Manifest &m) {
    m.kernels[0].args.back().paramKind = ParamKind::PerHead;
  });
  EXPECT_TRUE(has(e, "parameter 'bits' (per_head) must be a scalar, a "
                     "per-request or per-head array, or a buffer"))
      << e;
  e = errorAfter([](Manifest &m) {
    m.kernels[0].args[17].paramKind = ParamKind::PerRequest;
  });
  EXPECT_TRUE(has(e, "parameter 'cap' (per_request)")) << e;
  e = errorAfter([](Manifest &m) { m.kernels[0].mergeKernel.clear(); });
  EXPECT_TRUE(has(e, "a split kernel must name its merge kernel")) << e;
  e = errorAfter([](Manifest &m) { m.kernels[0].mergeKernel = "f_merge_9"; });
  EXPECT_TRUE(has(e, "names merge kernel 'f_merge_9', which the bundle has "
                     "not"))
      << e;
  e = errorAfter([](Manifest &m) { m.kernels[1].args[2].element = "f16"; });
  EXPECT_TRUE(has(e, "reads other partial states")) << e;
  e = errorAfter([](Manifest &m) {
    m.kernels[2].grid = gridOf(KernelKind::Decode, false, true);
  });
  EXPECT_TRUE(has(e, "grid 'requests x num_kv_heads' does not fit a prefill "
                     "kernel"))
      << e;
  e = errorAfter([](Manifest &m) { m.kernels[2].qTokens = 0; });
  EXPECT_TRUE(has(e, "needs q_tokens >= 1")) << e;
  e = errorAfter([](Manifest &m) { m.kernels[1].args.pop_back(); });
  EXPECT_TRUE(has(e, "takes 6 fixed arguments, not 5")) << e;
  e = errorAfter([](Manifest &m) { m.kernels[2].args[0].shape = {-1, 32}; });
  EXPECT_TRUE(has(e, "argument 'q' must be a memref of rank 3")) << e;
  e = errorAfter([](Manifest &m) { m.kernels.push_back(m.kernels[2]); });
  EXPECT_TRUE(has(e, "kernel 'g_prefill_1' appears twice")) << e;
  e = errorAfter([](Manifest &m) { m.kernels[2].block = 2048; });
  EXPECT_TRUE(has(e, "'block' must be an integer in 1..1024")) << e;
  e = errorAfter([](Manifest &m) {
    m.targets[0].kernels["f_decode_0"].persistent = true;
  });
  EXPECT_TRUE(has(e, "kernel f_decode_0: only prefill kernels may be "
                     "persistent"))
      << e;
  e = errorAfter(
      [](Manifest &m) { m.targets[0].modules[1].cubin = "../x.cubin"; });
  EXPECT_TRUE(has(e, "must not leave the bundle")) << e;
  e = errorAfter(
      [](Manifest &m) { m.targets[1].modules[0].ptx = "/tmp/x.ptx"; });
  EXPECT_TRUE(has(e, "must not leave the bundle")) << e;
  e = errorAfter([](Manifest &m) { m.targets[0].modules.pop_back(); });
  EXPECT_TRUE(has(e, "kernel h_decode_2 is defined by 0 modules")) << e;
  e = errorAfter([](Manifest &m) {
    m.targets[0].modules[1].kernels.push_back("g_prefill_1");
  });
  EXPECT_TRUE(has(e, "kernel g_prefill_1 is defined by 2 modules")) << e;
  e = errorAfter(
      [](Manifest &m) { m.targets[0].modules[0].kernels = {"f_merge_9"}; });
  EXPECT_TRUE(has(e, "names a kernel the bundle does not hold")) << e;
  e = errorAfter(
      [](Manifest &m) { m.targets[0].kernels["f_decode_0"].costBeta = 0; });
  EXPECT_TRUE(has(e, "the cost needs numbers alpha >= 0 and beta > 0")) << e;
  e = errorAfter([](Manifest &m) {
    m.targets[0].kernels["f_decode_0"].tensorMapBox = {64, 0, 16};
  });
  EXPECT_TRUE(has(e, "tensor_map_box needs three or five extents in 1..256"))
      << e;
  e = errorAfter([](Manifest &m) {
    m.targets[0].kernels["f_decode_0"].tensorMapBox = {64, 8, 2, 1};
  });
  EXPECT_TRUE(has(e, "tensor_map_box needs three or five extents in 1..256"))
      << e;
  e = errorAfter([](Manifest &m) {
    m.targets[0].kernels["f_decode_0"].tensorMapBox = {64, 16, 2, 1, 2};
  });
  EXPECT_TRUE(has(e, "tensor_map_box of five extents groups 8 keys")) << e;
  // A ragged kernel takes no page table; a paged one needs it.
  e = errorAfter([](Manifest &m) { m.kernels[3].ragged = false; });
  EXPECT_TRUE(has(e, "argument 5 ('out') has role 'out', expected 'indices'"))
      << e;
  e = errorAfter([](Manifest &m) { m.kernels[0].ragged = true; });
  EXPECT_TRUE(has(e, "argument 5 ('indices') has role 'indices', expected "
                     "'chunk_indptr'"))
      << e;
  // (The manifest cannot say both; a kernel built in memory can.)
  KernelInfo hndRagged = sampleManifest().kernels[3];
  hndRagged.hnd = true;
  EXPECT_TRUE(has(verifyKernel(hndRagged), "only decode and prefill kernels "
                                           "over NHD rows read a ragged view"));
}

TEST(Manifest, RejectsMalformedEntries) {
  auto errorOf = [](const std::string &text) {
    Manifest m;
    std::string error;
    EXPECT_FALSE(parseManifest(text, m, error)) << text;
    return error;
  };
  EXPECT_NE(errorOf("{").find("JSON"), std::string::npos);
  EXPECT_NE(errorOf("{}").find("no abi_version"), std::string::npos);
  EXPECT_NE(errorOf(R"({"abi_version": 6})").find("'kernels' and 'targets'"),
            std::string::npos);
  auto target = [](const std::string &fields) {
    return R"({"abi_version": 6, "kernels": [], "targets": [{"chip": "sm_80", )" +
           fields + "}]}";
  };
  EXPECT_NE(
      errorOf(target(R"("ptx": "a.ptx", "modules": [])")).find("not both"),
      std::string::npos);
  EXPECT_NE(errorOf(target(R"("modules": {})")).find("must be an array"),
            std::string::npos);
  EXPECT_NE(errorOf(target(R"("modules": [{"ptx": "a.ptx"}])"))
                .find("needs a non-empty 'kernels' array"),
            std::string::npos);
  EXPECT_NE(errorOf(target(R"("modules": [7])")).find("must be an object"),
            std::string::npos);
  EXPECT_NE(errorOf(R"({"abi_version": 6, "targets": [], "kernels": [
    {"name": "k", "kind": "fused", "grid": "requests x num_kv_heads",
     "block": 32, "args": []}]})")
                .find("unknown kind 'fused'"),
            std::string::npos);
  EXPECT_NE(errorOf(R"({"abi_version": 6, "targets": [], "kernels": [
    {"name": "k", "kind": "decode", "grid": "requests x heads",
     "block": 32, "args": []}]})")
                .find("unknown grid"),
            std::string::npos);
  EXPECT_NE(errorOf(R"({"abi_version": 6, "targets": [], "kernels": [
    {"name": "k", "kind": "decode", "grid": "requests x num_kv_heads",
     "block": 32, "args": [{"name": "q", "role": "query", "kind": "memref",
     "element": "bf16", "shape": [-1, 1, 64]}]}]})")
                .find("unknown role 'query'"),
            std::string::npos);
}

} // namespace

// A persistent kernel's launched z: enough planes of x * y CTAs for one per
// SM, at most the grid's z; z itself where nothing is known.
TEST(KernelABI, PersistentGridZ) {
  EXPECT_EQ(persistentGridZ(132, 4, 32, 32), 2u);  // B4 S4096: 256 CTAs
  EXPECT_EQ(persistentGridZ(132, 1, 128, 32), 2u); // B1 S16384
  EXPECT_EQ(persistentGridZ(132, 4, 33, 32), 1u);  // a plane fills the SMs
  EXPECT_EQ(persistentGridZ(132, 1, 2, 8), 8u);    // capped at z
  EXPECT_EQ(persistentGridZ(132, 0, 32, 32), 32u); // nothing to launch
  EXPECT_EQ(persistentGridZ(0, 4, 32, 32), 32u);   // SMs unknown
  EXPECT_EQ(persistentGridZ(132, 1u << 20, 1u << 20, 32), 1u); // no overflow
}
