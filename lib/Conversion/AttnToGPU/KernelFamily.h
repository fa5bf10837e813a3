//===- KernelFamily.h - the kernel families of convert-attn-to-gpu -*- C++
//-*-===//
//
// A kernel family is one kernel design (CUDA-core decode, tensor-core decode,
// tensor-core prefill, the split-KV merge) behind four questions the pass
// asks per attention: does it serve this attention on this chip with these
// options (match), does its shared memory fit (budget), build the gpu.func
// (build) and what does the host need to launch it (launch). The pass tries
// the families in priority order (attentionFamilies); the first that does not
// pass the attention on serves it or names what it needs.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHIR_LIB_CONVERSION_ATTNTOGPU_KERNELFAMILY_H
#define FLASHIR_LIB_CONVERSION_ATTNTOGPU_KERNELFAMILY_H

#include "flashir/Conversion/AttnToGPUOptions.h"
#include "flashir/Target/Chip.h"

#include "KernelBuilder.h"

#include <string>

namespace flashir::conversion::families {
using namespace flashir::attn;
using kernels::KernelBuilder;
using kernels::KernelShape;

/// What the pass options and the chip fix for every attention of the module
/// (checked by the pass before any family runs).
struct KernelOptions {
  const target::ChipInfo *chip = nullptr;
  /// The chip as the option spells it (diagnostics quote it).
  std::string chipName;
  KernelDesign design = KernelDesign::Auto;
  /// The warps option resolved (-1 becomes 4), and whether it was -1 (the
  /// tensor-core decode family may then take 2).
  int64_t warps = 0, unroll = 0, minBlocks = 0;
  bool warpsByShape = false;
  /// The stages option resolved for the module's decode design (-1 becomes
  /// 3 with tensor cores, 4 for CUDA cores with cp.async, else 0), and
  /// whether it was -1 (the families may then choose).
  int64_t stages = 0;
  bool stagesByChip = false;
  /// The module's decode design: tensor cores (design=mma-sync, or auto on
  /// a chip with bf16 mma.sync and cp.async).
  bool tensorCores = false;
  /// Tensor-core decode: K/V through the copy engine (sm_90a), and as
  /// tensor copies of whole tiles where the pages allow.
  bool bulkCopy = false, tensorMaps = false;
  bool headsInnermost = true, splitPrefill = false;
  PersistentPrefill persistentPrefill = PersistentPrefill::Auto;
};

/// One kernel of an attention, as the driver and a family plan it.
struct KernelPlan {
  AttentionOp op;
  VariantOp variant;
  PagedKVType view;
  /// What KernelBuilder builds from: the driver fills the fields every
  /// family shares, the family its design, stages and tiles.
  KernelShape shape;
  /// Dynamic shared memory the launch passes (0: static memory only).
  int64_t dynamicSharedBytes = 0;
  /// Kernels are named <prefix>_<kind>_<index>: the enclosing function (or
  /// "attn") and the attention's position among the module's kernels.
  std::string prefix;
  int64_t index = 0;

  std::string symbolName(KernelKind kind) const;
};

/// A family's answer to whether it serves an attention.
struct Match {
  enum class Kind { Skip, Serve, Fail };
  Kind kind;
  /// Skip: why the family passes the attention on (debug output); Fail:
  /// what it needs, completing "the <kind> kernel generator needs ...".
  std::string reason;

  static Match skip(std::string why) { return {Kind::Skip, std::move(why)}; }
  static Match serve() { return {Kind::Serve, {}}; }
  static Match fail(std::string why) { return {Kind::Fail, std::move(why)}; }
  bool serves() const { return kind == Kind::Serve; }
  bool skips() const { return kind == Kind::Skip; }
};

class KernelFamily {
public:
  virtual ~KernelFamily() = default;

  /// For debug output (-debug-only=convert-attn-to-gpu).
  virtual StringRef name() const = 0;
  /// What its kernels compute: names their symbols and its diagnostics.
  virtual KernelKind kind() const = 0;
  /// Serve (after filling in the family's fields of plan.shape), Skip (the
  /// next family may serve it) or Fail (no family will).
  virtual Match match(const KernelOptions &options, KernelPlan &plan) const = 0;
  /// After a match: chooses the stages within the chip's shared memory and
  /// sets plan.dynamicSharedBytes; returns why the kernel does not fit, or
  /// an empty string.
  virtual std::string budget(const KernelOptions &options,
                             KernelPlan &plan) const = 0;
  /// The kernel, built at `moduleBuilder` by `generator` (made from
  /// plan.shape; the argument names of the kernel it built last are
  /// generator.argNames). By default the attention kernel the shape
  /// describes, with its hook math relaxed (relaxHookMath).
  virtual gpu::GPUFuncOp build(OpBuilder &moduleBuilder,
                               KernelBuilder &generator,
                               const KernelPlan &plan) const;
  /// The launch facts of the built kernel, whose arguments are `args`;
  /// `mergeKernel`: the merge kernel of a split one (else null).
  virtual LaunchAttr launch(const KernelPlan &plan, ArrayAttr args,
                            FlatSymbolRefAttr mergeKernel) const = 0;
};

/// The families that turn an attention into its kernel, in priority order.
ArrayRef<const KernelFamily *> attentionFamilies();
/// The merge kernel's family: serves the plans of split kernels, with the
/// split kernel's generator.
const KernelFamily &splitMergeFamily();

/// The families, one per file of Families/.
const KernelFamily &wgmmaPrefillFamily();
const KernelFamily &mmaSyncPrefillFamily();
const KernelFamily &mmaSyncDecodeFamily();
const KernelFamily &simtDecodeFamily();

/// The plan of `op` before any family: its view, symbol names and the
/// shape fields that follow from the op and the options (no design yet:
/// CUDA cores, no stages, no prefill tiles).
KernelPlan planAttention(const KernelOptions &options, AttentionOp op,
                         VariantOp variant, int64_t index);

/// The reason of a kernel over the CTA's shared-memory `limit`: "at most
/// <limit> bytes of shared memory per CTA on <chip>; <need>".
std::string sharedMemoryReason(const KernelOptions &options, int64_t limit,
                               const std::string &need);

/// With KernelShape::dependentLaunch (split kernels on sm_90) a split kernel
/// completes only after the grid launched before it (a decode kernel's last
/// CTA waits for it, every CTA of a prefill kernel does, first) and its merge
/// kernel waits for it (griddepcontrol.wait): the host may launch the merge
/// early, a split decode kernel early behind a kernel that writes nothing it
/// reads, and a split prefill kernel behind any kernel.
inline bool dependentSplit(const KernelShape &s) {
  return s.chunked && s.dependentLaunch;
}

} // namespace flashir::conversion::families

#endif // FLASHIR_LIB_CONVERSION_ATTNTOGPU_KERNELFAMILY_H
