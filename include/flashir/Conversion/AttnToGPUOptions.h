//===- AttnToGPUOptions.h - convert-attn-to-gpu option values ---*- C++ -*-===//
//
// The enum-valued options of convert-attn-to-gpu, shared by the pass, the
// attn-to-ptx pipeline and flashir-bundle: one table of spellings feeds every
// command-line parser and the pipeline text.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHIR_CONVERSION_ATTNTOGPUOPTIONS_H
#define FLASHIR_CONVERSION_ATTNTOGPUOPTIONS_H

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"

#include <iterator>
#include <utility>

namespace flashir {

/// How the kernels compute: `design=...`.
enum class KernelDesign {
  /// mma-sync where the chip has bf16 mma.sync and cp.async (sm_80+), else
  /// simt; shapes the mma-sync decode cannot serve fall back to simt. On
  /// sm_90a prefill as with wgmma where the tiles take 128 query rows.
  Auto,
  /// CUDA cores: the SIMT decode kernel, no prefill kernel.
  Simt,
  /// Tensor cores: mma.sync decode and prefill kernels.
  MmaSync,
  /// mma-sync, with prefill on sm_90a by warp-specialized wgmma.mma_async
  /// and tensor copies where the shape is one the family serves
  /// (docs/HopperPrefillPlan.md).
  Wgmma,
};

/// How the mma-sync decode stages K/V in shared memory: `copy=...`.
enum class KVCopy {
  /// tma where the chip has the copy engine (sm_90a), else cp-async.
  Auto,
  /// 16-byte cp.async pieces.
  CpAsync,
  /// Whole K/V rows by cp.async.bulk, never tensor maps.
  Bulk,
  /// TMA tensor copies of whole 16-key tiles where pages hold them, else
  /// cp.async.bulk rows.
  Tma,
};

/// Whether sm_90a's wgmma prefill kernel runs persistent CTAs (one per SM
/// walking the grid's q tiles): `persistent-prefill=...`.
enum class PersistentPrefill {
  /// Where measured faster: head dim 64 with tensor copies (not gathered
  /// pages; docs/NVIDIA.md).
  Auto,
  On,
  Off,
};

inline const llvm::cl::OptionEnumValue kKernelDesignNames[] = {
    clEnumValN(KernelDesign::Auto, "auto",
               "by chip: mma-sync on sm_80+ where the shape fits (sm_90a "
               "prefill: wgmma), else simt"),
    clEnumValN(KernelDesign::Simt, "simt", "CUDA cores"),
    clEnumValN(KernelDesign::MmaSync, "mma-sync", "tensor cores (mma.sync)"),
    clEnumValN(KernelDesign::Wgmma, "wgmma",
               "mma-sync, with sm_90a prefill by wgmma and tensor copies"),
};

inline const llvm::cl::OptionEnumValue kKVCopyNames[] = {
    clEnumValN(KVCopy::Auto, "auto", "by chip: tma on sm_90a, else cp-async"),
    clEnumValN(KVCopy::CpAsync, "cp-async", "16-byte cp.async"),
    clEnumValN(KVCopy::Bulk, "bulk", "cp.async.bulk rows, no tensor maps"),
    clEnumValN(KVCopy::Tma, "tma",
               "TMA tiles where pages hold whole tiles, else cp.async.bulk "
               "rows"),
};

inline const llvm::cl::OptionEnumValue kPersistentPrefillNames[] = {
    clEnumValN(PersistentPrefill::Auto, "auto",
               "where measured faster: head dim 64 with tensor copies"),
    clEnumValN(PersistentPrefill::On, "on", "every wgmma prefill kernel"),
    clEnumValN(PersistentPrefill::Off, "off", "one CTA per q tile"),
};

namespace detail {
template <size_t N, size_t... I>
llvm::cl::ValuesClass values(const llvm::cl::OptionEnumValue (&names)[N],
                             std::index_sequence<I...>) {
  return llvm::cl::ValuesClass({names[I]...});
}

template <size_t N>
llvm::cl::ValuesClass values(const llvm::cl::OptionEnumValue (&names)[N]) {
  return values(names, std::make_index_sequence<N>());
}

template <typename Enum, size_t N>
llvm::StringRef spelling(const llvm::cl::OptionEnumValue (&names)[N],
                         Enum value) {
  const auto *it = llvm::find_if(names, [&](const auto &name) {
    return name.Value == static_cast<int>(value);
  });
  return it == std::end(names) ? llvm::StringRef() : it->Name;
}
} // namespace detail

/// The values of a `design` command-line or pass option.
inline llvm::cl::ValuesClass kernelDesignValues() {
  return detail::values(kKernelDesignNames);
}

/// The values of a `copy` command-line or pass option.
inline llvm::cl::ValuesClass kvCopyValues() {
  return detail::values(kKVCopyNames);
}

/// The values of a `persistent-prefill` command-line or pass option.
inline llvm::cl::ValuesClass persistentPrefillValues() {
  return detail::values(kPersistentPrefillNames);
}

/// The option spelling of `design` ("auto", "simt", "mma-sync").
inline llvm::StringRef stringify(KernelDesign design) {
  return detail::spelling(kKernelDesignNames, design);
}

/// The option spelling of `copy` ("auto", "cp-async", "bulk", "tma").
inline llvm::StringRef stringify(KVCopy copy) {
  return detail::spelling(kKVCopyNames, copy);
}

/// The option spelling of `persistent-prefill` ("auto", "on", "off").
inline llvm::StringRef stringify(PersistentPrefill persistent) {
  return detail::spelling(kPersistentPrefillNames, persistent);
}

} // namespace flashir

#endif // FLASHIR_CONVERSION_ATTNTOGPUOPTIONS_H
