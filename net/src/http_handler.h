// HttpHandler: one HTTP request in, one response out (docs/http-api.md). No I/O: the HTTP
// connection (http_server.h) feeds it parsed requests and writes what it replies; tests may
// drive it directly.
//
// Routes are a table (Routes() in http_handler.cc): the JSON API (POST /v1/apply and the
// convenience routes over single ops), the health probes, /metrics and POST /v1/admin/backup. Ops
// go through the ApplyPath, exactly as binary-protocol requests do. Business outcomes are 200 with
// the outcome in the body; errors are RFC 9457 problem documents (application/problem+json) whose
// "code" is the Status code name, with the HTTP status of HttpStatusFor.
#pragma once

#include <functional>
#include <string>
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange unincluded

#include <boost/beast/http.hpp>

#include "apply_path.h"
#include "authenticator.h"
#include "idem/backup.h"
#include "idem/options.h"
#include "idem/status.h"

namespace idem {

using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;
using HttpResponse = boost::beast::http::response<boost::beast::http::string_body>;

// The HTTP status an error is answered with: INVALID_ARGUMENT and NOT_SUPPORTED 400, NOT_FOUND
// 404, BUSY and SHUTDOWN 503 (with Retry-After), TIMED_OUT 504, IO_ERROR and CORRUPTION 500,
// UNAUTHENTICATED 401 (with WWW-Authenticate: Bearer), PERMISSION_DENIED 403.
boost::beast::http::status HttpStatusFor(Status::Code code);

// An application/problem+json response for `error` (status HttpStatusFor(error.code())).
HttpResponse ProblemResponse(const Status& error);
// The same with an explicit HTTP status, for errors of HTTP itself (413, 431, 404, 405...).
HttpResponse ProblemResponse(boost::beast::http::status status, Status::Code code,
                             std::string_view detail);

class HttpHandler {
 public:
  using Reply = std::function<void(HttpResponse response)>;

  struct Options {
    Limits limits;                      // max_batch_ops: ops per /v1/apply
    size_t max_reply_bytes = 4u << 20;  // a larger response is refused (INVALID_ARGUMENT)
    // GET /metrics: calls its argument, from any thread, with the body (Prometheus text
    // format); the store's figures are engine work, so the I/O thread does not wait for them.
    // Unset: /metrics is 404.
    std::function<void(std::function<void(std::string body)>)> metrics;
    // GET /readyz: ok, or why the server should get no traffic (503).
    std::function<Status()> readiness;
    // POST /v1/admin/backup: takes a backup into its first argument (the body's "to", not yet
    // checked) and calls its second, from any thread, with the result (remote_backup.h).
    // Unset: the route is 404.
    std::function<void(std::string to, std::function<void(Result<BackupManifest>)>)> backup;
    // Authentication (may be null: off; must outlive the handler). On, every request but the
    // health probes needs "Authorization: Bearer TOKEN" (else 401, WWW-Authenticate: Bearer);
    // /metrics and the backup need admin on "*", the ops their permissions (else 403).
    Authenticator* auth = nullptr;
    ServerMetrics* server_metrics = nullptr;  // counts the 403s of /metrics and the backup
  };

  // `apply` must outlive the handler. Null: a server without a store yet (the database is
  // opening), which answers /healthz 200 and every other request 503 with readiness()'s error.
  HttpHandler(ApplyPath* apply, Options options) : apply_(apply), options_(std::move(options)) {}

  // Calls `reply` exactly once, maybe before returning, maybe later from another thread. The
  // response's version and keep-alive are the connection's to set. `peer_address`, the client's
  // IP address, is what failed authentications count against.
  void Handle(const HttpRequest& request, std::string_view peer_address, Reply reply);

 private:
  void Apply(DecodedOps ops, bool single, Reply reply);

  ApplyPath* const apply_;
  const Options options_;
};

}  // namespace idem
