//===- LauncherTest.cpp - manifests and the launcher without a GPU --------===//

#include "flashir/Runtime/Launcher.h"
#include "flashir/Runtime/Json.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>

using namespace flashir::runtime;

namespace {

TEST(Json, ParsesNestedValues) {
  JsonValue v;
  ASSERT_TRUE(
      JsonValue::parse(
          R"({"a": [1, -2.5e1, "x\"y"], "b": {"c": true, "d": null}})", v)
          .isOk());
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
    Status s = JsonValue::parse(bad, v);
    EXPECT_FALSE(s.isOk()) << bad;
    EXPECT_NE(s.message().find("offset"), std::string::npos) << s.message();
  }
}

class ManifestTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir = std::filesystem::temp_directory_path() /
          ("flashir-manifest-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
  }
  void TearDown() override { std::filesystem::remove_all(dir); }
  void write(const std::string &text) {
    std::ofstream(dir / "manifest.json") << text;
  }
  std::filesystem::path dir;
};

TEST_F(ManifestTest, ReadsKernelsAndTargets) {
  write(R"({"abi_version": 3, "kernels": [{"name": "k0", "block": 128,
    "grid": "requests x num_kv_heads", "q_tokens": 16,
    "shared_memory_bytes": 8320, "variant": "causal", "args": [
      {"name": "q", "kind": "memref", "element": "bf16", "shape": [-1, 32, 128]},
      {"name": "param0", "kind": "scalar", "element": "f32"}]}],
    "targets": [{"chip": "sm_80", "ptx": "kernels.sm_80.ptx", "kernels": {
      "k0": {"dynamic_shared_memory_bytes": 98304,
             "cost": {"alpha": 2.5, "beta": 0.01},
             "tensor_map_box": [64, 1, 16], "programmatic_wait": true,
             "completes_after_predecessor": true}}},
      {"chip": "sm_75", "ptx": "kernels.sm_75.ptx", "kernels": {
      "k0": {"programmatic_wait": false,
             "completes_after_predecessor": false}}}]})");
  std::vector<KernelInfo> kernels;
  std::vector<TargetInfo> targets;
  ASSERT_TRUE(readManifest(dir.string(), kernels, targets).isOk());
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_EQ(kernels[0].name, "k0");
  EXPECT_EQ(kernels[0].block, 128);
  EXPECT_EQ(kernels[0].grid, "requests x num_kv_heads");
  EXPECT_EQ(kernels[0].qTokens, 16);
  EXPECT_EQ(kernels[0].sharedMemoryBytes, 8320);
  EXPECT_EQ(kernels[0].variant, "causal");
  ASSERT_EQ(kernels[0].args.size(), 2u);
  EXPECT_TRUE(kernels[0].args[0].memref);
  EXPECT_EQ(kernels[0].args[0].shape, (std::vector<int64_t>{-1, 32, 128}));
  EXPECT_FALSE(kernels[0].args[1].memref);
  ASSERT_EQ(targets.size(), 2u);
  EXPECT_EQ(targets[0].chip, "sm_80");
  EXPECT_EQ(targets[0].cubin, "");
  EXPECT_EQ(targets[0].dynamicSharedMemoryBytes.at("k0"), 98304);
  ASSERT_EQ(targets[0].costs.count("k0"), 1u);
  EXPECT_EQ(targets[0].costs.at("k0").alpha, 2.5);
  EXPECT_EQ(targets[0].costs.at("k0").beta, 0.01);
  EXPECT_EQ(targets[0].tensorMapBoxes.at("k0"),
            (std::vector<int64_t>{64, 1, 16}));
  EXPECT_EQ(targets[0].programmaticWait, (std::set<std::string>{"k0"}));
  EXPECT_EQ(targets[0].completesAfterPredecessor,
            (std::set<std::string>{"k0"}));
  EXPECT_TRUE(targets[1].programmaticWait.empty());
  EXPECT_TRUE(targets[1].completesAfterPredecessor.empty());
  EXPECT_TRUE(targets[1].tensorMapBoxes.empty());
}

TEST_F(ManifestTest, ReportsProblems) {
  std::vector<KernelInfo> kernels;
  std::vector<TargetInfo> targets;
  Status missing = readManifest((dir / "nope").string(), kernels, targets);
  EXPECT_NE(missing.message().find("cannot read"), std::string::npos);
  write(R"({"abi_version": 2, "kernels": [], "targets": []})");
  EXPECT_NE(readManifest(dir.string(), kernels, targets)
                .message()
                .find("unsupported abi_version"),
            std::string::npos);
  write(R"({"abi_version": 3, "kernels": [{"block": 128, "args": []}],
            "targets": []})");
  EXPECT_NE(readManifest(dir.string(), kernels, targets)
                .message()
                .find("a kernel needs a name"),
            std::string::npos);
  write("{");
  EXPECT_NE(readManifest(dir.string(), kernels, targets).message().find("JSON"),
            std::string::npos);
  // A calibrated cost the planner could not use.
  write(R"({"abi_version": 3, "kernels": [{"name": "k0", "block": 128,
    "args": []}], "targets": [{"chip": "sm_90a", "ptx": "p", "kernels": {
      "k0": {"cost": {"alpha": 1.0, "beta": 0.0}}}}]})");
  EXPECT_NE(readManifest(dir.string(), kernels, targets)
                .message()
                .find("the cost of k0 on sm_90a needs numbers alpha >= 0 and "
                      "beta > 0"),
            std::string::npos);
  // A tensor map box the driver could not encode.
  write(R"({"abi_version": 3, "kernels": [{"name": "k0", "block": 128,
    "args": []}], "targets": [{"chip": "sm_90a", "ptx": "p", "kernels": {
      "k0": {"tensor_map_box": [64, 0, 16]}}}]})");
  EXPECT_NE(readManifest(dir.string(), kernels, targets)
                .message()
                .find("the tensor_map_box of k0 on sm_90a needs three extents "
                      "in 1..256"),
            std::string::npos);
}

// Prefill kernels index pool rows (pages x page size) in 32 bits: pools past
// 2^31 - 1 rows are refused with a message; decode kernels are not limited.
TEST(Launcher, PrefillPoolRowsFitIn32Bits) {
  KernelInfo prefill{"p",
                     "requests x q_tiles x num_qo_heads",
                     16,
                     128,
                     0,
                     "",
                     {{"q", true, "bf16", {-1, 32, 128}},
                      {"qo_indptr", true, "i32", {-1}},
                      {"k_pool", true, "bf16", {-1, 16, 8, 128}}}};
  int64_t maxPages = std::numeric_limits<int32_t>::max() / 16;
  EXPECT_TRUE(checkPoolRows(prefill, maxPages).isOk());
  Status s = checkPoolRows(prefill, maxPages + 1);
  EXPECT_FALSE(s.isOk());
  EXPECT_EQ(s.message(), "p addresses pool rows (pages x page size) in 32 "
                         "bits: 134217728 pages of 16 rows exceed 2^31 - 1");
  KernelInfo split = prefill;
  split.grid = "chunks x q_tiles x num_kv_heads";
  EXPECT_FALSE(checkPoolRows(split, maxPages + 1).isOk());
  KernelInfo decode = prefill;
  decode.grid = "requests x num_kv_heads";
  EXPECT_TRUE(checkPoolRows(decode, maxPages + 1).isOk());
}

// Without a GPU the driver is missing and opening it is an error with a
// message, never a crash; with one, it opens.
TEST(CudaDriver, OpensOrExplains) {
  std::unique_ptr<CudaDriver> driver;
  Status s = CudaDriver::open(0, driver);
  if (s.isOk())
    EXPECT_NE(driver, nullptr);
  else
    EXPECT_FALSE(s.message().empty());
}

} // namespace
