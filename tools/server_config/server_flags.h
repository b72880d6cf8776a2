// idemstored's command line and configuration file, parsed into the options of the engine and
// the server. A unit of its own so that tests check it without starting a process. (CLI11 reads
// both; it is included by server_flags.cc only.)
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "idem/options.h"
#include "idem/result.h"
#include "idem/server.h"

namespace idem {

struct ServerFlags {
  bool help = false;          // --help: print ServerFlagsUsage() and exit 0
  bool version = false;       // --version: print the version and exit 0
  bool print_config = false;  // --print-config: print effective_config and exit 0
  std::string data_dir = "./data";
  EngineOptions engine;
  ServerOptions server;
  // Whether --max-connections was given (on the command line or in the --config file):
  // idemstored lowers a default that does not fit the open-files limit, but refuses to start
  // rather than lower the operator's own number.
  bool max_connections_set = false;
  // Every flag in --config's format: the ones given as keys, the others as comments showing
  // their default. Reading it back with --config gives the same ServerFlags.
  std::string effective_config;
};

// `args` excludes the program name. Both "--flag value" and "--flag=value" are accepted;
// "--config FILE" reads flags from FILE (a key per flag, named without its dashes; a repeatable
// flag takes an array), and a flag on the command line replaces the file's. InvalidArgument
// names the offending flag, or the file, line and key. With --help or --version nothing else
// is checked. server.limits is set to engine.limits. Every default is EngineOptions' and
// ServerOptions' own.
Result<ServerFlags> ParseServerFlags(std::span<const std::string_view> args);

// The --help text.
std::string ServerFlagsUsage();

}  // namespace idem
