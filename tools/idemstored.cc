// idemstored: serves an idemstore database over TCP. All logic lives in net/ (Server), engine/
// (Engine) and tools/server_config/ (ParseServerFlags, PlanFdBudget); this file only wires them
// and logs start and stop.
//
// The log (stderr, --log-format text|json; idem/log.h): one line when the database starts opening
// (event "opening": clients are answered BUSY until the next), one once it serves ("start", with
// how long the open took), one at stop ("stop"), one per error condition (a refused start:
// "start_failed"; the engine's and the server's own events), nothing per request. Only a bad
// command line is reported before the format is known: a plain "idemstored: ..." line and exit 2.
//
// Exit codes: 0 after a clean stop (SIGINT/SIGTERM; one while the database opens ends the
// process there, after a stop line) and after --help, --version and
// --print-config, 2 for bad flags or a bad --config file (including a --max-connections the
// open-files limit cannot serve), 1 when the database or the listening socket cannot be opened.
// Flags, the descriptor budget and the listening socket are checked before the database is opened:
// a refused start creates no data directory.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "cli_app.h"
#include "duration.h"
#include "fd_budget.h"
#include "idem/log.h"
#include "idem/server.h"
#include "idem/serving.h"
#include "idem/version.h"
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
  const idem::LogSink log = idem::StderrLogSink(flags->server.log_format);
  const auto start_failed = [&log](const std::string& why) {
    log(idem::LogRecord(idem::LogLevel::kError, "start_failed", why));
  };

  // Everything that can refuse the start runs before the database is opened, which may create
  // its directory: a refused start leaves nothing behind.
  idem::Result<idem::OpenFilesLimit> limit = idem::RaiseOpenFilesLimit();
  if (!limit.ok()) {
    start_failed(limit.status().ToString());
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
  if (flags->server.gateway)
    budget_request.gateway_connections = idem::GatewayDescriptors(*flags->server.gateway);
  budget_request.journal_files = idem::JournalDescriptors(flags->engine);
  idem::Result<idem::FdBudget> budget = idem::PlanFdBudget(budget_request);
  if (!budget.ok()) {
    start_failed(budget.status().ToString());
    return 2;
  }
  if (!budget->warning.empty()) {
    log(idem::LogRecord(idem::LogLevel::kWarn, "fd_budget", budget->warning));
  }

  idem::ServerOptions server_options = flags->server;
  server_options.log = log;
  server_options.handle_signals = true;
  server_options.max_connections = budget->max_connections;
  idem::Result<std::unique_ptr<idem::Server>> server = idem::Server::Listen(server_options);
  if (!server.ok()) {
    start_failed(server.status().ToString());
    return 1;
  }

  // Opening can take a while (a journal is replayed): clients are told BUSY "opening" meanwhile.
  if (idem::Status s = (*server)->AnswerWhileOpening(); !s.ok()) {
    start_failed(s.ToString());
    return 1;
  }
  log(idem::LogRecord(idem::LogLevel::kInfo, "opening",
                      "opening database " + flags->data_dir +
                          "; clients are answered BUSY until "
                          "it is open")
          .With("data", flags->data_dir));
  const auto open_began = std::chrono::steady_clock::now();
  idem::EngineOptions engine_options = flags->engine;
  engine_options.log = log;
  engine_options.max_open_files = budget->rocksdb_max_open_files;
  // A stop asked for while the database opens (a journal's replay can take minutes) ends the
  // process there, saying so, as a crash would: every open is safe to interrupt (nothing has
  // been acknowledged, and the next start opens again). Looked for every 20 ms: the open runs
  // on this thread, and the server only records the request.
  std::atomic<bool> opening{true};
  std::thread interrupt_open([&] {
    while (opening.load()) {
      if ((*server)->StopRequested() && opening.exchange(false)) {
        log(idem::LogRecord(idem::LogLevel::kInfo, "stop",
                            "idemstored " + std::string(idem::Version()) +
                                ": stopped while opening; database " + flags->data_dir +
                                " left for the next start to open")
                .With("data", flags->data_dir));
        std::_Exit(0);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  idem::Result<std::unique_ptr<idem::ServingEngine>> engine =
      idem::ServingEngine::Open(flags->data_dir, engine_options);
  if (!opening.exchange(false)) {
    while (true) std::this_thread::sleep_for(std::chrono::hours(1));  // being ended, above
  }
  interrupt_open.join();
  if (!engine.ok()) {
    start_failed("cannot open " + flags->data_dir + ": " + engine.status().ToString());
    return 1;
  }
  const auto opened = std::chrono::steady_clock::now();
  // Drains connections and the commit queue, then closes the database (WAL synced).
  const auto stop = [&](const std::string& how) {
    (*server)->Stop();
    server->reset();
    engine->reset();
    log(idem::LogRecord(idem::LogLevel::kInfo, "stop",
                        "idemstored " + std::string(idem::Version()) + ": " + how + "; database " +
                            flags->data_dir + " closed")
            .With("data", flags->data_dir));
    return 0;
  };
  // A signal as the open ended: stop without serving.
  if ((*server)->StopRequested()) return stop("stopped before serving");
  if (idem::Status s = (*server)->Serve(engine->get()); !s.ok()) {
    start_failed(s.ToString());
    return 1;
  }

  const char* durability = flags->engine.durability == idem::Durability::kSync ? "sync" : "async";
  const char* background =
      flags->engine.background_priority == idem::EngineOptions::BackgroundPriority::kLow ? "low"
                                                                                         : "normal";
  // Tests read the real ports from this line: keep "listening on HOST:PORT" in the message and
  // the fields http=HOST:PORT and gateway=HOST:PORT stable.
  const auto address = [](const std::string& host, uint16_t port) {
    return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
           std::to_string(port);
  };
  std::string http = "off";
  if (server_options.http) http = address(server_options.http->host, (*server)->http_port());
  std::string gateway = "off";
  if (server_options.gateway) {
    gateway = address(server_options.gateway->host, (*server)->gateway_port());
  }
  idem::LogRecord start(
      idem::LogLevel::kInfo, "start",
      "idemstored " + std::string(idem::Version()) + ": listening on " + (*server)->address());
  // The gateway's fields follow engine_threads: tests match the fields before it in this order.
  start.With("http", http)
      .With("data", flags->data_dir)
      .With("durability", durability)
      .With("io_threads", server_options.io_threads)
      .With("engine_threads", server_options.engine_threads)
      .With("gateway", gateway);
  if (server_options.gateway) start.With("upstream", server_options.gateway->upstream);
  log(start.With("max_connections", server_options.max_connections)
          .With("idle_timeout", idem::FormatDurationMs(server_options.idle_timeout_ms))
          .With("background", background)
          .With("malloc", IDEM_ALLOCATOR)
          .With("open_files", limit->soft)
          .With("rocksdb_max_open_files", engine_options.max_open_files)
          .With(
              "open_ms",
              std::chrono::duration_cast<std::chrono::milliseconds>(opened - open_began).count()));

  (*server)->Wait();
  return stop("stopped");
}
