#include "invocation.h"

#include <charconv>
#include <set>

#include "idem/duration.h"

namespace idem::ctl {
namespace {

struct CommandSpec {
  size_t positional;                 // required positional arguments after the command
  std::set<std::string_view> flags;  // accepted flags
};

const std::map<std::string_view, CommandSpec>& Commands() {
  static const std::map<std::string_view, CommandSpec> commands = {
      {"insert", {2, {"status", "payload", "fingerprint", "ttl"}}},
      {"get", {2, {}}},
      {"cas", {2, {"expect-status", "expect-version", "expect-fence", "status", "payload", "ttl"}}},
      {"delete", {2, {"expect-status", "expect-version", "expect-fence"}}},
      {"stats", {0, {}}},
      {"begin", {2, {"fingerprint", "lease", "wait", "owner", "ttl"}}},
      {"complete", {2, {"fence", "payload", "ttl", "status"}}},
      {"abort", {2, {"fence", "payload"}}},
      {"heartbeat", {2, {"fence", "lease"}}},
      {"token-issue", {1, {"ttl", "payload"}}},
      {"token-consume", {2, {}}},
      {"lock", {2, {"owner", "lease"}}},
      {"renew", {2, {"fence", "lease"}}},
      {"unlock", {2, {"fence"}}},
      {"transition", {3, {"expect-version", "payload"}}},
      {"repair", {0, {"backup"}}},
  };
  return commands;
}

Result<uint64_t> ParseUnsigned(std::string_view flag, std::string_view text) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) {
    return Status::InvalidArgument("--" + std::string(flag) +
                                   " takes a non-negative integer, not '" + std::string(text) +
                                   "'");
  }
  return v;
}

Result<int64_t> DurationFlag(const Invocation& inv, std::string_view name, int64_t fallback) {
  auto it = inv.flags.find(std::string(name));
  if (it == inv.flags.end()) return fallback;
  if (name == "ttl" && it->second == "forever") return kForever;
  Result<int64_t> ms = ParseDurationMs(it->second);
  if (!ms.ok())
    return Status::InvalidArgument("--" + std::string(name) + ": " + ms.status().message());
  return ms;
}

std::optional<std::string_view> Flag(const Invocation& inv, std::string_view name) {
  auto it = inv.flags.find(std::string(name));
  if (it == inv.flags.end()) return std::nullopt;
  return std::string_view(it->second);
}

Result<std::optional<uint64_t>> NumberFlag(const Invocation& inv, std::string_view name) {
  auto v = Flag(inv, name);
  if (!v) return std::optional<uint64_t>();
  Result<uint64_t> n = ParseUnsigned(name, *v);
  if (!n.ok()) return n.status();
  return std::optional<uint64_t>(*n);
}

// --expect-status A,B  --expect-version N  --expect-fence N
Status ReadCondition(Invocation& inv, Condition* c) {
  if (auto s = Flag(inv, "expect-status")) {
    std::string_view rest = *s;
    while (true) {
      size_t comma = rest.find(',');
      inv.status_set.emplace_back(rest.substr(0, comma));
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
    for (const auto& st : inv.status_set) c->status_in.push_back(st);
  }
  Result<std::optional<uint64_t>> version = NumberFlag(inv, "expect-version");
  if (!version.ok()) return version.status();
  c->version = *version;
  Result<std::optional<uint64_t>> fence = NumberFlag(inv, "expect-fence");
  if (!fence.ok()) return fence.status();
  c->fence = *fence;
  return Status::Ok();
}

Status RequireFence(Invocation& inv, Op* op) {
  Result<std::optional<uint64_t>> fence = NumberFlag(inv, "fence");
  if (!fence.ok()) return fence.status();
  if (!*fence) return Status::InvalidArgument(inv.command + " needs --fence N (from begin/lock)");
  op->condition.fence = *fence;
  return Status::Ok();
}

}  // namespace

Result<Invocation> ParseInvocation(std::span<const std::string_view> args) {
  Invocation inv;
  size_t i = 0;
  auto value_of = [&](std::string_view flag) -> Result<std::string> {
    if (i + 1 >= args.size()) return Status::InvalidArgument(std::string(flag) + " needs a value");
    return std::string(args[++i]);
  };
  // Global flags come before the command.
  for (; i < args.size() && args[i].starts_with("--"); ++i) {
    std::string_view a = args[i];
    if (a == "--json") {
      inv.json = true;
    } else if (a == "--help") {
      inv.command = "help";
      return inv;
    } else if (a == "--server" || a == "--data" || a == "--timeout") {
      Result<std::string> v = value_of(a);
      if (!v.ok()) return v.status();
      if (a == "--server") inv.server = *v;
      if (a == "--data") inv.data_dir = *v;
      if (a == "--timeout") {
        Result<int64_t> ms = ParseDurationMs(*v);
        if (!ms.ok()) return Status::InvalidArgument("--timeout: " + ms.status().message());
        inv.timeout_ms = *ms;
      }
    } else {
      return Status::InvalidArgument("unknown option " + std::string(a) + " (see idemctl --help)");
    }
  }
  if (i >= args.size()) return Status::InvalidArgument("no command given (see idemctl --help)");
  inv.command = std::string(args[i++]);
  if (inv.command == "help") return inv;
  auto spec = Commands().find(inv.command);
  if (spec == Commands().end()) {
    return Status::InvalidArgument("unknown command '" + inv.command + "' (see idemctl --help)");
  }
  if (inv.server.empty() == inv.data_dir.empty()) {
    return Status::InvalidArgument("say where the store is: --server HOST:PORT or --data DIR");
  }
  if (inv.command == "repair" && inv.data_dir.empty()) {
    return Status::InvalidArgument("repair works on a database directory: --data DIR");
  }
  for (; i < args.size(); ++i) {
    std::string_view a = args[i];
    if (!a.starts_with("--")) {
      inv.positional.emplace_back(a);
      continue;
    }
    std::string name(a.substr(2));
    std::string value;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
    } else {
      Result<std::string> v = value_of(a);
      if (!v.ok()) return v.status();
      value = *v;
    }
    if (spec->second.flags.count(name) == 0) {
      return Status::InvalidArgument(inv.command + " does not take --" + name);
    }
    inv.flags[name] = value;
  }
  if (inv.positional.size() != spec->second.positional) {
    return Status::InvalidArgument(inv.command + " takes " +
                                   std::to_string(spec->second.positional) + " arguments, got " +
                                   std::to_string(inv.positional.size()) + " (see idemctl --help)");
  }
  return inv;
}

Result<Op> BuildOp(Invocation& inv) {
  const std::string& c = inv.command;
  const auto& p = inv.positional;
  Op op;
  op.ns = p.empty() ? std::string_view() : std::string_view(p[0]);
  if (p.size() > 1) op.key = p[1];
  auto str = [&](std::string_view name, std::string_view fallback = {}) {
    return Flag(inv, name).value_or(fallback);
  };
  Result<int64_t> ttl = DurationFlag(inv, "ttl", kDefaultTtl);
  if (!ttl.ok()) return ttl.status();
  Result<int64_t> lease = DurationFlag(inv, "lease", 0);
  if (!lease.ok()) return lease.status();
  Result<int64_t> wait = DurationFlag(inv, "wait", 0);
  if (!wait.ok()) return wait.status();
  op.ttl_ms = *ttl;
  op.lease_ms = *lease;
  op.wait_ms = *wait;

  if (c == "insert") {
    op.type = OpType::kInsert;
    op.status = str("status", "PENDING");
    op.payload = str("payload");
    op.fingerprint = str("fingerprint");
  } else if (c == "get") {
    op.type = OpType::kGet;
  } else if (c == "cas" || c == "delete") {
    op.type = c == "cas" ? OpType::kCompareAndSet : OpType::kDelete;
    if (Status s = ReadCondition(inv, &op.condition); !s.ok()) return s;
    if (c == "cas") {
      if (auto s = Flag(inv, "status")) op.update.status = *s;
      if (auto s = Flag(inv, "payload")) op.update.payload = *s;
      if (inv.flags.count("ttl")) op.update.ttl_ms = *ttl;
    }
  } else if (c == "begin") {
    op.type = OpType::kBegin;
    op.fingerprint = str("fingerprint");
    op.owner = str("owner");
  } else if (c == "complete" || c == "abort" || c == "heartbeat" || c == "renew" || c == "unlock") {
    op.type = c == "complete"    ? OpType::kComplete
              : c == "abort"     ? OpType::kAbort
              : c == "heartbeat" ? OpType::kHeartbeat
              : c == "renew"     ? OpType::kRenew
                                 : OpType::kUnlock;
    if (Status s = RequireFence(inv, &op); !s.ok()) return s;
    op.payload = str("payload");
    op.status = str("status");
  } else if (c == "token-issue") {
    op.type = OpType::kIssueToken;
    op.payload = str("payload");
  } else if (c == "token-consume") {
    op.type = OpType::kConsumeToken;
  } else if (c == "lock") {
    op.type = OpType::kLock;
    op.owner = str("owner");
    if (op.owner.empty()) return Status::InvalidArgument("lock needs --owner NAME");
  } else if (c == "transition") {
    op.type = OpType::kTransition;
    op.status = p[2];
    Result<std::optional<uint64_t>> version = NumberFlag(inv, "expect-version");
    if (!version.ok()) return version.status();
    op.condition.version = *version;
    if (auto s = Flag(inv, "payload")) op.update.payload = *s;
  } else {
    return Status::InvalidArgument("'" + c + "' is not a data command");
  }
  return op;
}

std::string Usage() {
  return R"(idemctl: inspect and change an idemstore, on a server or a local database directory.

usage: idemctl (--server HOST:PORT | --data DIR) [--json] [--timeout D] COMMAND ARGS...

records
  insert NS KEY [--status S] [--payload TEXT] [--fingerprint F] [--ttl D|forever]
  get NS KEY
  cas NS KEY [--expect-status S1,S2...] [--expect-version N] [--expect-fence N]
             [--status S] [--payload TEXT] [--ttl D]
  delete NS KEY [--expect-status S1,S2...] [--expect-version N] [--expect-fence N]
  stats
request lifecycle
  begin NS KEY [--fingerprint F] [--lease D] [--wait D] [--owner O]
  complete NS KEY --fence N [--payload TEXT] [--ttl D]
  abort NS KEY --fence N [--payload TEXT]
  heartbeat NS KEY --fence N [--lease D]
one-shot tokens
  token-issue NS [--ttl D] [--payload TEXT]
                                    prints the token; the payload (what it authorizes) is
                                    returned by token-consume
  token-consume NS TOKEN            CONSUMED once, then ALREADY_CONSUMED
locks
  lock NS KEY --owner O [--lease D]
  renew NS KEY --fence N [--lease D]
  unlock NS KEY --fence N
state machines
  transition NS KEY TO_STATUS [--expect-version N] [--payload TEXT]
maintenance (--data only, with no server running on the directory)
  repair [--backup DIR]             salvage a database that refuses to start (a damaged WAL, a
                                    missing CURRENT): copies the directory to DIR first (default
                                    DIR.before-repair-<UTC time>), then keeps what is readable
                                    and reports what was lost

Durations: 500ms, 30s, 15m, 24h, 7d. --json prints one JSON object per result:
{"outcome": "INSERTED", "record": {"status": ..., "version": ..., "fence": ..., ...}}.

Exit status: 0 the operation succeeded (INSERTED, EXISTS, FOUND, APPLIED, DELETED, STARTED,
COMPLETED, RELEASED, ISSUED, CONSUMED, ACQUIRED, ALREADY); 1 it ran but the answer is a refusal
(NOT_FOUND, CONDITION_FAILED, IN_PROGRESS, MISMATCH, FENCE_MISMATCH, ALREADY_CONSUMED, HELD,
ILLEGAL, WRONG_KIND: the record belongs to another scheme, see its kind); 2 usage error; 3 invalid argument; 4 store unreachable (server down, no database
at --data) or I/O error; 5 timed out;
6 corruption; 7 any other error (busy, not supported, shutting down).
)";
}

}  // namespace idem::ctl
