//===- Internal.h - helpers shared by the runtime's sources -----*- C++ -*-===//

#ifndef FLASHIR_LIB_RUNTIME_INTERNAL_H
#define FLASHIR_LIB_RUNTIME_INTERNAL_H

#include "flashir/Runtime/Launcher.h"
#include "flashir/Runtime/Status.h"

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>

namespace flashir::runtime::detail {

inline Status invalid(std::string message) {
  return Status::error(StatusCode::InvalidArgument, std::move(message));
}

inline int64_t alignUp(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

/// A split-KV prefill kernel's grid: chunks x q tiles x query heads (or KV
/// heads with fused head groups).
inline bool isSplitPrefillGrid(const std::string &grid) {
  return grid == "chunks x q_tiles x num_qo_heads" ||
         grid == "chunks x q_tiles x num_kv_heads";
}

/// The heads a kernel's grid runs over (its last dimension): query heads
/// (q's dim 1) or KV heads (the pools' dim 2).
inline int64_t gridHeads(const KernelInfo &k) {
  return k.grid.substr(k.grid.rfind(' ') + 1) == "num_qo_heads"
             ? k.args[0].shape[1]
             : k.args[2].shape[2];
}

/// DecodeLauncher::refreshKvMaps's upload for a runner: the bytes go to the
/// pinned `staged` buffer and one async copy to `device` on `stream`. Before
/// overwriting an earlier upload it synchronizes `stream`: launches in flight
/// may still read the previous maps (or their copy the staging bytes).
inline std::function<Status(const std::vector<unsigned char> &, bool)>
kvMapsUpload(CudaDriver &driver, void *stream, char *staged, char *device) {
  return [&driver, stream, staged,
          device](const std::vector<unsigned char> &bytes, bool first) {
    if (!first)
      if (Status s = driver.synchronizeStream(stream); !s)
        return s;
    std::memcpy(staged, bytes.data(), bytes.size());
    return driver.copyToDeviceAsync(device, staged, bytes.size(), stream);
  };
}

} // namespace flashir::runtime::detail

#endif // FLASHIR_LIB_RUNTIME_INTERNAL_H
