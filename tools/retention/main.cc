// idem-retention: how long should an idempotency key live? Replays first requests and their
// late duplicates against several retention policies, each on its own Engine in simulated time,
// and reports duplicates caught/missed against what the disk paid. See docs/retention.md.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>

#include "cli.h"
#include "cli_app.h"
#include "duration.h"
#include "json_report.h"
#include "plots.h"
#include "report_table.h"
#include "simulator.h"
#include "study.h"
#include "text_file.h"
#include "trace_reader.h"
#include "workload.h"

namespace idem::retention {
namespace {

// Prints "[3/10 24h/reclaim] sim 1d2h/3d4h  events 54%  caught 123 missed 4  12s" to stderr
// about once a second: on a terminal overwriting one line, otherwise one line per report.
class ProgressLine {
 public:
  ProgressLine(bool enabled, size_t policies)
      : enabled_(enabled),
        tty_(isatty(STDERR_FILENO) != 0),
        policies_(policies),
        start_(std::chrono::steady_clock::now()),
        last_(start_) {}

  void Update(size_t index, const Progress& p) {
    if (!enabled_) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_ < std::chrono::seconds(1)) return;
    last_ = now;
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    const double pct = p.events_total == 0 ? 100.0
                                           : 100.0 * static_cast<double>(p.events_done) /
                                                 static_cast<double>(p.events_total);
    std::fprintf(stderr,
                 "%s[%zu/%zu %s] sim %s/%s  events %.0f%%  caught %llu missed %llu  %.0fs%s",
                 tty_ ? "\r\033[K" : "", index + 1, policies_, p.policy->name.c_str(),
                 FormatDurationRoundedMs(p.sim_now_ms).c_str(),
                 FormatDurationRoundedMs(p.sim_end_ms).c_str(), pct,
                 static_cast<unsigned long long>(p.caught),
                 static_cast<unsigned long long>(p.missed), elapsed, tty_ ? "" : "\n");
    std::fflush(stderr);
    dirty_ = tty_;
  }
  void Done() {
    if (dirty_) std::fprintf(stderr, "\r\033[K");
    dirty_ = false;
  }

 private:
  bool enabled_, tty_;
  size_t policies_;
  std::chrono::steady_clock::time_point start_, last_;
  bool dirty_ = false;
};

int Fail(const Status& s) {
  std::fprintf(stderr, "idem-retention: %s\n", s.ToString().c_str());
  return 1;
}

int Main(int argc, char** argv) {
  auto config = ParseCommandLine(argc, argv);
  if (!config.ok()) return ReportUsageError("idem-retention", config.status());
  if (config->help) {
    std::fputs(HelpText().c_str(), stdout);
    return 0;
  }
  if (config->version) {
    std::printf("%s\n", VersionLine("idem-retention").c_str());
    return 0;
  }
  Config& c = *config;
  // Output paths are checked before minutes of simulation, not after.
  if (!c.json_path.empty()) {
    const std::filesystem::path parent = std::filesystem::path(c.json_path).parent_path();
    if (!parent.empty() && !std::filesystem::is_directory(parent)) {
      return ReportUsageError(
          "idem-retention",
          Status::InvalidArgument("--json: directory '" + parent.string() + "' does not exist"));
    }
  }
  if (!c.out_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(c.out_dir, ec);
    if (ec) {
      return ReportUsageError(
          "idem-retention",
          Status::InvalidArgument("--out: cannot create '" + c.out_dir + "': " + ec.message()));
    }
  }

  Result<Workload> workload =
      c.trace_path.empty() ? GenerateWorkload(c.workload) : ReadTraceFile(c.trace_path);
  if (!workload.ok()) return Fail(workload.status());
  const std::vector<Policy> policies =
      BuildPolicies(c.ttls_ms, c.ns_ttls, c.strategies, c.remembers, c.window_ms);
  // The last window must end, after the last expiry, before its records can be dropped.
  int64_t longest_ttl = 0, widest_window = 0;
  for (const Policy& p : policies) {
    longest_ttl = std::max(longest_ttl, p.MaxTtl());
    widest_window = std::max(widest_window, p.window_ms);
  }
  c.sim.drain_ms = c.drain_ms.value_or(longest_ttl + 2 * kHour + widest_window);

  std::string work_dir = c.work_dir;
  const bool temp_work_dir = work_dir.empty();
  if (temp_work_dir) {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base && *base ? base : "/tmp") + "/idem-retention-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) {
      return Fail(Status::IOError("cannot create a directory like " + pattern));
    }
    work_dir = pattern;
  }

  Study study;
  study.settings = c.settings;
  study.settings.emplace_back("drain", FormatDurationMs(c.sim.drain_ms));
  study.namespaces = workload->namespaces;
  study.events = workload->events.size();
  study.duplicates = workload->Duplicates();
  study.first_requests = study.events - study.duplicates;
  study.first_requests_end_ms = workload->first_requests_end_ms;
  study.last_arrival_ms = workload->EndMs();
  study.sim = c.sim;

  ProgressLine progress(!c.quiet, policies.size());
  Status failure;
  for (size_t i = 0; i < policies.size() && failure.ok(); ++i) {
    const std::string db_dir = work_dir + "/policy-" + std::to_string(i);
    std::error_code ec;
    std::filesystem::remove_all(db_dir, ec);
    auto result = RunPolicy(*workload, policies[i], c.sim, db_dir,
                            [&](const Progress& p) { progress.Update(i, p); });
    if (!c.keep_dbs) std::filesystem::remove_all(db_dir, ec);
    if (!result.ok()) {
      failure = result.status();
      break;
    }
    study.results.push_back(std::move(*result));
  }
  progress.Done();
  if (temp_work_dir && !c.keep_dbs) {
    std::error_code ec;
    std::filesystem::remove_all(work_dir, ec);
  }
  if (!failure.ok()) return Fail(failure);

  std::fputs(FormatTable(study).c_str(), stdout);
  if (!c.json_path.empty()) {
    if (Status s = WriteTextFile(c.json_path, FormatJson(study)); !s.ok()) return Fail(s);
  }
  if (!c.out_dir.empty()) {
    if (Status s = WritePlots(study, c.out_dir); !s.ok()) return Fail(s);
  }
  if (c.keep_dbs) std::fprintf(stderr, "databases kept under %s\n", work_dir.c_str());
  return 0;
}

}  // namespace
}  // namespace idem::retention

int main(int argc, char** argv) { return idem::retention::Main(argc, argv); }
