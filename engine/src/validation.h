// Input checks against Limits and retention policies. Every failure is InvalidArgument with a
// message that names the limit, so a caller can fix its request without reading the source.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

#include "idem/operation.h"
#include "idem/options.h"
#include "idem/result.h"

namespace idem {

// The characters of namespaces and state-graph state names: [A-Za-z0-9_.:-].
bool IsNameChar(char c);

Status ValidateNamespace(std::string_view ns, const Limits& limits);
// `key_format`: the namespace's KeyFormat (null: none), checked after the key's length limit. An
// IssueToken is refused where the namespace's rule would not admit every token the store makes.
Status ValidateOp(const Op& op, const Limits& limits, const KeyFormat* key_format = nullptr);

// A namespace's KeyFormat against Limits: a maximum above max_key_bytes could never be reached.
Status ValidateKeyFormat(std::string_view ns, const KeyFormat& format, const Limits& limits);

// The absolute expiry (kNeverExpires for "never") for a TTL argument under `policy`. Not given
// (nullopt) is the policy's default; a given TTL must be 1 ms .. max_ttl_ms, or Forever() where
// the policy allows it: zero and negative durations are InvalidArgument, never "the default".
Result<int64_t> ResolveExpiry(std::optional<Ttl> ttl, const RetentionPolicy& policy,
                              int64_t now_ms);

// The lease length for a lease argument. Not given (nullopt) is the policy's default; a given
// lease must be 1 ms .. max_lease_ms (zero is InvalidArgument, never "the default").
Result<int64_t> ResolveLease(std::optional<std::chrono::milliseconds> lease,
                             const LifecyclePolicy& policy);
Status ValidateLifecycle(std::string_view ns, const LifecyclePolicy& policy);

// Checks that a policy is self-consistent (default within max, ...).
Status ValidatePolicy(std::string_view ns, const RetentionPolicy& policy);

}  // namespace idem
