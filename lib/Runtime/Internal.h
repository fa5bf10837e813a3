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

/// A runner's run() reads pages of a pool as large as the one plan()
/// checked the page ids against (`planned` pages).
inline Status checkPlannedPool(int64_t numPages, int64_t planned) {
  if (numPages < planned)
    return invalid("the page pool holds " + std::to_string(numPages) +
                   " pages; plan() checked page ids against " +
                   std::to_string(planned));
  return Status::ok();
}

/// The heads a kernel's grid runs over (its last dimension).
inline int64_t gridHeads(const KernelInfo &k) {
  return k.grid.heads == abi::GridHeads::QoHeads ? k.numQoHeads()
                                                 : k.numKvHeads();
}

/// KernelBundle::refreshKvMaps's upload for a runner: the bytes go to the
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
