#include "token.h"

#include <sys/random.h>

#include <cerrno>
#include <cstring>

namespace idem {

std::string EncodeToken(std::span<const uint8_t, kTokenRandomBytes> random) {
  // 22 digits of 6 bits hold 132 bits: the 128 given, after 4 zero bits at the top.
  constexpr int kLeadingZeroBits = static_cast<int>(kTokenBytes * 6 - kTokenRandomBytes * 8);
  std::string token;
  token.reserve(kTokenBytes);
  uint32_t acc = 0;
  int bits = kLeadingZeroBits;
  for (uint8_t b : random) {
    acc = (acc << 8) | b;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      token.push_back(kTokenAlphabet[(acc >> bits) & 0x3f]);
    }
  }
  return token;
}

Result<std::string> GenerateToken() {
  uint8_t bytes[kTokenRandomBytes];
  size_t got = 0;
  while (got < sizeof bytes) {
    ssize_t n = getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::IOError(std::string("getrandom: ") + std::strerror(errno));
    }
    got += static_cast<size_t>(n);
  }
  return EncodeToken(bytes);
}

}  // namespace idem
