// File descriptors: who may take how many. Every connection holds one, and so does every table
// file RocksDB keeps open (by default all of them), its WAL, MANIFEST and info log, and the
// server's own event loop and listening socket. If connections may take them all, RocksDB
// cannot open its next WAL or table file and every write fails; under a common limit of 1024
// open files (systemd's default soft limit for services) a connection flood does exactly that.
//
// So idemstored budgets at start: it raises the soft limit to the hard one, then gives
// connections, connections being refused with BUSY, the server's own descriptors and RocksDB's
// files each a share that together fit the limit (PlanFdBudget). RocksDB's share becomes its
// max_open_files, so its table cache closes files instead of running out. The Server itself only
// honours the numbers it is given (ServerOptions::max_connections, max_refusing_connections).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "idem/options.h"
#include "idem/result.h"
#include "idem/server.h"

namespace idem {

// The open-files limit (RLIMIT_NOFILE) as the process has it.
struct OpenFilesLimit {
  uint64_t soft = 0;  // what the process may use
  uint64_t hard = 0;  // how far it may raise `soft`
};

// Raises the soft limit to the hard one (or to 1,048,576 if the hard one is unlimited) and
// returns the limit in force afterwards. IOError if it cannot be read; a refused raise keeps
// the old soft limit (PlanFdBudget then works with what there is).
Result<OpenFilesLimit> RaiseOpenFilesLimit();

struct FdBudgetRequest {
  OpenFilesLimit limit;
  size_t max_connections = 0;
  // Whether the operator asked for max_connections (--max-connections). A default that does
  // not fit is lowered; a number the operator gave is not silently replaced: the start fails.
  bool max_connections_explicit = false;
  size_t max_refusing_connections = 0;  // ServerOptions::max_refusing_connections
  // HttpListenerOptions::max_connections plus max_refusing_connections (0 without an HTTP
  // listener): reserved like the server's own descriptors.
  size_t http_connections = 0;
  // GatewayDescriptors(options) (0 without a gateway): reserved likewise.
  size_t gateway_connections = 0;
  // JournalDescriptors(options) (0 unless the engine uses the journal layout): reserved likewise.
  size_t journal_files = 0;
};

struct FdBudget {
  size_t max_connections = 0;      // what the server may serve (<= the request's)
  int rocksdb_max_open_files = 0;  // EngineOptions::max_open_files
  // Set when max_connections was lowered: one line for the operator naming the numbers, the
  // flag and the limit to change.
  std::string warning;
};

// The server's own descriptors: standard streams, the event loop's epoll/eventfd/timerfd, the
// signal pipe, the listening socket, plus RocksDB's LOCK, WAL, MANIFEST, info LOG, directory
// and new table files being written (about 18 at start; the rest is margin).
inline constexpr size_t kServerOwnFds = 64;
// RocksDB's share is never below this: a smaller table cache would reopen table files on most
// reads. RocksDB keeps 10 of max_open_files for its own logs and the rest for table files.
inline constexpr size_t kMinRocksDbFiles = 256;

// The gateway's share: its client connections (GatewayOptions::max_connections), each holding at
// most one upstream connection at a time for the request it forwards; the upstream connections
// kept open between requests (max_idle_upstream_connections); and connections being answered
// 503 (max_refusing_connections).
size_t GatewayDescriptors(const GatewayOptions& gateway);

// The journal layout's share (engine/src/journal.h): the closed segments it keeps open
// (EngineOptions::journal_max_open_files) plus kJournalOwnFds for the active and the prepared
// segment, the directory, segments sealed since the last sync and reads in flight of closed
// ones. 0 under the other layouts.
inline constexpr size_t kJournalOwnFds = 16;
size_t JournalDescriptors(const EngineOptions& engine);

// Pure arithmetic: connections + refusing + HTTP + gateway + kServerOwnFds + RocksDB's share
// must fit in
// limit.soft. RocksDB gets everything the others leave (at least kMinRocksDbFiles). If the
// requested connections do not fit: a default is lowered (with `warning`), an explicit
// --max-connections fails with InvalidArgument; so does a limit too small for even one
// connection. Messages name the numbers, the flag and the limit.
Result<FdBudget> PlanFdBudget(const FdBudgetRequest& request);

}  // namespace idem
