//===- Launcher.cpp - kernel bundles on the CUDA driver API ---------------===//

#include "flashir/Runtime/Launcher.h"
#include "Internal.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

namespace flashir::runtime {

using detail::invalid;

static Status readFile(const std::string &path, std::string &out) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return invalid("cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return Status::ok();
}

Status readManifest(const std::string &dir, abi::Manifest &manifest) {
  std::string path = dir + "/manifest.json", text, error;
  if (Status s = readFile(path, text); !s)
    return s;
  if (!abi::parseManifest(text, manifest, error))
    return invalid(path + ": " + error);
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// KernelBundle
//===----------------------------------------------------------------------===//

Status KernelBundle::open(CudaDriver &driver, const std::string &dir,
                          const std::string &chip,
                          std::unique_ptr<KernelBundle> &out, bool preferPtx) {
  std::unique_ptr<KernelBundle> launcher(new KernelBundle());
  abi::Manifest manifest;
  if (Status s = readManifest(dir, manifest); !s)
    return s;
  const abi::TargetInfo *target = manifest.target(chip);
  if (!target)
    return invalid("bundle " + dir + " has no code for " + chip);
  launcher->kernels_ = std::move(manifest.kernels);
  launcher->driver = &driver;
  if (Status s = launcher->loadFunctions(dir, *target, preferPtx); !s)
    return s;
  launcher->target = *target;
  out = std::move(launcher);
  return Status::ok();
}

Status KernelBundle::loadFunctions(const std::string &dir,
                                   const abi::TargetInfo &target,
                                   bool preferPtx) {
  for (const abi::ModuleFiles &files : target.modules) {
    const std::string &file =
        files.cubin.empty() || preferPtx ? files.ptx : files.cubin;
    std::string image;
    if (Status s = readFile(dir + "/" + file, image); !s)
      return s;
    modules.push_back(nullptr);
    if (Status s = driver->loadModule(image, &modules.back()); !s)
      return s;
  }
  for (const KernelInfo &k : kernels_) {
    const abi::ModuleFiles *files = target.moduleOf(k.name);
    if (!files)
      return invalid("bundle " + dir + " has no module for kernel " + k.name +
                     " on " + target.chip);
    void *fn = nullptr;
    void *module = modules[size_t(files - target.modules.data())];
    if (Status s = driver->function(module, k.name, &fn); !s)
      return s;
    const abi::KernelFacts &facts = target.facts(k.name);
    int64_t dynamic = facts.dynamicSharedMemoryBytes;
    if (dynamic > 48 * 1024)
      if (Status s = driver->setMaxDynamicSharedMemory(fn, dynamic); !s)
        return s;
    functions.push_back(fn);
    dynamicShared.push_back(static_cast<unsigned>(dynamic));
    // Persistent kernels' launches size their grid by the SMs (launchedZ):
    // asked once here, not on a launch inside a stream capture.
    if (facts.persistent && sms == 0)
      if (Status s = driver->multiprocessors(sms); !s)
        return s;
  }
  return Status::ok();
}

namespace {
/// Kernel parameters: every value lives in `storage` (stable addresses).
struct ParamPack {
  std::vector<int64_t> storage;
  std::vector<size_t> offsets;

  void pushWord(int64_t v) {
    offsets.push_back(storage.size());
    storage.push_back(v);
  }
  void pushPointer(void *p) { pushWord(reinterpret_cast<int64_t>(p)); }
  /// MLIR's expanded descriptor: allocated, aligned, offset, sizes, strides.
  void pushMemref(void *p, const std::vector<int64_t> &sizes) {
    pushPointer(p);
    pushPointer(p);
    pushWord(0);
    for (int64_t s : sizes)
      pushWord(s);
    std::vector<int64_t> strides(sizes.size());
    int64_t stride = 1;
    for (size_t i = sizes.size(); i-- > 0;) {
      strides[i] = stride;
      stride *= sizes[i];
    }
    for (int64_t s : strides)
      pushWord(s);
  }
  std::vector<void *> pointers() {
    std::vector<void *> out;
    for (size_t o : offsets)
      out.push_back(&storage[o]);
    return out;
  }
};

/// Whether a five-extent box fits abi::kvTensorMap's grouped map over a
/// pool of logical shape [pages, page size, KV heads, head dim]: 64
/// columns, 8 keys, every column box, and 8-key groups of one page (NHD:
/// one head; HND: one page plane).
bool groupedBoxFits(const std::vector<int64_t> &box, bool hnd,
                    const std::vector<int64_t> &shape) {
  int64_t pageSize = shape[1], headDim = shape[3];
  int64_t groups = hnd ? box[3] : box[4], single = hnd ? box[4] : box[3];
  return box[0] == 64 && box[1] == 8 && box[2] * 64 == headDim &&
         pageSize >= 8 && pageSize % 8 == 0 && groups * 8 <= pageSize &&
         single == 1;
}
} // namespace

KernelBundle::~KernelBundle() {
  if (mapsBuffer)
    driver->free(mapsBuffer);
}

Status KernelBundle::encodeKvMaps(const std::string &kernel, void *kPool,
                                  void *vPool, int64_t numPages,
                                  void *out) const {
  const KernelInfo *info = find(kernel);
  if (!info)
    return invalid("no kernel named " + kernel + " in the bundle");
  std::memset(out, 0, kKvMapsBytes);
  const std::vector<int64_t> &box = target.facts(kernel).tensorMapBox;
  if (box.empty())
    return Status::ok();
  const KernelArg *pool = info->arg(ArgRole::KPool);
  if (!pool || pool->shape.size() != 4 || numPages < 1)
    return invalid(kernel + ": tensor maps need a k_pool [pages, page size, "
                            "KV heads, head dim] and at least one page");
  if (box.size() == 5 && !groupedBoxFits(box, info->hnd, pool->shape))
    return invalid(kernel + ": a grouped tensor map's box must cover whole "
                            "rows of 64 columns and whole 8-key groups of one "
                            "page and head");
  abi::KvTensorMap geometry = abi::kvTensorMap(
      info->hnd, /*pageSize=*/pool->shape[1], /*numKvHeads=*/pool->shape[2],
      /*headDim=*/pool->shape[3], numPages, abi::elementBytes(pool->element),
      box[0], /*grouped=*/box.size() == 5);
  uint32_t extents[5];
  for (size_t i = 0; i < box.size(); ++i)
    extents[i] = uint32_t(box[i]);
  // CUtensorMap objects are 64-byte aligned.
  alignas(64) unsigned char maps[kKvMapsBytes];
  for (int which = 0; which < 2; ++which)
    if (Status s = driver->encodeTensorMap(
            maps + 128 * which, pool->element == "bf16", geometry.rank,
            which ? vPool : kPool, geometry.dims, geometry.strides, extents,
            geometry.swizzleBytes);
        !s)
      return Status::error(s.code(), kernel + ": the " + (which ? "V" : "K") +
                                         " pool's tensor map: " + s.message());
  std::memcpy(out, maps, kKvMapsBytes);
  return Status::ok();
}

Status KernelBundle::refreshKvMaps(
    KvMapsCache &cache, const std::string &kernel, void *kPool, void *vPool,
    int64_t numPages,
    const std::function<Status(const std::vector<unsigned char> &, bool)>
        &upload) const {
  if (!cache.bytes.empty() && cache.kernel == kernel && cache.kPool == kPool &&
      cache.vPool == vPool && cache.numPages == numPages)
    return Status::ok();
  std::vector<unsigned char> bytes(kKvMapsBytes);
  if (Status s = encodeKvMaps(kernel, kPool, vPool, numPages, bytes.data()); !s)
    return s;
  if (bytes != cache.bytes) {
    if (Status s = upload(bytes, cache.bytes.empty()); !s)
      return s;
    cache.bytes = std::move(bytes);
  }
  cache.kernel = kernel;
  cache.kPool = kPool;
  cache.vPool = vPool;
  cache.numPages = numPages;
  return Status::ok();
}

Status KernelBundle::launchDecode(const std::string &kernel,
                                  const AttentionBuffers &buffers,
                                  void *stream) {
  const KernelInfo *info = find(kernel);
  if (!info)
    return invalid("no kernel named " + kernel + " in the bundle");
  if (info->kind != KernelKind::Decode || info->split())
    return invalid(kernel + " is not an unsplit decode kernel (its grid: " +
                   info->grid.str() + "; prefill kernels: launchPrefill)");
  return launchOn(*info, buffers, unsigned(buffers.batch),
                  unsigned(info->numKvHeads()), 1, stream);
}

Status checkPoolRows(const KernelInfo &kernel, int64_t numPages) {
  if (kernel.kind != KernelKind::Prefill)
    return Status::ok();
  int64_t pageSize = std::max<int64_t>(kernel.pageSize(), 1);
  if (numPages > std::numeric_limits<int32_t>::max() / pageSize)
    return invalid(kernel.name +
                   " addresses pool rows (pages x page size) "
                   "in 32 bits: " +
                   std::to_string(numPages) + " pages of " +
                   std::to_string(pageSize) + " rows exceed 2^31 - 1");
  return Status::ok();
}

Status checkViews(const KernelInfo &kernel, const AttentionBuffers &buffers) {
  int64_t views = std::max<int64_t>(kernel.numViews(), 1);
  if (int64_t(buffers.moreViews.size()) != views - 1)
    return invalid(kernel.name + " attends " + std::to_string(views) +
                   (views == 1 ? " KV view" : " KV views") +
                   "; the buffers hold " +
                   std::to_string(buffers.moreViews.size() + 1));
  for (size_t v = 0; v < buffers.moreViews.size(); ++v) {
    const AttentionBuffers::View &view = buffers.moreViews[v];
    if (view.numPages < 1 || !view.kPool || !view.vPool || !view.indptr ||
        (!kernel.ragged && (!view.indices || !view.lastPageLen)))
      return invalid(kernel.name + ": KV view " + std::to_string(v + 1) +
                     " needs pools of at least one page, indptr" +
                     (kernel.ragged ? "" : ", indices and last_page_len"));
    if (Status s = checkPoolRows(kernel, view.numPages); !s)
      return s;
  }
  return Status::ok();
}

Status scalarArgWord(const std::string &what, const std::string &element,
                     float scalar, int64_t integer, int64_t &word) {
  word = 0;
  if (element == "f32") {
    static_assert(sizeof(float) <= sizeof(int64_t));
    std::memcpy(&word, &scalar, sizeof(float));
    return Status::ok();
  }
  if (element == "i64") {
    word = integer;
    return Status::ok();
  }
  if (element == "i32") {
    if (integer < INT32_MIN || integer > INT32_MAX)
      return invalid(what +
                     " (i32) is out of range: " + std::to_string(integer));
    auto value = static_cast<int32_t>(integer);
    std::memcpy(&word, &value, sizeof(value));
    return Status::ok();
  }
  return invalid(what + ": unsupported scalar type " + element +
                 " (f32, i32 and i64 are)");
}

Status checkParams(const KernelInfo &kernel,
                   const std::vector<AttentionBuffers::Param> &params,
                   int64_t batch) {
  if (int64_t(params.size()) != kernel.numParams())
    return invalid(
        kernel.name + " takes " + std::to_string(kernel.numParams()) +
        " variant parameters, " + std::to_string(params.size()) + " given");
  size_t first = kernel.args.size() - params.size();
  for (size_t i = 0; i < params.size(); ++i) {
    const KernelArg &arg = kernel.args[first + i];
    const AttentionBuffers::Param &p = params[i];
    std::string what = kernel.name + ": parameter '" + arg.name + "' ";
    if (!arg.memref) {
      if (p.pointer)
        return invalid(what + "is a scalar; an array was given");
      continue;
    }
    int64_t need = 1;
    switch (arg.paramKind) {
    case abi::ParamKind::PerRequest:
      need = batch;
      break;
    case abi::ParamKind::PerHead:
      need = kernel.numQoHeads();
      break;
    default:
      for (int64_t d : arg.shape)
        need *= std::max<int64_t>(d, 1);
    }
    if (!p.pointer || p.size < need)
      return invalid(what + "(" +
                     std::string(abi::paramKindName(arg.paramKind)) +
                     ") needs a device array of at least " +
                     std::to_string(need) + " elements; " +
                     (p.pointer ? std::to_string(p.size) + " given"
                                : std::string("none given")));
  }
  return Status::ok();
}

Status KernelBundle::launchPrefill(const std::string &kernel,
                                   const AttentionBuffers &buffers,
                                   int64_t maxQoLen, void *stream) {
  const KernelInfo *info = find(kernel);
  if (!info)
    return invalid("no kernel named " + kernel + " in the bundle");
  if (info->kind != KernelKind::Prefill || info->split())
    return invalid(kernel + " is not an unsplit prefill kernel (its grid: " +
                   info->grid.str() + ")");
  if (maxQoLen < 0)
    return invalid("launchPrefill needs maxQoLen >= 0 (the longest "
                   "request's query rows)");
  bool perKvHead = info->grid.heads == abi::GridHeads::KvHeads;
  unsigned tiles = unsigned(
      std::max<int64_t>(1, (maxQoLen + info->qTokens - 1) / info->qTokens));
  return launchOn(*info, buffers, unsigned(buffers.batch), tiles,
                  unsigned(perKvHead ? info->numKvHeads() : info->numQoHeads()),
                  stream);
}

Status KernelBundle::launchOn(const KernelInfo &info,
                              const AttentionBuffers &buffers, unsigned gridX,
                              unsigned gridY, unsigned gridZ, void *stream) {
  const std::string &kernel = info.name;
  size_t index = size_t(&info - kernels_.data());
  const size_t kFixed = info.args.size() - size_t(info.numParams());
  if (Status s = checkParams(info, buffers.params, buffers.batch); !s)
    return s;
  if (buffers.batch < 0 || buffers.totalQ < 0 || buffers.numPages < 1)
    return invalid("decode buffers need batch >= 0, totalQ >= 0 and at "
                   "least one page");
  if (buffers.batch == 0)
    return Status::ok();
  if (Status s = checkPoolRows(info, buffers.numPages); !s)
    return s;
  if (Status s = checkViews(info, buffers); !s)
    return s;
  if (!mapsBuffer)
    if (Status s = driver->alloc(kKvMapsBytes, &mapsBuffer); !s)
      return s;
  if (Status s = refreshKvMaps(
          maps, kernel, buffers.kPool, buffers.vPool, buffers.numPages,
          [&](const std::vector<unsigned char> &bytes, bool first) {
            // Launches still running may read the previous maps.
            if (!first)
              if (Status s = driver->synchronize(); !s)
                return s;
            return driver->copyToDevice(mapsBuffer, bytes.data(), bytes.size());
          });
      !s)
    return s;
  // Each fixed argument's pointer and leading extent, by role (and view:
  // view 0's arguments are the buffers' own fields).
  const AttentionBuffers::View firstView = {
      buffers.kPool,       buffers.vPool,    buffers.indptr,    buffers.indices,
      buffers.lastPageLen, buffers.numPages, buffers.numIndices};
  auto bufferOf = [&](ArgRole role, int64_t v) -> std::pair<void *, int64_t> {
    const AttentionBuffers::View &view =
        v == 0 ? firstView : buffers.moreViews[size_t(v - 1)];
    switch (role) {
    case ArgRole::Q:
      return {buffers.q, buffers.totalQ};
    case ArgRole::QoIndptr:
      return {buffers.qoIndptr, buffers.batch + 1};
    case ArgRole::KPool:
      return {view.kPool, view.numPages};
    case ArgRole::VPool:
      return {view.vPool, view.numPages};
    case ArgRole::KvIndptr:
      return {view.indptr, buffers.batch + 1};
    case ArgRole::KvIndices:
      return {view.indices, view.numIndices};
    case ArgRole::LastPageLen:
      return {view.lastPageLen, buffers.batch};
    case ArgRole::Out:
      return {buffers.out, buffers.totalQ};
    case ArgRole::Lse:
      return {buffers.lse, buffers.totalQ};
    case ArgRole::KvMaps:
      return {mapsBuffer, 2};
    default:
      return {nullptr, 0};
    }
  };
  ParamPack pack;
  for (size_t i = 0; i < info.args.size(); ++i) {
    const KernelArg &arg = info.args[i];
    if (i < kFixed) {
      auto [pointer, rows] = bufferOf(arg.role, arg.view);
      if (!pointer)
        return invalid(kernel + ": argument " + arg.name +
                       " is not one of an unsplit kernel's");
      std::vector<int64_t> sizes = arg.shape;
      sizes[0] = rows;
      pack.pushMemref(pointer, sizes);
      continue;
    }
    const AttentionBuffers::Param &p = buffers.params[i - kFixed];
    if (arg.memref) {
      pack.pushMemref(p.pointer, {p.size});
      continue;
    }
    int64_t word = 0;
    if (Status s = scalarArgWord(kernel + ": parameter '" + arg.name + "'",
                                 arg.element, p.scalar, p.integer, word);
        !s)
      return s;
    pack.pushWord(word);
  }
  std::vector<void *> params = pack.pointers();
  return driver->launch(
      functions[index], gridX, gridY, static_cast<unsigned>(info.block), stream,
      params, dynamicShared[index], launchedZ(info, gridX, gridY, gridZ));
}

unsigned KernelBundle::launchedZ(const KernelInfo &info, unsigned gridX,
                                 unsigned gridY, unsigned gridZ) const {
  if (!target.facts(info.name).persistent)
    return gridZ;
  return abi::persistentGridZ(sms, gridX, gridY, gridZ);
}

std::vector<KernelBundle::Arg>
KernelBundle::paramArgs(const std::vector<AttentionBuffers::Param> &params) {
  std::vector<Arg> out;
  for (const AttentionBuffers::Param &p : params) {
    Arg a;
    if (p.pointer) {
      a.pointer = p.pointer;
      a.sizes = {p.size};
    } else {
      a.isScalar = true;
      a.scalar = p.scalar;
      a.integer = p.integer;
    }
    out.push_back(a);
  }
  return out;
}

Status KernelBundle::arrange(const std::string &kernel, const RoleArgs &fixed,
                             const std::vector<Arg> &params,
                             std::vector<Arg> &out) const {
  const KernelInfo *info = find(kernel);
  if (!info)
    return invalid("no kernel named " + kernel + " in the bundle");
  out.clear();
  for (const KernelArg &a : info->args) {
    if (a.role == ArgRole::Param)
      break;
    // The runners that arrange arguments attend one KV view.
    auto it = a.view == 0 ? fixed.find(a.role) : fixed.end();
    if (it == fixed.end())
      return invalid(kernel + " takes argument '" + a.name +
                     "', which this runner does not provide");
    out.push_back(it->second);
  }
  out.insert(out.end(), params.begin(), params.end());
  return Status::ok();
}

std::optional<CostModel>
KernelBundle::calibratedCost(const std::string &kernel) const {
  const abi::KernelFacts &facts = target.facts(kernel);
  if (!facts.hasCost)
    return std::nullopt;
  return CostModel{facts.costAlpha, facts.costBeta};
}

const KernelInfo *KernelBundle::find(const std::string &kernel) const {
  for (const KernelInfo &k : kernels_)
    if (k.name == kernel)
      return &k;
  return nullptr;
}

Status KernelBundle::residentCtas(const std::string &kernel,
                                  int64_t &ctas) const {
  const KernelInfo *info = find(kernel);
  if (!info)
    return invalid("no kernel named " + kernel + " in the bundle");
  size_t index = info - kernels_.data();
  return driver->residentCtas(functions[index], unsigned(info->block),
                              dynamicShared[index], ctas);
}

Status KernelBundle::launchArgs(const std::string &kernel,
                                const std::vector<Arg> &args, unsigned gridX,
                                unsigned gridY, void *stream, unsigned gridZ,
                                bool programmatic) {
  return launchPacked(kernel, args, gridX, gridY, stream, gridZ,
                      programmatic && waitsForPredecessor(kernel));
}

Status KernelBundle::launchBehind(const std::string &kernel,
                                  const std::vector<Arg> &args, unsigned gridX,
                                  unsigned gridY, void *stream,
                                  unsigned gridZ) {
  if (!completesAfterPredecessor(kernel))
    return invalid(kernel + " is not marked completes_after_predecessor on " +
                   "this chip: it cannot be launched behind its predecessor");
  return launchPacked(kernel, args, gridX, gridY, stream, gridZ,
                      /*programmatic=*/true);
}

Status KernelBundle::launchPacked(const std::string &kernel,
                                  const std::vector<Arg> &args, unsigned gridX,
                                  unsigned gridY, void *stream, unsigned gridZ,
                                  bool programmatic) {
  const KernelInfo *info = find(kernel);
  if (!info)
    return invalid("no kernel named " + kernel + " in the bundle");
  if (info->args.size() != args.size())
    return invalid(kernel + " takes " + std::to_string(info->args.size()) +
                   " arguments, " + std::to_string(args.size()) + " given");
  ParamPack pack;
  for (size_t i = 0; i < args.size(); ++i) {
    const KernelArg &expected = info->args[i];
    if (expected.memref == args[i].isScalar)
      return invalid(kernel + ": argument " + expected.name + " must be " +
                     (expected.memref ? "a memref" : "a scalar"));
    if (!expected.memref) {
      int64_t word = 0;
      if (Status s = scalarArgWord(kernel + ": argument " + expected.name,
                                   expected.element, args[i].scalar,
                                   args[i].integer, word);
          !s)
        return s;
      pack.pushWord(word);
      continue;
    }
    if (args[i].sizes.size() != expected.shape.size())
      return invalid(kernel + ": argument " + expected.name + " has rank " +
                     std::to_string(expected.shape.size()) + ", given " +
                     std::to_string(args[i].sizes.size()));
    pack.pushMemref(args[i].pointer, args[i].sizes);
  }
  if (int64_t pool = info->argIndex(ArgRole::KPool);
      pool >= 0 && !args[size_t(pool)].sizes.empty())
    if (Status s = checkPoolRows(*info, args[size_t(pool)].sizes[0]); !s)
      return s;
  std::vector<void *> params = pack.pointers();
  size_t index = info - kernels_.data();
  gridZ = launchedZ(*info, gridX, gridY, gridZ);
  if (programmatic)
    return driver->launchProgrammatic(
        functions[index], gridX, gridY, static_cast<unsigned>(info->block),
        stream, params, dynamicShared[index], gridZ);
  return driver->launch(functions[index], gridX, gridY,
                        static_cast<unsigned>(info->block), stream, params,
                        dynamicShared[index], gridZ);
}

} // namespace flashir::runtime
