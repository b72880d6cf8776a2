// Opening "a Store" from what a command line says: a server address (the network Client) or a
// database directory (the embedded Engine). The one place tools and examples make that choice.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "idem/client.h"
#include "idem/options.h"
#include "idem/result.h"
#include "idem/store.h"

namespace idem {

struct StoreLocation {
  std::string server;                   // HOST:PORT: connect to idemstored
  std::string data_dir;                 // or: open the database in this directory, in process
  int64_t timeout_ms = 10'000;          // client connect and request timeout
  std::optional<ClientTlsOptions> tls;  // to the server over TLS
  std::string token;                    // server only: ClientOptions::token ("": none)
  EngineOptions engine;                 // embedded mode only
};

// Exactly one of server / data_dir must be set (InvalidArgument otherwise). Embedded: a directory
// that another process (e.g. idemstored) has open fails with IOError and a hint to use --server.
Result<std::unique_ptr<Store>> OpenStore(const StoreLocation& where);

// The network Client for where.server (which must be set): for what only a server has, e.g. its
// counters (Client::GetServerStats).
Result<std::unique_ptr<Client>> ConnectClient(const StoreLocation& where);

}  // namespace idem
