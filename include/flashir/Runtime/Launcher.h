//===- Launcher.h - kernel bundles on the CUDA driver API -------*- C++ -*-===//
//
// Loads a kernel bundle (manifest.json + PTX/cubin per chip, written by
// flashir-bundle) and launches its decode kernels. The CUDA driver is loaded
// at run time (dlopen of libcuda.so.1), so the runtime builds and its tests
// run on machines without a GPU; every failure is a Status with a message.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHIR_RUNTIME_LAUNCHER_H
#define FLASHIR_RUNTIME_LAUNCHER_H

#include "flashir/ABI/Manifest.h"
#include "flashir/Runtime/Planner.h"
#include "flashir/Runtime/Status.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace flashir::runtime {

// The kernels' ABI as the manifest describes it (flashir/ABI).
using abi::ArgRole;
using abi::elementBytes;
using abi::KernelArg;
using abi::KernelInfo;
using abi::KernelKind;

/// Bytes of a kernel's `kv_maps` argument: the K and V CUtensorMaps.
constexpr size_t kKvMapsBytes = 256;

/// What a device copy of kv_maps holds and was encoded for (see
/// KernelBundle::refreshKvMaps).
struct KvMapsCache {
  std::string kernel;
  void *kPool = nullptr, *vPool = nullptr;
  int64_t numPages = 0;
  std::vector<unsigned char> bytes; ///< on the device; empty: nothing yet
};

/// Reads and checks `<dir>/manifest.json` (abi::parseManifest).
Status readManifest(const std::string &dir, abi::Manifest &manifest);

/// The subset of the CUDA driver API the runtime uses, resolved from
/// libcuda.so.1 at run time.
class CudaDriver {
public:
  /// open()'s ordinal for the device of the calling thread's current
  /// context (kept current), else device 0.
  static constexpr int kCurrentDevice = -1;
  /// Loads the driver, initialises it and makes device `ordinal`'s primary
  /// context current (kCurrentDevice: see there).
  static Status open(int ordinal, std::unique_ptr<CudaDriver> &out);
  ~CudaDriver();

  Status alloc(size_t bytes, void **ptr);
  Status free(void *ptr);
  Status copyToDevice(void *dst, const void *src, size_t bytes);
  Status copyToHost(void *dst, const void *src, size_t bytes);
  Status synchronize();
  Status loadModule(const std::string &image, void **module);
  Status function(void *module, const std::string &name, void **fn);
  Status launch(void *fn, unsigned gridX, unsigned gridY, unsigned block,
                void *stream, std::vector<void *> &params,
                unsigned dynamicSharedBytes = 0, unsigned gridZ = 1);
  /// launch() with programmatic stream serialization: `fn` may start before
  /// the stream's previous kernel ends (it must wait for it itself). Without
  /// cuLaunchKernelEx (drivers before CUDA 12): a plain launch.
  Status launchProgrammatic(void *fn, unsigned gridX, unsigned gridY,
                            unsigned block, void *stream,
                            std::vector<void *> &params,
                            unsigned dynamicSharedBytes, unsigned gridZ = 1);
  /// Lets `fn` use `bytes` of dynamic shared memory (needed above 48 KiB).
  Status setMaxDynamicSharedMemory(void *fn, int64_t bytes);
  /// Encodes a tiled CUtensorMap (128 bytes at `map`) with the 64- or
  /// 128-byte swizzle (`swizzleBytes`) over a row-major tensor of 16-bit
  /// elements (`bf16`, else f16) at `address`: `dims` and `box` innermost
  /// first, `strides` in bytes of dims 1..rank-1; elements past `dims` read
  /// as zeros.
  Status encodeTensorMap(void *map, bool bf16, unsigned rank, void *address,
                         const uint64_t *dims, const uint64_t *strides,
                         const uint32_t *box, int64_t swizzleBytes);
  /// CTAs of `fn` (`block` threads, `dynamicSharedBytes`) the device runs at
  /// once: resident CTAs per SM (the driver's occupancy calculator) x SMs.
  Status residentCtas(void *fn, unsigned block, unsigned dynamicSharedBytes,
                      int64_t &ctas);
  /// The device's SMs.
  Status multiprocessors(int64_t &sms);

  // Streams, pinned memory, async copies, CUDA graphs and events (plan/run).
  Status allocHost(size_t bytes, void **ptr);
  Status freeHost(void *ptr);
  Status copyToDeviceAsync(void *dst, const void *src, size_t bytes,
                           void *stream);
  Status createStream(void **stream);
  Status destroyStream(void *stream);
  Status synchronizeStream(void *stream);
  /// Captures the work `record` enqueues on `stream` into an instantiated
  /// graph (global capture mode).
  Status captureGraph(void *stream, const std::function<Status()> &record,
                      void **graphExec);
  Status launchGraph(void *graphExec, void *stream);
  Status destroyGraph(void *graphExec);
  /// `timing` false: an event for ordering only (cheaper to record).
  Status createEvent(void **event, bool timing = true);
  Status destroyEvent(void *event);
  Status recordEvent(void *event, void *stream);
  /// Work enqueued on `stream` after this waits for `event`'s last record.
  Status waitEvent(void *stream, void *event);
  /// Milliseconds between two recorded events (waits for `end`).
  Status elapsedMs(void *start, void *end, float &ms);

private:
  CudaDriver() = default;
  Status check(int rc, const char *what);
  struct Api;
  std::unique_ptr<Api> api;
  void *library = nullptr;
  int device = 0;
};

/// Device buffers of one decode or prefill launch. A kernel over a ragged
/// view (KernelInfo::ragged) reads kPool / vPool as the keys' contiguous
/// rows (numPages: their tokens) and indptr as token offsets; it takes no
/// indices or lastPageLen.
struct AttentionBuffers {
  void *q = nullptr, *qoIndptr = nullptr, *kPool = nullptr, *vPool = nullptr,
       *indptr = nullptr, *indices = nullptr, *lastPageLen = nullptr,
       *out = nullptr, *lse = nullptr;
  int64_t totalQ = 0, batch = 0, numPages = 0, numIndices = 0;
  /// A kernel over several KV views: views 1, 2, ... (the fields above are
  /// view 0's); each request's keys are its keys in view 0, then view 1, ...
  struct View {
    void *kPool = nullptr, *vPool = nullptr, *indptr = nullptr,
         *indices = nullptr, *lastPageLen = nullptr;
    int64_t numPages = 0, numIndices = 0;
  };
  std::vector<View> moreViews;
  /// Variant parameters in declaration order: a device pointer and element
  /// count for tensor parameters, the value for scalars (`scalar` for f32,
  /// `integer` for i32 and i64).
  struct Param {
    void *pointer = nullptr;
    int64_t size = 0;
    float scalar = 0;
    int64_t integer = 0;
  };
  std::vector<Param> params;
};

/// The kernel-parameter word of a scalar argument of element type `element`
/// (f32: `scalar`'s bits; i32, i64: `integer`, which must fit), as
/// cuLaunchKernel reads it from the word's address (little endian); fails
/// naming `what` for other types or an i32 out of range.
Status scalarArgWord(const std::string &what, const std::string &element,
                     float scalar, int64_t integer, int64_t &word);

/// Whether `params` fit `kernel`'s variant parameters for a step of `batch`
/// requests: a value per scalar, an array of at least `batch` entries per
/// per-request parameter and of Hq entries per per-head one, a buffer of at
/// least its static elements; the error names the parameter.
Status checkParams(const KernelInfo &kernel,
                   const std::vector<AttentionBuffers::Param> &params,
                   int64_t batch);

/// Whether `buffers` hold the KV views `kernel` attends (views past the
/// first in moreViews, each with its pools, indptr and, paged, its page
/// table); the error names the view.
Status checkViews(const KernelInfo &kernel, const AttentionBuffers &buffers);

/// Whether `kernel` (a tensor-core prefill kernel, split or not) can address
/// a pool of `numPages` pages: its copies index pool rows (pages x the page
/// size) in 32 bits, so at most 2^31 - 1 rows; other kernels always can.
Status checkPoolRows(const KernelInfo &kernel, int64_t numPages);

/// A loaded bundle.
class KernelBundle {
public:
  /// Loads the image for `chip` from bundle `dir`: the cubin if the bundle
  /// has one for that chip and `preferPtx` is false, else its PTX, which the
  /// driver compiles for the GPU at hand (e.g. sm_80 PTX on an H200).
  static Status open(CudaDriver &driver, const std::string &dir,
                     const std::string &chip,
                     std::unique_ptr<KernelBundle> &out,
                     bool preferPtx = false);

  ~KernelBundle();
  const std::vector<KernelInfo> &kernels() const { return kernels_; }

  /// Writes `kernel`'s `kv_maps` (kKvMapsBytes at `out`, host memory): the
  /// tensor maps of pools [numPages, page size, KV heads, head dim] at
  /// kPool / vPool where the kernel stages tiles with tensor copies, else
  /// zeros (the kernel does not read them).
  Status encodeKvMaps(const std::string &kernel, void *kPool, void *vPool,
                      int64_t numPages, void *out) const;

  /// Keeps `cache`'s device copy of `kernel`'s kv_maps current for the
  /// pools: encodes them only when the kernel or pools differ from the
  /// cached ones, and calls `upload(bytes, first)` only when the bytes
  /// differ from those on the device (`first`: nothing was uploaded yet, so
  /// no launch can still be reading the copy).
  Status refreshKvMaps(
      KvMapsCache &cache, const std::string &kernel, void *kPool, void *vPool,
      int64_t numPages,
      const std::function<Status(const std::vector<unsigned char> &, bool)>
          &upload) const;

  /// Launches decode `kernel` (grid "requests x num_kv_heads") on
  /// `buffers`: grid (batch, KV heads), the manifest's block; memref
  /// arguments as MLIR descriptors. Checks the grid and the argument count
  /// against the manifest. The kv_maps go to a buffer of the launcher; when
  /// the pools differ from the previous launch's, the device is synchronized
  /// before they are rewritten (not allowed inside a stream capture).
  Status launchDecode(const std::string &kernel,
                      const AttentionBuffers &buffers, void *stream = nullptr);

  /// Launches prefill `kernel` (grid "requests x q_tiles x num_qo_heads" or
  /// "... x num_kv_heads" with fused head groups) on `buffers`: grid (batch,
  /// ceil(maxQoLen / q_tokens), heads). `maxQoLen`: the longest request's
  /// query rows (tiles past a request's rows exit at once). A kernel the
  /// manifest marks `persistent` on the loaded chip gets only the heads'
  /// planes that give each SM one CTA (launchedZ); those walk the rest.
  Status launchPrefill(const std::string &kernel,
                       const AttentionBuffers &buffers, int64_t maxQoLen,
                       void *stream = nullptr);

  /// One argument of launchArgs: a memref (device pointer + sizes; strides
  /// are row-major) or a scalar (`scalar` for f32, `integer` for i32/i64).
  struct Arg {
    void *pointer = nullptr;
    std::vector<int64_t> sizes;
    float scalar = 0;
    int64_t integer = 0;
    bool isScalar = false;
    static Arg memref(void *pointer, std::vector<int64_t> sizes) {
      Arg a;
      a.pointer = pointer;
      a.sizes = std::move(sizes);
      return a;
    }
  };
  /// Arguments by role (the fixed arguments of any kernel kind).
  using RoleArgs = std::map<ArgRole, Arg>;
  /// Variant parameters as launch arguments (a memref for a buffer or
  /// per-request / per-head array, else a scalar).
  static std::vector<Arg>
  paramArgs(const std::vector<AttentionBuffers::Param> &);
  /// `kernel`'s arguments in its order: its fixed arguments from `fixed` by
  /// role, then `params`. Fails naming a role `fixed` lacks.
  Status arrange(const std::string &kernel, const RoleArgs &fixed,
                 const std::vector<Arg> &params, std::vector<Arg> &out) const;

  /// Launches `kernel` with grid (gridX, gridY, gridZ) and the manifest's
  /// block (a `persistent` kernel: fewer heads' planes, as launchPrefill);
  /// checks the argument count and kinds against the manifest.
  /// `programmatic` false: a plain launch even of a kernel the manifest
  /// marks `programmatic_wait` (its stream predecessor is not the kernel it
  /// waits for, e.g. a wait for another stream's event).
  Status launchArgs(const std::string &kernel, const std::vector<Arg> &args,
                    unsigned gridX, unsigned gridY, void *stream = nullptr,
                    unsigned gridZ = 1, bool programmatic = true);
  /// Launches `kernel` as launchArgs does, with programmatic stream
  /// serialization: its CTAs may start while its stream predecessor runs,
  /// and it completes after it. Only for a kernel the manifest marks
  /// `completes_after_predecessor`, behind a predecessor that neither writes
  /// what it reads nor reads what it writes (a cascade's suffix decode
  /// behind the prefix kernel; a split prefill kernel lets it start only
  /// once the grid before that one has completed).
  Status launchBehind(const std::string &kernel, const std::vector<Arg> &args,
                      unsigned gridX, unsigned gridY, void *stream,
                      unsigned gridZ = 1);
  /// Whether the manifest marks `kernel` `completes_after_predecessor` /
  /// `programmatic_wait` on the loaded chip.
  bool completesAfterPredecessor(const std::string &kernel) const {
    return target.facts(kernel).completesAfterPredecessor;
  }
  bool waitsForPredecessor(const std::string &kernel) const {
    return target.facts(kernel).programmaticWait;
  }
  const KernelInfo *find(const std::string &kernel) const;
  /// Whether `kernel` reads tensor maps (`kv_maps`) on the loaded chip.
  bool usesTensorMaps(const std::string &kernel) const {
    return !target.facts(kernel).tensorMapBox.empty();
  }
  /// CTAs of `kernel` the device runs at once (its block and dynamic shared
  /// memory on the loaded chip).
  Status residentCtas(const std::string &kernel, int64_t &ctas) const;
  /// The calibrated cost model of `kernel` on the loaded chip, if any.
  std::optional<CostModel> calibratedCost(const std::string &kernel) const;

private:
  /// launchArgs / launchBehind: checks and packs `args`, then a plain or a
  /// programmatic launch.
  Status launchPacked(const std::string &kernel, const std::vector<Arg> &args,
                      unsigned gridX, unsigned gridY, void *stream,
                      unsigned gridZ, bool programmatic);
  /// Packs the decode ABI (q ... lse, kv_maps, parameters) from `buffers`
  /// and launches `info`'s kernel on the grid.
  Status launchOn(const KernelInfo &info, const AttentionBuffers &buffers,
                  unsigned gridX, unsigned gridY, unsigned gridZ, void *stream);

  /// The z extent `info`'s (gridX, gridY, gridZ) grid launches with:
  /// abi::persistentGridZ for a kernel marked `persistent` on the loaded
  /// chip, else gridZ.
  unsigned launchedZ(const KernelInfo &info, unsigned gridX, unsigned gridY,
                     unsigned gridZ) const;

  /// Loads the target's module images (cubins unless `preferPtx`) and
  /// finds each kernel in its module.
  Status loadFunctions(const std::string &dir, const abi::TargetInfo &target,
                       bool preferPtx);

  CudaDriver *driver = nullptr;
  /// The loaded images, in the target's module order.
  std::vector<void *> modules;
  std::vector<KernelInfo> kernels_;
  std::vector<void *> functions;
  /// Dynamic shared memory of each kernel on the loaded chip.
  std::vector<unsigned> dynamicShared;
  /// The device's SMs, queried at open when a kernel is `persistent`.
  int64_t sms = 0;
  /// The loaded chip's facts of each kernel.
  abi::TargetInfo target;
  /// launch()'s kv_maps on the device and what they hold.
  void *mapsBuffer = nullptr;
  KvMapsCache maps;
};

} // namespace flashir::runtime

#endif // FLASHIR_RUNTIME_LAUNCHER_H
