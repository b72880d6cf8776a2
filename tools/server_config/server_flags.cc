#include "server_flags.h"

#include <algorithm>
#include <charconv>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "duration.h"

namespace idem {
namespace {

Status Bad(std::string_view flag, std::string_view why) {
  return Status::InvalidArgument(std::string(flag) + ": " + std::string(why));
}

template <typename Int>
Result<Int> ParseInt(std::string_view flag, std::string_view text, Int min, Int max) {
  Int value{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < min || value > max) {
    return Bad(flag, "expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) +
                         "], got \"" + std::string(text) + "\"");
  }
  return value;
}

// One of two named values: `text` must be `first.name` or `second.name`.
template <typename T>
Status ParseChoice(std::string_view flag, std::string_view text,
                   std::pair<std::string_view, T> first, std::pair<std::string_view, T> second,
                   T* out) {
  if (text == first.first)
    *out = first.second;
  else if (text == second.first)
    *out = second.second;
  else
    return Bad(flag, "expected " + std::string(first.first) + " or " + std::string(second.first));
  return Status::Ok();
}

// A size given in MiB, in [1, max_mib], stored in bytes.
Status ParseMiB(std::string_view flag, std::string_view text, size_t max_mib, size_t* bytes) {
  Result<size_t> mib = ParseInt<size_t>(flag, text, 1, max_mib);
  if (mib.ok()) *bytes = *mib << 20;
  return mib.status();
}

Result<int64_t> ParseDuration(std::string_view flag, std::string_view text) {
  Result<int64_t> ms = ParseDurationMs(text);
  if (!ms.ok()) return Bad(flag, ms.status().message());
  return ms;
}

// "HOST:PORT" or "[V6]:PORT".
Status ParseListen(std::string_view flag, std::string_view text, std::string* host_out,
                   uint16_t* port_out) {
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return Bad(flag, "expected HOST:PORT");
  std::string_view host = text.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  Result<uint16_t> port = ParseInt<uint16_t>(flag, text.substr(colon + 1), 0, 65535);
  if (!port.ok()) return port.status();
  *host_out = std::string(host);
  *port_out = *port;
  return Status::Ok();
}

struct RetentionSpec {
  int64_t default_ttl_ms = 0;
  std::optional<int64_t> max_ttl_ms;
  bool forever = false;
  int64_t remember_ms = 0;
};

// "NS=DEFAULT_TTL[,max=DUR][,forever][,remember=DUR]".
Status ParseRetention(std::string_view text, std::map<std::string, RetentionSpec>* out) {
  size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    return Bad("--retention", "expected NS=DEFAULT_TTL[,max=DUR][,forever][,remember=DUR]");
  }
  std::string ns(text.substr(0, eq));
  std::vector<std::string_view> parts;
  std::string_view rest = text.substr(eq + 1);
  while (true) {
    size_t comma = rest.find(',');
    parts.push_back(rest.substr(0, comma));
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  RetentionSpec spec;
  Result<int64_t> ttl = ParseDuration("--retention " + ns, parts[0]);
  if (!ttl.ok()) return ttl.status();
  spec.default_ttl_ms = *ttl;
  for (size_t i = 1; i < parts.size(); ++i) {
    if (parts[i] == "forever") {
      spec.forever = true;
    } else if (parts[i].starts_with("max=")) {
      Result<int64_t> max = ParseDuration("--retention " + ns, parts[i].substr(4));
      if (!max.ok()) return max.status();
      spec.max_ttl_ms = *max;
    } else if (parts[i].starts_with("remember=")) {
      Result<int64_t> remember = ParseDuration("--retention " + ns, parts[i].substr(9));
      if (!remember.ok()) return remember.status();
      if (*remember > RetentionPolicy::kMaxRememberMs) {
        return Bad("--retention " + ns, "remember=" + std::string(parts[i].substr(9)) +
                                            " is longer than the limit of 3650d");
      }
      spec.remember_ms = *remember;
    } else {
      return Bad("--retention " + ns, "unknown part \"" + std::string(parts[i]) + "\"");
    }
  }
  (*out)[ns] = spec;
  return Status::Ok();
}

// Splits "a,b,c" (at least one part).
std::vector<std::string_view> SplitCommas(std::string_view text) {
  std::vector<std::string_view> parts;
  while (true) {
    size_t comma = text.find(',');
    parts.push_back(text.substr(0, comma));
    if (comma == std::string_view::npos) return parts;
    text = text.substr(comma + 1);
  }
}

struct LifecycleSpec {
  std::optional<int64_t> lease_ms, max_lease_ms, completed_ttl_ms;
  std::optional<size_t> max_response_bytes;
  bool remember_failures = false;
};

// "NS=lease=DUR[,max-lease=DUR][,completed-ttl=DUR][,remember-failures][,max-response=BYTES]".
Status ParseLifecycle(std::string_view text, std::map<std::string, LifecycleSpec>* out) {
  constexpr std::string_view kFlag = "--lifecycle";
  size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    return Bad(kFlag,
               "expected NS=PART[,PART...] with parts lease=DUR, max-lease=DUR, "
               "completed-ttl=DUR, remember-failures, max-response=BYTES");
  }
  std::string ns(text.substr(0, eq));
  const std::string where = std::string(kFlag) + " " + ns;
  LifecycleSpec spec;
  for (std::string_view part : SplitCommas(text.substr(eq + 1))) {
    size_t peq = part.find('=');
    std::string_view key = part.substr(0, peq);
    std::string_view value =
        peq == std::string_view::npos ? std::string_view() : part.substr(peq + 1);
    if (key == "remember-failures" && peq == std::string_view::npos) {
      spec.remember_failures = true;
      continue;
    }
    if (key == "max-response") {
      Result<size_t> n = ParseInt<size_t>(where, value, 0, size_t{1} << 30);
      if (!n.ok()) return n.status();
      spec.max_response_bytes = *n;
      continue;
    }
    std::optional<int64_t>* target = key == "lease"           ? &spec.lease_ms
                                     : key == "max-lease"     ? &spec.max_lease_ms
                                     : key == "completed-ttl" ? &spec.completed_ttl_ms
                                                              : nullptr;
    if (target == nullptr) return Bad(where, "unknown part \"" + std::string(part) + "\"");
    Result<int64_t> ms = ParseDuration(where, value);
    if (!ms.ok()) return ms.status();
    *target = *ms;
  }
  (*out)[ns] = spec;
  return Status::Ok();
}

}  // namespace

Result<ServerFlags> ParseServerFlags(std::span<const std::string_view> args) {
  ServerFlags flags;
  flags.engine.durability = Durability::kSync;
  std::map<std::string, RetentionSpec> retention;
  std::map<std::string, LifecycleSpec> lifecycle;
  HttpListenerOptions http;
  bool http_listen = false;
  std::string_view http_limit_flag;  // the last --http-* limit given, for the error below

  // Flags that take a value; each handler parses it into `flags`.
  using Setter = std::function<Status(std::string_view)>;
  const std::map<std::string_view, Setter> valued = {
      {"--listen",
       [&](std::string_view v) {
         return ParseListen("--listen", v, &flags.server.host, &flags.server.port);
       }},
      {"--http-listen",
       [&](std::string_view v) {
         http_listen = true;
         return ParseListen("--http-listen", v, &http.host, &http.port);
       }},
      {"--http-max-connections",
       [&](std::string_view v) {
         Result<size_t> n = ParseInt<size_t>("--http-max-connections", v, 1, 1'000'000);
         if (n.ok()) http.max_connections = *n;
         http_limit_flag = "--http-max-connections";
         return n.status();
       }},
      {"--http-max-header-bytes",
       [&](std::string_view v) {
         Result<size_t> n = ParseInt<size_t>("--http-max-header-bytes", v, 1024, 64u << 20);
         if (n.ok()) http.max_header_bytes = *n;
         http_limit_flag = "--http-max-header-bytes";
         return n.status();
       }},
      {"--http-max-body-bytes",
       [&](std::string_view v) {
         Result<size_t> n = ParseInt<size_t>("--http-max-body-bytes", v, 1024, size_t{1} << 32);
         if (n.ok()) http.max_body_bytes = *n;
         http_limit_flag = "--http-max-body-bytes";
         return n.status();
       }},
      {"--http-idle-timeout",
       [&](std::string_view v) {
         Result<int64_t> ms = ParseDuration("--http-idle-timeout", v);
         if (ms.ok() && *ms == 0) return Bad("--http-idle-timeout", "must be positive");
         if (ms.ok()) http.idle_timeout_ms = *ms;
         http_limit_flag = "--http-idle-timeout";
         return ms.status();
       }},
      {"--data",
       [&](std::string_view v) {
         flags.data_dir = std::string(v);
         return Status::Ok();
       }},
      {"--durability",
       [&](std::string_view v) {
         return ParseChoice("--durability", v, {"sync", Durability::kSync},
                            {"async", Durability::kAsync}, &flags.engine.durability);
       }},
      {"--log-format",
       [&](std::string_view v) {
         return ParseChoice("--log-format", v, {"text", LogFormat::kText},
                            {"json", LogFormat::kJson}, &flags.server.log_format);
       }},
      {"--io-threads",
       [&](std::string_view v) {
         Result<int> n = ParseInt<int>("--io-threads", v, 1, 256);
         if (n.ok()) flags.server.io_threads = *n;
         return n.status();
       }},
      {"--engine-threads",
       [&](std::string_view v) {
         Result<int> n = ParseInt<int>("--engine-threads", v, 0, 256);
         if (n.ok()) flags.server.engine_threads = *n;
         return n.status();
       }},
      {"--max-connections",
       [&](std::string_view v) {
         Result<size_t> n = ParseInt<size_t>("--max-connections", v, 1, 1'000'000);
         if (n.ok()) flags.server.max_connections = *n;
         flags.max_connections_set = n.ok();
         return n.status();
       }},
      {"--max-frame-bytes",
       [&](std::string_view v) {
         // Floor: a HelloReply or an error frame must fit; ceiling: the 32-bit length prefix.
         Result<size_t> n = ParseInt<size_t>("--max-frame-bytes", v, 1024, 0xffffffffu);
         if (n.ok()) flags.server.max_frame_bytes = *n;
         return n.status();
       }},
      {"--max-reply-bytes",
       [&](std::string_view v) {
         // Floor: an error frame must fit; ceiling: the 32-bit length prefix.
         Result<size_t> n = ParseInt<size_t>("--max-reply-bytes", v, 1024, 0xffffffffu);
         if (n.ok()) flags.server.max_reply_bytes = *n;
         return n.status();
       }},
      {"--max-queued-reply-bytes",
       [&](std::string_view v) {
         Result<size_t> n = ParseInt<size_t>("--max-queued-reply-bytes", v, 1, size_t{1} << 40);
         if (n.ok()) flags.server.max_queued_reply_bytes = *n;
         return n.status();
       }},
      {"--idle-timeout",
       [&](std::string_view v) {
         Result<int64_t> ms = ParseDuration("--idle-timeout", v);
         if (ms.ok() && *ms == 0) return Bad("--idle-timeout", "must be positive");
         if (ms.ok()) flags.server.idle_timeout_ms = *ms;
         return ms.status();
       }},
      {"--default-ttl",
       [&](std::string_view v) {
         Result<int64_t> ms = ParseDuration("--default-ttl", v);
         if (ms.ok()) flags.engine.default_retention.default_ttl_ms = *ms;
         return ms.status();
       }},
      {"--max-ttl",
       [&](std::string_view v) {
         Result<int64_t> ms = ParseDuration("--max-ttl", v);
         if (ms.ok()) flags.engine.default_retention.max_ttl_ms = *ms;
         return ms.status();
       }},
      {"--retention", [&](std::string_view v) { return ParseRetention(v, &retention); }},
      {"--default-lease",
       [&](std::string_view v) {
         Result<int64_t> ms = ParseDuration("--default-lease", v);
         if (ms.ok() && *ms == 0) return Bad("--default-lease", "must be positive");
         if (ms.ok()) flags.engine.default_lifecycle.default_lease_ms = *ms;
         return ms.status();
       }},
      {"--lifecycle", [&](std::string_view v) { return ParseLifecycle(v, &lifecycle); }},
      {"--block-cache-mb",
       [&](std::string_view v) {
         return ParseMiB("--block-cache-mb", v, 1 << 20, &flags.engine.block_cache_bytes);
       }},
      {"--write-buffer-mb",
       [&](std::string_view v) {
         return ParseMiB("--write-buffer-mb", v, 1 << 14, &flags.engine.write_buffer_bytes);
       }},
      {"--memtable",
       [&](std::string_view v) {
         using Memtable = EngineOptions::Memtable;
         return ParseChoice("--memtable", v, {"hash", Memtable::kHash},
                            {"skiplist", Memtable::kSkipList}, &flags.engine.memtable);
       }},
      {"--background-priority",
       [&](std::string_view v) {
         using Priority = EngineOptions::BackgroundPriority;
         return ParseChoice("--background-priority", v, {"normal", Priority::kNormal},
                            {"low", Priority::kLow}, &flags.engine.background_priority);
       }},
      {"--wal-prezero",
       [&](std::string_view v) {
         return ParseChoice<uint64_t>("--wal-prezero", v,
                                      {"on", EngineOptions::kDefaultWalPrezeroChunkBytes},
                                      {"off", 0}, &flags.engine.wal_prezero_chunk_bytes);
       }},
      {"--rocksdb-options",
       [&](std::string_view v) {
         flags.engine.rocksdb_options = std::string(v);
         return Status::Ok();
       }},
      {"--state-graph",
       [&](std::string_view v) {
         size_t eq = v.find('=');
         if (eq == std::string_view::npos || eq == 0) {
           return Bad("--state-graph", "expected NS=FROM>TO>...[,FROM>TO...]");
         }
         Result<StateGraph> graph = StateGraph::Parse(v.substr(eq + 1));
         if (!graph.ok()) return Bad("--state-graph", graph.status().message());
         flags.engine.state_graphs[std::string(v.substr(0, eq))] = std::move(*graph);
         return Status::Ok();
       }},
      {"--key-format",
       [&](std::string_view v) {
         size_t eq = v.find('=');
         if (eq == std::string_view::npos || eq == 0) {
           return Bad("--key-format", "expected NS=uuid or NS=min=N,max=N,chars=[SET]");
         }
         const std::string ns(v.substr(0, eq));
         Result<KeyFormat> format = KeyFormat::Parse(v.substr(eq + 1));
         if (!format.ok()) return Bad("--key-format " + ns, format.status().message());
         flags.engine.key_formats[ns] = std::move(*format);
         return Status::Ok();
       }},
  };

  for (size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    if (arg == "--help" || arg == "-h") {
      flags.help = true;
      continue;
    }
    if (arg == "--allow-remote") {
      flags.server.allow_remote = true;
      continue;
    }
    std::string_view name = arg, value;
    bool inline_value = false;
    if (size_t eq = arg.find('='); arg.starts_with("--") && eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      inline_value = true;
    }
    auto it = valued.find(name);
    if (it == valued.end()) return Bad(name, "unknown flag (see --help)");
    if (!inline_value) {
      if (i + 1 >= args.size()) return Bad(name, "missing value");
      value = args[++i];
    }
    if (Status s = it->second(value); !s.ok()) return s;
  }

  // Retention policies are resolved last, so --max-ttl applies whatever the flag order.
  for (const auto& [ns, spec] : retention) {
    RetentionPolicy policy;
    policy.default_ttl_ms = spec.default_ttl_ms;
    policy.max_ttl_ms = spec.max_ttl_ms.value_or(
        std::max(flags.engine.default_retention.max_ttl_ms, spec.default_ttl_ms));
    policy.allow_forever = spec.forever;
    policy.remember_ms = spec.remember_ms;
    flags.engine.retention[ns] = policy;
  }
  // Lifecycle policies start from the defaults (including --default-lease), whatever the order.
  for (const auto& [ns, spec] : lifecycle) {
    LifecyclePolicy policy = flags.engine.default_lifecycle;
    policy.default_lease_ms = spec.lease_ms.value_or(policy.default_lease_ms);
    policy.max_lease_ms =
        spec.max_lease_ms.value_or(std::max(policy.max_lease_ms, policy.default_lease_ms));
    policy.completed_ttl_ms = spec.completed_ttl_ms.value_or(policy.completed_ttl_ms);
    policy.max_response_bytes = spec.max_response_bytes.value_or(policy.max_response_bytes);
    policy.remember_failures = spec.remember_failures;
    flags.engine.lifecycle[ns] = policy;
  }
  // Checked here as well as by Engine::Open, so that a bad flag stops the start with exit 2.
  for (const auto& [ns, format] : flags.engine.key_formats) {
    if (std::max(format.min_bytes(), format.max_bytes().value_or(0)) >
        flags.engine.limits.max_key_bytes) {
      return Bad("--key-format " + ns, "keys are at most " +
                                           std::to_string(flags.engine.limits.max_key_bytes) +
                                           " bytes (max_key_bytes)");
    }
  }
  if (http_listen) {
    flags.server.http = std::move(http);
  } else if (!http_limit_flag.empty()) {
    return Bad(http_limit_flag, "needs --http-listen (the HTTP listener is off without it)");
  }
  flags.server.limits = flags.engine.limits;
  return flags;
}

std::string ServerFlagsUsage() {
  return R"(usage: idemstored [flags]

Serves an idemstore database over TCP (protocol: docs/protocol.md).

  --listen HOST:PORT        address to listen on (default 127.0.0.1:7878; port 0 = any free
                            port, printed in the start line)
  --allow-remote            required to listen on a non-loopback address (both listeners)
  --http-listen HOST:PORT   also serve the HTTP/JSON API, /healthz, /readyz (and /metrics)
                            there (docs/http-api.md); off unless given. ./dev run: 7879
  --http-max-connections N  HTTP connections; more get 503 and are closed (default 256);
                            counted in the open-files budget beside --max-connections
  --http-max-header-bytes N request line and headers; larger: 431 (default 16384)
  --http-max-body-bytes N   request body; larger: 413, refused from Content-Length before
                            the body is read (default 8388608)
  --http-idle-timeout DUR   close HTTP connections with no complete request this long after
                            their last response (default 60s)
  --data DIR                database directory, created if missing (default ./data)
  --durability sync|async   sync (default): acknowledge after the WAL is fsynced;
                            async: after the OS has the write (survives a process crash only)
  --log-format text|json    the log on stderr: text lines (default) or JSON lines with ts,
                            level, event, msg and fields (docs/operations.md#logging)
  --io-threads N            event-loop threads: sockets, parsing (default 1)
  --engine-threads N        threads applying group commits to the database (default 0: the
                            event loop applies each turn's requests as one batch and, with
                            --durability sync, a sync thread fsyncs while it goes on)
  --max-connections N       more get a BUSY error and are closed (default 1024). Must fit the
                            open-files limit, which idemstored raises to the hard limit at
                            start: N + 352 (BUSY replies, the server's own files, RocksDB's
                            minimum of 256) descriptors; RocksDB's table files get the rest.
                            The default is lowered to fit (with a warning); a number given
                            here that does not fit stops the start (exit 2). Raise the limit
                            with LimitNOFILE= (systemd) or ulimit -n
  --max-frame-bytes N       largest frame accepted (default 4194304)
  --max-reply-bytes N       largest response sent, announced to clients (default 4194304);
                            a request whose response would be larger gets INVALID_ARGUMENT
                            naming this limit (its operations were applied, their results
                            are not returned): read fewer or smaller records per request
  --max-queued-reply-bytes N
                            per connection: while this many response bytes wait for a client
                            that does not read them, no more of its requests are read
                            (default 8388608)
  --idle-timeout DUR        close connections idle this long (default 5m)
  --default-ttl DUR         TTL of records in namespaces without a policy (default 24h)
  --max-ttl DUR             longest TTL they accept (default 30d)
  --retention NS=DUR[,max=DUR][,forever][,remember=DUR]
                            a namespace's policy: default TTL, longest TTL, whether records
                            may live forever, how long a finished record's key is remembered
                            after it expired: Begin and Insert on it answer EXPIRED instead of
                            running again (default 0: not remembered) (repeatable)
  --default-lease DUR       lease of Begin/Lock without one (default 30s)
  --lifecycle NS=PART[,PART...]
                            a namespace's request-lifecycle policy (repeatable); parts:
                            lease=DUR (default lease), max-lease=DUR, completed-ttl=DUR
                            (retention of completed attempts; default: the TTL policy),
                            remember-failures (Abort keeps a FAILED record that Begin
                            replays; default: release the key), max-response=BYTES
  --block-cache-mb N        RocksDB block cache: caps the memory that reads use (default 256)
  --write-buffer-mb N       size of one memtable (RocksDB's write buffer); up to 3 exist at
                            once (default 64)
  --memtable hash|skiplist  how a memtable indexes its records: hash (default; O(1) insert and
                            lookup of keys in any order, sorted when flushed) or RocksDB's
                            skiplist
  --background-priority normal|low
                            CPU priority of RocksDB's flush and compaction threads: normal
                            (default) shares the CPU evenly; low (nice 19) keeps them from
                            delaying requests, but only for a server with CPUs to itself:
                            next to any busy process on its CPUs, flushes starve and writes
                            stop for seconds
  --wal-prezero on|off      with --durability sync: keep zeros written ahead of the WAL's
                            end so that each fsync overwrites instead of appending (default
                            on: no file-system journal commit per fsync)
  --rocksdb-options "NAME=VALUE;..."
                            RocksDB options over idemstore's own (RocksDB's option-string
                            form; e.g. "level0_file_num_compaction_trigger=8")
  --state-graph NS=A>B>C[,A>D]
                            the statuses Transition may move a namespace's records
                            between (repeatable; namespaces without one allow any)
  --key-format NS=min=N,max=N,chars=[SET] | NS=uuid
                            the keys a namespace accepts (repeatable; parts optional; e.g.
                            payments=min=16,max=64,chars=[A-Za-z0-9_-]): every operation
                            naming another key is refused with INVALID_ARGUMENT naming the
                            rule. uuid: 36 bytes of 8-4-4-4-12 lowercase hex digits
  -h, --help                this text

Durations: a number and a unit: 500ms, 30s, 15m, 24h, 7d.
SIGINT/SIGTERM: stop accepting, answer requests in flight, close the database, exit 0.
)";
}

}  // namespace idem
