//===- Internal.h - helpers shared by the runtime's sources -----*- C++ -*-===//

#ifndef FLASHIR_LIB_RUNTIME_INTERNAL_H
#define FLASHIR_LIB_RUNTIME_INTERNAL_H

#include "flashir/Runtime/Status.h"

#include <cstdint>
#include <string>

namespace flashir::runtime::detail {

inline Status invalid(std::string message) {
  return Status::error(StatusCode::InvalidArgument, std::move(message));
}

inline int64_t alignUp(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

} // namespace flashir::runtime::detail

#endif // FLASHIR_LIB_RUNTIME_INTERNAL_H
