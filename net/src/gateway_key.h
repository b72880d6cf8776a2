// The gateway's request identity (docs/gateway.md): which requests a route covers, the
// Idempotency-Key header's syntax, the store key a client's key becomes, and the fingerprint that
// tells a retry from a different request reusing the key. Pure functions: no I/O, no clock.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "idem/result.h"
#include "idem/server.h"

namespace idem {

// The longest key content accepted (the characters between the quotes, escapes counted once).
inline constexpr size_t kMaxIdempotencyKeyChars = 255;
// The scope prefix of a store key: 32 lowercase hex digits and ':'.
inline constexpr size_t kScopePrefixBytes = 33;

// Whether `route` covers a request: its method is one of route.methods (compared as sent: HTTP
// methods are case-sensitive) and its path starts with one of route.path_prefixes (any path when
// there are none).
bool RouteCovers(const GatewayRoute& route, std::string_view method, std::string_view path);

// An Idempotency-Key field value -> the key's content, unescaped. The IETF draft makes the field
// a Structured Fields sf-string: '"', then 1..kMaxIdempotencyKeyChars characters of printable
// ASCII (0x20..0x7E) where '"' and '\' are written \" and \\, then '"'. Surrounding spaces are
// ignored. InvalidArgument naming the rule broken otherwise (a bare token included).
Result<std::string> ParseIdempotencyKey(std::string_view field_value);

// The store key of `key` sent by the client whose identity header has the value `identity`
// ("" when absent, or when the route has no identity header): lowercase hex of the first 16 bytes
// of SHA-256(identity), ':', then the key. Two identities never share a record; the identity
// itself is not stored.
std::string ScopedStoreKey(std::string_view identity, std::string_view key);

// What a request's fingerprint is computed from. A header is (lowercased name, value), the value
// absent when the request does not have the header (which differs from an empty value).
struct FingerprintInput {
  std::string_view method;
  std::string_view target;  // path and query as sent ("/orders?b=2&a=1")
  std::vector<std::pair<std::string, std::optional<std::string>>> headers;
  std::string_view body;
};

// SHA-256 (32 raw bytes) over a length-prefixed encoding of the method, the path, the query's
// parameters sorted (so that "?a=1&b=2" and "?b=2&a=1" are one request; empty parameters are
// dropped, nothing is decoded), each header in the order given, and the body.
std::string RequestFingerprint(const FingerprintInput& input);

// Lowercase hex of `bytes`.
std::string Hex(std::string_view bytes);

}  // namespace idem
