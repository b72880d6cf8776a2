// Base64 (RFC 4648 section 4: the standard alphabet A-Z a-z 0-9 + /, '=' padding), for byte
// fields given or printed as text: idemctl's --payload-b64 and --fingerprint-b64, and the
// payload_b64 / fingerprint_b64 fields of its JSON output.
#pragma once

#include <string>
#include <string_view>

#include "idem/result.h"

namespace idem {

// Padded to a multiple of 4 characters; "" for no bytes.
std::string Base64Encode(std::string_view bytes);

// The bytes `text` encodes. Padding may be left out, but where given it is complete and only at
// the end. InvalidArgument, naming the position (counting from 1), for a character outside the
// alphabet (white space and line breaks included), a length no encoding has, or a last character
// whose unused low bits are not zero (so every byte string has exactly one accepted encoding).
Result<std::string> Base64Decode(std::string_view text);

}  // namespace idem
