#include "bench_config.h"

#include <charconv>
#include <cstdlib>

#include "duration.h"

namespace idem::bench {

std::string_view OpKindName(OpKind kind) {
  switch (kind) {
    case OpKind::kInsert:
      return "insert";
    case OpKind::kBegin:
      return "begin";
    case OpKind::kComplete:
      return "complete";
    case OpKind::kCas:
      return "cas";
    case OpKind::kGet:
      return "get";
    case OpKind::kPreload:
      return "preload";
  }
  return "?";
}

namespace {

Status Bad(std::string_view flag, std::string_view why) {
  return Status::InvalidArgument("--" + std::string(flag) + ": " + std::string(why));
}

template <typename T>
Status ParseInt(std::string_view flag, std::string_view text, T min, T max, T* out) {
  T v{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return Bad(flag, "\"" + std::string(text) + "\" is not an integer");
  }
  if (v < min || v > max) {
    return Bad(flag, std::string(text) + " is out of range [" + std::to_string(min) + ", " +
                         std::to_string(max) + "]");
  }
  *out = v;
  return Status::Ok();
}

Status ParseDouble(std::string_view flag, std::string_view text, double min, double max,
                   double* out) {
  std::string s(text);
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size()) {
    return Bad(flag, "\"" + s + "\" is not a number");
  }
  if (!(v >= min && v <= max)) return Bad(flag, s + " is out of range");
  *out = v;
  return Status::Ok();
}

Result<OpKind> ParseKind(std::string_view name) {
  if (name == "insert") return OpKind::kInsert;
  if (name == "begin") return OpKind::kBegin;
  if (name == "cas") return OpKind::kCas;
  if (name == "get") return OpKind::kGet;
  return Status::InvalidArgument("unknown workload \"" + std::string(name) +
                                 "\" (insert, begin, cas, get, mix)");
}

// "insert:50,get:30,cas:20"
Result<std::vector<MixEntry>> ParseMix(std::string_view spec) {
  std::vector<MixEntry> mix;
  while (!spec.empty()) {
    const size_t comma = spec.find(',');
    std::string_view part = spec.substr(0, comma);
    spec = comma == std::string_view::npos ? std::string_view() : spec.substr(comma + 1);
    const size_t colon = part.find(':');
    if (colon == std::string_view::npos) {
      return Bad("mix", "\"" + std::string(part) + "\" is not KIND:WEIGHT");
    }
    Result<OpKind> kind = ParseKind(part.substr(0, colon));
    if (!kind.ok()) return Bad("mix", kind.status().message());
    uint32_t weight = 0;
    if (Status s = ParseInt<uint32_t>("mix", part.substr(colon + 1), 1, 1'000'000, &weight);
        !s.ok()) {
      return s;
    }
    mix.push_back({*kind, weight});
  }
  if (mix.empty()) return Bad("mix", "empty");
  return mix;
}

}  // namespace

Result<BenchConfig> ParseBenchFlags(std::span<const std::string_view> args) {
  BenchConfig c;
  std::string mix_spec;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    if (arg == "-h" || arg == "--help") {
      c.help = true;
      continue;
    }
    if (arg == "-c" || arg == "-P" || arg == "-n") {
      arg.remove_prefix(1);  // short forms of --connections, --pipeline, --requests
    } else if (arg.substr(0, 2) == "--") {
      arg.remove_prefix(2);
    } else {
      return Status::InvalidArgument("unexpected argument \"" + std::string(arg) + "\"");
    }
    std::string_view name = arg, value;
    bool has_value = false;
    if (size_t eq = arg.find('='); eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      has_value = true;
    }
    // Boolean flags take no value.
    if (name == "json" || name == "quiet" || name == "preload" || name == "preload-only") {
      if (has_value) return Bad(name, "takes no value");
      if (name == "json") c.json = true;
      if (name == "quiet") c.progress = false;
      if (name == "preload") c.preload = true;
      if (name == "preload-only") c.preload = c.preload_only = true;
      continue;
    }
    if (!has_value) {
      if (i + 1 >= args.size()) return Bad(name, "needs a value");
      value = args[++i];
    }
    Status s;
    if (name == "server") {
      const size_t colon = value.rfind(':');
      if (colon == std::string_view::npos || colon == 0) return Bad(name, "expected HOST:PORT");
      c.host = std::string(value.substr(0, colon));
      s = ParseInt<uint16_t>(name, value.substr(colon + 1), 1, 65535, &c.port);
    } else if (name == "protocol") {
      if (value == "binary") {
        c.http = false;
      } else if (value == "http") {
        c.http = true;
      } else {
        return Bad(name, "must be binary or http");
      }
    } else if (name == "connections" || name == "c") {
      s = ParseInt(name, value, 1, 10'000, &c.connections);
    } else if (name == "pipeline" || name == "P") {
      s = ParseInt(name, value, 1, 4'096, &c.pipeline);
    } else if (name == "batch") {
      s = ParseInt(name, value, 1, 10'000, &c.batch);
    } else if (name == "threads") {
      s = ParseInt(name, value, 1, 64, &c.threads);
    } else if (name == "duration") {
      Result<int64_t> ms = ParseDurationMs(value);
      if (!ms.ok()) return Bad(name, ms.status().message());
      if (*ms <= 0) return Bad(name, "must be positive");
      c.duration_ms = *ms;
    } else if (name == "requests" || name == "n") {
      s = ParseInt<uint64_t>(name, value, 1, UINT64_MAX, &c.requests);
    } else if (name == "workload") {
      c.workload = std::string(value);
    } else if (name == "mix") {
      mix_spec = std::string(value);
    } else if (name == "dup-ratio") {
      s = ParseDouble(name, value, 0.0, 1.0, &c.dup_ratio);
    } else if (name == "keys") {
      s = ParseInt<uint64_t>(name, value, 1, uint64_t{1} << 40, &c.keys);
    } else if (name == "distribution") {
      Result<Distribution> d = ParseDistribution(value);
      if (!d.ok()) return Bad(name, d.status().message());
      c.distribution = *d;
    } else if (name == "key-order") {
      if (value == "random") {
        c.sequential_keys = false;
      } else if (value == "sequential") {
        c.sequential_keys = true;
      } else {
        return Bad(name, "must be random or sequential");
      }
    } else if (name == "zipf-theta") {
      s = ParseDouble(name, value, 0.01, 0.999, &c.zipf_theta);
    } else if (name == "payload") {
      s = ParseInt<size_t>(name, value, 0, 1 << 20, &c.payload_bytes);
    } else if (name == "ttl") {
      // Every op sends this TTL, and the store refuses a zero one (it is not "the default").
      Result<int64_t> ms = ParsePositiveDurationMs(value);
      if (!ms.ok()) return Bad(name, ms.status().message());
      c.ttl_ms = *ms;
    } else if (name == "rate") {
      s = ParseDouble(name, value, 0.0, 1e9, &c.rate);
    } else if (name == "namespace") {
      if (value.empty()) return Bad(name, "must not be empty");
      c.ns = std::string(value);
    } else if (name == "key-prefix") {
      c.key_prefix = std::string(value);
    } else if (name == "seed") {
      s = ParseInt<uint64_t>(name, value, 0, UINT64_MAX, &c.seed);
    } else if (name == "server-pid") {
      s = ParseInt(name, value, 1, 1 << 30, &c.server_pid);
    } else if (name == "drain-timeout") {
      Result<int64_t> ms = ParseDurationMs(value);
      if (!ms.ok()) return Bad(name, ms.status().message());
      c.drain_timeout_ms = *ms;
    } else {
      return Status::InvalidArgument("unknown flag --" + std::string(name));
    }
    if (!s.ok()) return s;
  }
  if (c.workload == "mix") {
    if (mix_spec.empty()) return Bad("mix", "--workload mix needs --mix KIND:WEIGHT,...");
    Result<std::vector<MixEntry>> mix = ParseMix(mix_spec);
    if (!mix.ok()) return mix.status();
    c.mix = std::move(*mix);
  } else {
    if (!mix_spec.empty()) return Bad("mix", "only with --workload mix");
    Result<OpKind> kind = ParseKind(c.workload);
    if (!kind.ok()) return Bad("workload", kind.status().message());
    c.mix = {{*kind, 1}};
  }
  if (c.dup_ratio > 0 && c.workload != "insert") {
    return Bad("dup-ratio", "only with --workload insert");
  }
  if (c.threads > c.connections) return Bad("threads", "more threads than connections");
  if (c.http && (c.pipeline != 1 || c.workload != "insert" || c.preload)) {
    return Bad("protocol", "http runs --workload insert with --pipeline 1 and no --preload");
  }
  return c;
}

std::string BenchUsage() {
  return R"(idem-bench: load generator for idemstored (speaks the wire protocol directly).

  --server HOST:PORT      server address (127.0.0.1:7878)
  --protocol binary|http  binary (default): the wire protocol; http: POST /v1/apply over
                          keep-alive HTTP/1.1 at --server (idemstored --http-listen), for
                          --workload insert without pipelining
  --connections N, -c N   TCP connections (16)
  --pipeline N, -P N      requests in flight per connection (1)
  --batch N               ops per request (1)
  --threads N             event-loop threads, connections split between them (1)
  --duration D            run time, e.g. 10s (10s); ignored with --requests
  --requests N, -n N      stop after N requests instead
  --workload W            insert | begin (Begin then Complete) | cas | get | mix (insert)
  --mix K:W,...           with --workload mix, e.g. insert:50,get:30,cas:20
  --dup-ratio R           insert: share of requests that repeat an inserted key (0)
  --keys N                key space of cas/get/mix (100000)
  --preload               insert keys 0..N-1 (status PROCESSING) before measuring
  --preload-only          only that (e.g. to load a store before measuring its size)
  --distribution D        uniform | zipfian, for cas/get/mix keys (uniform)
  --zipf-theta T          Zipfian skew (0.99)
  --key-order O           random | sequential: how key numbers are spelled; random (default)
                          scatters them like UUIDs, sequential keeps them ascending
  --payload BYTES         payload size (100)
  --ttl D                 record TTL (24h)
  --rate R                open loop at R requests/s in total; latency counts from the
                          intended send time (coordinated omission is not hidden).
                          0 = closed loop (default)
  --namespace NS          (bench)   --key-prefix P (random per run)   --seed N
  --server-pid PID        also report the server's CPU time per op, and by thread
  --json                  print one JSON object instead of text
  --quiet                 no progress line every second (on stderr)
)";
}

}  // namespace idem::bench
