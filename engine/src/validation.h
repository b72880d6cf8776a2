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
Status ValidateOp(const Op& op, const Limits& limits);

// The millisecond encodings the checks below take: "not given" is kDefaultTtl (a TTL) or 0 (a
// lease), as an explicit zero is.
int64_t TtlMillis(const std::optional<Ttl>& ttl);
int64_t LeaseMillis(const std::optional<std::chrono::milliseconds>& lease);

// The absolute expiry (kNeverExpires for "never") for a TTL argument under `policy`.
Result<int64_t> ResolveExpiry(int64_t ttl_ms, const RetentionPolicy& policy, int64_t now_ms);

// The lease length for a lease_ms argument (0 = the policy default).
Result<int64_t> ResolveLease(int64_t lease_ms, const LifecyclePolicy& policy);
Status ValidateLifecycle(std::string_view ns, const LifecyclePolicy& policy);

// Checks that a policy is self-consistent (default within max, ...).
Status ValidatePolicy(std::string_view ns, const RetentionPolicy& policy);

}  // namespace idem
