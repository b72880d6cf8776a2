// idemctl's command line, parsed into an Invocation without touching any store, so tests can
// check every command's parsing and the Op it builds.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "idem/admin.h"
#include "idem/client.h"
#include "idem/operation.h"
#include "idem/result.h"

namespace idem::ctl {

struct Invocation {
  // Where: exactly one of these.
  std::string server;    // HOST:PORT
  std::string data_dir;  // embedded, on a local database directory
  bool json = false;
  int64_t timeout_ms = 10'000;
  // --tls, or any --tls-* flag: to the server over TLS (the system's CAs without --tls-ca).
  std::optional<ClientTlsOptions> tls;
  // --token, else the environment's IDEM_TOKEN: sent to the server (ignored with --data).
  std::string token;

  std::string command;                  // "insert", "get", ... "stats", "help", "version"
  std::string help_command;             // with "help": the command whose --help was asked
  std::vector<std::string> positional;  // after the command
  // --name value (value "" for switches). A byte field given as --NAME-b64 is stored decoded,
  // under NAME.
  std::map<std::string, std::string> flags;

  // Storage for the strings the Op borrows.
  std::vector<std::string> status_set;
};

// Parses argv (without the program name): global flags anywhere, "--flag value" and
// "--flag=value" (tools/common/cli_app.h). InvalidArgument names what is wrong.
Result<Invocation> ParseInvocation(std::span<const std::string_view> args);

// Builds the operation for a data command (everything except "stats" and "help"). The Op borrows
// from `inv`, which must outlive it.
Result<Op> BuildOp(Invocation& inv);

// The first page's request of a scan command; *total_limit: --limit, the records to print in
// all (0: every one).
Result<ScanRequest> BuildScan(const Invocation& inv, uint64_t* total_limit);
PurgeRequest BuildPurge(const Invocation& inv);

// idemctl --help: every command with its synopsis, from the same table the parser uses.
std::string Usage();
// idemctl COMMAND --help (CLI11's layout); Usage() for a name that is no command.
std::string CommandUsage(std::string_view command);

}  // namespace idem::ctl
