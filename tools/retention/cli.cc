#include "cli.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <map>
#include <set>

#include "duration.h"

namespace idem::retention {
namespace {

// Defaults, in flag syntax, so --help, the parser and the reports agree.
constexpr const char* kDefaultMix =
    "payments:callbacks:0.4,orders:retry:0.3,jobs:redelivery:0.2,web:human:0.1";
constexpr const char* kDefaultNsTtl = "payments=26h,orders=6h,jobs=1d,web=7d,*=1d";
// Keep responses 1 d, remember keys 30 d: against the plain 1 d and 7 d TTLs.
constexpr const char* kDefaultRemember = "1d:30d";

struct Preset {
  const char* rate;
  const char* duration;
  const char* ttls;
};
constexpr Preset kFull = {"10", "2d", "1h,6h,24h,7d"};
// --quick: same models and policies at a tenth of the traffic for a day (under a minute).
constexpr Preset kQuick = {"1", "1d", "1h,6h,24h,7d"};

Status Bad(const std::string& flag, const std::string& why) {
  return Status::InvalidArgument(flag + ": " + why);
}

Result<double> ParseNumber(const std::string& flag, std::string_view text) {
  double v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v)) {
    return Bad(flag, "'" + std::string(text) + "' is not a number");
  }
  return v;
}

Result<uint64_t> ParseBytes(const std::string& flag, std::string_view text) {
  size_t i = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + i, v);
  const std::string_view unit = text.substr(i);
  uint64_t scale = 0;
  if (unit.empty() || unit == "B")
    scale = 1;
  else if (unit == "K" || unit == "KiB")
    scale = 1ull << 10;
  else if (unit == "M" || unit == "MiB")
    scale = 1ull << 20;
  else if (unit == "G" || unit == "GiB")
    scale = 1ull << 30;
  if (i == 0 || ec != std::errc() || end != text.data() + i || scale == 0 ||
      v > (1ull << 40) / scale) {
    return Bad(flag, "'" + std::string(text) + "' is not a size (e.g. 4MiB, 512K, 100)");
  }
  return v * scale;
}

std::vector<std::string_view> SplitList(std::string_view text) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string_view::npos) end = text.size();
    parts.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

// Flags that take a value, and those that do not.
const std::set<std::string, std::less<>> kValueFlags = {"--seed",
                                                        "--rate",
                                                        "--duration",
                                                        "--mix",
                                                        "--param",
                                                        "--trace",
                                                        "--key-order",
                                                        "--ttls",
                                                        "--ns-ttl",
                                                        "--remember",
                                                        "--strategies",
                                                        "--reclaim-every",
                                                        "--sample-every",
                                                        "--drain",
                                                        "--write-buffer",
                                                        "--payload-bytes",
                                                        "--reclaim-fraction",
                                                        "--work-dir",
                                                        "--json",
                                                        "--out"};
const std::set<std::string, std::less<>> kSwitches = {"--quick", "--help",     "-h",
                                                      "--quiet", "--no-flush", "--keep-dbs"};

}  // namespace

Result<Config> ParseCommandLine(int argc, const char* const* argv) {
  // Pass 1: split into (flag, value) pairs, so --quick can set defaults whatever its position
  // and explicit flags still win.
  std::vector<std::pair<std::string, std::string>> given;
  Config c;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    const size_t eq = arg.find('=');
    const bool inline_value = arg.rfind("--", 0) == 0 && eq != std::string::npos;
    if (inline_value) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    if (kSwitches.count(arg)) {
      if (inline_value) return Bad(arg, "takes no value");
      if (arg == "--help" || arg == "-h") c.help = true;
      if (arg == "--quick") c.quick = true;
      if (arg == "--quiet") c.quiet = true;
      if (arg == "--no-flush") c.sim.flush_at_samples = false;
      if (arg == "--keep-dbs") c.keep_dbs = true;
      continue;
    }
    if (!kValueFlags.count(arg)) {
      return Status::InvalidArgument("unknown flag '" + arg + "' (see --help)");
    }
    if (!inline_value) {
      if (i + 1 >= argc) return Bad(arg, "needs a value");
      value = argv[++i];
    }
    given.emplace_back(arg, value);
  }
  if (c.help) return c;

  const Preset& preset = c.quick ? kQuick : kFull;
  std::map<std::string, std::string> single;  // last value of each non-repeatable flag
  std::vector<std::string> params, ns_ttls;
  for (const auto& [flag, value] : given) {
    if (flag == "--param")
      params.push_back(value);
    else if (flag == "--ns-ttl")
      ns_ttls.push_back(value);
    else
      single[flag] = value;
  }
  auto value_of = [&](const std::string& flag, const std::string& fallback) {
    auto it = single.find(flag);
    return it == single.end() ? fallback : it->second;
  };

  c.trace_path = value_of("--trace", "");
  if (!c.trace_path.empty()) {
    for (const char* flag : {"--seed", "--rate", "--duration", "--mix", "--key-order"}) {
      if (single.count(flag)) return Bad(flag, "does not apply to a replayed --trace");
    }
    if (!params.empty()) return Bad("--param", "does not apply to a replayed --trace");
  }

  // Workload.
  const std::string seed = value_of("--seed", "1");
  {
    auto [end, ec] = std::from_chars(seed.data(), seed.data() + seed.size(), c.workload.seed);
    if (seed.empty() || ec != std::errc() || end != seed.data() + seed.size()) {
      return Bad("--seed", "'" + seed + "' is not a non-negative integer");
    }
  }
  const std::string rate = value_of("--rate", preset.rate);
  auto rate_v = ParseNumber("--rate", rate);
  if (!rate_v.ok()) return rate_v.status();
  if (*rate_v <= 0 || *rate_v > 1e6) return Bad("--rate", "must be in (0, 1e6] per second");
  c.workload.rate_per_s = *rate_v;
  const std::string duration = value_of("--duration", preset.duration);
  auto duration_v = ParsePositiveDurationMs(duration);
  if (!duration_v.ok()) return Bad("--duration", duration_v.status().message());
  c.workload.duration_ms = *duration_v;
  const std::string mix = value_of("--mix", kDefaultMix);
  auto mix_v = ParseMix(mix);
  if (!mix_v.ok()) return Bad("--mix", mix_v.status().message());
  c.workload.mix = std::move(*mix_v);
  for (const std::string& p : params) {
    if (Status s = c.workload.params.Set(p); !s.ok()) return Bad("--param", s.message());
  }
  const std::string key_order = value_of("--key-order", "random");
  if (key_order == "random")
    c.workload.key_order = KeyOrder::kRandom;
  else if (key_order == "time")
    c.workload.key_order = KeyOrder::kTime;
  else
    return Bad("--key-order", "'" + key_order + "' is not one of: random, time");

  // Policies.
  const std::string ttls = value_of("--ttls", preset.ttls);
  if (ttls != "none") {
    for (std::string_view t : SplitList(ttls)) {
      auto ttl = ParsePositiveDurationMs(t);
      if (!ttl.ok()) return Bad("--ttls", ttl.status().message());
      if (std::find(c.ttls_ms.begin(), c.ttls_ms.end(), *ttl) != c.ttls_ms.end()) {
        return Bad("--ttls", "lists " + std::string(t) + " twice");
      }
      c.ttls_ms.push_back(*ttl);
    }
  }
  if (ns_ttls.empty()) ns_ttls.push_back(kDefaultNsTtl);
  for (const std::string& spec : ns_ttls) {
    if (spec == "none") continue;
    auto parsed = ParseNsTtl(spec);
    if (!parsed.ok()) return Bad("--ns-ttl", parsed.status().message());
    c.ns_ttls.push_back(std::move(*parsed));
  }
  const std::string remember = value_of("--remember", kDefaultRemember);
  if (remember != "none") {
    auto parsed = ParseKeepRemember(remember);
    if (!parsed.ok()) return Bad("--remember", parsed.status().message());
    c.remembers = std::move(*parsed);
  }
  if (c.ttls_ms.empty() && c.ns_ttls.empty() && c.remembers.empty()) {
    return Bad("--ttls",
               "no policy left to study (--ttls none, --ns-ttl none and --remember none)");
  }
  const std::string strategies = value_of("--strategies", "reclaim,compaction-only");
  for (std::string_view s : SplitList(strategies)) {
    auto strategy = ParseStrategy(s);
    if (!strategy.ok()) return Bad("--strategies", strategy.status().message());
    if (std::find(c.strategies.begin(), c.strategies.end(), *strategy) != c.strategies.end()) {
      return Bad("--strategies", "lists " + std::string(s) + " twice");
    }
    c.strategies.push_back(*strategy);
  }

  // Simulation.
  auto duration_flag = [&](const std::string& flag, const std::string& fallback,
                           int64_t* out) -> Status {
    auto v = ParsePositiveDurationMs(value_of(flag, fallback));
    if (!v.ok()) return Bad(flag, v.status().message());
    *out = *v;
    return Status::Ok();
  };
  if (Status s = duration_flag("--reclaim-every", "10m", &c.sim.reclaim_every_ms); !s.ok())
    return s;
  if (Status s = duration_flag("--sample-every", "1h", &c.sim.sample_every_ms); !s.ok()) return s;
  if (single.count("--drain")) {
    auto v = ParseDurationMs(single["--drain"]);
    if (!v.ok()) return Bad("--drain", v.status().message());
    c.drain_ms = *v;
  }
  auto write_buffer = ParseBytes("--write-buffer", value_of("--write-buffer", "4MiB"));
  if (!write_buffer.ok()) return write_buffer.status();
  if (*write_buffer < (64u << 10)) return Bad("--write-buffer", "must be at least 64KiB");
  c.sim.write_buffer_bytes = *write_buffer;
  auto payload = ParseBytes("--payload-bytes", value_of("--payload-bytes", "100"));
  if (!payload.ok()) return payload.status();
  if (*payload > (1u << 20))
    return Bad("--payload-bytes", "must be at most 1MiB (the engine's limit)");
  c.sim.payload_bytes = *payload;
  auto fraction = ParseNumber("--reclaim-fraction", value_of("--reclaim-fraction", "0.5"));
  if (!fraction.ok()) return fraction.status();
  if (*fraction <= 0 || *fraction > 1) return Bad("--reclaim-fraction", "must be in (0, 1]");
  c.sim.reclaim_min_expired_fraction = *fraction;

  c.work_dir = value_of("--work-dir", "");
  c.json_path = value_of("--json", "");
  c.out_dir = value_of("--out", "");

  // What the reports echo.
  if (c.trace_path.empty()) {
    c.settings = {{"seed", seed},
                  {"rate", rate + "/s"},
                  {"duration", duration},
                  {"mix", mix},
                  {"key-order", key_order}};
    for (const MixEntry& e : c.workload.mix) {
      c.settings.emplace_back("model " + std::string(ModelName(e.model)) + " (" + e.ns + ")",
                              c.workload.params.Describe(e.model));
    }
  } else {
    c.settings = {{"trace", c.trace_path}};
  }
  c.settings.emplace_back("ttls", ttls);
  std::string ns_ttl_text;
  for (const std::string& s : ns_ttls) ns_ttl_text += (ns_ttl_text.empty() ? "" : " ") + s;
  c.settings.emplace_back("ns-ttl", ns_ttl_text);
  c.settings.emplace_back("remember", remember);
  c.settings.emplace_back("strategies", strategies);
  c.settings.emplace_back("reclaim-every", FormatDurationMs(c.sim.reclaim_every_ms));
  c.settings.emplace_back("sample-every",
                          FormatDurationMs(c.sim.sample_every_ms) +
                              (c.sim.flush_at_samples ? " (flush first)" : " (no flush)"));
  c.settings.emplace_back("write-buffer", std::to_string(c.sim.write_buffer_bytes) + " B");
  c.settings.emplace_back("payload-bytes", std::to_string(c.sim.payload_bytes));
  return c;
}

std::string HelpText() {
  std::string models;
  ModelParamSet defaults;
  for (DelayModel m : kAllModels) {
    models += "  " + std::string(ModelName(m)) + ": " + defaults.Describe(m) + "\n";
  }
  return std::string(R"(Usage: idem-retention [flags]

Replays a workload of first requests and their late duplicates against several retention
policies, each on its own idemstore Engine in simulated time, and reports per policy how many
duplicates were caught or missed (missed = executed twice) and what the disk paid for it.
See docs/retention.md.

Workload (generated from a seed, or replayed from a trace):
  --seed N              random seed; the same seed gives the same workload (default 1)
  --rate R              first requests per second, Poisson arrivals (default )") +
         kFull.rate + R"(; --quick: )" + kQuick.rate + R"()
  --duration D          first requests arrive for D; their duplicates may come later
                        (default )" +
         kFull.duration + R"(; --quick: )" + kQuick.duration + R"()
  --mix SPEC            NAMESPACE:MODEL:WEIGHT,... models: retry, redelivery, callbacks, human
                        (default )" +
         kDefaultMix + R"()
  --param M.NAME=V      set a model parameter, repeatable, e.g. callbacks.again_prob=0.5
  --key-order ORDER     random (UUIDv4-like keys) or time (ULID-like keys) (default random)
  --trace FILE          replay FILE (CSV time_s,namespace,key) instead of generating; excludes
                        --seed, --rate, --duration, --mix, --param, --key-order

Policies (every TTL, every --ns-ttl and every --remember pair, each under every strategy):
  --ttls LIST           one TTL for all namespaces, e.g. 1h,6h,24h,7d; "none" for no such
                        policy (default )" +
         kFull.ttls + R"()
  --ns-ttl SPEC         per-namespace TTLs NS=TTL,...,*=TTL ('*': unlisted namespaces, default
                        1d), repeatable; "none" for no such policy
                        (default )" +
         kDefaultNsTtl + R"()
  --remember LIST       KEEP:REMEMBER,... keep records KEEP (one TTL for all namespaces), then
                        remember their keys REMEMBER more: a duplicate then is answered EXPIRED
                        (not executed again, its response gone) instead of missed; "none" for
                        no such policy. The default drain does not wait for the markers to
                        go (default )" +
         kDefaultRemember + R"()
  --strategies LIST     reclaim (compaction filter + Engine::ReclaimExpired on a schedule),
                        compaction-only (compaction filter in write-triggered compactions only)
                        (default reclaim,compaction-only)

Simulation:
  --reclaim-every D     simulated interval between ReclaimExpired calls (default 10m)
  --sample-every D      simulated interval between disk samples (default 1h)
  --no-flush            do not flush the memtable before each sample (default: flush)
  --drain D             keep the clock running D after the last arrival (default: the longest
                        TTL studied + 2h, so expired data can be seen leaving the disk)
  --write-buffer SIZE   RocksDB memtable size, e.g. 4MiB (default 4MiB)
  --payload-bytes N     stored response size per record (default 100)
  --reclaim-fraction F  the engine's reclaim_min_expired_fraction (default 0.5)
  --work-dir DIR        where the databases go (default: a new temp dir, removed afterwards)
  --keep-dbs            keep each policy's database (under the work dir)

Output:
  --json FILE           write every figure as JSON (layout in docs/retention.md)
  --out DIR             write ttl_tradeoff.svg and disk_over_time.svg into DIR
  --quick               a small run (under a minute): --rate )" +
         kQuick.rate + " --duration " + kQuick.duration + R"(
  --quiet               no progress line on stderr
  -h, --help            this text

Model parameters (times in ms) and their defaults:
)" + models +
         R"(
Sizes accept B, K/KiB, M/MiB, G/GiB; durations ms, s, m, h, d (e.g. 1h30m).
Exit codes: 0 ok, 1 the simulation failed, 2 bad command line.
)";
}

}  // namespace idem::retention
