//===- CudaDriver.cpp - the CUDA driver API, loaded at run time ----------===//
//
// The subset of the driver API the runtime uses, resolved from libcuda.so.1
// with dlopen (the runtime builds and its tests run without CUDA); every
// failure is a Status with the driver's message.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"
#include "flashir/Runtime/Launcher.h"

#include <dlfcn.h>

namespace flashir::runtime {

using detail::invalid;

//===----------------------------------------------------------------------===//
// CudaDriver
//===----------------------------------------------------------------------===//

struct CudaDriver::Api {
  int (*cuInit)(unsigned);
  int (*cuDeviceGet)(int *, int);
  int (*cuDevicePrimaryCtxRetain)(void **, int);
  int (*cuCtxSetCurrent)(void *);
  int (*cuCtxGetCurrent)(void **);
  int (*cuCtxGetDevice)(int *);
  int (*cuGetErrorString)(int, const char **);
  int (*cuMemAlloc)(unsigned long long *, size_t);
  int (*cuMemFree)(unsigned long long);
  int (*cuMemcpyHtoD)(unsigned long long, const void *, size_t);
  int (*cuMemcpyDtoH)(void *, unsigned long long, size_t);
  int (*cuCtxSynchronize)();
  int (*cuModuleLoadData)(void **, const void *);
  int (*cuModuleGetFunction)(void **, void *, const char *);
  int (*cuLaunchKernel)(void *, unsigned, unsigned, unsigned, unsigned,
                        unsigned, unsigned, unsigned, void *, void **, void **);
  int (*cuFuncSetAttribute)(void *, int, int);
  int (*cuOccupancyMaxActiveBlocksPerMultiprocessor)(int *, void *, int,
                                                     size_t);
  int (*cuDeviceGetAttribute)(int *, int, int);
  int (*cuMemAllocHost)(void **, size_t);
  int (*cuMemFreeHost)(void *);
  int (*cuMemcpyHtoDAsync)(unsigned long long, const void *, size_t, void *);
  int (*cuStreamCreate)(void **, unsigned);
  int (*cuStreamSynchronize)(void *);
  int (*cuStreamBeginCapture)(void *, int);
  int (*cuStreamEndCapture)(void *, void **);
  int (*cuGraphInstantiateWithFlags)(void **, void *, unsigned long long);
  int (*cuGraphLaunch)(void *, void *);
  int (*cuGraphExecDestroy)(void *);
  int (*cuGraphDestroy)(void *);
  int (*cuEventCreate)(void **, unsigned);
  int (*cuEventRecord)(void *, void *);
  int (*cuEventSynchronize)(void *);
  int (*cuEventElapsedTime)(float *, void *, void *);
  int (*cuEventDestroy)(void *);
  int (*cuStreamWaitEvent)(void *, void *, unsigned);
  int (*cuStreamDestroy)(void *);
  /// Optional (drivers of CUDA 12+): programmatic launches fall back to
  /// cuLaunchKernel without it.
  int (*cuLaunchKernelEx)(const void *, void *, void **, void **);
  /// Optional (drivers of CUDA 12+): only kernels with tensor copies use it.
  int (*cuTensorMapEncodeTiled)(void *, int, unsigned, void *, const uint64_t *,
                                const uint64_t *, const uint32_t *,
                                const uint32_t *, int, int, int, int);
};

Status CudaDriver::check(int rc, const char *what) {
  if (rc == 0)
    return Status::ok();
  const char *text = nullptr;
  if (api->cuGetErrorString)
    api->cuGetErrorString(rc, &text);
  return Status::error(StatusCode::InvalidArgument,
                       std::string(what) + " failed: " +
                           (text ? text : "CUDA error " + std::to_string(rc)));
}

Status CudaDriver::open(int ordinal, std::unique_ptr<CudaDriver> &out) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    return invalid("the CUDA driver (libcuda.so.1) is not available: " +
                   std::string(dlerror()));
  std::unique_ptr<CudaDriver> driver(new CudaDriver());
  driver->library = lib;
  driver->api = std::make_unique<Api>();
  Api &api = *driver->api;
  struct Entry {
    const char *name;
    void **slot;
  } entries[] = {
      {"cuInit", reinterpret_cast<void **>(&api.cuInit)},
      {"cuDeviceGet", reinterpret_cast<void **>(&api.cuDeviceGet)},
      {"cuDevicePrimaryCtxRetain",
       reinterpret_cast<void **>(&api.cuDevicePrimaryCtxRetain)},
      {"cuCtxSetCurrent", reinterpret_cast<void **>(&api.cuCtxSetCurrent)},
      {"cuCtxGetCurrent", reinterpret_cast<void **>(&api.cuCtxGetCurrent)},
      {"cuCtxGetDevice", reinterpret_cast<void **>(&api.cuCtxGetDevice)},
      {"cuGetErrorString", reinterpret_cast<void **>(&api.cuGetErrorString)},
      {"cuMemAlloc_v2", reinterpret_cast<void **>(&api.cuMemAlloc)},
      {"cuMemFree_v2", reinterpret_cast<void **>(&api.cuMemFree)},
      {"cuMemcpyHtoD_v2", reinterpret_cast<void **>(&api.cuMemcpyHtoD)},
      {"cuMemcpyDtoH_v2", reinterpret_cast<void **>(&api.cuMemcpyDtoH)},
      {"cuCtxSynchronize", reinterpret_cast<void **>(&api.cuCtxSynchronize)},
      {"cuModuleLoadData", reinterpret_cast<void **>(&api.cuModuleLoadData)},
      {"cuModuleGetFunction",
       reinterpret_cast<void **>(&api.cuModuleGetFunction)},
      {"cuLaunchKernel", reinterpret_cast<void **>(&api.cuLaunchKernel)},
      {"cuFuncSetAttribute",
       reinterpret_cast<void **>(&api.cuFuncSetAttribute)},
      {"cuOccupancyMaxActiveBlocksPerMultiprocessor",
       reinterpret_cast<void **>(
           &api.cuOccupancyMaxActiveBlocksPerMultiprocessor)},
      {"cuDeviceGetAttribute",
       reinterpret_cast<void **>(&api.cuDeviceGetAttribute)},
      {"cuMemAllocHost_v2", reinterpret_cast<void **>(&api.cuMemAllocHost)},
      {"cuMemFreeHost", reinterpret_cast<void **>(&api.cuMemFreeHost)},
      {"cuMemcpyHtoDAsync_v2",
       reinterpret_cast<void **>(&api.cuMemcpyHtoDAsync)},
      {"cuStreamCreate", reinterpret_cast<void **>(&api.cuStreamCreate)},
      {"cuStreamSynchronize",
       reinterpret_cast<void **>(&api.cuStreamSynchronize)},
      {"cuStreamBeginCapture_v2",
       reinterpret_cast<void **>(&api.cuStreamBeginCapture)},
      {"cuStreamEndCapture",
       reinterpret_cast<void **>(&api.cuStreamEndCapture)},
      {"cuGraphInstantiateWithFlags",
       reinterpret_cast<void **>(&api.cuGraphInstantiateWithFlags)},
      {"cuGraphLaunch", reinterpret_cast<void **>(&api.cuGraphLaunch)},
      {"cuGraphExecDestroy",
       reinterpret_cast<void **>(&api.cuGraphExecDestroy)},
      {"cuGraphDestroy", reinterpret_cast<void **>(&api.cuGraphDestroy)},
      {"cuEventCreate", reinterpret_cast<void **>(&api.cuEventCreate)},
      {"cuEventRecord", reinterpret_cast<void **>(&api.cuEventRecord)},
      {"cuEventSynchronize",
       reinterpret_cast<void **>(&api.cuEventSynchronize)},
      {"cuEventElapsedTime",
       reinterpret_cast<void **>(&api.cuEventElapsedTime)},
      {"cuEventDestroy_v2", reinterpret_cast<void **>(&api.cuEventDestroy)},
      {"cuStreamWaitEvent", reinterpret_cast<void **>(&api.cuStreamWaitEvent)},
      {"cuStreamDestroy_v2", reinterpret_cast<void **>(&api.cuStreamDestroy)},
  };
  for (Entry &e : entries) {
    *e.slot = dlsym(lib, e.name);
    if (!*e.slot)
      return invalid(std::string("libcuda.so.1 lacks ") + e.name);
  }
  *reinterpret_cast<void **>(&api.cuTensorMapEncodeTiled) =
      dlsym(lib, "cuTensorMapEncodeTiled");
  *reinterpret_cast<void **>(&api.cuLaunchKernelEx) =
      dlsym(lib, "cuLaunchKernelEx");
  if (Status s = driver->check(api.cuInit(0), "cuInit"); !s)
    return s;
  int &device = driver->device;
  if (ordinal == kCurrentDevice) {
    // A context the caller made current (PyTorch's, for the device a
    // tensor-parallel rank uses) stays current: the kernels load into it.
    void *current = nullptr;
    if (Status s =
            driver->check(api.cuCtxGetCurrent(&current), "cuCtxGetCurrent");
        !s)
      return s;
    if (current) {
      if (Status s =
              driver->check(api.cuCtxGetDevice(&device), "cuCtxGetDevice");
          !s)
        return s;
      out = std::move(driver);
      return Status::ok();
    }
    ordinal = 0;
  }
  if (Status s =
          driver->check(api.cuDeviceGet(&device, ordinal), "cuDeviceGet");
      !s)
    return s;
  void *ctx = nullptr;
  if (Status s = driver->check(api.cuDevicePrimaryCtxRetain(&ctx, device),
                               "cuDevicePrimaryCtxRetain");
      !s)
    return s;
  if (Status s = driver->check(api.cuCtxSetCurrent(ctx), "cuCtxSetCurrent"); !s)
    return s;
  out = std::move(driver);
  return Status::ok();
}

CudaDriver::~CudaDriver() {
  // The primary context stays with the process; the library stays loaded
  // (kernels may still be running on other threads' streams).
}

Status CudaDriver::alloc(size_t bytes, void **ptr) {
  unsigned long long p = 0;
  Status s = check(api->cuMemAlloc(&p, bytes), "cuMemAlloc");
  *ptr = reinterpret_cast<void *>(p);
  return s;
}
Status CudaDriver::free(void *ptr) {
  return check(api->cuMemFree(reinterpret_cast<unsigned long long>(ptr)),
               "cuMemFree");
}
Status CudaDriver::copyToDevice(void *dst, const void *src, size_t bytes) {
  return check(
      api->cuMemcpyHtoD(reinterpret_cast<unsigned long long>(dst), src, bytes),
      "cuMemcpyHtoD");
}
Status CudaDriver::copyToHost(void *dst, const void *src, size_t bytes) {
  return check(
      api->cuMemcpyDtoH(dst, reinterpret_cast<unsigned long long>(src), bytes),
      "cuMemcpyDtoH");
}
Status CudaDriver::synchronize() {
  return check(api->cuCtxSynchronize(), "cuCtxSynchronize");
}
Status CudaDriver::loadModule(const std::string &image, void **module) {
  // PTX must be NUL-terminated; std::string's buffer is.
  return check(api->cuModuleLoadData(module, image.c_str()),
               "cuModuleLoadData");
}
Status CudaDriver::function(void *module, const std::string &name, void **fn) {
  return check(api->cuModuleGetFunction(fn, module, name.c_str()),
               ("cuModuleGetFunction(" + name + ")").c_str());
}
Status CudaDriver::launch(void *fn, unsigned gridX, unsigned gridY,
                          unsigned block, void *stream,
                          std::vector<void *> &params,
                          unsigned dynamicSharedBytes, unsigned gridZ) {
  return check(api->cuLaunchKernel(fn, gridX, gridY, gridZ, block, 1, 1,
                                   dynamicSharedBytes, stream, params.data(),
                                   nullptr),
               "cuLaunchKernel");
}
namespace {
// cuda.h's CUlaunchAttribute and CUlaunchConfig (CUDA 12+), declared here
// as the rest of the driver API is (no CUDA headers at build time).
struct LaunchAttribute {
  int id;
  char pad[4];
  union {
    char bytes[64];
    int programmaticStreamSerializationAllowed;
  } value;
};
struct LaunchConfig {
  unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ;
  unsigned sharedMemBytes;
  void *stream;
  LaunchAttribute *attrs;
  unsigned numAttrs;
};
static_assert(sizeof(LaunchAttribute) == 72 && sizeof(LaunchConfig) == 56,
              "CUlaunchAttribute / CUlaunchConfig layout");
} // namespace

Status CudaDriver::launchProgrammatic(void *fn, unsigned gridX, unsigned gridY,
                                      unsigned block, void *stream,
                                      std::vector<void *> &params,
                                      unsigned dynamicSharedBytes,
                                      unsigned gridZ) {
  if (!api->cuLaunchKernelEx)
    return launch(fn, gridX, gridY, block, stream, params, dynamicSharedBytes,
                  gridZ);
  LaunchAttribute attr = {};
  attr.id = /*CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION=*/6;
  attr.value.programmaticStreamSerializationAllowed = 1;
  LaunchConfig config = {gridX,  gridY, gridZ, block, 1, 1, dynamicSharedBytes,
                         stream, &attr, 1};
  return check(api->cuLaunchKernelEx(&config, fn, params.data(), nullptr),
               "cuLaunchKernelEx");
}

Status CudaDriver::setMaxDynamicSharedMemory(void *fn, int64_t bytes) {
  return check(api->cuFuncSetAttribute(
                   fn, /*CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES=*/8,
                   static_cast<int>(bytes)),
               "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
}

Status CudaDriver::encodeTensorMap(void *map, bool bf16, unsigned rank,
                                   void *address, const uint64_t *dims,
                                   const uint64_t *strides, const uint32_t *box,
                                   int64_t swizzleBytes) {
  if (!api->cuTensorMapEncodeTiled)
    return invalid("this CUDA driver has no cuTensorMapEncodeTiled (tensor "
                   "copies need a CUDA 12 driver)");
  // CU_TENSOR_MAP_SWIZZLE_32B / 64B / 128B.
  int swizzle = swizzleBytes == 128  ? 3
                : swizzleBytes == 64 ? 2
                : swizzleBytes == 32 ? 1
                                     : 0;
  if (!swizzle)
    return invalid("tensor maps swizzle 32-, 64- or 128-byte box rows, not " +
                   std::to_string(swizzleBytes));
  std::vector<uint32_t> elementStrides(rank, 1);
  return check(api->cuTensorMapEncodeTiled(
                   map,
                   /*CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 / FLOAT16=*/bf16 ? 9 : 6,
                   rank, address, dims, strides, box, elementStrides.data(),
                   /*CU_TENSOR_MAP_INTERLEAVE_NONE=*/0, swizzle,
                   /*CU_TENSOR_MAP_L2_PROMOTION_L2_128B=*/2,
                   /*CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE (zeros)=*/0),
               "cuTensorMapEncodeTiled");
}

Status CudaDriver::multiprocessors(int64_t &sms) {
  int count = 0;
  if (Status s = check(
          api->cuDeviceGetAttribute(
              &count, /*CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT=*/16, device),
          "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)");
      !s)
    return s;
  sms = count;
  return Status::ok();
}

Status CudaDriver::residentCtas(void *fn, unsigned block,
                                unsigned dynamicSharedBytes, int64_t &ctas) {
  int perSM = 0;
  int64_t sms = 0;
  if (Status s = check(api->cuOccupancyMaxActiveBlocksPerMultiprocessor(
                           &perSM, fn, int(block), dynamicSharedBytes),
                       "cuOccupancyMaxActiveBlocksPerMultiprocessor");
      !s)
    return s;
  if (Status s = multiprocessors(sms); !s)
    return s;
  ctas = int64_t(perSM) * sms;
  return Status::ok();
}

Status CudaDriver::allocHost(size_t bytes, void **ptr) {
  return check(api->cuMemAllocHost(ptr, bytes), "cuMemAllocHost");
}
Status CudaDriver::freeHost(void *ptr) {
  return check(api->cuMemFreeHost(ptr), "cuMemFreeHost");
}
Status CudaDriver::copyToDeviceAsync(void *dst, const void *src, size_t bytes,
                                     void *stream) {
  return check(api->cuMemcpyHtoDAsync(reinterpret_cast<unsigned long long>(dst),
                                      src, bytes, stream),
               "cuMemcpyHtoDAsync");
}
Status CudaDriver::createStream(void **stream) {
  return check(api->cuStreamCreate(stream, /*CU_STREAM_NON_BLOCKING=*/1),
               "cuStreamCreate");
}
Status CudaDriver::synchronizeStream(void *stream) {
  return check(api->cuStreamSynchronize(stream), "cuStreamSynchronize");
}
Status CudaDriver::captureGraph(void *stream,
                                const std::function<Status()> &record,
                                void **graphExec) {
  if (Status s = check(api->cuStreamBeginCapture(
                           stream, /*CU_STREAM_CAPTURE_MODE_GLOBAL=*/0),
                       "cuStreamBeginCapture");
      !s)
    return s;
  Status recorded = record();
  void *graph = nullptr;
  Status ended =
      check(api->cuStreamEndCapture(stream, &graph), "cuStreamEndCapture");
  if (!recorded)
    return recorded;
  if (!ended)
    return ended;
  Status s = check(api->cuGraphInstantiateWithFlags(graphExec, graph, 0),
                   "cuGraphInstantiateWithFlags");
  api->cuGraphDestroy(graph);
  return s;
}
Status CudaDriver::launchGraph(void *graphExec, void *stream) {
  return check(api->cuGraphLaunch(graphExec, stream), "cuGraphLaunch");
}
Status CudaDriver::destroyGraph(void *graphExec) {
  return check(api->cuGraphExecDestroy(graphExec), "cuGraphExecDestroy");
}
Status CudaDriver::destroyStream(void *stream) {
  return check(api->cuStreamDestroy(stream), "cuStreamDestroy");
}
Status CudaDriver::createEvent(void **event, bool timing) {
  return check(
      api->cuEventCreate(event, timing ? 0 : /*CU_EVENT_DISABLE_TIMING=*/2),
      "cuEventCreate");
}
Status CudaDriver::destroyEvent(void *event) {
  return check(api->cuEventDestroy(event), "cuEventDestroy");
}
Status CudaDriver::waitEvent(void *stream, void *event) {
  return check(api->cuStreamWaitEvent(stream, event, 0), "cuStreamWaitEvent");
}
Status CudaDriver::recordEvent(void *event, void *stream) {
  return check(api->cuEventRecord(event, stream), "cuEventRecord");
}
Status CudaDriver::elapsedMs(void *start, void *end, float &ms) {
  if (Status s = check(api->cuEventSynchronize(end), "cuEventSynchronize"); !s)
    return s;
  return check(api->cuEventElapsedTime(&ms, start, end), "cuEventElapsedTime");
}

} // namespace flashir::runtime
