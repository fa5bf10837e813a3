//===- KernelABI.cpp - the contract between kernels and hosts -------------===//

#include "flashir/ABI/KernelABI.h"

#include <algorithm>
#include <array>
#include <utility>

namespace flashir::abi {

namespace {
constexpr std::array<std::pair<KernelKind, std::string_view>, 3> kKinds = {{
    {KernelKind::Decode, "decode"},
    {KernelKind::Prefill, "prefill"},
    {KernelKind::Merge, "merge"},
}};

constexpr std::array<std::pair<ArgRole, std::string_view>, 17> kRoles = {{
    {ArgRole::Q, "q"},
    {ArgRole::QoIndptr, "qo_indptr"},
    {ArgRole::KPool, "k_pool"},
    {ArgRole::VPool, "v_pool"},
    {ArgRole::KvIndptr, "indptr"},
    {ArgRole::KvIndices, "indices"},
    {ArgRole::LastPageLen, "last_page_len"},
    {ArgRole::ChunkIndptr, "chunk_indptr"},
    {ArgRole::ChunkRequest, "chunk_request"},
    {ArgRole::ChunkStarts, "chunk_starts"},
    {ArgRole::ChunkEnds, "chunk_ends"},
    {ArgRole::ChunkOrder, "chunk_order"},
    {ArgRole::PartialO, "partial_o"},
    {ArgRole::PartialLse, "partial_lse"},
    {ArgRole::Out, "out"},
    {ArgRole::Lse, "lse"},
    {ArgRole::KvMaps, "kv_maps"},
}};
} // namespace

std::string_view kindName(KernelKind kind) {
  for (const auto &[k, name] : kKinds)
    if (k == kind)
      return name;
  return "";
}

std::optional<KernelKind> parseKind(std::string_view name) {
  for (const auto &[k, n] : kKinds)
    if (n == name)
      return k;
  return std::nullopt;
}

std::string_view paramKindName(ParamKind kind) {
  switch (kind) {
  case ParamKind::Scalar:
    return "scalar";
  case ParamKind::PerRequest:
    return "per_request";
  case ParamKind::PerHead:
    return "per_head";
  case ParamKind::Buffer:
    return "buffer";
  case ParamKind::None:
    break;
  }
  return "none";
}

std::optional<ParamKind> parseParamKind(std::string_view name) {
  for (ParamKind k : {ParamKind::Scalar, ParamKind::PerRequest,
                      ParamKind::PerHead, ParamKind::Buffer})
    if (paramKindName(k) == name)
      return k;
  return std::nullopt;
}

std::string_view roleName(ArgRole role) {
  for (const auto &[r, name] : kRoles)
    if (r == role)
      return name;
  return "param";
}

std::optional<ArgRole> parseRole(std::string_view name) {
  if (name == "param")
    return ArgRole::Param;
  for (const auto &[r, n] : kRoles)
    if (n == name)
      return r;
  return std::nullopt;
}

bool isViewRole(ArgRole role) {
  switch (role) {
  case ArgRole::KPool:
  case ArgRole::VPool:
  case ArgRole::KvIndptr:
  case ArgRole::KvIndices:
  case ArgRole::LastPageLen:
    return true;
  default:
    return false;
  }
}

std::string FixedArg::name() const {
  std::string base(roleName(role));
  return view == 0 ? base : base + "_" + std::to_string(view);
}

std::string Grid::str() const {
  std::string s = rows == GridRows::Chunks ? "chunks" : "requests";
  if (qTiles)
    s += " x q_tiles";
  s += heads == GridHeads::QoHeads ? " x num_qo_heads" : " x num_kv_heads";
  return s;
}

std::optional<Grid> Grid::parse(std::string_view text) {
  for (GridRows rows : {GridRows::Requests, GridRows::Chunks})
    for (bool qTiles : {false, true})
      for (GridHeads heads : {GridHeads::QoHeads, GridHeads::KvHeads}) {
        Grid g{rows, qTiles, heads};
        if (g.str() == text)
          return g;
      }
  return std::nullopt;
}

std::vector<FixedArg> fixedArgs(KernelKind kind, bool split, bool ragged,
                                int64_t numViews) {
  using R = ArgRole;
  std::vector<FixedArg> args;
  auto add = [&](std::initializer_list<ArgRole> roles, int64_t view = 0) {
    for (ArgRole role : roles)
      args.push_back({role, view});
  };
  if (kind == KernelKind::Merge) {
    add({R::QoIndptr, R::ChunkIndptr, R::PartialO, R::PartialLse, R::Out,
         R::Lse});
    return args;
  }
  add({R::Q, R::QoIndptr});
  for (int64_t view = 0; view < numViews; ++view) {
    add({R::KPool, R::VPool, R::KvIndptr}, view);
    if (!ragged)
      add({R::KvIndices, R::LastPageLen}, view);
  }
  if (split)
    add({R::ChunkIndptr, R::ChunkRequest, R::ChunkStarts, R::ChunkEnds,
         R::ChunkOrder, R::PartialO, R::PartialLse});
  add({R::Out, R::Lse, R::KvMaps});
  return args;
}

bool raggedSignature(const std::vector<std::string> &argNames) {
  for (const std::string &name : argNames)
    if (name == roleName(ArgRole::KvIndices))
      return false;
  return true;
}

int64_t viewsOfSignature(const std::vector<std::string> &argNames) {
  int64_t views = 1;
  while (std::find(argNames.begin(), argNames.end(),
                   FixedArg{ArgRole::KvIndptr, views}.name()) != argNames.end())
    ++views;
  return views;
}

Grid gridOf(KernelKind kind, bool split, bool perKvHead) {
  if (kind == KernelKind::Merge)
    return {GridRows::Requests, false, GridHeads::QoHeads};
  return {split ? GridRows::Chunks : GridRows::Requests,
          kind == KernelKind::Prefill,
          perKvHead ? GridHeads::KvHeads : GridHeads::QoHeads};
}

unsigned persistentGridZ(int64_t sms, unsigned x, unsigned y, unsigned z) {
  uint64_t plane = uint64_t(x) * y;
  if (plane == 0 || sms < 1)
    return z;
  uint64_t planes = (uint64_t(sms) + plane - 1) / plane;
  return unsigned(std::min<uint64_t>(z, planes));
}

int64_t elementBytes(const std::string &element) {
  if (element == "bf16" || element == "f16")
    return 2;
  if (element == "f32" || element == "i32")
    return 4;
  if (element == "i64" || element == "f64")
    return 8;
  return 0;
}

const KernelArg *KernelInfo::arg(ArgRole role, int64_t view) const {
  int64_t i = argIndex(role, view);
  return i < 0 ? nullptr : &args[size_t(i)];
}

int64_t KernelInfo::argIndex(ArgRole role, int64_t view) const {
  if (role == ArgRole::Param)
    return -1;
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i].role == role && args[i].view == view)
      return int64_t(i);
  return -1;
}

int64_t KernelInfo::numViews() const {
  int64_t views = 0;
  for (const KernelArg &a : args)
    views += a.role == ArgRole::KvIndptr;
  return views;
}

int64_t KernelInfo::numParams() const {
  int64_t n = 0;
  for (const KernelArg &a : args)
    n += a.role == ArgRole::Param;
  return n;
}

static int64_t dim(const KernelArg *a, size_t rank, size_t d) {
  return a && a->shape.size() == rank ? a->shape[d] : 0;
}

int64_t KernelInfo::numQoHeads() const {
  if (kind == KernelKind::Merge)
    return dim(arg(ArgRole::PartialO), 3, 1);
  return dim(arg(ArgRole::Q), 3, 1);
}

int64_t KernelInfo::headDim() const {
  if (kind == KernelKind::Merge)
    return dim(arg(ArgRole::PartialO), 3, 2);
  return dim(arg(ArgRole::Q), 3, 2);
}

int64_t KernelInfo::numKvHeads() const {
  return dim(arg(ArgRole::KPool), 4, 2);
}

int64_t KernelInfo::pageSize() const { return dim(arg(ArgRole::KPool), 4, 1); }

std::string KernelInfo::element() const {
  const KernelArg *a =
      arg(kind == KernelKind::Merge ? ArgRole::PartialO : ArgRole::Q);
  return a ? a->element : std::string();
}

/// The rank each memref role has (0: any).
static size_t rankOf(ArgRole role) {
  switch (role) {
  case ArgRole::Q:
  case ArgRole::PartialO:
  case ArgRole::Out:
    return 3;
  case ArgRole::KPool:
  case ArgRole::VPool:
    return 4;
  case ArgRole::PartialLse:
  case ArgRole::Lse:
  case ArgRole::KvMaps:
    return 2;
  case ArgRole::Param:
    return 0;
  default:
    return 1;
  }
}

std::string verifySignature(KernelKind kind, const Grid &grid,
                            const std::vector<std::string> &argNames,
                            bool namesMergeKernel, int64_t qTokens) {
  std::string what = std::string(kindName(kind)) + " kernel";
  bool split = kind != KernelKind::Merge && grid.rows == GridRows::Chunks;
  bool perKvHead = grid.heads == GridHeads::KvHeads;
  if (grid != gridOf(kind, split, perKvHead) ||
      (kind == KernelKind::Decode && !perKvHead))
    return "grid '" + grid.str() + "' does not fit a " + what;
  bool attends = kind != KernelKind::Merge;
  int64_t views = attends ? viewsOfSignature(argNames) : 1;
  std::vector<FixedArg> fixed =
      fixedArgs(kind, split, attends && raggedSignature(argNames), views);
  if (argNames.size() < fixed.size())
    return "a " + std::string(split ? "split " : "") + what + " takes " +
           std::to_string(fixed.size()) + " fixed arguments, not " +
           std::to_string(argNames.size());
  if (kind == KernelKind::Merge && argNames.size() != fixed.size())
    return "a merge kernel takes no variant parameters";
  for (size_t i = 0; i < fixed.size(); ++i)
    if (argNames[i] != fixed[i].name())
      return "argument " + std::to_string(i) + " is '" + argNames[i] +
             "', expected '" + fixed[i].name() + "'";
  if (split && views > 1)
    return "a split kernel attends one KV view";
  if (split != namesMergeKernel)
    return split ? "a split kernel must name its merge kernel"
                 : "only split kernels name a merge kernel";
  if (kind == KernelKind::Prefill && qTokens < 1)
    return "a prefill kernel needs q_tokens >= 1";
  return "";
}

std::string verifyKernel(const KernelInfo &k) {
  if (k.name.empty())
    return "a kernel needs a name";
  std::string where = "kernel '" + k.name + "': ";
  if (k.block < 1 || k.block > 1024)
    return where + "block must be 1..1024 threads";
  if (k.ragged && (k.kind == KernelKind::Merge || k.hnd))
    return where + "only decode and prefill kernels over NHD rows read a "
                   "ragged view";
  std::vector<FixedArg> fixed = fixedArgs(k.kind, k.split(), k.ragged,
                                          std::max<int64_t>(k.numViews(), 1));
  std::vector<std::string> names;
  for (size_t i = 0; i < k.args.size(); ++i) {
    const KernelArg &a = k.args[i];
    FixedArg fixedArg = i < fixed.size() ? fixed[i] : FixedArg();
    ArgRole want = fixedArg.role;
    auto roleOf = [](ArgRole role, int64_t view) {
      std::string text = "'" + std::string(roleName(role)) + "'";
      return view == 0 ? text : text + " of view " + std::to_string(view);
    };
    if (a.role != want || a.view != fixedArg.view)
      return where + "argument " + std::to_string(i) + " ('" + a.name +
             "') has role " + roleOf(a.role, a.view) + ", expected " +
             roleOf(want, fixedArg.view);
    names.push_back(want == ArgRole::Param ? a.name : fixedArg.name());
    if (want != ArgRole::Param && (!a.memref || a.shape.size() != rankOf(want)))
      return where + "argument '" + a.name + "' must be a memref of rank " +
             std::to_string(rankOf(want));
    bool scalar = a.paramKind == ParamKind::Scalar;
    bool array = a.paramKind == ParamKind::PerRequest ||
                 a.paramKind == ParamKind::PerHead;
    if (want == ArgRole::Param &&
        (a.paramKind == ParamKind::None || scalar == a.memref ||
         (array && a.shape.size() != 1)))
      return where + "parameter '" + a.name + "' (" +
             std::string(paramKindName(a.paramKind)) +
             ") must be a scalar, a per-request or per-head array, or a "
             "buffer, as it is passed";
    if (want != ArgRole::Param && a.paramKind != ParamKind::None)
      return where + "fixed argument '" + a.name + "' has a param_kind";
  }
  if (std::string why = verifySignature(k.kind, k.grid, names,
                                        !k.mergeKernel.empty(), k.qTokens);
      !why.empty())
    return where + why;
  return "";
}

KvTensorMap kvTensorMap(bool hnd, int64_t pageSize, int64_t numKvHeads,
                        int64_t headDim, int64_t numPages, int64_t elementBytes,
                        int64_t boxColumns, bool grouped) {
  auto u = [](int64_t x) { return static_cast<uint64_t>(x); };
  uint64_t row = u(headDim * elementBytes);
  uint64_t boxBytes = u(boxColumns * elementBytes);
  if (grouped) {
    uint64_t boxes = u(headDim / boxColumns), groups = u(pageSize / 8);
    if (hnd)
      return {5,
              {u(boxColumns), 8, boxes, groups, u(numPages * numKvHeads)},
              {row, boxBytes, 8 * row, u(pageSize) * row},
              int64_t(boxBytes)};
    uint64_t slot = u(numKvHeads) * row;
    return {5,
            {u(boxColumns), 8, boxes, u(numKvHeads), u(numPages) * groups},
            {slot, boxBytes, row, 8 * slot},
            int64_t(boxBytes)};
  }
  if (hnd)
    return {3,
            {u(headDim), u(pageSize), u(numPages * numKvHeads)},
            {row, u(pageSize) * row},
            int64_t(boxBytes)};
  return {3,
          {u(headDim), u(numKvHeads), u(numPages * pageSize)},
          {row, u(numKvHeads) * row},
          int64_t(boxBytes)};
}

} // namespace flashir::abi
