//===- Json.h - a small JSON reader for bundle manifests --------*- C++ -*-===//
//
// The runtime reads `manifest.json` without LLVM: a minimal, strict
// recursive-descent parser (objects, arrays, strings with the common escapes,
// numbers, booleans, null) that reports errors with a byte offset.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHIR_RUNTIME_JSON_H
#define FLASHIR_RUNTIME_JSON_H

#include "flashir/Runtime/Status.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace flashir::runtime {

class JsonValue {
public:
  enum class Kind { Null, Bool, Number, String, Array, Object };

  Kind kind() const { return kind_; }
  bool isObject() const { return kind_ == Kind::Object; }
  bool isArray() const { return kind_ == Kind::Array; }
  bool isString() const { return kind_ == Kind::String; }
  bool isNumber() const { return kind_ == Kind::Number; }
  bool isBool() const { return kind_ == Kind::Bool; }

  double number() const { return number_; }
  bool boolean() const { return bool_; }
  const std::string &string() const { return string_; }
  const std::vector<JsonValue> &array() const { return array_; }
  /// The member `key` of an object, or null.
  const JsonValue *get(const std::string &key) const;

  /// Parses `text`; on failure the message names the offset.
  static Status parse(const std::string &text, JsonValue &out);

private:
  friend class JsonParser;
  Kind kind_ = Kind::Null;
  bool bool_ = false;
  double number_ = 0;
  std::string string_;
  std::vector<JsonValue> array_;
  std::map<std::string, JsonValue> object_;
};

} // namespace flashir::runtime

#endif // FLASHIR_RUNTIME_JSON_H
