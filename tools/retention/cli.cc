#include "cli.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <map>
#include <memory>
#include <string_view>

#include "cli_app.h"
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

constexpr const char* kWorkload = "Workload (generated from a seed, or replayed from a trace)";
constexpr const char* kPolicies =
    "Policies (every TTL, every --ns-ttl and every --remember pair, each under every strategy)";
constexpr const char* kSimulation = "Simulation";
constexpr const char* kOutput = "Output";

// A flag's value in force: the last one given, or `fallback`.
std::string ValueOf(const CLI::Option* opt, const std::string& fallback) {
  return opt->count() > 0 ? opt->as<std::string>() : fallback;
}

// The command line's grammar: every flag as CLI11 reads it (text; ParseCommandLine checks it),
// with its --help text and default.
struct Grammar {
  std::unique_ptr<CLI::App> app = NewCliApp(
      "idem-retention",
      "Replays a workload of first requests and their late duplicates against several retention\n"
      "policies, each on its own idemstore Engine in simulated time, and reports per policy how\n"
      "many duplicates were caught or missed (missed = executed twice) and what the disk paid\n"
      "for it. See docs/retention.md.");

  // A flag taking a value; a repeated one keeps its last, or all with `repeatable`.
  CLI::Option* Value(const char* group, const std::string& name, const std::string& value,
                     const std::string& default_text, const std::string& help,
                     bool repeatable = false) {
    return app->add_option(name, help)
        ->type_name(value)
        ->default_str(default_text)
        ->group(group)
        ->multi_option_policy(repeatable ? CLI::MultiOptionPolicy::TakeAll
                                         : CLI::MultiOptionPolicy::TakeLast);
  }
  CLI::Option* Switch(const char* group, const std::string& name, const std::string& help) {
    return AddSwitch(*app, name, help)->group(group);
  }

  CLI::Option* seed =
      Value(kWorkload, "--seed", "N", "1", "random seed; the same seed gives the same workload");
  CLI::Option* rate =
      Value(kWorkload, "--rate", "R", std::string(kFull.rate) + "; --quick: " + kQuick.rate,
            "first requests per second, Poisson arrivals");
  CLI::Option* duration = Value(kWorkload, "--duration", "D",
                                std::string(kFull.duration) + "; --quick: " + kQuick.duration,
                                "first requests arrive for D; their duplicates may come later");
  CLI::Option* mix = Value(kWorkload, "--mix", "SPEC", kDefaultMix,
                           "NAMESPACE:MODEL:WEIGHT,... models: retry, redelivery,\n"
                           "callbacks, human");
  CLI::Option* param = Value(kWorkload, "--param", "M.NAME=V", "",
                             "set a model parameter, repeatable, e.g.\n"
                             "callbacks.again_prob=0.5",
                             true);
  CLI::Option* key_order = Value(kWorkload, "--key-order", "ORDER", "random",
                                 "random (UUIDv4-like keys) or time (ULID-like keys)");
  CLI::Option* trace = Value(kWorkload, "--trace", "FILE", "",
                             "replay FILE (CSV time_s,namespace,key) instead of generating;\n"
                             "excludes --seed, --rate, --duration, --mix, --param, --key-order");

  CLI::Option* ttls = Value(kPolicies, "--ttls", "LIST", kFull.ttls,
                            "one TTL for all namespaces, e.g. 1h,6h,24h,7d; \"none\" for no\n"
                            "such policy");
  CLI::Option* ns_ttl = Value(kPolicies, "--ns-ttl", "SPEC", kDefaultNsTtl,
                              "per-namespace TTLs NS=TTL,...,*=TTL ('*': unlisted namespaces,\n"
                              "default 1d), repeatable; \"none\" for no such policy",
                              true);
  CLI::Option* remember =
      Value(kPolicies, "--remember", "LIST", kDefaultRemember,
            "KEEP:REMEMBER,... keep records KEEP (one TTL for all namespaces),\n"
            "then remember their keys REMEMBER more: a duplicate then is\n"
            "answered EXPIRED (not executed again, its response gone) instead\n"
            "of missed; \"none\" for no such policy. The default drain does not\n"
            "wait for the markers to go");
  CLI::Option* strategies =
      Value(kPolicies, "--strategies", "LIST", "reclaim,compaction-only",
            "reclaim (compaction filter + Engine::ReclaimExpired on a\n"
            "schedule), compaction-only (compaction filter in write-triggered\n"
            "compactions only), windows (the expiry-window layout: one column\n"
            "family per window of death times, dropped whole by the same\n"
            "ReclaimExpired schedule), journal (the journal layout: records\n"
            "appended to segment files, deleted whole by the same schedule\n"
            "once all their records are dead), journal-compressed (the same,\n"
            "records compressed with a dictionary per segment)");
  CLI::Option* window =
      Value(kPolicies, "--window", "D", "per policy: (longest TTL + remember) / 8",
            "windows: the width of an expiry window, 1s..30d. Default per\n"
            "policy: its longest TTL plus its remember period, divided by 8\n"
            "and rounded up to a whole minute (1h -> 8m, 1d -> 3h,\n"
            "7d -> 21h, 1d+remember30d -> 3d21h)");
  CLI::Option* window_merge_files =
      Value(kPolicies, "--window-merge-files", "N",
            std::to_string(EngineOptions().expiry_window_merge_files),
            "windows: merge a window's small table files once N have\n"
            "accumulated; 0 never merges (EngineOptions::\n"
            "expiry_window_merge_files)");

  CLI::Option* reclaim_every = Value(kSimulation, "--reclaim-every", "D", "10m",
                                     "simulated interval between ReclaimExpired calls");
  CLI::Option* sample_every =
      Value(kSimulation, "--sample-every", "D", "1h", "simulated interval between disk samples");
  CLI::Option* no_flush = Switch(kSimulation, "--no-flush",
                                 "do not flush the memtable before each sample (default: flush)");
  CLI::Option* drain =
      Value(kSimulation, "--drain", "D", "the longest TTL studied + 2h (+ the widest window)",
            "keep the clock running D after the last arrival, so expired\n"
            "data can be seen leaving the disk; with windows policies the\n"
            "default adds the widest window, which the last one must end");
  CLI::Option* write_buffer =
      Value(kSimulation, "--write-buffer", "SIZE", "4MiB", "RocksDB memtable size, e.g. 4MiB");
  CLI::Option* payload_bytes =
      Value(kSimulation, "--payload-bytes", "N", "100", "stored response size per record");
  CLI::Option* reclaim_fraction = Value(kSimulation, "--reclaim-fraction", "F", "0.5",
                                        "the engine's reclaim_min_expired_fraction");
  CLI::Option* rocksdb_options =
      Value(kSimulation, "--rocksdb-options", "STRING", "",
            "RocksDB options over the engine's own for every policy\n"
            "(EngineOptions::rocksdb_options), e.g. BlobDB:\n"
            "\"enable_blob_files=true;min_blob_size=0\"; a bad one fails the run");
  CLI::Option* work_dir = Value(kSimulation, "--work-dir", "DIR",
                                "a new temp dir, removed afterwards", "where the databases go");
  CLI::Option* keep_dbs =
      Switch(kSimulation, "--keep-dbs", "keep each policy's database (under the work dir)");

  CLI::Option* json = Value(kOutput, "--json", "FILE", "",
                            "write every figure as JSON (layout in docs/retention.md)");
  CLI::Option* out =
      Value(kOutput, "--out", "DIR", "", "write ttl_tradeoff.svg and disk_over_time.svg into DIR");
  CLI::Option* quick = Switch(kOutput, "--quick",
                              std::string("a small run (under a minute): --rate ") + kQuick.rate +
                                  " --duration " + kQuick.duration);
  CLI::Option* quiet = Switch(kOutput, "--quiet", "no progress line on stderr");

  Grammar() { app->footer(Footer()); }

  static std::string Footer() {
    std::string models;
    ModelParamSet defaults;
    for (DelayModel m : kAllModels) {
      models += "  " + std::string(ModelName(m)) + ": " + defaults.Describe(m) + "\n";
    }
    return "Model parameters (times in ms) and their defaults:\n" + models +
           "\nSizes accept B, K/KiB, M/MiB, G/GiB; durations ms, s, m, h, d (e.g. 1h30m).\n"
           "Exit codes: 0 ok, 1 the simulation failed, 2 bad command line.";
  }
};

}  // namespace

Result<Config> ParseCommandLine(int argc, const char* const* argv) {
  Config c;
  Grammar g;
  const std::vector<std::string_view> args(argv + std::min(argc, 1), argv + argc);
  Result<CliRequest> request = ParseCli(*g.app, args);
  if (!request.ok()) return request.status();
  if (*request != CliRequest::kRun) {
    c.help = *request == CliRequest::kHelp;
    c.version = *request == CliRequest::kVersion;
    return c;
  }
  // --quick sets defaults whatever its position; flags given explicitly still win.
  c.quick = g.quick->count() > 0;
  c.quiet = g.quiet->count() > 0;
  c.sim.flush_at_samples = g.no_flush->count() == 0;
  c.keep_dbs = g.keep_dbs->count() > 0;

  const Preset& preset = c.quick ? kQuick : kFull;
  const std::vector<std::string> params =
      g.param->count() > 0 ? g.param->as<std::vector<std::string>>() : std::vector<std::string>();
  std::vector<std::string> ns_ttls =
      g.ns_ttl->count() > 0 ? g.ns_ttl->as<std::vector<std::string>>() : std::vector<std::string>();

  c.trace_path = ValueOf(g.trace, "");
  if (!c.trace_path.empty()) {
    for (const CLI::Option* opt : {g.seed, g.rate, g.duration, g.mix, g.key_order}) {
      if (opt->count() > 0) {
        return Bad(opt->get_name(), "does not apply to a replayed --trace");
      }
    }
    if (!params.empty()) return Bad("--param", "does not apply to a replayed --trace");
  }

  // Workload.
  const std::string seed = ValueOf(g.seed, "1");
  {
    auto [end, ec] = std::from_chars(seed.data(), seed.data() + seed.size(), c.workload.seed);
    if (seed.empty() || ec != std::errc() || end != seed.data() + seed.size()) {
      return Bad("--seed", "'" + seed + "' is not a non-negative integer");
    }
  }
  const std::string rate = ValueOf(g.rate, preset.rate);
  auto rate_v = ParseNumber("--rate", rate);
  if (!rate_v.ok()) return rate_v.status();
  if (*rate_v <= 0 || *rate_v > 1e6) return Bad("--rate", "must be in (0, 1e6] per second");
  c.workload.rate_per_s = *rate_v;
  const std::string duration = ValueOf(g.duration, preset.duration);
  auto duration_v = ParsePositiveDurationMs(duration);
  if (!duration_v.ok()) return Bad("--duration", duration_v.status().message());
  c.workload.duration_ms = *duration_v;
  const std::string mix = ValueOf(g.mix, kDefaultMix);
  auto mix_v = ParseMix(mix);
  if (!mix_v.ok()) return Bad("--mix", mix_v.status().message());
  c.workload.mix = std::move(*mix_v);
  for (const std::string& p : params) {
    if (Status s = c.workload.params.Set(p); !s.ok()) return Bad("--param", s.message());
  }
  const std::string key_order = ValueOf(g.key_order, "random");
  if (key_order == "random")
    c.workload.key_order = KeyOrder::kRandom;
  else if (key_order == "time")
    c.workload.key_order = KeyOrder::kTime;
  else
    return Bad("--key-order", "'" + key_order + "' is not one of: random, time");

  // Policies.
  const std::string ttls = ValueOf(g.ttls, preset.ttls);
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
  const std::string remember = ValueOf(g.remember, kDefaultRemember);
  if (remember != "none") {
    auto parsed = ParseKeepRemember(remember);
    if (!parsed.ok()) return Bad("--remember", parsed.status().message());
    c.remembers = std::move(*parsed);
  }
  if (c.ttls_ms.empty() && c.ns_ttls.empty() && c.remembers.empty()) {
    return Bad("--ttls",
               "no policy left to study (--ttls none, --ns-ttl none and --remember none)");
  }
  const std::string strategies = ValueOf(g.strategies, "reclaim,compaction-only");
  for (std::string_view s : SplitList(strategies)) {
    auto strategy = ParseStrategy(s);
    if (!strategy.ok()) return Bad("--strategies", strategy.status().message());
    if (std::find(c.strategies.begin(), c.strategies.end(), *strategy) != c.strategies.end()) {
      return Bad("--strategies", "lists " + std::string(s) + " twice");
    }
    c.strategies.push_back(*strategy);
  }
  const bool windows =
      std::find(c.strategies.begin(), c.strategies.end(), Strategy::kWindows) != c.strategies.end();
  if (g.window->count() > 0) {
    if (!windows) return Bad("--window", "applies to the windows strategy only (see --strategies)");
    auto v = ParsePositiveDurationMs(g.window->as<std::string>());
    if (!v.ok()) return Bad("--window", v.status().message());
    if (*v < EngineOptions::kMinExpiryWindowMs || *v > EngineOptions::kMaxExpiryWindowMs) {
      return Bad("--window", "'" + g.window->as<std::string>() + "' is not within 1s..30d");
    }
    c.window_ms = *v;
  }
  if (g.window_merge_files->count() > 0) {
    if (!windows) {
      return Bad("--window-merge-files", "applies to the windows strategy only (see --strategies)");
    }
    const std::string text = g.window_merge_files->as<std::string>();
    int n = -1;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (ec != std::errc() || end != text.data() + text.size() || n < 0 || n == 1 ||
        n > EngineOptions::kMaxExpiryWindowMergeFiles) {
      return Bad("--window-merge-files",
                 "'" + text + "' is not 0 or a number of files in 2.." +
                     std::to_string(EngineOptions::kMaxExpiryWindowMergeFiles));
    }
    c.sim.window_merge_files = n;
  }

  // Simulation.
  auto duration_flag = [&](const CLI::Option* opt, const std::string& fallback,
                           int64_t* out) -> Status {
    auto v = ParsePositiveDurationMs(ValueOf(opt, fallback));
    if (!v.ok()) return Bad(opt->get_name(), v.status().message());
    *out = *v;
    return Status::Ok();
  };
  if (Status s = duration_flag(g.reclaim_every, "10m", &c.sim.reclaim_every_ms); !s.ok()) return s;
  if (Status s = duration_flag(g.sample_every, "1h", &c.sim.sample_every_ms); !s.ok()) return s;
  if (g.drain->count() > 0) {
    auto v = ParseDurationMs(g.drain->as<std::string>());
    if (!v.ok()) return Bad("--drain", v.status().message());
    c.drain_ms = *v;
  }
  auto write_buffer = ParseBytes("--write-buffer", ValueOf(g.write_buffer, "4MiB"));
  if (!write_buffer.ok()) return write_buffer.status();
  if (*write_buffer < (64u << 10)) return Bad("--write-buffer", "must be at least 64KiB");
  c.sim.write_buffer_bytes = *write_buffer;
  auto payload = ParseBytes("--payload-bytes", ValueOf(g.payload_bytes, "100"));
  if (!payload.ok()) return payload.status();
  if (*payload > (1u << 20))
    return Bad("--payload-bytes", "must be at most 1MiB (the engine's limit)");
  c.sim.payload_bytes = *payload;
  auto fraction = ParseNumber("--reclaim-fraction", ValueOf(g.reclaim_fraction, "0.5"));
  if (!fraction.ok()) return fraction.status();
  if (*fraction <= 0 || *fraction > 1) return Bad("--reclaim-fraction", "must be in (0, 1]");
  c.sim.reclaim_min_expired_fraction = *fraction;
  c.sim.rocksdb_options = ValueOf(g.rocksdb_options, "");

  c.work_dir = ValueOf(g.work_dir, "");
  c.json_path = ValueOf(g.json, "");
  c.out_dir = ValueOf(g.out, "");

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
  if (windows) {
    c.settings.emplace_back("window", c.window_ms ? FormatDurationMs(*c.window_ms)
                                                  : "per policy, (longest TTL + remember) / 8");
    c.settings.emplace_back("window-merge-files", std::to_string(c.sim.window_merge_files));
  }
  c.settings.emplace_back("reclaim-every", FormatDurationMs(c.sim.reclaim_every_ms));
  c.settings.emplace_back("sample-every",
                          FormatDurationMs(c.sim.sample_every_ms) +
                              (c.sim.flush_at_samples ? " (flush first)" : " (no flush)"));
  c.settings.emplace_back("write-buffer", std::to_string(c.sim.write_buffer_bytes) + " B");
  c.settings.emplace_back("payload-bytes", std::to_string(c.sim.payload_bytes));
  if (!c.sim.rocksdb_options.empty())
    c.settings.emplace_back("rocksdb-options", c.sim.rocksdb_options);
  return c;
}

std::string HelpText() { return Grammar().app->help(); }

}  // namespace idem::retention
