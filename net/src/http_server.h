// HttpServer: the HTTP/1.1 listener of idem::Server (ServerOptions::http), on the server's
// io_context beside the binary listener. Boost.Beast parses; HttpHandler answers.
//
// One connection reads one request, hands it to the handler, writes the response, then reads
// the next: keep-alive and pipelined requests are answered in order, one at a time (pipelined
// bytes wait in the connection's buffer, bounded as below).
//
// Limits, each checked before anything is sized from the peer's numbers:
//  - headers over max_header_bytes: 431, then close (Beast's header_limit);
//  - a body over max_body_bytes: 413, then close; a Content-Length over it is refused before a
//    byte of the body is read (Beast's body_limit);
//  - a malformed request: 400, then close;
//  - no complete request within idle_timeout_ms of the last response (an idle or trickling
//    client), or a response the client does not read within it: the connection is closed;
//  - over max_connections open: 503 with Retry-After, then close; while
//    max_refusing_connections are being refused, no more are accepted (they wait in the listen
//    queue), so refusals hold a bounded number of descriptors.
//
// TLS (Tls below): each connection's handshake comes first, bounded by handshake_timeout_ms; a
// failed one is counted and logged (rate-limited), and the connection closed without a word.
//
// Threads: each connection runs on its own strand of the io_context; replies from engine
// threads are posted onto it. Listen/Serve/Stop are called from the Server's lifecycle thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange unincluded

#include <boost/asio.hpp>

#include "http_handler.h"
#include "idem/server.h"
#include "idem/status.h"
#include "listener_core.h"
#include "server_metrics.h"

namespace boost::asio::ssl {
class context;
}  // namespace boost::asio::ssl

namespace idem {

template <typename Stream>
class BasicHttpConnection;

class HttpServer {
 public:
  struct Tls {
    // The context a new connection gets: called on each accept, so that a reload reaches the
    // next connection while open ones keep theirs.
    std::function<std::shared_ptr<boost::asio::ssl::context>()> context;
    int64_t handshake_timeout_ms = 10'000;
    LogSink peer_log;  // failed handshakes; peers cause them at will, so rate-limit it
  };

  // `io` must outlive the HttpServer. `log` takes the start line and connection-level errors.
  // `metrics` (may be null; must outlive the HttpServer) counts connections and bytes. `tls`
  // unset: plain HTTP.
  HttpServer(boost::asio::io_context& io, HttpListenerOptions options, bool allow_remote,
             LogSink log, ServerMetrics* metrics = nullptr, std::optional<Tls> tls = std::nullopt);
  ~HttpServer();

  // Checks the options and binds; InvalidArgument (a non-loopback host without allow_remote, a
  // limit out of range) or IOError (the port is in use).
  Status Listen();
  // Starts accepting; `handler` must outlive the HttpServer.
  void Serve(HttpHandler* handler);
  // Requests read from now on, on every connection, go to `handler` (which must outlive the
  // HttpServer); those being answered finish with the one they had. After Serve().
  void SwitchHandler(HttpHandler* handler) { handler_.store(handler); }
  // Stops accepting, lets requests being answered finish (up to `grace`), closes the rest.
  // Not from an io thread.
  void Stop(std::chrono::milliseconds grace);

  uint16_t port() const { return port_; }

 private:
  template <typename Stream>
  friend class BasicHttpConnection;

  const HttpListenerOptions options_;
  const bool allow_remote_;
  const LogSink log_;
  ServerMetrics* const metrics_;
  const std::optional<Tls> tls_;
  uint16_t port_ = 0;
  std::atomic<HttpHandler*> handler_{nullptr};
  ListenerCore core_;  // the accept loop and the connections
};

}  // namespace idem
