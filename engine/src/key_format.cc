#include <charconv>
#include <string>

#include "idem/options.h"

namespace idem {
namespace {

constexpr size_t kUuidBytes = 36;
constexpr std::string_view kUuidRule =
    "a UUID: 36 bytes, 8-4-4-4-12 lowercase hex digits "
    "(e.g. 123e4567-e89b-12d3-a456-426614174000)";
constexpr std::string_view kSpecRule =
    "expected \"uuid\" or min=N,max=N,chars=[SET] (each part optional), e.g. "
    "min=16,max=64,chars=[A-Za-z0-9_-]";

Status Bad(std::string_view why) {
  return Status::InvalidArgument("key format: " + std::string(why) + "; " + std::string(kSpecRule));
}

bool IsUuidByte(size_t i, char c) {
  if (i == 8 || i == 13 || i == 18 || i == 23) return c == '-';
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

// A byte as a message shows it: 'x' for printable ASCII, else 0xNN.
std::string ShowByte(unsigned char c) {
  if (c >= 0x20 && c < 0x7f) return "'" + std::string(1, static_cast<char>(c)) + "'";
  constexpr char kHex[] = "0123456789abcdef";
  return std::string("byte 0x") + kHex[c >> 4] + kHex[c & 0xf];
}

// A key as a message shows it: printable ASCII as is, other bytes as \xNN, at most 64 bytes.
std::string ShowKey(std::string_view key) {
  constexpr size_t kShown = 64;
  constexpr char kHex[] = "0123456789abcdef";
  std::string out = "'";
  for (size_t i = 0; i < key.size() && i < kShown; ++i) {
    const auto c = static_cast<unsigned char>(key[i]);
    if (c >= 0x20 && c < 0x7f && c != '\'' && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += std::string("\\x") + kHex[c >> 4] + kHex[c & 0xf];
    }
  }
  out += key.size() > kShown ? "'..." : "'";
  return out;
}

Result<size_t> ParseBytes(std::string_view part, std::string_view text) {
  size_t n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    return Bad(std::string(part) + " takes a number of bytes, not '" + std::string(text) + "'");
  }
  return n;
}

// "[A-Za-z0-9_-]" into `allowed`.
Status ParseSet(std::string_view set, std::bitset<256>* allowed) {
  const std::string_view inner = set.substr(1, set.size() - 2);
  if (inner.empty()) return Bad("chars=[] allows nothing");
  for (size_t i = 0; i < inner.size(); ++i) {
    const char c = inner[i];
    if (c < 0x20 || c > 0x7e || c == ']' || c == '\\' || c == '^') {
      return Bad("chars=" + std::string(set) + ": " + ShowByte(static_cast<unsigned char>(c)) +
                 " is not accepted in a set (printable ASCII other than ] \\ ^)");
    }
    if (i + 2 < inner.size() && inner[i + 1] == '-') {  // a range; '-' last is itself
      const char last = inner[i + 2];
      if (last < c) {
        return Bad("chars=" + std::string(set) + ": range " + std::string(inner.substr(i, 3)) +
                   " runs backwards");
      }
      if (last > 0x7e || last == ']' || last == '\\' || last == '^') {
        return Bad("chars=" + std::string(set) + ": " + ShowByte(static_cast<unsigned char>(last)) +
                   " is not accepted in a set");
      }
      for (int b = c; b <= last; ++b) allowed->set(static_cast<size_t>(b));
      i += 2;
      continue;
    }
    allowed->set(static_cast<unsigned char>(c));
  }
  return Status::Ok();
}

}  // namespace

Result<KeyFormat> KeyFormat::Parse(std::string_view spec) {
  KeyFormat format;
  if (spec == "uuid") {
    format.uuid_ = true;
    format.min_bytes_ = kUuidBytes;
    format.max_bytes_ = kUuidBytes;
    return format;
  }
  if (spec.empty()) return Bad("empty");
  bool min_given = false;
  while (!spec.empty()) {
    std::string_view part;
    if (spec.starts_with("chars=[")) {  // a set may hold commas; it ends at the first ']'
      const size_t close = spec.find(']');
      if (close == std::string_view::npos) return Bad("chars=[ has no closing ]");
      part = spec.substr(0, close + 1);
      spec.remove_prefix(part.size());
      if (!spec.empty() && spec.front() != ',') {
        return Bad("'" + std::string(spec) + "' follows chars=[...]");
      }
    } else {
      part = spec.substr(0, spec.find(','));
      spec.remove_prefix(part.size());
    }
    if (!spec.empty()) {
      spec.remove_prefix(1);  // the comma
      if (spec.empty()) return Bad("a part is empty");
    }
    const size_t eq = part.find('=');
    const std::string_view name = part.substr(0, eq);
    const std::string_view value = eq == std::string_view::npos ? "" : part.substr(eq + 1);
    if (name == "min" || name == "max") {
      Result<size_t> n = ParseBytes(name, value);
      if (!n.ok()) return n.status();
      if (name == "min") {
        if (*n == 0) return Bad("min=0: keys are at least 1 byte (leave min out for 1)");
        format.min_bytes_ = *n;
        min_given = true;
      } else {
        format.max_bytes_ = *n;
      }
    } else if (name == "chars" && value.size() >= 2 && value.front() == '[' &&
               value.back() == ']') {
      if (!format.chars_.empty()) return Bad("chars given twice");
      if (Status st = ParseSet(value, &format.allowed_); !st.ok()) return st;
      format.chars_ = std::string(value);
    } else if (name == "chars") {
      return Bad("chars takes a set in brackets, like chars=[A-Za-z0-9_-]");
    } else if (name == "uuid") {
      return Bad("uuid is a format of its own: give it alone");
    } else {
      return Bad("unknown part '" + std::string(part) + "'");
    }
  }
  if (format.max_bytes_ && *format.max_bytes_ < format.min_bytes_) {
    return Bad("max=" + std::to_string(*format.max_bytes_) + " is below min" +
               (min_given ? "=" + std::to_string(format.min_bytes_) : " (1)"));
  }
  return format;
}

bool KeyFormat::Admits(std::string_view key) const {
  if (key.size() < min_bytes_ || (max_bytes_ && key.size() > *max_bytes_)) return false;
  for (size_t i = 0; i < key.size(); ++i) {
    if (uuid_ ? !IsUuidByte(i, key[i])
              : !chars_.empty() && !allowed_.test(static_cast<unsigned char>(key[i]))) {
      return false;
    }
  }
  return true;
}

std::string KeyFormat::Describe() const {
  if (uuid_) return std::string(kUuidRule);
  std::string out = max_bytes_ ? std::to_string(min_bytes_) + ".." + std::to_string(*max_bytes_)
                               : "at least " + std::to_string(min_bytes_);
  out += max_bytes_.value_or(min_bytes_) == 1 ? " byte" : " bytes";
  if (!chars_.empty()) out += " of " + chars_;
  return out;
}

Status KeyFormat::Check(std::string_view ns, std::string_view key) const {
  if (Admits(key)) return Status::Ok();
  std::string what;
  if (key.size() < min_bytes_ || (max_bytes_ && key.size() > *max_bytes_)) {
    what = "is " + std::to_string(key.size()) + (key.size() == 1 ? " byte" : " bytes");
  } else {
    for (size_t i = 0; i < key.size() && what.empty(); ++i) {
      if (uuid_ ? !IsUuidByte(i, key[i]) : !allowed_.test(static_cast<unsigned char>(key[i]))) {
        what =
            "has " + ShowByte(static_cast<unsigned char>(key[i])) + " at byte " + std::to_string(i);
      }
    }
  }
  return Status::InvalidArgument("key " + ShowKey(key) + " in namespace '" + std::string(ns) +
                                 "' " + what + "; the namespace requires " + Describe());
}

}  // namespace idem
