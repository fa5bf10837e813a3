//===- Manifest.cpp - a kernel bundle's manifest.json ---------------------===//

#include "flashir/ABI/Manifest.h"
#include "flashir/ABI/Json.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace flashir::abi {

const KernelFacts &TargetInfo::facts(const std::string &kernel) const {
  static const KernelFacts none;
  auto it = kernels.find(kernel);
  return it == kernels.end() ? none : it->second;
}

const ModuleFiles *TargetInfo::moduleOf(const std::string &kernel) const {
  for (const ModuleFiles &m : modules)
    if (m.kernels.empty() || std::find(m.kernels.begin(), m.kernels.end(),
                                       kernel) != m.kernels.end())
      return &m;
  return nullptr;
}

const KernelInfo *Manifest::find(const std::string &kernel) const {
  for (const KernelInfo &k : kernels)
    if (k.name == kernel)
      return &k;
  return nullptr;
}

const TargetInfo *Manifest::target(const std::string &chip) const {
  for (const TargetInfo &t : targets)
    if (t.chip == chip)
      return &t;
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

static JsonValue intArray(const std::vector<int64_t> &values) {
  JsonValue a = JsonValue::makeArray();
  for (int64_t v : values)
    a.push(v);
  return a;
}

static JsonValue writeArg(const KernelArg &arg) {
  JsonValue a = JsonValue::makeObject();
  a.set("name", arg.name);
  a.set("role", std::string(roleName(arg.role)));
  if (arg.view > 0)
    a.set("view", arg.view);
  a.set("kind", arg.memref ? "memref" : "scalar");
  a.set("element", arg.element);
  if (arg.memref)
    a.set("shape", intArray(arg.shape));
  if (arg.paramKind != ParamKind::None)
    a.set("param_kind", std::string(paramKindName(arg.paramKind)));
  return a;
}

static JsonValue writeKernel(const KernelInfo &k) {
  JsonValue o = JsonValue::makeObject();
  o.set("name", k.name);
  o.set("kind", std::string(kindName(k.kind)));
  o.set("grid", k.grid.str());
  o.set("block", k.block);
  // Memref arguments are passed as expanded descriptors: allocated and
  // aligned pointer, offset, sizes, strides (MLIR's default convention).
  o.set("memref_abi", "descriptor");
  JsonValue args = JsonValue::makeArray();
  for (const KernelArg &a : k.args)
    args.push(writeArg(a));
  o.set("args", std::move(args));
  if (!k.variant.empty())
    o.set("variant", k.variant);
  if (!k.mergeKernel.empty())
    o.set("merge_kernel", k.mergeKernel);
  if (k.positionFree)
    o.set("position_free", true);
  if (k.kind != KernelKind::Merge)
    o.set("kv_layout", k.ragged ? "ragged" : k.hnd ? "hnd" : "nhd");
  for (auto [key, value] :
       {std::pair<const char *, int64_t>{"unroll", k.unroll},
        {"q_rows", k.qRows},
        {"q_tokens", k.qTokens},
        {"kv_tile", k.kvTile}})
    if (value)
      o.set(key, value);
  return o;
}

static JsonValue writeFacts(const KernelFacts &f) {
  JsonValue o = JsonValue::makeObject();
  o.set("shared_memory_bytes", f.sharedMemoryBytes);
  o.set("dynamic_shared_memory_bytes", f.dynamicSharedMemoryBytes);
  o.set("stages", f.stages);
  o.set("tensor_cores", f.tensorCores);
  o.set("bulk_copy", f.bulkCopy);
  o.set("programmatic_wait", f.programmaticWait);
  o.set("completes_after_predecessor", f.completesAfterPredecessor);
  // Written only where true: manifests of one-CTA kernels stay as before.
  if (f.persistent)
    o.set("persistent", true);
  if (!f.tensorMapBox.empty())
    o.set("tensor_map_box", intArray(f.tensorMapBox));
  if (f.hasCost) {
    JsonValue cost = JsonValue::makeObject();
    cost.set("alpha", f.costAlpha);
    cost.set("beta", f.costBeta);
    o.set("cost", std::move(cost));
  }
  return o;
}

static JsonValue writeModule(const ModuleFiles &m) {
  JsonValue o = JsonValue::makeObject();
  o.set("ptx", m.ptx);
  if (!m.cubin.empty())
    o.set("cubin", m.cubin);
  JsonValue names = JsonValue::makeArray();
  for (const std::string &k : m.kernels)
    names.push(JsonValue(k));
  o.set("kernels", std::move(names));
  return o;
}

std::string writeManifest(const Manifest &m) {
  JsonValue root = JsonValue::makeObject();
  root.set("abi_version", m.abiVersion);
  root.set("source", m.source);
  JsonValue kernels = JsonValue::makeArray();
  for (const KernelInfo &k : m.kernels)
    kernels.push(writeKernel(k));
  root.set("kernels", std::move(kernels));
  JsonValue targets = JsonValue::makeArray();
  for (const TargetInfo &t : m.targets) {
    JsonValue o = JsonValue::makeObject();
    o.set("chip", t.chip);
    if (t.modules.size() == 1 && t.modules[0].kernels.empty()) {
      o.set("ptx", t.modules[0].ptx);
      if (!t.modules[0].cubin.empty())
        o.set("cubin", t.modules[0].cubin);
    } else {
      JsonValue modules = JsonValue::makeArray();
      for (const ModuleFiles &m : t.modules)
        modules.push(writeModule(m));
      o.set("modules", std::move(modules));
    }
    o.set("compile_ms", t.compileMs);
    JsonValue facts = JsonValue::makeObject();
    for (const auto &[name, f] : t.kernels)
      facts.set(name, writeFacts(f));
    o.set("kernels", std::move(facts));
    targets.push(std::move(o));
  }
  root.set("targets", std::move(targets));
  return root.write();
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

namespace {
/// Typed access to a JSON object, remembering the first error.
class Reader {
public:
  explicit Reader(std::string &error) : error(error) {}

  bool fail(const std::string &message) {
    if (error.empty())
      error = message;
    return false;
  }
  std::string string(const JsonValue &o, const char *key, bool required,
                     const std::string &where) {
    const JsonValue *v = o.get(key);
    if (v && v->isString())
      return v->string();
    if (v || required)
      fail(where + ": '" + key + "' must be a string");
    return "";
  }
  /// An integer in [lo, hi]; `fallback` when absent and not required.
  int64_t integer(const JsonValue &o, const char *key, int64_t lo, int64_t hi,
                  bool required, const std::string &where,
                  int64_t fallback = 0) {
    const JsonValue *v = o.get(key);
    if (!v && !required)
      return fallback;
    if (!v || !v->isNumber() || std::nearbyint(v->number()) != v->number() ||
        !(v->number() >= double(lo) && v->number() <= double(hi))) {
      fail(where + ": '" + key + "' must be an integer in " +
           std::to_string(lo) + ".." + std::to_string(hi));
      return fallback;
    }
    return int64_t(v->number());
  }
  bool boolean(const JsonValue &o, const char *key, const std::string &where) {
    const JsonValue *v = o.get(key);
    if (v && !v->isBool())
      fail(where + ": '" + key + "' must be true or false");
    return v && v->isBool() && v->boolean();
  }

  bool readArg(const JsonValue &a, KernelArg &arg, const std::string &where);
  bool readKernel(const JsonValue &k, KernelInfo &info);
  bool readFacts(const JsonValue &f, KernelFacts &facts,
                 const std::string &where);
  bool readTarget(const JsonValue &t, const Manifest &m, TargetInfo &target);
  bool readModule(const JsonValue &o, ModuleFiles &module,
                  const std::string &where);
  bool readModules(const JsonValue &t, const Manifest &m,
                   std::vector<ModuleFiles> &modules, const std::string &where);

private:
  std::string &error;
};
} // namespace

bool Reader::readArg(const JsonValue &a, KernelArg &arg,
                     const std::string &where) {
  if (!a.isObject())
    return fail(where + ": an argument must be an object");
  arg.name = string(a, "name", true, where);
  std::string role = string(a, "role", true, where + " " + arg.name);
  std::optional<ArgRole> parsed = parseRole(role);
  if (!parsed)
    return fail(where + ": argument '" + arg.name + "' has unknown role '" +
                role + "'");
  arg.role = *parsed;
  arg.view = integer(a, "view", 0, 1 << 10, false, where + " " + arg.name);
  if (arg.view > 0 && !isViewRole(arg.role))
    return fail(where + ": argument '" + arg.name + "' of role '" + role +
                "' belongs to no KV view");
  std::string kind = string(a, "kind", true, where);
  if (kind != "memref" && kind != "scalar")
    return fail(where + ": argument '" + arg.name +
                "' kind must be memref or scalar");
  arg.memref = kind == "memref";
  arg.element = string(a, "element", true, where);
  if (arg.role == ArgRole::Param) {
    std::string kind = string(a, "param_kind", true, where);
    std::optional<ParamKind> parsed = parseParamKind(kind);
    if (!parsed)
      return fail(where + ": parameter '" + arg.name +
                  "' has unknown param_kind '" + kind + "'");
    arg.paramKind = *parsed;
  }
  if (arg.memref) {
    const JsonValue *shape = a.get("shape");
    if (!shape || !shape->isArray() || shape->array().size() > 8)
      return fail(where + ": memref argument '" + arg.name +
                  "' needs a shape of rank <= 8");
    for (const JsonValue &d : shape->array()) {
      if (!d.isNumber() || std::nearbyint(d.number()) != d.number() ||
          d.number() < -1 || d.number() > double(int64_t(1) << 40))
        return fail(where + ": argument '" + arg.name +
                    "' has a bad extent (-1: dynamic, else >= 0)");
      arg.shape.push_back(int64_t(d.number()));
    }
  }
  return error.empty();
}

bool Reader::readKernel(const JsonValue &k, KernelInfo &info) {
  if (!k.isObject())
    return fail("a kernel entry must be an object");
  info.name = string(k, "name", true, "a kernel");
  std::string where = "kernel '" + info.name + "'";
  std::string kind = string(k, "kind", true, where);
  std::optional<KernelKind> parsedKind = parseKind(kind);
  if (!parsedKind)
    return fail(where + ": unknown kind '" + kind + "'");
  info.kind = *parsedKind;
  std::string grid = string(k, "grid", true, where);
  std::optional<Grid> parsedGrid = Grid::parse(grid);
  if (!parsedGrid)
    return fail(where + ": unknown grid '" + grid + "'");
  info.grid = *parsedGrid;
  info.block = integer(k, "block", 1, 1024, true, where);
  info.unroll = integer(k, "unroll", 0, 1024, false, where);
  info.qRows = integer(k, "q_rows", 0, 1 << 20, false, where);
  info.qTokens = integer(k, "q_tokens", 0, 1 << 20, false, where);
  info.kvTile = integer(k, "kv_tile", 0, 1 << 20, false, where);
  info.variant = string(k, "variant", false, where);
  info.mergeKernel = string(k, "merge_kernel", false, where);
  info.positionFree = boolean(k, "position_free", where);
  std::string layout = string(k, "kv_layout", false, where);
  if (!layout.empty() && layout != "nhd" && layout != "hnd" &&
      layout != "ragged")
    return fail(where + ": kv_layout must be nhd, hnd or ragged, got '" +
                layout + "'");
  info.hnd = layout == "hnd";
  info.ragged = layout == "ragged";
  const JsonValue *args = k.get("args");
  if (!args || !args->isArray())
    return fail(where + ": needs an 'args' array");
  for (const JsonValue &a : args->array()) {
    info.args.emplace_back();
    if (!readArg(a, info.args.back(), where))
      return false;
  }
  if (!error.empty())
    return false;
  if (std::string why = verifyKernel(info); !why.empty())
    return fail(why);
  return true;
}

bool Reader::readFacts(const JsonValue &f, KernelFacts &facts,
                       const std::string &where) {
  if (!f.isObject())
    return fail(where + ": facts must be an object");
  constexpr int64_t kMaxBytes = int64_t(1) << 30;
  facts.sharedMemoryBytes =
      integer(f, "shared_memory_bytes", 0, kMaxBytes, false, where);
  facts.dynamicSharedMemoryBytes =
      integer(f, "dynamic_shared_memory_bytes", 0, kMaxBytes, false, where);
  facts.stages = integer(f, "stages", 0, 64, false, where);
  facts.tensorCores = boolean(f, "tensor_cores", where);
  facts.bulkCopy = boolean(f, "bulk_copy", where);
  facts.programmaticWait = boolean(f, "programmatic_wait", where);
  facts.completesAfterPredecessor =
      boolean(f, "completes_after_predecessor", where);
  facts.persistent = boolean(f, "persistent", where);
  if (const JsonValue *box = f.get("tensor_map_box")) {
    std::string bad =
        where + ": tensor_map_box needs three or five extents in 1..256";
    if (!box->isArray() ||
        (box->array().size() != 3 && box->array().size() != 5))
      return fail(bad);
    for (const JsonValue &e : box->array()) {
      if (!e.isNumber() || !(e.number() >= 1 && e.number() <= 256) ||
          std::nearbyint(e.number()) != e.number())
        return fail(bad);
      facts.tensorMapBox.push_back(int64_t(e.number()));
    }
    // abi::kvTensorMap's grouped map: 8-key groups.
    if (facts.tensorMapBox.size() == 5 && facts.tensorMapBox[1] != 8)
      return fail(where + ": tensor_map_box of five extents groups 8 keys "
                          "(second extent)");
  }
  if (const JsonValue *cost = f.get("cost")) {
    const JsonValue *alpha = cost->get("alpha"), *beta = cost->get("beta");
    if (!alpha || !alpha->isNumber() || !beta || !beta->isNumber() ||
        !(alpha->number() >= 0.0) || !(beta->number() > 0.0) ||
        !std::isfinite(alpha->number()) || !std::isfinite(beta->number()))
      return fail(where + ": the cost needs numbers alpha >= 0 and beta > 0");
    facts.hasCost = true;
    facts.costAlpha = alpha->number();
    facts.costBeta = beta->number();
  }
  return error.empty();
}

bool Reader::readModule(const JsonValue &o, ModuleFiles &module,
                        const std::string &where) {
  module.ptx = string(o, "ptx", true, where);
  module.cubin = string(o, "cubin", false, where);
  for (const std::string *file : {&module.ptx, &module.cubin})
    if (file->find('/') != std::string::npos || *file == "..")
      return fail(where + ": file names must not leave the bundle");
  return error.empty();
}

bool Reader::readModules(const JsonValue &t, const Manifest &m,
                         std::vector<ModuleFiles> &modules,
                         const std::string &where) {
  const JsonValue *list = t.get("modules");
  if (!list) { // one module holding every kernel
    modules.emplace_back();
    return readModule(t, modules.back(), where);
  }
  if (t.get("ptx") || t.get("cubin"))
    return fail(where + ": give 'ptx'/'cubin' or 'modules', not both");
  if (!list->isArray())
    return fail(where + ": 'modules' must be an array");
  std::map<std::string, int> defined;
  for (const JsonValue &o : list->array()) {
    if (!o.isObject())
      return fail(where + ": a module must be an object");
    modules.emplace_back();
    if (!readModule(o, modules.back(), where))
      return false;
    const JsonValue *names = o.get("kernels");
    if (!names || !names->isArray() || names->array().empty())
      return fail(where + ": module " + modules.back().ptx +
                  " needs a non-empty 'kernels' array");
    for (const JsonValue &name : names->array()) {
      if (!name.isString() || !m.find(name.string()))
        return fail(where + ": module " + modules.back().ptx +
                    " names a kernel the bundle does not hold");
      modules.back().kernels.push_back(name.string());
      ++defined[name.string()];
    }
  }
  for (const KernelInfo &k : m.kernels)
    if (defined[k.name] != 1)
      return fail(where + ": kernel " + k.name + " is defined by " +
                  std::to_string(defined[k.name]) +
                  " modules; each kernel needs exactly one");
  return error.empty();
}

bool Reader::readTarget(const JsonValue &t, const Manifest &m,
                        TargetInfo &target) {
  if (!t.isObject())
    return fail("a target entry must be an object");
  target.chip = string(t, "chip", true, "a target");
  std::string where = "target '" + target.chip + "'";
  if (!readModules(t, m, target.modules, where))
    return false;
  if (const JsonValue *ms = t.get("compile_ms"); ms && ms->isNumber())
    target.compileMs = ms->number();
  const JsonValue *facts = t.get("kernels");
  if (facts && !facts->isObject())
    return fail(where + ": 'kernels' must be an object");
  // Facts of kernels the bundle does not hold are ignored (a calibration
  // may outlive a kernel's rename).
  for (const KernelInfo &k : m.kernels)
    if (const JsonValue *f = facts ? facts->get(k.name) : nullptr) {
      if (!readFacts(*f, target.kernels[k.name], where + " kernel " + k.name))
        return false;
      if (target.kernels[k.name].persistent && k.kind != KernelKind::Prefill)
        return fail(where + " kernel " + k.name +
                    ": only prefill kernels may be persistent (their grid's "
                    "z extent launched smaller)");
    }
  return error.empty();
}

bool parseManifest(const std::string &text, Manifest &out, std::string &error) {
  error.clear();
  JsonValue root;
  if (!JsonValue::parse(text, root, error))
    return false;
  Reader r(error);
  const JsonValue *abi = root.get("abi_version");
  if (!abi || !abi->isNumber())
    return r.fail("no abi_version: not a FlashIR bundle manifest");
  if (abi->number() != double(kAbiVersion))
    return r.fail("bundle ABI version " +
                  std::to_string(int64_t(abi->number())) +
                  " is not this runtime's (" + std::to_string(kAbiVersion) +
                  "): rebuild the bundle with this FlashIR's flashir-bundle");
  Manifest m;
  m.source = r.string(root, "source", false, "the manifest");
  const JsonValue *ks = root.get("kernels"), *ts = root.get("targets");
  if (!ks || !ks->isArray() || !ts || !ts->isArray())
    return r.fail("needs 'kernels' and 'targets' arrays");
  for (const JsonValue &k : ks->array()) {
    m.kernels.emplace_back();
    if (!r.readKernel(k, m.kernels.back()))
      return false;
    if (m.find(m.kernels.back().name) != &m.kernels.back())
      return r.fail("kernel '" + m.kernels.back().name + "' appears twice");
  }
  for (const KernelInfo &k : m.kernels) {
    if (k.mergeKernel.empty())
      continue;
    const KernelInfo *merge = m.find(k.mergeKernel);
    if (!merge || merge->kind != KernelKind::Merge)
      return r.fail("kernel '" + k.name + "' names merge kernel '" +
                    k.mergeKernel + "', which the bundle has not");
    if (merge->element() != k.arg(ArgRole::PartialO)->element ||
        merge->numQoHeads() != k.numQoHeads() ||
        merge->headDim() != k.headDim())
      return r.fail("merge kernel '" + merge->name +
                    "' reads other partial states than '" + k.name +
                    "' writes");
  }
  for (const JsonValue &t : ts->array()) {
    m.targets.emplace_back();
    if (!r.readTarget(t, m, m.targets.back()))
      return false;
  }
  out = std::move(m);
  return true;
}

} // namespace flashir::abi
