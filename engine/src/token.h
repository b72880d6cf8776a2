// One-shot tokens: 128 bits from the kernel's CSPRNG (getrandom), so a token cannot be guessed or
// enumerated, written as 22 characters of the base64url alphabet [A-Za-z0-9_-].
//
// The 128 bits are one number in base 64, most significant digit first, in 22 digits: the first
// digit holds the top 2 bits only, so it is A, B, C or D. A token therefore never starts with '-'
// (a command line would read "idemctl token-consume NS -abc" as a flag), and no bit is lost.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "idem/result.h"

namespace idem {

inline constexpr size_t kTokenRandomBytes = 16;
inline constexpr size_t kTokenBytes = 22;  // the token's length: ceil(128 / 6) digits
inline constexpr std::string_view kTokenAlphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

// The token that writes `random` (big-endian) as above: distinct bytes give distinct tokens.
std::string EncodeToken(std::span<const uint8_t, kTokenRandomBytes> random);

// EncodeToken of kTokenRandomBytes from getrandom; IOError if the kernel gives none.
Result<std::string> GenerateToken();

}  // namespace idem
