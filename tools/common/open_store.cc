#include "open_store.h"

#include "idem/client.h"
#include "idem/engine.h"

namespace idem {

Result<std::unique_ptr<Store>> OpenStore(const StoreLocation& where) {
  if (where.server.empty() == where.data_dir.empty()) {
    return Status::InvalidArgument(
        "say where the store is: a server (HOST:PORT) or a data directory");
  }
  if (!where.server.empty()) {
    Result<std::unique_ptr<Client>> client = ConnectClient(where);
    if (!client.ok()) return client.status();
    return std::unique_ptr<Store>(std::move(*client));
  }
  Result<std::unique_ptr<Engine>> engine = Engine::Open(where.data_dir, where.engine);
  if (!engine.ok()) {
    const Status& s = engine.status();
    if (s.IsIOError() && s.message().find("lock") != std::string::npos) {
      return Status::IOError(s.message() +
                             " (is idemstored running on this directory? use --server)");
    }
    return s;
  }
  return std::unique_ptr<Store>(std::move(*engine));
}

Result<std::unique_ptr<Client>> ConnectClient(const StoreLocation& where) {
  if (where.server.empty()) return Status::InvalidArgument("no server address (HOST:PORT)");
  ClientOptions options;
  options.address = where.server;
  options.connect_timeout_ms = where.timeout_ms;
  options.request_timeout_ms = where.timeout_ms;
  options.tls = where.tls;
  options.token = where.token;
  return Client::Connect(options);
}

}  // namespace idem
