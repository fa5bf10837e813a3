//===- Json.h - a small JSON reader and writer for manifests ----*- C++ -*-===//
//
// Bundle manifests are read and written without LLVM (the runtime builds on
// machines without it): a minimal, strict recursive-descent parser (objects,
// arrays, strings with the common escapes, numbers, booleans, null) that
// reports errors with a byte offset, and a writer with stable key order.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHIR_ABI_JSON_H
#define FLASHIR_ABI_JSON_H

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace flashir::abi {

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

  JsonValue() = default;
  JsonValue(double v) : kind_(Kind::Number), number_(v) {}
  JsonValue(int64_t v) : kind_(Kind::Number), number_(double(v)) {}
  JsonValue(bool v) : kind_(Kind::Bool), bool_(v) {}
  JsonValue(std::string v) : kind_(Kind::String), string_(std::move(v)) {}
  JsonValue(const char *v) : JsonValue(std::string(v)) {}
  static JsonValue makeArray() { return JsonValue(Kind::Array); }
  static JsonValue makeObject() { return JsonValue(Kind::Object); }

  /// Appends to an array.
  void push(JsonValue v) { array_.push_back(std::move(v)); }
  /// Sets member `key` of an object.
  void set(const std::string &key, JsonValue v) { object_[key] = std::move(v); }

  /// Parses `text`; on failure returns false and sets `error` (naming the
  /// byte offset).
  static bool parse(const std::string &text, JsonValue &out,
                    std::string &error);
  /// The value as JSON text, members in key order, nested values indented
  /// by `indent` spaces per level.
  std::string write(int indent = 2) const;

private:
  explicit JsonValue(Kind kind) : kind_(kind) {}
  void writeTo(std::string &out, int indent, int depth) const;
  friend class JsonParser;
  Kind kind_ = Kind::Null;
  bool bool_ = false;
  double number_ = 0;
  std::string string_;
  std::vector<JsonValue> array_;
  std::map<std::string, JsonValue> object_;
};

} // namespace flashir::abi

#endif // FLASHIR_ABI_JSON_H
