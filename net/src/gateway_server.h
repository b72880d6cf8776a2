// GatewayServer: the Idempotency-Key gateway's listener (ServerOptions::gateway), on the server's
// io_context beside the other two. Boost.Beast parses; GatewayHandler answers each request.
//
// One connection reads one request, answers it (forwarding it upstream or from the store), then
// reads the next: keep-alive requests are answered in order, one at a time.
//
// Limits, each checked before anything is sized from the peer's numbers:
//  - headers over max_header_bytes: 431, then close;
//  - a body over max_request_body_bytes: 413, then close, before any store op or upstream call
//    (a Content-Length over it is refused before a byte of the body is read);
//  - a malformed request: 400, then close;
//  - no complete request within idle_timeout_ms of the last response, or a response the client
//    does not read within it: closed;
//  - over max_connections open: 503 with Retry-After, then close; while
//    max_refusing_connections are being refused, no more are accepted (they wait in the listen
//    queue), so refusals hold a bounded number of descriptors.
//
// TLS (ServerOptions::tls): the same certificate as the other listeners; each connection's
// handshake comes first, bounded by handshake_timeout_ms.
//
// Threads: each connection runs on its own strand (a coroutine per connection); the store's
// answers are posted onto it. Listen/Serve/Stop are called from the Server's lifecycle thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange unincluded

#include <boost/asio.hpp>

#include "gateway_handler.h"
#include "idem/server.h"
#include "idem/status.h"
#include "listener_core.h"
#include "server_metrics.h"

namespace boost::asio::ssl {
class context;
}  // namespace boost::asio::ssl

namespace idem {

template <typename Stream>
class BasicGatewayConnection;

class GatewayServer {
 public:
  struct Tls {
    // The context a new connection gets (called on each accept: a reload reaches new ones).
    std::function<std::shared_ptr<boost::asio::ssl::context>()> context;
    int64_t handshake_timeout_ms = 10'000;
  };

  // `io` must outlive the GatewayServer; `metrics` may be null.
  GatewayServer(boost::asio::io_context& io, GatewayOptions options, bool allow_remote, LogSink log,
                ServerMetrics* metrics = nullptr, std::optional<Tls> tls = std::nullopt);
  ~GatewayServer();

  // Checks the listener's options and binds; InvalidArgument or IOError.
  Status Listen();
  // Starts accepting; `handler` must outlive the GatewayServer.
  void Serve(GatewayHandler* handler);
  // Stops accepting, lets requests being answered finish (up to `grace`), closes the rest.
  // Not from an io thread.
  void Stop(std::chrono::milliseconds grace);

  uint16_t port() const { return port_; }

 private:
  template <typename Stream>
  friend class BasicGatewayConnection;

  const GatewayOptions options_;
  const bool allow_remote_;
  const LogSink log_;
  ServerMetrics* const metrics_;
  const std::optional<Tls> tls_;
  uint16_t port_ = 0;
  GatewayHandler* handler_ = nullptr;
  ListenerCore core_;  // the accept loop and the connections
};

}  // namespace idem
