//===- LauncherTest.cpp - manifests and the launcher without a GPU --------===//

#include "flashir/Runtime/Launcher.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>

using namespace flashir::runtime;

namespace {

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

// The runtime reads a bundle directory's manifest through the ABI's reader
// (ManifestTest.cpp tests the format itself).
TEST_F(ManifestTest, ReadsABundleDirectory) {
  flashir::abi::Manifest m;
  Status missing = readManifest((dir / "nope").string(), m);
  EXPECT_NE(missing.message().find("cannot read"), std::string::npos);
  write(R"({"abi_version": 3, "kernels": [], "targets": []})");
  Status old = readManifest(dir.string(), m);
  EXPECT_NE(old.message().find("manifest.json: bundle ABI version 3"),
            std::string::npos)
      << old.message();
  write(R"({"abi_version": 6, "source": "x.mlir", "kernels": [],
            "targets": [{"chip": "sm_80", "ptx": "kernels.sm_80.ptx"}]})");
  ASSERT_TRUE(readManifest(dir.string(), m).isOk());
  EXPECT_EQ(m.source, "x.mlir");
  ASSERT_EQ(m.targets.size(), 1u);
  ASSERT_EQ(m.targets[0].modules.size(), 1u);
  EXPECT_EQ(m.targets[0].modules[0].ptx, "kernels.sm_80.ptx");
}

// Prefill kernels index pool rows (pages x page size) in 32 bits: pools past
// 2^31 - 1 rows are refused with a message; decode kernels are not limited.
TEST(Launcher, PrefillPoolRowsFitIn32Bits) {
  using flashir::abi::GridRows;
  KernelInfo prefill;
  prefill.name = "p";
  prefill.kind = KernelKind::Prefill;
  prefill.grid = flashir::abi::gridOf(KernelKind::Prefill, false, false);
  prefill.qTokens = 16;
  prefill.block = 128;
  prefill.args = {{"q", ArgRole::Q, true, "bf16", {-1, 32, 128}},
                  {"qo_indptr", ArgRole::QoIndptr, true, "i32", {-1}},
                  {"k_pool", ArgRole::KPool, true, "bf16", {-1, 16, 8, 128}}};
  int64_t maxPages = std::numeric_limits<int32_t>::max() / 16;
  EXPECT_TRUE(checkPoolRows(prefill, maxPages).isOk());
  Status s = checkPoolRows(prefill, maxPages + 1);
  EXPECT_FALSE(s.isOk());
  EXPECT_EQ(s.message(), "p addresses pool rows (pages x page size) in 32 "
                         "bits: 134217728 pages of 16 rows exceed 2^31 - 1");
  KernelInfo split = prefill;
  split.grid.rows = GridRows::Chunks;
  EXPECT_FALSE(checkPoolRows(split, maxPages + 1).isOk());
  KernelInfo decode = prefill;
  decode.kind = KernelKind::Decode;
  EXPECT_TRUE(checkPoolRows(decode, maxPages + 1).isOk());
}

// Variant parameters are checked against the step: a scalar where the
// kernel takes one, per-request arrays of batch entries, per-head arrays of
// Hq entries, buffers of their static size; the error names the parameter.
TEST(Launcher, ParametersFitTheStep) {
  using flashir::abi::ParamKind;
  KernelInfo k;
  k.name = "k";
  k.args = {
      {"q", ArgRole::Q, true, "bf16", {-1, 32, 128}},
      {"cap", ArgRole::Param, false, "f32", {}, ParamKind::Scalar},
      {"window", ArgRole::Param, true, "i32", {-1}, ParamKind::PerRequest},
      {"slope", ArgRole::Param, true, "f32", {-1}, ParamKind::PerHead},
      {"bits", ArgRole::Param, true, "i8", {4, 16}, ParamKind::Buffer}};
  int dummy = 0;
  auto array = [&](int64_t n) {
    AttentionBuffers::Param p;
    p.pointer = &dummy;
    p.size = n;
    return p;
  };
  AttentionBuffers::Param scalar;
  scalar.scalar = 30.0f;
  std::vector<AttentionBuffers::Param> ok = {scalar, array(7), array(32),
                                             array(64)};
  EXPECT_TRUE(checkParams(k, ok, 7).isOk());
  EXPECT_EQ(checkParams(k, ok, 8).message(),
            "k: parameter 'window' (per_request) needs a device array of at "
            "least 8 elements; 7 given");
  std::vector<AttentionBuffers::Param> heads = {scalar, array(7), array(31),
                                                array(64)};
  EXPECT_NE(checkParams(k, heads, 7)
                .message()
                .find("'slope' (per_head) needs "
                      "a device array of at "
                      "least 32"),
            std::string::npos);
  std::vector<AttentionBuffers::Param> buffer = {scalar, array(7), array(32),
                                                 array(63)};
  EXPECT_NE(checkParams(k, buffer, 7).message().find("'bits' (buffer)"),
            std::string::npos);
  std::vector<AttentionBuffers::Param> swapped = {array(1), array(7), array(32),
                                                  array(64)};
  EXPECT_EQ(checkParams(k, swapped, 7).message(),
            "k: parameter 'cap' is a scalar; an array was given");
  std::vector<AttentionBuffers::Param> missing = {
      scalar, AttentionBuffers::Param(), array(32), array(64)};
  EXPECT_NE(checkParams(k, missing, 0).message().find("none given"),
            std::string::npos);
  EXPECT_EQ(checkParams(k, {scalar}, 7).message(),
            "k takes 4 variant parameters, 1 given");
}

// A kernel over several KV views takes views 1.. from moreViews, each with
// its pools and page table; a missing or incomplete view is named.
TEST(Launcher, BuffersHoldEveryView) {
  KernelInfo k;
  k.name = "v";
  k.kind = KernelKind::Prefill;
  for (const flashir::abi::FixedArg &arg :
       flashir::abi::fixedArgs(KernelKind::Prefill, false, false, 3)) {
    KernelArg a;
    a.name = arg.name();
    a.role = arg.role;
    a.view = arg.view;
    a.memref = true;
    a.element = "i32";
    a.shape = {-1};
    if (arg.role == ArgRole::KPool || arg.role == ArgRole::VPool) {
      a.element = "bf16";
      a.shape = {-1, 16, 8, 128};
    }
    k.args.push_back(a);
  }
  ASSERT_EQ(k.numViews(), 3);
  int dummy = 0;
  AttentionBuffers::View view;
  view.kPool = view.vPool = view.indptr = view.indices = view.lastPageLen =
      &dummy;
  view.numPages = 4;
  AttentionBuffers buffers;
  EXPECT_EQ(checkViews(k, buffers).message(),
            "v attends 3 KV views; the buffers hold 1");
  buffers.moreViews = {view, view};
  EXPECT_TRUE(checkViews(k, buffers).isOk());
  buffers.moreViews[1].indices = nullptr;
  EXPECT_EQ(checkViews(k, buffers).message(),
            "v: KV view 2 needs pools of at least one page, indptr, indices "
            "and last_page_len");
  buffers.moreViews[1] = view;
  buffers.moreViews[0].numPages = std::numeric_limits<int32_t>::max();
  EXPECT_NE(checkViews(k, buffers).message().find("in 32 bits"),
            std::string::npos);
  // A single-view kernel given a second view.
  KernelInfo one = k;
  one.args.resize(7);
  EXPECT_EQ(checkViews(one, buffers).message(),
            "v attends 1 KV view; the buffers hold 3");
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

// Scalar parameters as cuLaunchKernel reads them: f32 bits, i32 in the low
// four bytes, i64 whole; other types and out-of-range i32 values refused.
TEST(Launcher, ScalarArgWords) {
  int64_t word = -1;
  ASSERT_TRUE(scalarArgWord("k: cap", "f32", 30.0f, 0, word));
  float f = 0;
  std::memcpy(&f, &word, sizeof f);
  EXPECT_EQ(f, 30.0f);
  EXPECT_EQ(word >> 32, 0);
  ASSERT_TRUE(scalarArgWord("k: half", "i32", 0, -5, word));
  int32_t i = 0;
  std::memcpy(&i, &word, sizeof i);
  EXPECT_EQ(i, -5);
  ASSERT_TRUE(scalarArgWord("k: n", "i64", 0, int64_t(1) << 40, word));
  EXPECT_EQ(word, int64_t(1) << 40);
  EXPECT_EQ(
      scalarArgWord("k: half", "i32", 0, int64_t(1) << 31, word).message(),
      "k: half (i32) is out of range: 2147483648");
  EXPECT_EQ(scalarArgWord("k: x", "f16", 1.0f, 0, word).message(),
            "k: x: unsupported scalar type f16 (f32, i32 and i64 are)");
}
