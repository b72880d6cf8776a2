// One-shot tokens: 128 bits from the kernel's CSPRNG (getrandom), base64url without padding
// (22 characters), so a token cannot be guessed or enumerated.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "idem/result.h"

namespace idem {

inline constexpr size_t kTokenBytes = 22;
inline constexpr std::string_view kTokenAlphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

Result<std::string> GenerateToken();

}  // namespace idem
