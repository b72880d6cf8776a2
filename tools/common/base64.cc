#include "base64.h"

#include <array>

namespace idem {
namespace {

constexpr std::string_view kAlphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// Each character's 6-bit value, or -1 for a character outside the alphabet.
constexpr std::array<int8_t, 256> DecodeTable() {
  std::array<int8_t, 256> table{};
  table.fill(-1);
  for (size_t i = 0; i < kAlphabet.size(); ++i) {
    table[static_cast<unsigned char>(kAlphabet[i])] = static_cast<int8_t>(i);
  }
  return table;
}
constexpr std::array<int8_t, 256> kDecode = DecodeTable();

std::string Printable(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u > 0x20 && u < 0x7f) return std::string("'") + c + "'";
  static constexpr char kHex[] = "0123456789abcdef";
  return std::string("byte 0x") + kHex[u >> 4] + kHex[u & 0xf];
}

Status Invalid(size_t position, std::string_view why) {
  return Status::InvalidArgument("not base64: " + std::string(why) + " at character " +
                                 std::to_string(position + 1));
}

}  // namespace

std::string Base64Encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t n = static_cast<uint32_t>(static_cast<unsigned char>(bytes[i])) << 16 |
                       static_cast<uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8 |
                       static_cast<unsigned char>(bytes[i + 2]);
    for (int shift = 18; shift >= 0; shift -= 6) out += kAlphabet[(n >> shift) & 0x3f];
  }
  const size_t left = bytes.size() - i;  // 0, 1 or 2
  if (left > 0) {
    uint32_t n = static_cast<uint32_t>(static_cast<unsigned char>(bytes[i])) << 16;
    if (left == 2) n |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8;
    out += kAlphabet[(n >> 18) & 0x3f];
    out += kAlphabet[(n >> 12) & 0x3f];
    out += left == 2 ? kAlphabet[(n >> 6) & 0x3f] : '=';
    out += '=';
  }
  return out;
}

Result<std::string> Base64Decode(std::string_view text) {
  // Padding: one or two '=' at the end of a text whose length is a multiple of 4 (which makes
  // their number the right one for the characters before them).
  size_t data = text.size();
  while (data > 0 && text[data - 1] == '=' && text.size() - data < 2) --data;
  for (size_t i = 0; i < data; ++i) {
    if (kDecode[static_cast<unsigned char>(text[i])] < 0) {
      return Invalid(i, Printable(text[i]) + (text[i] == '=' ? " before the end" : ""));
    }
  }
  if (data < text.size() && text.size() % 4 != 0) {
    return Invalid(data, "padding on a text whose length is not a multiple of 4");
  }
  if (data % 4 == 1) return Invalid(data - 1, "a lone last character (no length ends so)");
  std::string out;
  out.reserve(data / 4 * 3 + 2);
  uint32_t bits = 0;
  int count = 0;
  for (size_t i = 0; i < data; ++i) {
    bits = bits << 6 | static_cast<uint32_t>(kDecode[static_cast<unsigned char>(text[i])]);
    count += 6;
    if (count >= 8) {
      count -= 8;
      out += static_cast<char>((bits >> count) & 0xff);
    }
  }
  if ((bits & ((1u << count) - 1)) != 0) {
    return Invalid(data - 1, Printable(text[data - 1]) + " with unused bits set (not canonical)");
  }
  return out;
}

}  // namespace idem
