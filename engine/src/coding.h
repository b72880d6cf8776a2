// Little-endian fixed-width and varint encodings used by the record and key codecs.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace idem::coding {

inline void PutFixed64(std::string* dst, uint64_t v) {
  char buf[8];
  for (int i = 0; i < 8; ++i) buf[i] = static_cast<char>(v >> (8 * i));
  dst->append(buf, 8);
}

inline uint64_t DecodeFixed64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

inline void PutVarint64(std::string* dst, uint64_t v) {
  char buf[10];
  int n = 0;
  while (v >= 0x80) {
    buf[n++] = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  buf[n++] = static_cast<char>(v);
  dst->append(buf, n);
}

inline void PutLengthPrefixed(std::string* dst, std::string_view s) {
  PutVarint64(dst, s.size());
  dst->append(s);
}

// Reads from a cursor; every getter returns false (and leaves the cursor unusable) when the
// input is too short or malformed, so decoders never read past the end.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  bool GetFixed64(uint64_t* v) {
    if (in_.size() < 8) return false;
    *v = DecodeFixed64(in_.data());
    in_.remove_prefix(8);
    return true;
  }
  bool GetByte(uint8_t* v) {
    if (in_.empty()) return false;
    *v = static_cast<uint8_t>(in_[0]);
    in_.remove_prefix(1);
    return true;
  }
  bool GetVarint64(uint64_t* v) {
    uint64_t result = 0;
    for (int shift = 0; shift <= 63 && !in_.empty(); shift += 7) {
      uint64_t byte = static_cast<uint8_t>(in_[0]);
      in_.remove_prefix(1);
      result |= (byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) {
        *v = result;
        return true;
      }
    }
    return false;
  }
  bool GetLengthPrefixed(std::string_view* s) {
    uint64_t len = 0;
    if (!GetVarint64(&len) || len > in_.size()) return false;
    *s = in_.substr(0, len);
    in_.remove_prefix(len);
    return true;
  }
  bool empty() const { return in_.empty(); }

 private:
  std::string_view in_;
};

}  // namespace idem::coding
