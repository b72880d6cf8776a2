#include "bench_config.h"

#include <charconv>
#include <cstdlib>
#include <functional>
#include <memory>

#include "cli_app.h"
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

// One flag: its names as CLI11 takes them ("-c,--connections"), the name of its value in --help
// (empty for a switch), its default as --help shows it, and what applies a value given.
struct BenchFlag {
  std::string names;
  std::string value;
  std::string default_text;
  std::string help;
  std::function<Status(std::string_view)> apply;  // a switch gets ""
};

// Every flag, in --help order; `mix_spec` receives --mix, checked against --workload later.
std::vector<BenchFlag> Flags(BenchConfig& c, std::string& mix_spec) {
  const BenchConfig defaults;
  auto integer = [](std::string_view name, auto min, auto max, auto* out) {
    return [=](std::string_view v) { return ParseInt(name, v, min, max, out); };
  };
  auto real = [](std::string_view name, double min, double max, double* out) {
    return [=](std::string_view v) { return ParseDouble(name, v, min, max, out); };
  };
  // --tls-*: TLS on, and one of its settings.
  auto tls_setting = [&c](std::string ClientTlsOptions::*setting) {
    return [&c, setting](std::string_view v) {
      if (!c.tls) c.tls.emplace();
      (*c.tls).*setting = std::string(v);
      return Status::Ok();
    };
  };
  return {
      {"--server", "HOST:PORT", defaults.host + ":" + std::to_string(defaults.port),
       "server address",
       [&c](std::string_view v) {
         const size_t colon = v.rfind(':');
         if (colon == std::string_view::npos || colon == 0)
           return Bad("server", "expected HOST:PORT");
         c.host = std::string(v.substr(0, colon));
         return ParseInt<uint16_t>("server", v.substr(colon + 1), 1, 65535, &c.port);
       }},
      {"--token", "TOKEN", "", "the secret of a principal of the server's --auth-file",
       [&c](std::string_view v) {
         c.token = std::string(v);
         return Status::Ok();
       }},
      {"--protocol", "binary|http", "binary",
       "binary: the wire protocol; http: POST /v1/apply over keep-alive\n"
       "HTTP/1.1 at --server (idemstored --http-listen), for --workload\n"
       "insert without pipelining",
       [&c](std::string_view v) {
         if (v != "binary" && v != "http") return Bad("protocol", "must be binary or http");
         c.http = v == "http";
         return Status::Ok();
       }},
      {"--tls", "", "", "over TLS, trusting the system's CAs",
       [&c](std::string_view) {
         if (!c.tls) c.tls.emplace();
         return Status::Ok();
       }},
      {"--tls-ca", "FILE", "", "over TLS, trusting the CAs in this PEM file",
       tls_setting(&ClientTlsOptions::ca_file)},
      {"--tls-cert", "FILE", "", "mutual TLS: the client certificate (PEM)",
       tls_setting(&ClientTlsOptions::cert_file)},
      {"--tls-key", "FILE", "", "mutual TLS: its private key (PEM)",
       tls_setting(&ClientTlsOptions::key_file)},
      {"--tls-server-name", "NAME", "",
       "the name the server's certificate must carry (default: --server's\nhost)",
       tls_setting(&ClientTlsOptions::server_name)},
      {"-c,--connections", "N", std::to_string(defaults.connections), "TCP connections",
       integer("connections", 1, 10'000, &c.connections)},
      {"-P,--pipeline", "N", std::to_string(defaults.pipeline), "requests in flight per connection",
       integer("pipeline", 1, 4'096, &c.pipeline)},
      {"--batch", "N", std::to_string(defaults.batch), "ops per request",
       integer("batch", 1, 10'000, &c.batch)},
      {"--threads", "N", std::to_string(defaults.threads),
       "event-loop threads, connections split between them", integer("threads", 1, 64, &c.threads)},
      {"--duration", "D", FormatDurationMs(defaults.duration_ms),
       "run time, e.g. 10s; ignored with --requests",
       [&c](std::string_view v) {
         Result<int64_t> ms = ParseDurationMs(v);
         if (!ms.ok()) return Bad("duration", ms.status().message());
         if (*ms <= 0) return Bad("duration", "must be positive");
         c.duration_ms = *ms;
         return Status::Ok();
       }},
      {"-n,--requests", "N", "", "stop after N requests instead",
       integer("requests", uint64_t{1}, UINT64_MAX, &c.requests)},
      {"--workload", "W", defaults.workload,
       "insert | begin (Begin then Complete) | cas | get | mix",
       [&c](std::string_view v) {
         c.workload = std::string(v);
         return Status::Ok();
       }},
      {"--mix", "K:W,...", "", "with --workload mix, e.g. insert:50,get:30,cas:20",
       [&mix_spec](std::string_view v) {
         mix_spec = std::string(v);
         return Status::Ok();
       }},
      {"--dup-ratio", "R", "0", "insert: share of requests that repeat an inserted key",
       real("dup-ratio", 0.0, 1.0, &c.dup_ratio)},
      {"--keys", "N", std::to_string(defaults.keys), "key space of cas/get/mix",
       integer("keys", uint64_t{1}, uint64_t{1} << 40, &c.keys)},
      {"--preload", "", "", "insert keys 0..N-1 (status PROCESSING) before measuring",
       [&c](std::string_view) {
         c.preload = true;
         return Status::Ok();
       }},
      {"--preload-only", "", "", "only that (e.g. to load a store before measuring its size)",
       [&c](std::string_view) {
         c.preload = c.preload_only = true;
         return Status::Ok();
       }},
      {"--distribution", "D", "uniform", "uniform | zipfian, for cas/get/mix keys",
       [&c](std::string_view v) {
         Result<Distribution> d = ParseDistribution(v);
         if (!d.ok()) return Bad("distribution", d.status().message());
         c.distribution = *d;
         return Status::Ok();
       }},
      {"--zipf-theta", "T", "0.99", "Zipfian skew", real("zipf-theta", 0.01, 0.999, &c.zipf_theta)},
      {"--key-order", "O", "random",
       "random | sequential: how key numbers are spelled; random\n"
       "scatters them like UUIDs, sequential keeps them ascending",
       [&c](std::string_view v) {
         if (v != "random" && v != "sequential") {
           return Bad("key-order", "must be random or sequential");
         }
         c.sequential_keys = v == "sequential";
         return Status::Ok();
       }},
      {"--payload", "BYTES", std::to_string(defaults.payload_bytes), "payload size",
       integer("payload", size_t{0}, size_t{1} << 20, &c.payload_bytes)},
      {"--ttl", "D", FormatDurationMs(defaults.ttl_ms), "record TTL",
       [&c](std::string_view v) {
         // Every op sends this TTL, and the store refuses a zero one (it is not "the default").
         Result<int64_t> ms = ParsePositiveDurationMs(v);
         if (!ms.ok()) return Bad("ttl", ms.status().message());
         c.ttl_ms = *ms;
         return Status::Ok();
       }},
      {"--rate", "R", "0",
       "open loop at R requests/s in total; latency counts from the\n"
       "intended send time (coordinated omission is not hidden).\n"
       "0 = closed loop",
       real("rate", 0.0, 1e9, &c.rate)},
      {"--namespace", "NS", defaults.ns, "namespace of the keys",
       [&c](std::string_view v) {
         if (v.empty()) return Bad("namespace", "must not be empty");
         c.ns = std::string(v);
         return Status::Ok();
       }},
      {"--key-prefix", "P", "random per run", "prefix of every key",
       [&c](std::string_view v) {
         c.key_prefix = std::string(v);
         return Status::Ok();
       }},
      {"--seed", "N", "from the clock", "random seed",
       integer("seed", uint64_t{0}, UINT64_MAX, &c.seed)},
      {"--server-pid", "PID", "", "also report the server's CPU time per op, and by thread",
       integer("server-pid", 1, 1 << 30, &c.server_pid)},
      {"--drain-timeout", "D", FormatDurationMs(defaults.drain_timeout_ms),
       "after the run, how long to wait for requests in flight",
       [&c](std::string_view v) {
         Result<int64_t> ms = ParseDurationMs(v);
         if (!ms.ok()) return Bad("drain-timeout", ms.status().message());
         c.drain_timeout_ms = *ms;
         return Status::Ok();
       }},
      {"--json", "", "", "print one JSON object instead of text",
       [&c](std::string_view) {
         c.json = true;
         return Status::Ok();
       }},
      {"--quiet", "", "", "no progress line every second (on stderr)",
       [&c](std::string_view) {
         c.progress = false;
         return Status::Ok();
       }},
  };
}

// The command line's grammar: CLI11 reads each flag's text; the BenchFlags check and apply it.
struct Grammar {
  std::unique_ptr<CLI::App> app =
      NewCliApp("idem-bench", "Load generator for idemstored (speaks the wire protocol directly).");
  std::vector<CLI::Option*> options;  // options[i] reads flags[i]

  explicit Grammar(const std::vector<BenchFlag>& flags) {
    for (const BenchFlag& f : flags) {
      CLI::Option* opt =
          f.value.empty()
              ? AddSwitch(*app, f.names, f.help)
              : app->add_option(f.names, f.help)->type_name(f.value)->default_str(f.default_text);
      opt->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
      options.push_back(opt);
    }
  }
};

}  // namespace

Result<BenchConfig> ParseBenchFlags(std::span<const std::string_view> args) {
  BenchConfig c;
  std::string mix_spec;
  const std::vector<BenchFlag> flags = Flags(c, mix_spec);
  Grammar grammar(flags);
  Result<CliRequest> request = ParseCli(*grammar.app, args);
  if (!request.ok()) return request.status();
  if (*request != CliRequest::kRun) {
    c.help = *request == CliRequest::kHelp;
    c.version = *request == CliRequest::kVersion;
    return c;
  }
  for (size_t i = 0; i < flags.size(); ++i) {
    const CLI::Option* opt = grammar.options[i];
    if (opt->count() == 0) continue;
    const std::string value = flags[i].value.empty() ? "" : opt->as<std::string>();
    if (Status s = flags[i].apply(value); !s.ok()) return s;
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
  BenchConfig unused_config;
  std::string unused_mix;
  const std::vector<BenchFlag> flags = Flags(unused_config, unused_mix);
  return Grammar(flags).app->help();
}

}  // namespace idem::bench
