// Results and records as JSON, the one way every face of idemstore prints them: idemctl --json
// and the HTTP API (docs/http-api.md) share these names and shapes.
//
//   {"outcome":"EXISTS","fingerprint_matches":false,
//    "record":{"kind":"plain","status":"PENDING","version":1,"fence":7,"payload":"...",...}}
//
// Byte fields (payload, fingerprint) are never lossy: "NAME" holds the bytes as text when they
// are valid UTF-8, otherwise "NAME_b64" holds them in base64 (base64.h); exactly one of the two.
#pragma once

#include <string_view>

#include "idem/operation.h"
#include "idem/record.h"
#include "idem/status.h"
#include "json_writer.h"

namespace idem {

// Begin found the work already done: the record holds the stored result, not a new attempt.
bool IsReplay(const OpResult& result);

// "NAME": text, or "NAME_b64": base64 (see above).
void WriteBytesJson(std::string_view name, std::string_view bytes, JsonWriter& j);
// The size of what WriteBytesJson writes (key, ':' and value), without building it.
size_t BytesJsonSize(std::string_view name, std::string_view bytes);
void WriteRecordJson(const Record& record, JsonWriter& j);
// {"outcome":..., ["fingerprint_matches":..,] ["token":..,] ["replay":true,] ["record":{..}]}
void WriteOpResultJson(const OpResult& result, JsonWriter& j);
// {"code":"INVALID_ARGUMENT","message":"..."}: an error in place of a result.
void WriteStatusJson(const Status& status, JsonWriter& j);

}  // namespace idem
