#include "load_generator.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "proc_cpu.h"
#include "text_report.h"
#include "tls_context.h"
#include "wire_client.h"
#include "worker.h"

namespace idem::bench {
namespace {

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

}  // namespace

Result<BenchReport> RunBenchmark(const BenchConfig& config) {
  const uint64_t seed = config.seed ? config.seed : static_cast<uint64_t>(NowNs());
  std::string prefix = config.key_prefix;
  if (prefix.empty()) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "b%06" PRIx64, Rng(seed).Next() & 0xffffff);
    prefix = buf;
  }
  std::shared_ptr<boost::asio::ssl::context> tls;
  if (config.tls) {
    Result<std::shared_ptr<boost::asio::ssl::context>> context = MakeClientTlsContext(*config.tls);
    if (!context.ok()) return context.status();
    tls = std::move(*context);
  }
  std::vector<std::vector<std::unique_ptr<BenchLink>>> links(static_cast<size_t>(config.threads));
  for (int i = 0; i < config.connections; ++i) {
    Result<std::unique_ptr<BenchLink>> link = Connect(config, tls ? tls->native_handle() : nullptr);
    if (!link.ok()) return link.status();
    links[static_cast<size_t>(i % config.threads)].push_back(std::move(*link));
  }
  Progress progress;
  std::atomic<uint64_t> preload_next{0};
  std::vector<std::unique_ptr<Worker>> workers;
  for (int t = 0; t < config.threads; ++t) {
    workers.push_back(std::make_unique<Worker>(config, t, std::move(links[static_cast<size_t>(t)]),
                                               prefix, seed + 7919 * (t + 1), &preload_next,
                                               &progress));
  }
  auto run_all = [&](Phase phase, int64_t start, int64_t end, uint64_t limit_per_thread,
                     bool print) {
    std::atomic<int> running{config.threads};
    std::vector<std::thread> threads;
    for (auto& w : workers) {
      threads.emplace_back([&, w = w.get()] {
        w->Run(phase, start, end, limit_per_thread);
        running.fetch_sub(1);
      });
    }
    int64_t next_print = start + 1'000'000'000;
    while (running.load() > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      const int64_t now = NowNs();
      if (print && now >= next_print) {
        std::lock_guard<std::mutex> lock(progress.mu);
        std::fprintf(stderr,
                     "[%3" PRId64 "s] %9.0f ops/s  p50 %s ms  p99 %s ms  max %s ms  errors %" PRIu64
                     "\n",
                     (now - start) / 1'000'000'000,
                     progress.ops / ((now - next_print + 1'000'000'000) / 1e9),
                     FormatMs(progress.latency.Percentile(0.5)).c_str(),
                     FormatMs(progress.latency.Percentile(0.99)).c_str(),
                     FormatMs(progress.latency.max()).c_str(), progress.errors);
        progress.latency.Reset();
        progress.ops = progress.errors = 0;
        next_print = now + 1'000'000'000;
      }
    }
    for (auto& t : threads) t.join();
  };

  if (config.preload) {
    const int64_t start = NowNs();
    run_all(Phase::kPreload, start, INT64_MAX, 0, false);
    BenchReport preload;
    for (auto& w : workers) {
      for (size_t i = 0; i < preload.errors.size(); ++i) preload.errors[i] += w->report().errors[i];
      for (size_t i = 0; i < preload.outcomes.size(); ++i) {
        preload.outcomes[i] += w->report().outcomes[i];
      }
    }
    preload.elapsed_s = (NowNs() - start) / 1e9;
    if (config.progress) {
      std::fprintf(stderr, "preloaded %" PRIu64 " keys in %.1f s (%" PRIu64 " errors)\n",
                   config.keys, preload.elapsed_s, preload.error_count());
    }
    if (config.preload_only) {
      preload.ops = preload.requests = config.keys;  // ops counted as keys loaded
      return preload;
    }
  }

  const double server_cpu0 = config.server_pid ? ProcessCpuSeconds(config.server_pid) : -1;
  const std::map<std::string, double> server_threads0 =
      config.server_pid ? ThreadCpuSecondsByName(config.server_pid)
                        : std::map<std::string, double>{};
  const double cpu0 = CpuSeconds();
  const int64_t start = NowNs();
  const int64_t end = config.requests ? INT64_MAX : start + config.duration_ms * 1'000'000;
  const uint64_t limit =
      config.requests ? (config.requests + config.threads - 1) / config.threads : 0;
  run_all(Phase::kMeasure, start, end, limit, config.progress);

  BenchReport total;
  int64_t last = start;
  for (auto& w : workers) {
    BenchReport& r = w->report();
    total.requests += r.requests;
    total.ops += r.ops;
    total.flows += r.flows;
    total.latency.Merge(r.latency);
    for (size_t i = 0; i < total.outcomes.size(); ++i) total.outcomes[i] += r.outcomes[i];
    for (size_t i = 0; i < total.errors.size(); ++i) total.errors[i] += r.errors[i];
    for (size_t i = 0; i < total.requests_by_kind.size(); ++i) {
      total.requests_by_kind[i] += r.requests_by_kind[i];
    }
    last = std::max(last, w->last_response_ns());
  }
  total.elapsed_s = (last - start) / 1e9;
  total.client_cpu_s = CpuSeconds() - cpu0;
  if (server_cpu0 >= 0) {
    const double server_cpu1 = ProcessCpuSeconds(config.server_pid);
    if (server_cpu1 >= 0) total.server_cpu_s = server_cpu1 - server_cpu0;
    for (const auto& [name, seconds] : ThreadCpuSecondsByName(config.server_pid)) {
      auto before = server_threads0.find(name);
      total.server_cpu_s_by_thread[name] =
          seconds - (before == server_threads0.end() ? 0 : before->second);
    }
  }
  return total;
}

}  // namespace idem::bench
