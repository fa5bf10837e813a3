//===- Program.cpp - the attn program written for a batch -----------------===//
//
// Writes `func.func @kernel` as text: every batch tensor becomes a memref
// argument (with the slot the call passes it in) read through a tensor view,
// then the views, the queries, the parameters, the attention (or, in merge
// mode, one state per view merged in several orders) and the output buffers.
//
//===----------------------------------------------------------------------===//

#include "Runner.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <sstream>

using namespace mlir;

namespace flashir::run {
namespace {

std::string shapeStr(const std::vector<int64_t> &shape, bool dynamicFirst,
                     const std::string &elem) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i)
    s +=
        (i == 0 && dynamicFirst ? std::string("?") : std::to_string(shape[i])) +
        "x";
  return s + elem;
}

class ProgramWriter {
public:
  ProgramWriter(const Options &opts, Batch &batch)
      : opts(opts), batch(batch), T(opts.dtypeName) {}

  /// The KV views (the shared prefix first) and the queries.
  void writeInputs();
  /// The variant's parameters, passed to every attention.
  void writeParams(attn::VariantOp variant, ArrayRef<ParamData> params);
  /// The attention, or the merges of per-view states; names the results.
  void writeAttention();
  /// Output buffers, written with materialize_in_destination.
  void writeOutputs(int64_t totalQ);
  Program finish(const std::string &userVariants);

private:
  using TensorArg = std::pair<std::string, std::string>; // (value, type)

  /// Adds the tensor `get` returns as an argument; returns its tensor view.
  TensorArg addTensor(std::function<HostTensor &(Batch &)> get,
                      const std::string &elemType);
  void writeMerges(const std::string &sym, const std::string &heads,
                   const std::string &oType, const std::string &lType);

  const Options &opts;
  Batch &batch;
  std::string T; // the storage element type
  std::vector<Slot> slots;
  std::vector<std::string> argDecls;
  std::ostringstream body;
  std::string viewType, qType, paramClause;
  std::vector<std::string> viewNames;
  TensorArg q;
  std::vector<std::string> resultNames, resultLabels;
};

ProgramWriter::TensorArg
ProgramWriter::addTensor(std::function<HostTensor &(Batch &)> get,
                         const std::string &elemType) {
  HostTensor &h = get(batch);
  std::string name = "%a" + std::to_string(argDecls.size());
  std::string shape = shapeStr(h.shape, true, elemType);
  argDecls.push_back(name + ": memref<" + shape + ">");
  slots.push_back({Slot::Tensor, std::move(get), 0});
  std::string tname = name + "_t";
  body << "  " << tname << " = bufferization.to_tensor " << name
       << " restrict : memref<" << shape << "> to tensor<" << shape << ">\n";
  return std::make_pair(tname, "tensor<" + shape + ">");
}

void ProgramWriter::writeInputs() {
  int64_t D = opts.headDim, Hq = opts.numQoHeads, Hkv = opts.numKvHeads,
          P = opts.pageSize;
  bool paged = opts.paged, hnd = opts.hnd;
  viewType = paged ? "!attn.paged_kv<page_size = " + std::to_string(P) +
                         ", layout = " + std::string(hnd ? "hnd" : "nhd") +
                         ", heads = " + std::to_string(Hkv) +
                         ", head_dim = " + std::to_string(D) + ", " + T + ">"
                   : "!attn.ragged_kv<heads = " + std::to_string(Hkv) +
                         ", head_dim = " + std::to_string(D) + ", " + T + ">";
  if (opts.hasPrefix) {
    auto k = addTensor([](Batch &b) -> HostTensor & { return b.prefixK; }, T);
    auto v = addTensor([](Batch &b) -> HostTensor & { return b.prefixV; }, T);
    auto ix = addTensor(
        [](Batch &b) -> HostTensor & { return b.prefixIndices; }, "i32");
    auto len = addTensor(
        [](Batch &b) -> HostTensor & { return b.prefixLenTensor; }, "i32");
    body << "  %c0 = arith.constant 0 : index\n"
         << "  %plen_i32 = tensor.extract " << len.first
         << "[%c0] : " << len.second << "\n"
         << "  %plen = arith.index_cast %plen_i32 : i32 to index\n"
         << "  %prefix = attn.shared_paged_kv " << k.first << ", " << v.first
         << ", " << ix.first << ", %plen : " << k.second << ", " << v.second
         << " -> " << viewType << "\n";
    viewNames.push_back("%prefix");
  }
  for (size_t v = 0; v < batch.views.size(); ++v) {
    auto view = [v](Batch &b) -> Batch::ViewData & { return b.views[v]; };
    auto k = addTensor([=](Batch &b) -> HostTensor & { return view(b).k; }, T);
    auto val =
        addTensor([=](Batch &b) -> HostTensor & { return view(b).v; }, T);
    std::string name = "%view" + std::to_string(v);
    if (paged) {
      auto ip = addTensor(
          [=](Batch &b) -> HostTensor & { return view(b).indptr; }, "i32");
      auto ix = addTensor(
          [=](Batch &b) -> HostTensor & { return view(b).indices; }, "i32");
      auto lp = addTensor(
          [=](Batch &b) -> HostTensor & { return view(b).last; }, "i32");
      body << "  " << name << " = attn.paged_kv " << k.first << ", "
           << val.first << ", " << ip.first << ", " << ix.first << ", "
           << lp.first << " : " << k.second << ", " << val.second << " -> "
           << viewType << "\n";
    } else {
      auto ip = addTensor(
          [=](Batch &b) -> HostTensor & { return view(b).kvIndptr; }, "i32");
      body << "  " << name << " = attn.ragged_kv " << k.first << ", "
           << val.first << ", " << ip.first << " : " << k.second << ", "
           << val.second << " -> " << viewType << "\n";
    }
    viewNames.push_back(name);
  }
  q = addTensor([](Batch &b) -> HostTensor & { return b.q; }, T);
  auto qo =
      addTensor([](Batch &b) -> HostTensor & { return b.qoIndptr; }, "i32");
  qType = "!attn.ragged_q<heads = " + std::to_string(Hq) +
          ", head_dim = " + std::to_string(D) + ", " + T + ">";
  body << "  %q = attn.ragged_q " << q.first << ", " << qo.first << " : "
       << q.second << " -> " << qType << "\n";
}

void ProgramWriter::writeParams(attn::VariantOp variant,
                                ArrayRef<ParamData> params) {
  std::vector<std::string> paramNames, paramTypes;
  for (auto [decl, p] : llvm::zip_equal(variant.getParamList(), params)) {
    std::string typeStr;
    llvm::raw_string_ostream ts(typeStr);
    ts << p.type;
    if (p.kind == attn::ParamKind::Scalar) {
      if (!p.type.isF32())
        usage("the runner supports scalar parameters of type f32 only");
      std::string name = "%a" + std::to_string(argDecls.size());
      argDecls.push_back(name + ": f32");
      slots.push_back({Slot::Scalar, nullptr, batch.scalarParams.size()});
      batch.scalarParams.push_back(float(p.f[0]));
      paramNames.push_back(name);
      paramTypes.push_back("f32");
      continue;
    }
    HostTensor h;
    int64_t n = int64_t(isa<FloatType>(p.type) ? p.f.size() : p.i.size());
    if (p.type.isF32())
      h = makeFloat(DType::F32, {n},
                    std::vector<float>(p.f.begin(), p.f.end()));
    else if (p.type.isInteger(32))
      h = makeInt<int32_t>({n}, std::vector<int32_t>(p.i.begin(), p.i.end()));
    else if (p.type.isInteger(64))
      h = makeInt<int64_t>({n}, p.i);
    else if (p.type.isInteger(8))
      h = makeInt<int8_t>({n}, std::vector<int8_t>(p.i.begin(), p.i.end()));
    else
      usage("the runner supports f32, i8, i32 and i64 parameter tensors only");
    size_t index = batch.paramTensors.size();
    batch.paramTensors.push_back(std::move(h));
    std::string declType;
    llvm::raw_string_ostream ds(declType);
    if (p.kind == attn::ParamKind::Buffer)
      ds << decl.getType();
    else
      ds << "tensor<?x" << typeStr << ">";
    auto m = addTensor(
        [index](Batch &b) -> HostTensor & { return b.paramTensors[index]; },
        typeStr);
    if (m.second != declType)
      usage("buffer parameter '" + decl.getName().str() +
            "' must be a dynamic 1-D tensor");
    paramNames.push_back(m.first);
    paramTypes.push_back(m.second);
  }
  if (!paramNames.empty()) {
    paramClause = " params(";
    for (size_t i = 0; i < paramNames.size(); ++i)
      paramClause += (i ? ", " : "") + paramNames[i];
    paramClause += " : ";
    for (size_t i = 0; i < paramTypes.size(); ++i)
      paramClause += (i ? ", " : "") + paramTypes[i];
    paramClause += ")";
  }
}

void ProgramWriter::writeAttention() {
  int64_t D = opts.headDim, Hq = opts.numQoHeads, Hkv = opts.numKvHeads;
  // The scale as an exact f32 hex literal.
  std::string heads;
  {
    char buf[16];
    float s = float(opts.scale);
    uint32_t bits;
    std::memcpy(&bits, &s, 4);
    std::snprintf(buf, sizeof(buf), "0x%08X", bits);
    heads = "{num_qo_heads = " + std::to_string(Hq) +
            " : i64, num_kv_heads = " + std::to_string(Hkv) +
            " : i64, scale = " + buf + " : f32}";
  }

  std::string oType = "tensor<?x" + std::to_string(Hq) + "x" +
                      std::to_string(D) + "x" + T + ">";
  std::string lType = "tensor<?x" + std::to_string(Hq) + "xf32>";
  std::string sym = "@" + opts.variantName;
  if (opts.mergeMode)
    return writeMerges(sym, heads, oType, lType);
  std::string views, types;
  for (auto &n : viewNames) {
    views += ", " + n;
    types += ", " + viewType;
  }
  body << "  %r0_o, %r0_l = attn.attention " << sym << "(%q" << views << ")"
       << paramClause << " " << heads << " : " << qType << types << " -> "
       << oType << ", " << lType << "\n";
  resultNames.push_back("%r0");
  resultLabels.push_back(viewNames.size() > 1
                             ? "attention over " +
                                   std::to_string(viewNames.size()) + " views"
                             : "attention");
}

/// One state per view, merged as a left fold (N-ary), right-nested binary
/// merges, in reversed order and interleaved with empty states; each merge
/// is finalized into a result of its own.
void ProgramWriter::writeMerges(const std::string &sym,
                                const std::string &heads,
                                const std::string &oType,
                                const std::string &lType) {
  std::string stType =
      "!attn.state<heads = " + std::to_string(opts.numQoHeads) +
      ", head_dim = " + std::to_string(opts.headDim) + ", @" +
      opts.variantName + ">";
  int64_t K = opts.numViews;
  for (int64_t v = 0; v < K; ++v)
    body << "  %s" << v << " = attn.attention " << sym << "(%q, "
         << viewNames[v] << ")" << paramClause << " " << heads << " : " << qType
         << ", " << viewType << " -> " << stType << "\n";
  body << "  %c0_rows = arith.constant 0 : index\n"
       << "  %rows = tensor.dim " << q.first << ", %c0_rows : " << q.second
       << "\n"
       << "  %empty = attn.empty_state " << sym << " %rows : " << stType
       << "\n";
  auto merge = [&](const std::string &out, const std::vector<std::string> &in) {
    body << "  " << out << " = attn.merge ";
    for (size_t i = 0; i < in.size(); ++i)
      body << (i ? ", " : "") << in[i];
    body << " : ";
    for (size_t i = 0; i < in.size(); ++i)
      body << (i ? ", " : "") << stType;
    body << " -> " << stType << "\n";
  };
  std::vector<std::string> all, reversed;
  for (int64_t v = 0; v < K; ++v)
    all.push_back("%s" + std::to_string(v));
  reversed.assign(all.rbegin(), all.rend());
  merge("%m0", all);
  std::string acc = all.back();
  for (int64_t v = K - 2; v >= 0; --v) {
    merge("%n" + std::to_string(v), {all[v], acc});
    acc = "%n" + std::to_string(v);
  }
  std::vector<std::string> withEmpty = {"%empty"};
  for (auto &s : all) {
    withEmpty.push_back(s);
    withEmpty.push_back("%empty");
  }
  merge("%m2", reversed);
  merge("%m3", withEmpty);
  std::vector<std::pair<std::string, std::string>> finals = {
      {"%m0", "merge left-to-right"},
      {acc, "merge right-nested"},
      {"%m2", "merge reversed"},
      {"%m3", "merge with empty states"}};
  for (size_t i = 0; i < finals.size(); ++i) {
    std::string r = "%r" + std::to_string(i);
    body << "  " << r << "_o, " << r << "_l = attn.finalize " << finals[i].first
         << " : " << stType << " -> " << oType << ", " << lType << "\n";
    resultNames.push_back(r);
    resultLabels.push_back(finals[i].second);
  }
}

void ProgramWriter::writeOutputs(int64_t totalQ) {
  int64_t D = opts.headDim, Hq = opts.numQoHeads;
  for (size_t i = 0; i < resultNames.size(); ++i) {
    for (int part = 0; part < 2; ++part) {
      HostTensor h;
      h.shape = part ? std::vector<int64_t>{totalQ, Hq}
                     : std::vector<int64_t>{totalQ, Hq, D};
      h.elemSize = part || opts.dtype == DType::F32 ? 4 : 2;
      h.bytes.assign(h.numel() * h.elemSize, 0xff); // NaN-ish poison
      size_t index = batch.outs.size();
      batch.outs.push_back(std::move(h));
      std::string name = "%a" + std::to_string(argDecls.size());
      std::string shape =
          shapeStr(batch.outs.back().shape, true, part ? "f32" : T);
      argDecls.push_back(name + ": memref<" + shape + ">");
      slots.push_back(
          {Slot::Tensor,
           [index](Batch &b) -> HostTensor & { return b.outs[index]; }, 0});
      body << "  bufferization.materialize_in_destination " << resultNames[i]
           << (part ? "_l" : "_o") << " in restrict writable " << name
           << " : (tensor<" << shape << ">, memref<" << shape << ">) -> ()\n";
    }
  }
}

Program ProgramWriter::finish(const std::string &userVariants) {
  std::ostringstream fn;
  fn << userVariants << "\n";
  fn << "func.func @kernel(";
  for (size_t i = 0; i < argDecls.size(); ++i)
    fn << (i ? ", " : "") << argDecls[i];
  fn << ") attributes {llvm.emit_c_interface} {\n"
     << body.str() << "  return\n}\n";
  return {fn.str(), std::move(slots), std::move(resultLabels)};
}

} // namespace

Program writeProgram(const Options &opts, attn::VariantOp variant,
                     ArrayRef<ParamData> params,
                     const std::string &userVariants, int64_t totalQ,
                     Batch &batch) {
  ProgramWriter writer(opts, batch);
  writer.writeInputs();
  writer.writeParams(variant, params);
  writer.writeAttention();
  writer.writeOutputs(totalQ);
  return writer.finish(userVariants);
}

} // namespace flashir::run
