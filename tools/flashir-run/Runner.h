//===- Runner.h - the parts of flashir-run ----------------------*- C++ -*-===//
//
// What the files of the CPU runner share: the command line (Options.cpp),
// the generated inputs (Inputs.cpp), the attn program written for them
// (Program.cpp), compiling and calling it (Execution.cpp) and checking its
// outputs against the float64 reference (Check.cpp); flashir-run.cpp runs
// them in that order.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHIR_TOOLS_FLASHIR_RUN_RUNNER_H
#define FLASHIR_TOOLS_FLASHIR_RUN_RUNNER_H

#include "HookInterpreter.h"

#include "flashir/Dialect/Attn/IR/Attn.h"
#include "flashir/Reference/Reference.h"

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/MLIRContext.h"

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace flashir::run {
namespace ref = flashir::reference;

//===----------------------------------------------------------------------===//
// Options (Options.cpp)
//===----------------------------------------------------------------------===//

enum class DType { F32, F16, BF16 };

/// The command line, checked, with its defaults resolved.
struct Options {
  std::string variantName, variantsFile;
  std::string dtypeName; // as given: f32, f16 or bf16
  DType dtype = DType::F32;
  int64_t headDim = 0, numQoHeads = 0, numKvHeads = 0, pageSize = 0;
  std::string layout, mode, transform;
  bool paged = false, hnd = false, mergeMode = false;
  std::vector<int64_t> qoLens, kvLens;
  int64_t numViews = 1;
  bool sharedPages = false;
  unsigned seed = 1;
  double scale = 0, cap = 0, bias = 0, rtol = 0, atol = 0;
  bool dumpIR = false;
  int64_t prefixLen = -1; // -1: no shared prefix
  bool hasPrefix = false;
  bool batchInvariance = false;
};

/// Parses and checks the command line; exits 2 on bad usage.
Options parseOptions(int argc, char **argv);

/// Reports bad usage and exits 2.
[[noreturn]] void usage(const std::string &message);

//===----------------------------------------------------------------------===//
// Inputs (Inputs.cpp)
//===----------------------------------------------------------------------===//

/// A tensor as the kernel sees it (bytes) and as the reference sees it
/// (double, after rounding to the storage type).
struct HostTensor {
  std::vector<int64_t> shape;
  std::vector<double> value; // reference view
  std::vector<uint8_t> bytes;
  size_t elemSize = 4;

  int64_t numel() const {
    return std::accumulate(shape.begin(), shape.end(), int64_t(1),
                           std::multiplies<int64_t>());
  }
};

HostTensor makeFloat(DType t, std::vector<int64_t> shape,
                     const std::vector<float> &data);

template <typename T>
HostTensor makeInt(std::vector<int64_t> shape, const std::vector<T> &data) {
  HostTensor h;
  h.shape = std::move(shape);
  h.elemSize = sizeof(T);
  h.bytes.resize(data.size() * sizeof(T));
  if (!data.empty()) // memcpy from an empty vector's null data() is UB
    std::memcpy(h.bytes.data(), data.data(), h.bytes.size());
  h.value.assign(data.begin(), data.end());
  return h;
}

std::vector<float> readFloat(DType t, const HostTensor &h);

struct Batch {
  int64_t B = 0;
  std::vector<int64_t> qo, kv;
  // One entry per view.
  struct ViewData {
    std::vector<int64_t> lens;
    HostTensor k, v, indptr, indices, last, kvIndptr;
    ref::View reference;
  };
  std::vector<ViewData> views;
  // The shared prefix (view 0 of the attention) when --prefix-len is given.
  bool hasPrefix = false;
  int64_t prefixLen = 0;
  HostTensor prefixK, prefixV, prefixIndices, prefixLenTensor;
  ref::PagedView prefixReference; // per-request rows filled by referenceOf
  HostTensor q, qoIndptr;
  std::vector<HostTensor> paramTensors; // non-scalar parameters, in order
  std::vector<float> scalarParams;      // scalar parameters, in order
  std::vector<HostTensor> planner;      // runtime chunk arrays, if any
  std::vector<HostTensor> outs;         // (o, lse) per result
};

/// Generates the queries and KV views of the batch `opts` describes;
/// `qoIndptr` receives the query offsets of its requests.
Batch makeBatch(std::mt19937 &rng, const Options &opts,
                std::vector<int32_t> &qoIndptr);

/// Generates `variant`'s parameters for `batch`, shared by the kernel and the
/// reference, and the reference's hooks for them in `refVariant`.
std::vector<ParamData> makeParams(std::mt19937 &rng, const Options &opts,
                                  attn::VariantOp variant, bool standard,
                                  const Batch &batch, ref::Variant &refVariant);

/// The rows of request `b` of a batch, as a batch of its own: the same pools,
/// the page-table rows of `b`, its queries and per-request parameters.
Batch sliceRequest(const Batch &full, int64_t b,
                   llvm::ArrayRef<ParamData> params, DType t);

/// Bytes of rows [r0, r0 + n) of an output.
std::vector<uint8_t> rowBytes(const HostTensor &h, int64_t r0, int64_t n);

/// Random runtime chunks: each request's keys cut at 0..3 random positions
/// (anywhere, also inside a page), as a host planner might.
std::vector<HostTensor> randomChunks(std::mt19937 &rng, const Batch &batch);

//===----------------------------------------------------------------------===//
// The program (Program.cpp)
//===----------------------------------------------------------------------===//

/// One argument of the generated kernel.
struct Slot {
  enum Kind { Tensor, Scalar } kind;
  std::function<HostTensor &(Batch &)> tensor; // Tensor
  size_t scalarIndex = 0;                      // Scalar
};

/// The attn program for a batch: `func.func @kernel` after the user's
/// variants, the batch's tensors (`slots`) as its arguments, and one
/// (output, lse) pair of output buffers per result.
struct Program {
  std::string text;
  std::vector<Slot> slots;
  std::vector<std::string> resultLabels;
};

/// Writes the program; adds the parameters and output buffers to `batch`.
Program writeProgram(const Options &opts, attn::VariantOp variant,
                     llvm::ArrayRef<ParamData> params,
                     const std::string &userVariants, int64_t totalQ,
                     Batch &batch);

//===----------------------------------------------------------------------===//
// Execution (Execution.cpp)
//===----------------------------------------------------------------------===//

/// Compiles the attn program (after `transform`, if any) for the JIT.
/// Returns the engine and the number of planner arguments the transform
/// appended.
std::unique_ptr<mlir::ExecutionEngine> compile(mlir::MLIRContext &ctx,
                                               const std::string &program,
                                               const std::string &transform,
                                               unsigned &plannerArgs,
                                               std::string &transformedIR);

/// Calls the kernel on `batch`.
void invoke(mlir::ExecutionEngine &engine, llvm::ArrayRef<Slot> slots,
            Batch &batch);

//===----------------------------------------------------------------------===//
// Checking (Check.cpp)
//===----------------------------------------------------------------------===//

/// The reference result, and its output rounded to the storage type.
struct Expected {
  ref::State state;
  std::vector<double> o;
};

/// Computes the float64 reference for `batch`.
Expected computeReference(const Options &opts, const Batch &batch,
                          const std::vector<int32_t> &qoIndptr,
                          const ref::Variant &refVariant);

/// Prints each result's errors against `expected`; false past tolerance.
bool checkOutputs(const Options &opts, const Batch &batch,
                  const Expected &expected,
                  llvm::ArrayRef<std::string> resultLabels,
                  const std::string &prefix);

/// Prints how far the transformed program's outputs are from the
/// untransformed ones.
void compareTransformed(const Options &opts, const Batch &batch,
                        const Batch &transformed);

/// Runs every request of `full` alone; true if each one's rows are bitwise
/// identical to its rows in `full`.
bool checkBatchInvariance(const Options &opts, mlir::ExecutionEngine &engine,
                          llvm::ArrayRef<Slot> slots, const Batch &full,
                          llvm::ArrayRef<ParamData> params,
                          const std::vector<int32_t> &qoIndptr);

} // namespace flashir::run

#endif // FLASHIR_TOOLS_FLASHIR_RUN_RUNNER_H
