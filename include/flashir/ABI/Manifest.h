//===- Manifest.h - a kernel bundle's manifest.json -------------*- C++ -*-===//
//
// A bundle holds PTX files (and cubins) per chip and `manifest.json`: the
// kernels' ABI (KernelABI.h) and, per chip, the facts that differ between
// chips (shared memory, pipelining, programmatic launch, calibrated costs).
// flashir-bundle writes it with writeManifest; the runtime reads it with
// parseManifest. No LLVM or MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHIR_ABI_MANIFEST_H
#define FLASHIR_ABI_MANIFEST_H

#include "flashir/ABI/KernelABI.h"

#include <map>
#include <string>
#include <vector>

namespace flashir::abi {

/// What one kernel needs on one chip.
struct KernelFacts {
  /// Static shared memory (the kernel's workgroup attributions).
  int64_t sharedMemoryBytes = 0;
  /// Dynamic shared memory the launch must pass.
  int64_t dynamicSharedMemoryBytes = 0;
  /// cp.async ring stages (0: register double buffering).
  int64_t stages = 0;
  bool tensorCores = false;
  bool bulkCopy = false;
  /// The kernel waits for its stream predecessor itself
  /// (griddepcontrol.wait): it may be launched with programmatic stream
  /// serialization.
  bool programmaticWait = false;
  /// A split kernel whose last CTA waits for its stream predecessor before
  /// leaving: it completes after it even when launched programmatically.
  bool completesAfterPredecessor = false;
  /// A prefill kernel whose CTAs walk the whole grid (persistent CTAs): the
  /// grid's z extent may be launched smaller, down to one.
  bool persistent = false;
  /// Kernels that stage K/V tiles with tensor copies: the box of the tensor
  /// maps over the pools, in elements of (head dim, KV head, token row);
  /// empty: the kernel ignores kv_maps.
  std::vector<int64_t> tensorMapBox;
  /// Planner cost per CTA (alpha) and per key (beta), calibrated on a GPU of
  /// this chip (bench/gpu/calibrate.py); absent when hasCost is false.
  bool hasCost = false;
  double costAlpha = 0, costBeta = 0;
};

/// One loadable image of a chip: a PTX file (and a cubin where ptxas ran).
struct ModuleFiles {
  std::string ptx, cubin;
  /// The kernels it defines; empty: every kernel of the bundle.
  std::vector<std::string> kernels;
};

struct TargetInfo {
  std::string chip;
  /// One module holding every kernel, or one module per kernel
  /// (flashir-bundle --modules=per-kernel, which compiles them in parallel).
  std::vector<ModuleFiles> modules;
  /// attn -> PTX compile time of the whole bundle for this chip.
  double compileMs = 0;
  std::map<std::string, KernelFacts> kernels;

  /// The facts of `kernel` (defaults where the manifest has none).
  const KernelFacts &facts(const std::string &kernel) const;
  /// The module that defines `kernel`, or null.
  const ModuleFiles *moduleOf(const std::string &kernel) const;
};

struct Manifest {
  int64_t abiVersion = kAbiVersion;
  /// The attn program the bundle was compiled from (file name).
  std::string source;
  std::vector<KernelInfo> kernels;
  std::vector<TargetInfo> targets;

  const KernelInfo *find(const std::string &kernel) const;
  const TargetInfo *target(const std::string &chip) const;
};

/// manifest.json's text.
std::string writeManifest(const Manifest &manifest);

/// Reads manifest.json's text: returns false with `error` set when it is
/// not JSON, its abi_version is not kAbiVersion (older bundles are named as
/// such), or a kernel breaks the ABI (verifyKernel) or names an unknown
/// merge kernel.
bool parseManifest(const std::string &text, Manifest &out, std::string &error);

} // namespace flashir::abi

#endif // FLASHIR_ABI_MANIFEST_H
