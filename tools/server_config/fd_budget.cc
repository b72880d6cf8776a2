#include "fd_budget.h"

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <string>

namespace idem {

Result<OpenFilesLimit> RaiseOpenFilesLimit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    return Status::IOError(std::string("getrlimit(RLIMIT_NOFILE): ") + std::strerror(errno));
  }
  // Linux refuses an unlimited RLIMIT_NOFILE (the ceiling is fs.nr_open, 1,048,576 by default).
  const rlim_t target = limit.rlim_max == RLIM_INFINITY ? rlim_t{1} << 20 : limit.rlim_max;
  if (limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur < target) {
    rlimit raised{target, limit.rlim_max};
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) limit.rlim_cur = target;
  }
  auto value = [](rlim_t v) {
    return v == RLIM_INFINITY ? uint64_t{1} << 20 : static_cast<uint64_t>(v);
  };
  return OpenFilesLimit{value(limit.rlim_cur), value(limit.rlim_max)};
}

size_t GatewayDescriptors(const GatewayOptions& gateway) {
  return 2 * gateway.max_connections + gateway.max_refusing_connections +
         gateway.max_idle_upstream_connections;
}

size_t JournalDescriptors(const EngineOptions& engine) {
  return engine.layout == EngineOptions::Layout::kJournal
             ? engine.journal_max_open_files + kJournalOwnFds
             : 0;
}

Result<FdBudget> PlanFdBudget(const FdBudgetRequest& request) {
  const uint64_t limit = request.limit.soft;
  const uint64_t others = request.max_refusing_connections + request.http_connections +
                          request.gateway_connections + request.journal_files + kServerOwnFds;
  const uint64_t reserved = others + kMinRocksDbFiles;
  const std::string limit_text = "the open-files limit is " + std::to_string(limit) + " (hard " +
                                 std::to_string(request.limit.hard) + ")";
  const std::string raise_text = "raise the limit (ulimit -n; LimitNOFILE= in a systemd unit)";
  const std::string needs_text =
      std::to_string(request.max_refusing_connections) + " for refusing connections with BUSY + " +
      (request.http_connections == 0
           ? std::string()
           : std::to_string(request.http_connections) + " for HTTP connections + ") +
      (request.gateway_connections == 0
           ? std::string()
           : std::to_string(request.gateway_connections) +
                 " for the gateway's client and upstream connections + ") +
      (request.journal_files == 0
           ? std::string()
           : std::to_string(request.journal_files) + " for the journal's segment files + ") +
      std::to_string(kServerOwnFds) + " for the server itself + " +
      std::to_string(kMinRocksDbFiles) + " for RocksDB's files (its minimum)";
  if (limit <= reserved) {
    return Status::InvalidArgument(limit_text + ": too low to serve even one connection, which " +
                                   "needs 1 + " + needs_text + " = " +
                                   std::to_string(reserved + 1) + " descriptors; " + raise_text);
  }

  FdBudget budget;
  budget.max_connections = request.max_connections;
  const uint64_t fits = limit - reserved;  // connections that fit beside everything else
  if (request.max_connections > fits) {
    const std::string want = std::to_string(request.max_connections) + " connections + " +
                             needs_text + " = " +
                             std::to_string(request.max_connections + reserved) + " descriptors";
    if (request.max_connections_explicit) {
      return Status::InvalidArgument(
          "--max-connections " + std::to_string(request.max_connections) + " needs " + want +
          ", but " + limit_text + ": lower --max-connections to at most " + std::to_string(fits) +
          ", or " + raise_text);
    }
    budget.max_connections = static_cast<size_t>(fits);
    budget.warning = "serving at most " + std::to_string(fits) +
                     " connections instead of the default " +
                     std::to_string(request.max_connections) + ": they would need " + want +
                     ", but " + limit_text + "; " + raise_text + " or set --max-connections";
  }
  const uint64_t rocksdb = limit - others - budget.max_connections;
  budget.rocksdb_max_open_files = static_cast<int>(std::min<uint64_t>(rocksdb, INT_MAX));
  return budget;
}

}  // namespace idem
