#include "crc32c.h"

#include <array>
#include <cstring>

namespace idem {
namespace {

const std::array<uint32_t, 256>& Crc32cLookup() {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  return table;
}

uint32_t Crc32cTable(uint32_t crc, std::string_view bytes) {
  const auto& table = Crc32cLookup();
  for (char c : bytes) crc = table[(crc ^ static_cast<uint8_t>(c)) & 0xFF] ^ (crc >> 8);
  return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t Crc32cSse42(uint32_t crc, std::string_view bytes) {
  const char* p = bytes.data();
  size_t n = bytes.size();
  uint64_t c = crc;
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    c = __builtin_ia32_crc32di(c, word);
  }
  auto c32 = static_cast<uint32_t>(c);
  for (; n > 0; ++p, --n) c32 = __builtin_ia32_crc32qi(c32, static_cast<unsigned char>(*p));
  return c32;
}
#endif

}  // namespace

uint32_t Crc32c(std::string_view bytes, bool portable) {
#if defined(__x86_64__)
  static const bool sse42 = __builtin_cpu_supports("sse4.2");
  if (sse42 && !portable) return ~Crc32cSse42(0xFFFFFFFFu, bytes);
#endif
  return ~Crc32cTable(0xFFFFFFFFu, bytes);
}

}  // namespace idem
