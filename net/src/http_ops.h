// The HTTP API's operations as JSON objects (docs/http-api.md), decoded into Ops. The only file
// that parses JSON (nlohmann/json, in http_ops.cc alone).
//
//   {"op":"insert","namespace":"payments","key":"order-42","status":"PENDING","ttl_ms":86400000}
//
// One table lists, per op name (OpTypeName: the names idemctl uses), the fields it reads; a
// field another op reads, or no op, is refused, as is a value of the wrong JSON type. So adding
// an operation is adding a row. Field names are idemctl's flags with '_' for '-' (expect_status,
// ttl_ms...). Byte fields (key, payload, fingerprint) take UTF-8 text as "NAME" or any bytes as
// "NAME_b64" (base64), not both. Durations are integer milliseconds: absent means the
// namespace's default, ttl_ms -1 means forever; range rules (0 is refused...) are the engine's,
// answered per op as over the binary protocol (docs/protocol.md).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "apply_path.h"
#include "idem/options.h"
#include "idem/status.h"

namespace idem {

// A /v1/apply body: {"ops":[op, ...]} and nothing else. InvalidArgument, naming the place
// ("ops[3].ttl_ms: expected an integer"), for a body that is not such JSON, an unknown op or
// field, a value of the wrong type, bad base64 or a field given both ways; also for more than
// limits.max_batch_ops ops (counted while the body is parsed: parsing stops there) and for
// nesting deeper than the schema goes. Nothing is applied then. On success
// `out` holds every op and owns their bytes.
Status DecodeApplyBody(std::string_view body, const Limits& limits, DecodedOps* out);

// A convenience route's single op: `op_name` with `ns` and, if given, `key` (the token of
// token-consume) from the path, and the op's other fields from `body`, a JSON object (empty
// body: no fields). Errors as DecodeApplyBody's; "op", "namespace" and "key" in the body are
// refused (the path says them).
Status DecodeRouteOp(std::string_view op_name, std::string ns, std::optional<std::string> key,
                     std::string_view body, DecodedOps* out);

}  // namespace idem
