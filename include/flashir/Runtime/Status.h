//===- Status.h - runtime error reporting -----------------------*- C++ -*-===//
//
// Runtime entry points report errors as a Status (code + message), never by
// aborting: their inputs come from users.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHIR_RUNTIME_STATUS_H
#define FLASHIR_RUNTIME_STATUS_H

#include <string>
#include <utility>

namespace flashir::runtime {

enum class StatusCode { Ok = 0, InvalidArgument, OutOfRange, CapacityExceeded };

class Status {
public:
  Status() = default;
  static Status ok() { return Status(); }
  static Status error(StatusCode code, std::string message) {
    Status s;
    s.code_ = code;
    s.message_ = std::move(message);
    return s;
  }

  bool isOk() const { return code_ == StatusCode::Ok; }
  explicit operator bool() const { return isOk(); }
  StatusCode code() const { return code_; }
  const std::string &message() const { return message_; }

private:
  StatusCode code_ = StatusCode::Ok;
  std::string message_;
};

} // namespace flashir::runtime

#endif // FLASHIR_RUNTIME_STATUS_H
