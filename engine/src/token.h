// One-shot tokens: 128 bits from the kernel's CSPRNG (getrandom), base64url without padding
// (22 characters), so a token cannot be guessed or enumerated.
#pragma once

#include <string>

#include "idem/result.h"

namespace idem {

Result<std::string> GenerateToken();

}  // namespace idem
