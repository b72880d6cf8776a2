// idemstored: serves an idemstore database over TCP. All logic lives in net/ (Server), engine/
// (Engine) and tools/server_config/ (ParseServerFlags, PlanFdBudget); this file only wires them
// and logs start and stop.
//
// Exit codes: 0 after a clean stop (SIGINT/SIGTERM) and after --help, --version and
// --print-config, 2 for bad flags or a bad --config file (including a --max-connections the
// open-files limit cannot serve), 1 when the database or the listening socket cannot be opened.
// Flags, the descriptor budget and the listening socket are checked before the database is opened:
// a refused start creates no data directory.
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "cli_app.h"
#include "duration.h"
#include "fd_budget.h"
#include "idem/server.h"
#include "idem/serving.h"
#include "server_flags.h"

#ifndef IDEM_ALLOCATOR
#define IDEM_ALLOCATOR "libc"
#endif
#ifdef IDEM_WITH_JEMALLOC
// jemalloc reads this at start-up (MALLOC_CONF in the environment still overrides it): freed
// pages go back to the OS within about a second, purged by jemalloc's own background thread,
// instead of staying resident for 10 s. After a burst of flushes and compactions the server's
// resident memory then shows what it uses (10M records, 2 s after loading: 375 -> 337 MiB).
extern "C" {
extern const char* malloc_conf;
const char* malloc_conf =
    "background_thread:true,max_background_threads:1,dirty_decay_ms:1000,muzzy_decay_ms:0";
}
#endif
#ifndef IDEM_VERSION
#define IDEM_VERSION "dev"
#endif

int main(int argc, char** argv) {
  std::vector<std::string_view> args(argv + 1, argv + argc);
  idem::Result<idem::ServerFlags> flags = idem::ParseServerFlags(args);
  if (!flags.ok()) return idem::ReportUsageError("idemstored", flags.status());
  if (flags->help) {
    std::fputs(idem::ServerFlagsUsage().c_str(), stdout);
    return 0;
  }
  if (flags->version) {
    std::printf("%s\n", idem::VersionLine("idemstored").c_str());
    return 0;
  }
  if (flags->print_config) {
    std::fputs(flags->effective_config.c_str(), stdout);
    return 0;
  }

  // Everything that can refuse the start runs before the database is opened, which may create
  // its directory: a refused start leaves nothing behind.
  idem::Result<idem::OpenFilesLimit> limit = idem::RaiseOpenFilesLimit();
  if (!limit.ok()) {
    std::fprintf(stderr, "idemstored: %s\n", limit.status().ToString().c_str());
    return 1;
  }
  idem::FdBudgetRequest budget_request;
  budget_request.limit = *limit;
  budget_request.max_connections = flags->server.max_connections;
  budget_request.max_connections_explicit = flags->max_connections_set;
  budget_request.max_refusing_connections = flags->server.max_refusing_connections;
  if (flags->server.http)
    budget_request.http_connections =
        flags->server.http->max_connections + flags->server.http->max_refusing_connections;
  idem::Result<idem::FdBudget> budget = idem::PlanFdBudget(budget_request);
  if (!budget.ok()) {
    std::fprintf(stderr, "idemstored: %s\n", budget.status().ToString().c_str());
    return 2;
  }
  if (!budget->warning.empty()) std::fprintf(stderr, "idemstored: %s\n", budget->warning.c_str());

  idem::ServerOptions server_options = flags->server;
  server_options.handle_signals = true;
  server_options.max_connections = budget->max_connections;
  idem::Result<std::unique_ptr<idem::Server>> server = idem::Server::Listen(server_options);
  if (!server.ok()) {
    std::fprintf(stderr, "idemstored: %s\n", server.status().ToString().c_str());
    return 1;
  }

  idem::EngineOptions engine_options = flags->engine;
  engine_options.max_open_files = budget->rocksdb_max_open_files;
  idem::Result<std::unique_ptr<idem::ServingEngine>> engine =
      idem::ServingEngine::Open(flags->data_dir, engine_options);
  if (!engine.ok()) {
    std::fprintf(stderr, "idemstored: cannot open %s: %s\n", flags->data_dir.c_str(),
                 engine.status().ToString().c_str());
    return 1;
  }
  if (idem::Status s = (*server)->Serve(engine->get()); !s.ok()) {
    std::fprintf(stderr, "idemstored: %s\n", s.ToString().c_str());
    return 1;
  }

  const char* durability = flags->engine.durability == idem::Durability::kSync ? "sync" : "async";
  const char* background =
      flags->engine.background_priority == idem::EngineOptions::BackgroundPriority::kLow ? "low"
                                                                                         : "normal";
  // Tests read the real ports from this line: keep "listening on HOST:PORT" and
  // "http=HOST:PORT" stable.
  std::string http = "off";
  if (server_options.http) {
    const std::string& host = server_options.http->host;
    http = (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
           std::to_string((*server)->http_port());
  }
  std::fprintf(
      stderr,
      "idemstored %s: listening on %s http=%s data=%s durability=%s io_threads=%d "
      "engine_threads=%d max_connections=%zu idle_timeout=%s background=%s malloc=%s "
      "open_files=%llu rocksdb_max_open_files=%d\n",
      IDEM_VERSION, (*server)->address().c_str(), http.c_str(), flags->data_dir.c_str(), durability,
      server_options.io_threads, server_options.engine_threads, server_options.max_connections,
      idem::FormatDurationMs(server_options.idle_timeout_ms).c_str(), background, IDEM_ALLOCATOR,
      static_cast<unsigned long long>(limit->soft), engine_options.max_open_files);

  (*server)->Wait();
  (*server)->Stop();  // drains connections and the commit queue
  server->reset();
  engine->reset();  // closes the database (WAL synced)
  std::fprintf(stderr, "idemstored %s: stopped; database %s closed\n", IDEM_VERSION,
               flags->data_dir.c_str());
  return 0;
}
