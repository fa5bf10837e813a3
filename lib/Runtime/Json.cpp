//===- Json.cpp - a small JSON reader for bundle manifests ----------------===//

#include "flashir/Runtime/Json.h"

#include <cstdlib>

namespace flashir::runtime {

const JsonValue *JsonValue::get(const std::string &key) const {
  if (kind_ != Kind::Object)
    return nullptr;
  auto it = object_.find(key);
  return it == object_.end() ? nullptr : &it->second;
}

class JsonParser {
public:
  explicit JsonParser(const std::string &text) : text(text) {}

  Status parseDocument(JsonValue &out) {
    if (Status s = parseValue(out, 0); !s)
      return s;
    skipSpace();
    if (pos != text.size())
      return error("trailing characters");
    return Status::ok();
  }

private:
  Status error(const std::string &what) {
    return Status::error(StatusCode::InvalidArgument,
                         "JSON: " + what + " at offset " + std::to_string(pos));
  }
  void skipSpace() {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\n' ||
                                 text[pos] == '\r' || text[pos] == '\t'))
      ++pos;
  }
  bool consume(char c) {
    skipSpace();
    if (pos < text.size() && text[pos] == c) {
      ++pos;
      return true;
    }
    return false;
  }
  bool literal(const char *word) {
    size_t n = std::char_traits<char>::length(word);
    if (text.compare(pos, n, word) != 0)
      return false;
    pos += n;
    return true;
  }

  Status parseString(std::string &out) {
    if (!consume('"'))
      return error("expected a string");
    while (pos < text.size() && text[pos] != '"') {
      char c = text[pos++];
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (pos >= text.size())
        break;
      char e = text[pos++];
      switch (e) {
      case '"':
      case '\\':
      case '/':
        out.push_back(e);
        break;
      case 'n':
        out.push_back('\n');
        break;
      case 't':
        out.push_back('\t');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 'b':
        out.push_back('\b');
        break;
      case 'f':
        out.push_back('\f');
        break;
      default:
        return error("unsupported escape");
      }
    }
    if (pos >= text.size())
      return error("unterminated string");
    ++pos;
    return Status::ok();
  }

  Status parseValue(JsonValue &out, int depth) {
    if (depth > 64)
      return error("nesting too deep");
    skipSpace();
    if (pos >= text.size())
      return error("unexpected end");
    char c = text[pos];
    if (c == '{') {
      ++pos;
      out.kind_ = JsonValue::Kind::Object;
      if (consume('}'))
        return Status::ok();
      do {
        std::string key;
        if (Status s = parseString(key); !s)
          return s;
        if (!consume(':'))
          return error("expected ':'");
        if (Status s = parseValue(out.object_[key], depth + 1); !s)
          return s;
      } while (consume(','));
      return consume('}') ? Status::ok() : error("expected '}'");
    }
    if (c == '[') {
      ++pos;
      out.kind_ = JsonValue::Kind::Array;
      if (consume(']'))
        return Status::ok();
      do {
        out.array_.emplace_back();
        if (Status s = parseValue(out.array_.back(), depth + 1); !s)
          return s;
      } while (consume(','));
      return consume(']') ? Status::ok() : error("expected ']'");
    }
    if (c == '"') {
      out.kind_ = JsonValue::Kind::String;
      return parseString(out.string_);
    }
    if (literal("true") || literal("false")) {
      out.kind_ = JsonValue::Kind::Bool;
      out.bool_ = text[pos - 1] == 'e' && text[pos - 2] == 'u';
      return Status::ok();
    }
    if (literal("null"))
      return Status::ok();
    const char *begin = text.c_str() + pos;
    char *end = nullptr;
    double v = std::strtod(begin, &end);
    if (end == begin)
      return error("unexpected character");
    pos += static_cast<size_t>(end - begin);
    out.kind_ = JsonValue::Kind::Number;
    out.number_ = v;
    return Status::ok();
  }

  const std::string &text;
  size_t pos = 0;
};

Status JsonValue::parse(const std::string &text, JsonValue &out) {
  JsonValue value;
  if (Status s = JsonParser(text).parseDocument(value); !s)
    return s;
  out = std::move(value);
  return Status::ok();
}

} // namespace flashir::runtime
