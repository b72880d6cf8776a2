// StoredResponse: what the gateway keeps of an upstream response in its attempt's record
// (Complete's response), replayed to duplicates byte for byte.
//
// Encoding (all integers little-endian), bounds-checked on decode: a damaged record is
// Corruption, never a crash or an allocation sized from the damage.
//
//   magic     4 bytes  "IGR1"
//   kind      1 byte   0: the body is stored; 1: not stored (the response was larger than
//                      max_stored_response_bytes, or its encoding larger than the store's
//                      payload limit)
//   status    2 bytes  the HTTP status code, 100..999
//   headers   2 bytes  count, then per header: name (2-byte length, then bytes),
//                      value (4-byte length, then bytes)
//   body      8 bytes  length; kind 0: then the body's bytes (and nothing after them);
//                      kind 1: the size of the body the client was sent, no bytes follow
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "idem/result.h"

namespace idem {

struct StoredResponse {
  bool body_stored = true;  // false: a "not stored" marker (body empty, body_size its size)
  unsigned status = 200;
  std::vector<std::pair<std::string, std::string>> headers;  // in the upstream's order
  std::string body;
  uint64_t body_size = 0;  // the body's size (body.size() when stored)

  bool operator==(const StoredResponse&) const = default;
};

// The bytes of `response`'s encoding (body_size is written as body.size() when body_stored).
std::string EncodeStoredResponse(const StoredResponse& response);
// How many bytes EncodeStoredResponse would produce, without producing them.
size_t EncodedStoredResponseSize(const StoredResponse& response);
// Corruption, saying what is wrong at which offset, for anything that is not an encoding.
Result<StoredResponse> DecodeStoredResponse(std::string_view bytes);

}  // namespace idem
