//===- Json.cpp - a small JSON reader and writer for manifests ------------===//

#include "flashir/ABI/Json.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace flashir::abi {

const JsonValue *JsonValue::get(const std::string &key) const {
  if (kind_ != Kind::Object)
    return nullptr;
  auto it = object_.find(key);
  return it == object_.end() ? nullptr : &it->second;
}

class JsonParser {
public:
  explicit JsonParser(const std::string &text) : text(text) {}

  bool parseDocument(JsonValue &out) {
    if (!parseValue(out, 0))
      return false;
    skipSpace();
    if (pos != text.size())
      return error("trailing characters");
    return true;
  }

private:
  bool error(const std::string &what) {
    message = "JSON: " + what + " at offset " + std::to_string(pos);
    return false;
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

  bool parseString(std::string &out) {
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
    return true;
  }

  bool parseValue(JsonValue &out, int depth) {
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
        return true;
      do {
        std::string key;
        if (!parseString(key))
          return false;
        if (!consume(':'))
          return error("expected ':'");
        if (!parseValue(out.object_[key], depth + 1))
          return false;
      } while (consume(','));
      return consume('}') ? true : error("expected '}'");
    }
    if (c == '[') {
      ++pos;
      out.kind_ = JsonValue::Kind::Array;
      if (consume(']'))
        return true;
      do {
        out.array_.emplace_back();
        if (!parseValue(out.array_.back(), depth + 1))
          return false;
      } while (consume(','));
      return consume(']') ? true : error("expected ']'");
    }
    if (c == '"') {
      out.kind_ = JsonValue::Kind::String;
      return parseString(out.string_);
    }
    if (literal("true") || literal("false")) {
      out.kind_ = JsonValue::Kind::Bool;
      out.bool_ = text[pos - 1] == 'e' && text[pos - 2] == 'u';
      return true;
    }
    if (literal("null"))
      return true;
    const char *begin = text.c_str() + pos;
    char *end = nullptr;
    double v = std::strtod(begin, &end);
    if (end == begin)
      return error("unexpected character");
    pos += static_cast<size_t>(end - begin);
    out.kind_ = JsonValue::Kind::Number;
    out.number_ = v;
    return true;
  }

  const std::string &text;
  size_t pos = 0;

public:
  std::string message;
};

bool JsonValue::parse(const std::string &text, JsonValue &out,
                      std::string &error) {
  JsonValue value;
  JsonParser parser(text);
  if (!parser.parseDocument(value)) {
    error = parser.message;
    return false;
  }
  out = std::move(value);
  return true;
}

static void writeString(std::string &out, const std::string &s) {
  out.push_back('"');
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      // The reader takes no \u escapes: control characters other than
      // newline become \t, \r, \b, \f or are dropped with a '?' mark.
      switch (c) {
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        out.push_back('?');
      }
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
}

void JsonValue::writeTo(std::string &out, int indent, int depth) const {
  auto newline = [&](int level) {
    out.push_back('\n');
    out.append(size_t(indent) * size_t(level), ' ');
  };
  switch (kind_) {
  case Kind::Null:
    out += "null";
    return;
  case Kind::Bool:
    out += bool_ ? "true" : "false";
    return;
  case Kind::Number: {
    char buf[32];
    // Integers print exactly; other numbers so that they read back equal.
    if (std::nearbyint(number_) == number_ && std::fabs(number_) < 9.0e15)
      std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(number_));
    else if (std::isfinite(number_))
      std::snprintf(buf, sizeof buf, "%.17g", number_);
    else
      std::snprintf(buf, sizeof buf, "null"); // JSON has no inf / NaN
    out += buf;
    return;
  }
  case Kind::String:
    writeString(out, string_);
    return;
  case Kind::Array:
    out.push_back('[');
    for (size_t i = 0; i < array_.size(); ++i) {
      if (i)
        out.push_back(',');
      newline(depth + 1);
      array_[i].writeTo(out, indent, depth + 1);
    }
    if (!array_.empty())
      newline(depth);
    out.push_back(']');
    return;
  case Kind::Object: {
    out.push_back('{');
    bool first = true;
    for (const auto &[key, value] : object_) {
      if (!first)
        out.push_back(',');
      first = false;
      newline(depth + 1);
      writeString(out, key);
      out += ": ";
      value.writeTo(out, indent, depth + 1);
    }
    if (!object_.empty())
      newline(depth);
    out.push_back('}');
    return;
  }
  }
}

std::string JsonValue::write(int indent) const {
  std::string out;
  writeTo(out, indent, 0);
  out.push_back('\n');
  return out;
}

} // namespace flashir::abi
