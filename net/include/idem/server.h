// Server: serves a Store over TCP with the protocol of docs/protocol.md. idemstored is a thin
// main() around it; tests run it in-process on 127.0.0.1 port 0.
//
//   auto engine = idem::ServingEngine::Open(dir, engine_options);  // idem/serving.h
//   idem::ServerOptions options;  // 127.0.0.1:7878
//   auto server = idem::Server::Start(engine->get(), options);
//   (*server)->Wait();   // until SIGINT/SIGTERM (handle_signals) or RequestStop()
//   (*server)->Stop();   // drain, then the engine may be closed
//
// A program that must not create a database for a server that cannot listen (idemstored)
// binds first and serves later: Server::Listen(options), AnswerWhileOpening() (optional), then
// ServingEngine::Open, then Serve(engine).
//
// Threads: `io_threads` threads run the event loop (accept, read, parse, write);
// `engine_threads` threads run the Store (see commit_queue.h). With engine_threads == 0 the
// event loop runs the Store itself: each loop turn's requests, from every connection, become
// one Store::Apply, and under Durability::kSync a sync thread fsyncs while the loop goes on
// (commit_queue.h). The default, because it is faster than engine threads in both durabilities
// (docs/performance.md#event-loop-and-group-commit). Stop() and the destructor must not be
// called from any of them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "idem/log.h"
#include "idem/options.h"
#include "idem/result.h"
#include "idem/serving.h"

namespace idem {

// The HTTP/JSON listener (docs/http-api.md): the same operations as the binary protocol, as
// JSON over HTTP/1.1, plus the health probes (/healthz, /readyz) and /metrics. Same event loop,
// same CommitQueue, same loopback-only rule (ServerOptions::allow_remote).
struct HttpListenerOptions {
  std::string host = "127.0.0.1";  // an IP address; not a loopback one needs allow_remote
  uint16_t port = 7879;            // 0: an ephemeral port (see Server::http_port())
  // One more gets 503 (with Retry-After) and is closed. Counted apart from max_connections.
  size_t max_connections = 256;
  // Connections over max_connections being sent 503 at the same time (each holds a descriptor
  // until its peer has read the answer, at most a second). Past it the listener stops accepting
  // until one is done, so a flood never takes more than max_connections + this descriptors.
  size_t max_refusing_connections = 8;
  size_t max_header_bytes = 16u << 10;  // request line and headers; more: 431, then close
  size_t max_body_bytes = 8u << 20;     // more: 413, then close (Content-Length checked first)
  // A connection with no complete request for this long after its last response (or whose
  // response is not read for this long) is closed.
  int64_t idle_timeout_ms = 60'000;
};

// TLS for both listeners (the binary protocol's and HTTP's): PEM files, read by Listen() and
// again by Reload(). docs/operations.md shows how to make them.
struct TlsOptions {
  std::string cert_file;  // the server's certificate, then any intermediate CA certificates
  std::string key_file;   // its private key (unencrypted)
  // Mutual TLS: clients must present a certificate signed by one of the CAs in this file.
  // Empty: clients are not asked for one.
  std::string client_ca_file;
};

// The Idempotency-Key gateway (docs/gateway.md): an HTTP/1.1 reverse proxy in front of one
// upstream service that makes its requests idempotent without changing it. A request the route
// covers (its method and path) with an `Idempotency-Key` header runs once: the first is
// forwarded while its attempt (Begin/Complete/Abort in `route.ns`) holds a lease, kept alive by
// heartbeats; duplicates get the stored status, headers and body byte for byte with
// `Idempotent-Replayed: true`, or 409 (or a wait) while the first is in flight, or 422 when
// their request differs from the first (its fingerprint). Other requests pass through.
struct GatewayRoute {
  std::vector<std::string> methods = {"POST", "PATCH"};  // others pass through
  std::vector<std::string> path_prefixes;                // covered paths; empty: every path
  bool require_key = false;    // a covered request without the header: 400 problem+json
  std::string ns = "gateway";  // the namespace of the route's records (its retention applies)
  // Whose keys these are: the key is scoped by a hash of this header's value, so two clients
  // sending the same key never share a record. Empty: every client shares one scope.
  std::string identity_header = "Authorization";
  // Request headers that are part of the fingerprint besides method, path, query and body.
  std::vector<std::string> fingerprint_headers = {"Content-Type"};
  // Response headers stored and replayed (with the status and body); others are not replayed.
  std::vector<std::string> replay_headers = {"Content-Type", "Location"};
  int64_t lease_ms = 30'000;  // the attempt's lease; heartbeats renew it every lease_ms / 3
  // A duplicate of a request in flight: 409 with Retry-After at once (wait_ms 0), or wait up to
  // wait_ms for the first to finish and answer as a duplicate after completion (409 if it has
  // not).
  int64_t wait_ms = 0;
  // A 5xx from the upstream: stored and replayed like any response (true), or the attempt is
  // aborted so that a retry runs the request again (false).
  bool store_server_errors = false;
};

struct GatewayOptions {
  std::string host = "127.0.0.1";  // an IP address; not a loopback one needs allow_remote
  uint16_t port = 7880;            // 0: an ephemeral port (see Server::gateway_port())
  std::string upstream;            // http://HOST:PORT (an IP address or a name resolved once)
  GatewayRoute route;
  size_t max_connections = 1024;  // client connections; one more gets 503 and is closed
  // As HttpListenerOptions::max_refusing_connections: past this many being sent 503 at once, no
  // more are accepted, so a flood never takes more than max_connections + this descriptors.
  size_t max_refusing_connections = 8;
  // Upstream connections kept open between requests for reuse; one more is closed.
  size_t max_idle_upstream_connections = 64;
  size_t max_header_bytes = 16u << 10;          // request or upstream response headers
  size_t max_request_body_bytes = 1u << 20;     // more: 413 (the fingerprint needs the whole body)
  size_t max_stored_response_bytes = 1u << 20;  // a larger response is passed on, not stored
  int64_t upstream_timeout_ms = 30'000;  // no complete upstream response by then: 504, aborted
  int64_t idle_timeout_ms = 60'000;      // as HttpListenerOptions::idle_timeout_ms
};

struct ServerOptions {
  std::string host = "127.0.0.1";  // an IP address; not a loopback one needs allow_remote
  uint16_t port = 7878;            // 0: an ephemeral port (see Server::port())
  // A non-loopback host needs allow_remote, and allow_remote needs TLS (tls) and authentication
  // (auth_file) unless insecure_remote says the network is trusted: without them anyone who can
  // reach the port reads every stored response and changes any record. Both listeners.
  bool allow_remote = false;
  bool insecure_remote = false;
  int io_threads = 1;
  int engine_threads = 0;         // 0: the event loop applies (see above)
  size_t max_connections = 1024;  // one more gets a BUSY error frame and is closed
  // Connections over max_connections being sent BUSY at the same time (each holds a descriptor
  // until its peer has read the error, at most a second). Past it the server stops
  // accepting until one is done; further clients wait in the listen queue and get BUSY in turn.
  // So a flood never takes more descriptors than max_connections + this (idemstored's budget:
  // tools/server_config/fd_budget.h).
  size_t max_refusing_connections = 32;
  size_t max_frame_bytes = 4u << 20;
  // A connection with no complete request and no response written for this long is closed
  // (an idle client, a client that trickles bytes, a client that stops reading responses).
  int64_t idle_timeout_ms = 300'000;
  // Requests read ahead per connection while earlier ones are still in the engine; past it the
  // server stops reading that socket until responses go out (TCP backpressure).
  size_t max_inflight_per_connection = 256;
  // Largest response frame the server sends, announced in HelloReply (clients accept responses
  // up to it). A request whose response would be larger fails with INVALID_ARGUMENT instead; its
  // ops were applied. At most 2^32 - 1 (the frame's length prefix).
  size_t max_reply_bytes = 4u << 20;
  // Per connection: while this many response bytes wait to be written (a client that asks faster
  // than it reads), the server reads no more of its requests (TCP backpressure). Requests already
  // read still answer, so a connection holds at most about this plus max_inflight_per_connection
  // responses of up to max_reply_bytes.
  size_t max_queued_reply_bytes = 8u << 20;
  // Admin requests (backup, scan, purge, compact; either listener) each run on a thread of their
  // own until they finish; past this many at once, another is answered BUSY naming the limit.
  size_t max_admin_requests = 4;
  // Stop() waits this long for in-flight requests to be answered before closing connections.
  int64_t stop_grace_ms = 5'000;
  bool handle_signals = false;  // SIGINT/SIGTERM end Wait(); SIGHUP calls Reload()
  // The Store's limits: advertised in HelloReply; max_batch_ops also caps a group commit.
  Limits limits;
  // The HTTP listener; unset: none.
  std::optional<HttpListenerOptions> http;
  // The Idempotency-Key gateway; unset: none.
  std::optional<GatewayOptions> gateway;
  // TLS on both listeners; unset: plain TCP. A file that cannot be used fails Listen() with an
  // error naming it (TLS 1.2 or 1.3 only: tls_context.h has the policy).
  std::optional<TlsOptions> tls;
  // With TLS (or authentication) on: a connection must be greeted within this long of being
  // accepted — its TLS handshake done and, on the binary listener, its Hello accepted — or it
  // is closed (after a TIMED_OUT error frame when the handshake was done). On the HTTP listener
  // it bounds the TLS handshake. Without either it does not apply (idle_timeout_ms does).
  int64_t auth_timeout_ms = 10'000;
  // Authentication (docs/security.md): non-empty turns it on for both listeners. The file lists
  // the principals, their hashed secrets and their grants; Listen() refuses a file that cannot
  // be read or parsed (the error names PATH:LINE), Reload() re-reads it. A binary connection
  // then authenticates with its Hello's token (ClientOptions::token), an HTTP request with
  // "Authorization: Bearer TOKEN"; without an accepted one: UNAUTHENTICATED (HTTP 401), and a
  // request its principal's grants do not cover: PERMISSION_DENIED (HTTP 403).
  std::string auth_file;
  // Failed authentications per peer IP address per 60 s (>= 1); past it, that address's
  // attempts are refused UNAUTHENTICATED "too many failed attempts" without their token being
  // checked, until the 60 s have passed.
  uint32_t auth_failures_per_minute = 10;
  // Where the server's records go (idem/log.h): connections refused or failing to be accepted,
  // and peers' protocol errors and idle timeouts, at most one line per kind every 10 s with a
  // count of those not logged (net/src/log_rate_limiter.h). Nothing per request. Null: lines on
  // stderr in `log_format`. idemstored passes the same sink to the engine and logs its start
  // and stop lines through it.
  LogSink log;
  LogFormat log_format = LogFormat::kText;
};

class Server {
 public:
  // Checks the options, binds and listens, and serves nothing yet: clients that connect wait in
  // the listen queue until Serve(). InvalidArgument for bad options (e.g. a non-loopback host
  // without allow_remote, allow_remote without TLS and authentication or insecure_remote),
  // IOError when binding fails (e.g. the port is in use).
  static Result<std::unique_ptr<Server>> Listen(ServerOptions options);
  // Listen(), then Serve(engine).
  static Result<std::unique_ptr<Server>> Start(ServingEngine* engine, ServerOptions options);

  // Optional, between Listen() and Serve(): starts the threads and accepting before there is a
  // store, so that clients that connect while the database opens (replaying a journal can take
  // tens of seconds) are told so at once instead of waiting unanswered: a binary connection is
  // sent the error BUSY "the database is opening; retry later" and closed; the HTTP listener
  // answers /healthz 200 (the process is alive) and every other request 503 with that error
  // (Retry-After: 1). The gateway accepts nothing before Serve(). With handle_signals, signals
  // are handled from here on: a SIGINT or SIGTERM while the database opens requests the stop
  // (StopRequested()), for the caller to act on once the open returns. InvalidArgument after
  // Serve(), after Stop(), or a second time.
  virtual Status AnswerWhileOpening() = 0;
  // Starts serving `engine`, which must outlive the Server (starting the threads and accepting
  // unless AnswerWhileOpening() did). Once: a second call, or one after Stop(), is
  // InvalidArgument.
  virtual Status Serve(ServingEngine* engine) = 0;

  virtual ~Server() = default;  // implies Stop()

  // The bound port (the real one when options.port was 0) and "host:port".
  virtual uint16_t port() const = 0;
  virtual std::string address() const = 0;
  // The HTTP listener's bound port; 0 without one (options.http unset).
  virtual uint16_t http_port() const = 0;
  // The gateway's bound port; 0 without one (options.gateway unset).
  virtual uint16_t gateway_port() const = 0;

  // Re-reads the files the options name and applies them to what follows, first the TLS files
  // (ServerOptions::tls: connections accepted afterwards use the new certificate, key and client
  // CAs; those already open keep their session), then the auth file (each open connection
  // re-checks its principal at its next request: one that is gone, or whose secret changed, is
  // answered UNAUTHENTICATED and closed; the others go on with their new grants). A file that
  // cannot be used: its error is returned (IOError or InvalidArgument naming it), what it gave
  // before stays in force and the files after it are not read. Logs event=reloaded or
  // event=reload_failed. Thread-safe, any time between Listen() and Stop(); SIGHUP calls it when
  // handle_signals is set.
  virtual Status Reload() = 0;

  // Blocks until a signal (with handle_signals) or RequestStop(). Does not stop the server.
  virtual void Wait() = 0;
  // Thread-safe; ends Wait().
  virtual void RequestStop() = 0;
  // Whether a stop was requested (a signal, RequestStop()): Wait() would return at once.
  // Thread-safe.
  virtual bool StopRequested() = 0;

  // The server's metrics and the store's figures (read now) in the Prometheus text format 0.0.4
  // (docs/operations.md lists them): what GET /metrics serves. Thread-safe, including from the
  // server's own I/O threads; the store's figures are absent before Serve() and after Stop().
  virtual std::string MetricsText() = 0;

  // Stops accepting, lets requests already read finish (bounded by stop_grace_ms), writes their
  // responses, closes every connection and joins all threads. Idempotent.
  virtual void Stop() = 0;
};

}  // namespace idem
