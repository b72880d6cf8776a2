#include "token.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace idem {

Result<std::string> GenerateToken() {
  uint8_t bytes[16];
  size_t got = 0;
  while (got < sizeof bytes) {
    ssize_t n = getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::IOError(std::string("getrandom: ") + std::strerror(errno));
    }
    got += static_cast<size_t>(n);
  }
  std::string token;
  token.reserve(kTokenBytes);
  uint32_t acc = 0;
  int bits = 0;
  for (uint8_t b : bytes) {
    acc = (acc << 8) | b;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      token.push_back(kTokenAlphabet[(acc >> bits) & 0x3f]);
    }
  }
  if (bits > 0) token.push_back(kTokenAlphabet[(acc << (6 - bits)) & 0x3f]);
  return token;
}

}  // namespace idem
