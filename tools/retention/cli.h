// Command line of idem-retention: every flag, its default, and the --quick preset. Parsing
// never exits or prints: it returns the configuration or an InvalidArgument the caller prints
// (exit code 2).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "idem/result.h"
#include "policy.h"
#include "simulator.h"
#include "workload.h"

namespace idem::retention {

struct Config {
  bool help = false;     // --help: print HelpText() and exit 0
  bool version = false;  // --version: print the version and exit 0
  bool quick = false;
  bool quiet = false;  // no progress line
  WorkloadSpec workload;
  std::string trace_path;  // non-empty: replay this trace instead of generating
  std::vector<int64_t> ttls_ms;
  std::vector<NsTtlSpec> ns_ttls;
  std::vector<KeepRemember> remembers;
  std::vector<Strategy> strategies;
  std::optional<int64_t> window_ms;  // --window; unset: DefaultWindowMs per windows policy
  SimOptions sim;
  std::optional<int64_t> drain_ms;  // unset: the longest TTL + 2h + the widest window
  std::string work_dir;             // empty: a fresh temporary directory, removed afterwards
  bool keep_dbs = false;
  std::string json_path;
  std::string out_dir;
  // Flag -> value as in force after parsing (defaults included), echoed by the reports.
  std::vector<std::pair<std::string, std::string>> settings;
};

// argv[0] is skipped; "--flag value" and "--flag=value" (tools/common/cli_app.h). InvalidArgument
// for an unknown flag, a missing or bad value, or flags that contradict each other (e.g. --trace
// with --mix). With --help or --version nothing else is checked.
Result<Config> ParseCommandLine(int argc, const char* const* argv);

// The --help text: usage, every flag with its default, the models and their parameters.
std::string HelpText();

}  // namespace idem::retention
