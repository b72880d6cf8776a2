// idem_gateway_bench: what the Idempotency-Key gateway (docs/gateway.md) costs against calling
// its upstream directly, measured in one run so that every figure is also a ratio to the direct
// one (the machine may be shared: ratios travel, absolute figures less so).
//
// It starts FastUpstream in this process and the built idemstored with --gateway-upstream on it
// (a fresh database per durability), then, for each number of connections and each upstream
// delay, runs rounds of four sides, interleaved (their order rotates every round, so that drift
// touches them alike), each a closed loop of keep-alive HTTP/1.1 POSTs (http_load.h):
//   direct       to the upstream itself
//   first        through the gateway with a new Idempotency-Key: Begin, the upstream call,
//                Complete, the answer
//   replay       through the gateway with a key already completed: Begin finds the stored
//                response; no upstream call
//   passthrough  through the gateway without a key: proxied only
// and prints each side's requests/s, p50 and p99 latency and their ratios to direct, checking
// every answer (201; Idempotent-Replayed on replays only) and the upstream's executions (one per
// direct, first and passthrough request, none per replay).
//
// Exit codes: 0 after a run whose answers and executions were all as expected; 1 otherwise, or
// when idemstored cannot start; 2 for bad flags.
#include <sched.h>
#include <signal.h>
#include <stdlib.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "cli_app.h"
#include "duration.h"
#include "fast_upstream.h"
#include "http_load.h"
#include "support/server_process.h"

namespace idem::bench {
namespace {

struct GatewayBenchConfig {
  std::string idemstored = IDEMSTORED_PATH;
  std::vector<std::string> durabilities = {"sync", "async"};
  std::vector<int> connections = {1, 16};
  std::vector<int64_t> upstream_delays_ms = {0, 1, 10};
  int rounds = 3;
  int64_t phase_ms = 1'000;
  int64_t warmup_ms = 300;
  // idemstored on CPU 0, this program (the load and the upstream) on CPU 1, as the other
  // measurements of docs/performance.md are pinned.
  bool pin = false;
};

std::vector<std::string> SplitCommas(const std::string& text) {
  std::vector<std::string> parts;
  size_t begin = 0;
  while (true) {
    const size_t comma = text.find(',', begin);
    parts.push_back(text.substr(begin, comma - begin));
    if (comma == std::string::npos) return parts;
    begin = comma + 1;
  }
}

Result<int> ParseCount(std::string_view flag, const std::string& text, int max) {
  int n = 0;
  try {
    size_t used = 0;
    n = std::stoi(text, &used);
    if (used != text.size()) n = 0;
  } catch (const std::exception&) {
    n = 0;
  }
  if (n < 1 || n > max) {
    return Status::InvalidArgument(std::string(flag) + ": expected an integer in [1, " +
                                   std::to_string(max) + "], got \"" + text + "\"");
  }
  return n;
}

Result<int64_t> ParseDuration(std::string_view flag, const std::string& text) {
  Result<int64_t> ms = ParseDurationMs(text);
  if (!ms.ok()) return Status::InvalidArgument(std::string(flag) + ": " + ms.status().message());
  return ms;
}

Result<GatewayBenchConfig> ParseFlags(std::span<const std::string_view> args, bool* help) {
  GatewayBenchConfig config;
  auto app = NewCliApp("idem_gateway_bench",
                       "The Idempotency-Key gateway's cost against its upstream called directly "
                       "(first requests, replays, pass-through), in one interleaved run.");
  std::string idemstored = config.idemstored, durability = "sync,async", connections = "1,16",
              delays = "0ms,1ms,10ms", rounds = "3", phase = "1s", warmup = "300ms";
  app->add_option("--idemstored", idemstored, "the idemstored binary")
      ->type_name("PATH")
      ->default_str(idemstored);
  app->add_option("--durability", durability, "idemstored's --durability, one run each")
      ->type_name("LIST")
      ->default_str(durability);
  app->add_option("--connections", connections, "closed-loop connections, one run each")
      ->type_name("LIST")
      ->default_str(connections);
  app->add_option("--upstream-delays", delays, "how long the upstream takes, one run each")
      ->type_name("LIST")
      ->default_str(delays);
  app->add_option("--rounds", rounds, "rounds of the four sides")
      ->type_name("N")
      ->default_str(rounds);
  app->add_option("--phase", phase, "one side's share of a round")
      ->type_name("DUR")
      ->default_str(phase);
  app->add_option("--warmup", warmup, "each side once, not measured, before the rounds")
      ->type_name("DUR")
      ->default_str(warmup);
  AddSwitch(*app, "--pin",
            "idemstored on CPU 0 (taskset), this program's load and upstream on CPU 1");
  Result<CliRequest> request = ParseCli(*app, args);
  if (!request.ok()) return request.status();
  if (*request != CliRequest::kRun) {
    *help = true;
    std::fputs(*request == CliRequest::kHelp ? app->help().c_str()
                                             : (VersionLine("idem_gateway_bench") + "\n").c_str(),
               stdout);
    return config;
  }
  config.idemstored = idemstored;
  config.pin = app->get_option("--pin")->count() > 0;
  config.durabilities = SplitCommas(durability);
  for (const std::string& d : config.durabilities) {
    if (d != "sync" && d != "async") {
      return Status::InvalidArgument("--durability: expected sync or async, got \"" + d + "\"");
    }
  }
  config.connections.clear();
  for (const std::string& c : SplitCommas(connections)) {
    Result<int> n = ParseCount("--connections", c, 1024);
    if (!n.ok()) return n.status();
    config.connections.push_back(*n);
  }
  config.upstream_delays_ms.clear();
  for (const std::string& d : SplitCommas(delays)) {
    Result<int64_t> ms = ParseDuration("--upstream-delays", d);
    if (!ms.ok()) return ms.status();
    config.upstream_delays_ms.push_back(*ms);
  }
  Result<int> n = ParseCount("--rounds", rounds, 1000);
  if (!n.ok()) return n.status();
  config.rounds = *n;
  Result<int64_t> ms = ParseDuration("--phase", phase);
  if (!ms.ok()) return ms.status();
  if (*ms == 0) return Status::InvalidArgument("--phase: must be positive");
  config.phase_ms = *ms;
  ms = ParseDuration("--warmup", warmup);
  if (!ms.ok()) return ms.status();
  config.warmup_ms = *ms;
  return config;
}

constexpr int kSides = 4;
enum SideIndex { kDirect = 0, kFirst = 1, kReplay = 2, kPassthrough = 3 };

std::array<LoadSide, kSides> Sides(uint16_t upstream_port, uint16_t gateway_port) {
  return {{{"direct", upstream_port, KeyUse::kNone, false},
           {"first", gateway_port, KeyUse::kNew, false},
           {"replay", gateway_port, KeyUse::kCompleted, true},
           {"passthrough", gateway_port, KeyUse::kNone, false}}};
}

double Ms(uint64_t micros) { return static_cast<double>(micros) / 1000.0; }

// One (durability, connections, delay) run: warmup, rounds, the table. False if an answer or the
// upstream's executions were not as expected.
bool RunOne(const GatewayBenchConfig& config, FastUpstream& upstream, HttpLoad& load,
            const std::array<LoadSide, kSides>& sides, const std::string& title) {
  std::array<LoadResult, kSides> results;
  std::array<uint64_t, kSides> calls{};
  LoadResult warmup;
  for (const LoadSide& side : sides) {
    if (Status st = load.Run(side, std::chrono::milliseconds(config.warmup_ms), &warmup);
        !st.ok()) {
      std::fprintf(stderr, "idem_gateway_bench: %s: %s\n", side.name.c_str(),
                   st.ToString().c_str());
      return false;
    }
  }
  for (int round = 0; round < config.rounds; ++round) {
    for (int i = 0; i < kSides; ++i) {
      const int s = (i + round) % kSides;
      const uint64_t before = upstream.executions();
      if (Status st = load.Run(sides[s], std::chrono::milliseconds(config.phase_ms), &results[s]);
          !st.ok()) {
        std::fprintf(stderr, "idem_gateway_bench: %s: %s\n", sides[s].name.c_str(),
                     st.ToString().c_str());
        return false;
      }
      calls[s] += upstream.executions() - before;
    }
  }

  bool as_expected = warmup.unexpected == 0;
  std::printf("\n%s: %d rounds of %s per side\n", title.c_str(), config.rounds,
              FormatDurationMs(config.phase_ms).c_str());
  std::printf(
      "| side        | requests |   req/s | p50 ms | p99 ms | upstream calls | req/s vs direct "
      "| p50 vs direct |\n");
  std::printf(
      "|-------------|---------:|--------:|-------:|-------:|---------------:|----------------:"
      "|--------------:|\n");
  const double direct_rate = results[kDirect].requests / results[kDirect].seconds;
  const double direct_p50 = Ms(results[kDirect].latency.Percentile(0.5));
  for (int s = 0; s < kSides; ++s) {
    const LoadResult& r = results[s];
    const double rate = r.requests / r.seconds;
    const double p50 = Ms(r.latency.Percentile(0.5));
    std::printf("| %-11s | %8llu | %7.0f | %6.3f | %6.3f | %14llu | %15.2f | %13.2f |\n",
                sides[s].name.c_str(), static_cast<unsigned long long>(r.requests), rate, p50,
                Ms(r.latency.Percentile(0.99)), static_cast<unsigned long long>(calls[s]),
                rate / direct_rate, p50 / direct_p50);
    const uint64_t expected_calls = s == kReplay ? 0 : r.requests;
    if (calls[s] != expected_calls) {
      std::printf("  ! %s: the upstream executed %llu requests, expected %llu\n",
                  sides[s].name.c_str(), static_cast<unsigned long long>(calls[s]),
                  static_cast<unsigned long long>(expected_calls));
      as_expected = false;
    }
    if (r.unexpected > 0) {
      std::printf("  ! %s: %llu unexpected answers, the first: %s\n", sides[s].name.c_str(),
                  static_cast<unsigned long long>(r.unexpected), r.first_unexpected.c_str());
      as_expected = false;
    }
  }
  if (warmup.unexpected > 0) {
    std::printf("  ! warmup: %llu unexpected answers, the first: %s\n",
                static_cast<unsigned long long>(warmup.unexpected),
                warmup.first_unexpected.c_str());
  }
  std::printf("first request: %+.3f ms at p50 over direct (goal: under 0.5 ms on loopback)\n",
              Ms(results[kFirst].latency.Percentile(0.5)) - direct_p50);
  std::printf("replay: p50 %.3f ms, %.2f x the upstream call it saves (goal: under 1)\n",
              Ms(results[kReplay].latency.Percentile(0.5)),
              Ms(results[kReplay].latency.Percentile(0.5)) / direct_p50);
  std::fflush(stdout);
  return as_expected;
}

// idemstored with the gateway in front of `upstream`, on a fresh database in `dir`.
bool StartIdemstored(const GatewayBenchConfig& config, const std::string& durability,
                     uint16_t upstream_port, const std::string& dir, testing::ServerProcess& server,
                     uint16_t* gateway_port) {
  std::vector<std::string> args = {"--listen",
                                   "127.0.0.1:0",
                                   "--data",
                                   dir,
                                   "--durability",
                                   durability,
                                   "--gateway-upstream",
                                   "http://127.0.0.1:" + std::to_string(upstream_port),
                                   "--gateway-listen",
                                   "127.0.0.1:0"};
  if (config.pin) args.insert(args.begin(), {"-c", "0", config.idemstored});
  if (!server.Start(args)) {
    std::fprintf(stderr, "idem_gateway_bench: %s did not start:\n%s\n", config.idemstored.c_str(),
                 server.output().c_str());
    return false;
  }
  const std::string output = server.output();
  const std::string field = " gateway=127.0.0.1:";
  const size_t at = output.find(field);
  if (at == std::string::npos) {
    std::fprintf(stderr, "idem_gateway_bench: no %s in idemstored's start line:\n%s\n",
                 field.c_str() + 1, output.c_str());
    return false;
  }
  *gateway_port = static_cast<uint16_t>(std::stoi(output.substr(at + field.size())));
  return true;
}

int Main(const GatewayBenchConfig& config) {
  char dir_template[] = "/tmp/idem_gateway_bench.XXXXXX";
  if (::mkdtemp(dir_template) == nullptr) {
    std::perror("idem_gateway_bench: mkdtemp");
    return 1;
  }
  const std::string dir = dir_template;
  if (config.pin) {
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    CPU_SET(1, &cpus);
    if (::sched_setaffinity(0, sizeof cpus, &cpus) != 0) {  // before any thread starts
      std::perror("idem_gateway_bench: sched_setaffinity(CPU 1)");
      return 1;
    }
  }
  FastUpstream upstream;
  bool as_expected = true;
  for (const std::string& durability : config.durabilities) {
    testing::ServerProcess server(config.pin ? "/usr/bin/taskset" : config.idemstored);
    uint16_t gateway_port = 0;
    if (!StartIdemstored(config, durability, upstream.port(), dir + "/" + durability, server,
                         &gateway_port)) {
      std::filesystem::remove_all(dir);
      return 1;
    }
    const std::array<LoadSide, kSides> sides = Sides(upstream.port(), gateway_port);
    for (int connections : config.connections) {
      HttpLoad load(connections, durability + "-" + std::to_string(connections));
      for (int64_t delay : config.upstream_delays_ms) {
        upstream.set_delay_ms(delay);
        as_expected &= RunOne(config, upstream, load, sides,
                              "durability " + durability + ", " + std::to_string(connections) +
                                  " connections, upstream delay " + FormatDurationMs(delay));
      }
    }
    server.Signal(SIGTERM);
    if (!server.WaitExit(std::chrono::seconds(30)).has_value()) {
      std::fprintf(stderr, "idem_gateway_bench: idemstored did not stop within 30 s\n");
      as_expected = false;
    }
  }
  std::filesystem::remove_all(dir);
  if (!as_expected) std::printf("\nidem_gateway_bench: some answers were not as expected (!)\n");
  return as_expected ? 0 : 1;
}

}  // namespace
}  // namespace idem::bench

int main(int argc, char** argv) {
  std::vector<std::string_view> args(argv + 1, argv + argc);
  bool help = false;
  idem::Result<idem::bench::GatewayBenchConfig> config = idem::bench::ParseFlags(args, &help);
  if (!config.ok()) return idem::ReportUsageError("idem_gateway_bench", config.status());
  if (help) return 0;
  return idem::bench::Main(*config);
}
