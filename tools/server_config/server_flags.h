// idemstored's command line, parsed into the options of the engine and the server. A unit of
// its own so that tests check it without starting a process.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "idem/options.h"
#include "idem/result.h"
#include "idem/server.h"

namespace idem {

struct ServerFlags {
  bool help = false;
  std::string data_dir = "./data";
  EngineOptions engine;
  ServerOptions server;
  // Whether --max-connections was given: idemstored lowers a default that does not fit the
  // open-files limit, but refuses to start rather than lower the operator's own number.
  bool max_connections_set = false;
};

// `args` excludes the program name. Both "--flag value" and "--flag=value" are accepted.
// InvalidArgument names the offending flag. server.limits is set to engine.limits. Every
// default is EngineOptions' and ServerOptions' own.
Result<ServerFlags> ParseServerFlags(std::span<const std::string_view> args);

// The --help text.
std::string ServerFlagsUsage();

}  // namespace idem
