#include "validation.h"

#include <algorithm>
#include <iterator>
#include <string>

#include "token.h"

namespace idem {
namespace {

std::string Bytes(size_t n) { return std::to_string(n) + (n == 1 ? " byte" : " bytes"); }

Status CheckLength(std::string_view what, std::string_view value, size_t min, size_t max) {
  if (value.size() < min || value.size() > max) {
    return Status::InvalidArgument(std::string(what) + " is " + Bytes(value.size()) +
                                   "; it must be " + std::to_string(min) + ".." +
                                   std::to_string(max) + " bytes");
  }
  return Status::Ok();
}

Status ValidateCondition(const Condition& c, const Limits& limits) {
  if (c.status_in.size() > limits.max_status_set) {
    return Status::InvalidArgument("condition lists " + std::to_string(c.status_in.size()) +
                                   " statuses; max_status_set is " +
                                   std::to_string(limits.max_status_set));
  }
  for (std::string_view s : c.status_in) {
    if (Status st = CheckLength("condition status", s, 1, limits.max_status_bytes); !st.ok()) {
      return st;
    }
  }
  return Status::Ok();
}

// Whether every token GenerateToken can make (kTokenBytes of kTokenAlphabet) meets `format`.
bool AdmitsEveryToken(const KeyFormat& format) {
  char sample[kTokenBytes];
  for (char c : kTokenAlphabet) {
    std::fill(std::begin(sample), std::end(sample), c);
    if (!format.Admits(std::string_view(sample, sizeof sample))) return false;
  }
  return true;
}

}  // namespace

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == ':' || c == '-';
}

Status ValidateNamespace(std::string_view ns, const Limits& limits) {
  // A namespace is at most 255 bytes whatever the limit says: the key layout stores its length
  // in one byte.
  size_t max = limits.max_namespace_bytes < 255 ? limits.max_namespace_bytes : 255;
  if (Status st = CheckLength("namespace", ns, 1, max); !st.ok()) return st;
  for (char c : ns) {
    if (!IsNameChar(c)) {
      return Status::InvalidArgument("namespace may only contain [A-Za-z0-9_.:-]");
    }
  }
  return Status::Ok();
}

Status ValidateOp(const Op& op, const Limits& limits, const KeyFormat* key_format) {
  if (Status st = ValidateNamespace(op.ns, limits); !st.ok()) return st;
  if (op.type == OpType::kIssueToken) {
    if (!op.key.empty()) return Status::InvalidArgument("IssueToken generates the key: pass none");
    if (key_format != nullptr && !AdmitsEveryToken(*key_format)) {
      return Status::InvalidArgument("namespace '" + std::string(op.ns) + "' requires keys of " +
                                     key_format->Describe() + "; its tokens would be " +
                                     std::to_string(kTokenBytes) +
                                     " bytes of [A-Za-z0-9_-], so IssueToken is refused there");
    }
  } else if (Status st = CheckLength("key", op.key, 1, limits.max_key_bytes); !st.ok()) {
    return st;
  }
  if (key_format != nullptr && op.type != OpType::kIssueToken) {
    if (Status st = key_format->Check(op.ns, op.key); !st.ok()) return st;
  }
  const auto status = [&](std::string_view what) {
    return CheckLength(what, op.status, 1, limits.max_status_bytes);
  };
  const auto payload = [&](std::string_view what) {
    return CheckLength(what, op.payload, 0, limits.max_payload_bytes);
  };
  const auto owner = [&](size_t min) {
    return CheckLength("owner", op.owner, min, limits.max_owner_bytes);
  };
  const auto fence = [&]() {
    return op.condition.fence ? Status::Ok()
                              : Status::InvalidArgument(std::string(OpTypeName(op.type)) +
                                                        " needs the holder's fence");
  };
  const auto wait = [&]() {
    const int64_t wait_ms = op.wait ? op.wait->count() : 0;
    if (wait_ms < 0 || wait_ms > limits.max_wait_ms) {
      return Status::InvalidArgument("wait_ms " + std::to_string(wait_ms) + " is outside 0.." +
                                     std::to_string(limits.max_wait_ms) + " (max_wait_ms)");
    }
    return Status::Ok();
  };
  switch (op.type) {
    case OpType::kInsert:
      if (Status st = status("status"); !st.ok()) return st;
      if (Status st = CheckLength("fingerprint", op.fingerprint, 0, limits.max_fingerprint_bytes);
          !st.ok()) {
        return st;
      }
      return payload("payload");
    case OpType::kCompareAndSet:
      if (op.update.status) {
        if (Status st = CheckLength("new status", *op.update.status, 1, limits.max_status_bytes);
            !st.ok()) {
          return st;
        }
      }
      if (op.update.payload) {
        if (Status st = CheckLength("new payload", *op.update.payload, 0, limits.max_payload_bytes);
            !st.ok()) {
          return st;
        }
      }
      return ValidateCondition(op.condition, limits);
    case OpType::kDelete:
      return ValidateCondition(op.condition, limits);
    case OpType::kIssueToken:
      return payload("payload");
    case OpType::kGet:
    case OpType::kConsumeToken:
      return Status::Ok();
    case OpType::kBegin:
      if (Status st = CheckLength("fingerprint", op.fingerprint, 0, limits.max_fingerprint_bytes);
          !st.ok()) {
        return st;
      }
      if (Status st = owner(0); !st.ok()) return st;
      return wait();
    case OpType::kComplete:
      if (!op.status.empty()) {
        if (Status st = status("completion status"); !st.ok()) return st;
      }
      if (Status st = payload("response"); !st.ok()) return st;
      return fence();
    case OpType::kAbort:
      if (Status st = payload("failure response"); !st.ok()) return st;
      return fence();
    case OpType::kCheckpoint:
      if (Status st = payload("checkpoint payload"); !st.ok()) return st;
      return fence();
    case OpType::kHeartbeat:
    case OpType::kRenew:
    case OpType::kUnlock:
      return fence();
    case OpType::kLock:
      if (Status st = owner(1); !st.ok()) return st;
      return wait();
    case OpType::kTransition:
      if (Status st = status("target status"); !st.ok()) return st;
      if (op.update.payload) {
        if (Status st = CheckLength("new payload", *op.update.payload, 0, limits.max_payload_bytes);
            !st.ok()) {
          return st;
        }
      }
      return Status::Ok();
  }
  return Status::NotSupported("unknown operation type " +
                              std::to_string(static_cast<int>(op.type)));
}

Status ValidateKeyFormat(std::string_view ns, const KeyFormat& format, const Limits& limits) {
  if (Status st = ValidateNamespace(ns, limits); !st.ok()) return st;
  if (format.min_bytes() > limits.max_key_bytes ||
      (format.max_bytes() && *format.max_bytes() > limits.max_key_bytes)) {
    return Status::InvalidArgument("key format of '" + std::string(ns) + "' (" + format.Describe() +
                                   ") exceeds max_key_bytes " +
                                   std::to_string(limits.max_key_bytes));
  }
  return Status::Ok();
}

Result<int64_t> ResolveLease(std::optional<std::chrono::milliseconds> lease,
                             const LifecyclePolicy& policy) {
  if (!lease) return policy.default_lease_ms;
  const int64_t lease_ms = lease->count();
  if (lease_ms <= 0 || lease_ms > policy.max_lease_ms) {
    return Status::InvalidArgument(
        "lease " + std::to_string(lease_ms) + " ms is out of range: 1 ms .. " +
        std::to_string(policy.max_lease_ms) + " ms (this namespace's max_lease_ms); leave it out " +
        "for the namespace's default (" + std::to_string(policy.default_lease_ms) + " ms)");
  }
  return lease_ms;
}

Status ValidateLifecycle(std::string_view ns, const LifecyclePolicy& p) {
  std::string where = ns.empty() ? "default lifecycle" : "lifecycle of '" + std::string(ns) + "'";
  if (p.max_lease_ms <= 0 || p.default_lease_ms <= 0 || p.default_lease_ms > p.max_lease_ms) {
    return Status::InvalidArgument(where +
                                   ": leases must satisfy 0 < default_lease_ms <= max_lease_ms");
  }
  if (p.completed_ttl_ms < 0) return Status::InvalidArgument(where + ": completed_ttl_ms < 0");
  return Status::Ok();
}

Result<int64_t> ResolveExpiry(std::optional<Ttl> ttl, const RetentionPolicy& policy,
                              int64_t now_ms) {
  const int64_t ttl_ms = ttl ? ttl->duration().count() : policy.default_ttl_ms;
  if (ttl_ms == kForever) {
    if (!policy.allow_forever) {
      return Status::InvalidArgument(
          "this namespace's retention policy does not allow records without expiry "
          "(allow_forever is off)");
    }
    return kNeverExpires;
  }
  if (ttl_ms <= 0 || ttl_ms > policy.max_ttl_ms) {
    return Status::InvalidArgument(
        "ttl " + std::to_string(ttl_ms) + " ms is out of range: 1 ms .. " +
        std::to_string(policy.max_ttl_ms) + " ms (this namespace's max_ttl_ms)" +
        (policy.allow_forever ? ", or forever" : "") + "; leave it out for the namespace's " +
        "default (" +
        (policy.default_ttl_ms == kForever ? std::string("forever")
                                           : std::to_string(policy.default_ttl_ms) + " ms") +
        ")");
  }
  return now_ms + ttl_ms;
}

Status ValidatePolicy(std::string_view ns, const RetentionPolicy& p) {
  std::string where = ns.empty() ? "default retention" : "retention of '" + std::string(ns) + "'";
  if (p.max_ttl_ms <= 0) return Status::InvalidArgument(where + ": max_ttl_ms must be > 0");
  if (p.default_ttl_ms == kForever && !p.allow_forever) {
    return Status::InvalidArgument(where + ": default is forever but allow_forever is off");
  }
  if (p.default_ttl_ms != kForever && (p.default_ttl_ms <= 0 || p.default_ttl_ms > p.max_ttl_ms)) {
    return Status::InvalidArgument(where + ": default_ttl_ms must be in 1..max_ttl_ms");
  }
  if (p.remember_ms < 0 || p.remember_ms > RetentionPolicy::kMaxRememberMs) {
    return Status::InvalidArgument(where + ": remember_ms is " + std::to_string(p.remember_ms) +
                                   "; it must be in [0, " +
                                   std::to_string(RetentionPolicy::kMaxRememberMs) + "] (0: off)");
  }
  return Status::Ok();
}

}  // namespace idem
