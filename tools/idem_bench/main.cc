// idem-bench: a load generator for idemstored. All logic is in the idem_bench library
// (bench_config, load_generator and what it runs, the reports); this only wires it.
//
// Exit codes: 0 after a run (errors are reported, not fatal), 1 when the server cannot be
// reached, 2 for bad flags.
#include <cstdio>
#include <string_view>
#include <vector>

#include "bench_config.h"
#include "cli_app.h"
#include "json_report.h"
#include "load_generator.h"
#include "text_report.h"

int main(int argc, char** argv) {
  std::vector<std::string_view> args(argv + 1, argv + argc);
  idem::Result<idem::bench::BenchConfig> config = idem::bench::ParseBenchFlags(args);
  if (!config.ok()) return idem::ReportUsageError("idem-bench", config.status());
  if (config->help) {
    std::fputs(idem::bench::BenchUsage().c_str(), stdout);
    return 0;
  }
  if (config->version) {
    std::printf("%s\n", idem::VersionLine("idem-bench").c_str());
    return 0;
  }
  idem::Result<idem::bench::BenchReport> report = idem::bench::RunBenchmark(*config);
  if (!report.ok()) {
    std::fprintf(stderr, "idem-bench: %s\n", report.status().ToString().c_str());
    return 1;
  }
  const std::string out = config->json ? idem::bench::FormatJson(*config, *report)
                                       : idem::bench::FormatText(*config, *report);
  std::fputs(out.c_str(), stdout);
  return 0;
}
