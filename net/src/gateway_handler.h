// GatewayHandler: one gateway request, from the parsed client request to the last byte of its
// response (docs/gateway.md). A covered request with an Idempotency-Key runs the request
// lifecycle in the route's namespace:
//
//   Begin -> STARTED      forward upstream, heartbeating the lease every lease_ms / 3; then
//                         Complete with the stored response (or Abort on an upstream failure,
//                         or a 5xx unless store_server_errors) and answer the client
//         -> COMPLETED    replay the stored response (409 response-not-stored for a marker)
//         -> IN_PROGRESS  409 with Retry-After (after waiting up to wait_ms)
//         -> MISMATCH     422;  EXPIRED -> 410;  a store error -> 503, upstream not called
//
// Other requests pass through. Store ops go through the ApplyPath (transport "gateway"): no
// thread blocks on the store. The client connection is behind GatewayClient, so that the same
// flow serves plain and TLS connections.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange unincluded

#include <boost/asio.hpp>
#include <boost/beast/http.hpp>

#include "apply_path.h"
#include "idem/clock.h"
#include "idem/server.h"
#include "server_metrics.h"
#include "stored_response.h"
#include "upstream_client.h"

namespace idem {

using GatewayRequest = boost::beast::http::request<boost::beast::http::string_body>;
using GatewayResponse = boost::beast::http::response<boost::beast::http::string_body>;

// The client side of one request: a whole response, or a streamed one (StartStream, then
// StreamBody any number of times, then EndStream). Each returns false once the connection is
// gone; the handler then stops writing.
class GatewayClient {
 public:
  virtual ~GatewayClient() = default;
  virtual boost::asio::awaitable<bool> Send(GatewayResponse response) = 0;
  // `header` without length fields: `length` is the Content-Length, or none for chunked.
  virtual boost::asio::awaitable<bool> StartStream(boost::beast::http::response_header<> header,
                                                   std::optional<uint64_t> length) = 0;
  virtual boost::asio::awaitable<bool> StreamBody(std::string_view bytes) = 0;
  virtual boost::asio::awaitable<bool> EndStream() = 0;
};

// A problem+json response as the HTTP API's (type, title, status, detail).
GatewayResponse GatewayProblem(unsigned status, std::string_view type, std::string_view title,
                               std::string_view detail);

class GatewayHandler {
 public:
  struct Options {
    GatewayOptions gateway;
    size_t max_payload_bytes = 1u << 20;  // Limits::max_payload_bytes: the largest Complete
    // "now" for Retry-After: the engine's clock (leases are in its time).
    std::shared_ptr<Clock> clock;
    ServerMetrics* metrics = nullptr;  // may be null
    LogSink log;                       // fenced completions; rate-limited by the caller
  };

  // `apply` and `pool` must outlive the handler.
  GatewayHandler(ApplyPath* apply, UpstreamPool* pool, Options options)
      : apply_(apply), pool_(pool), options_(std::move(options)) {}

  // Answers `request` on `client`. `peer_address` is appended to X-Forwarded-For. Runs on the
  // connection's strand; returns once the response is written (or the client is gone).
  boost::asio::awaitable<void> Handle(GatewayRequest request, std::string peer_address,
                                      GatewayClient& client);

 private:
  struct Attempt;
  boost::asio::awaitable<void> PassThrough(GatewayRequest& request, const std::string& peer,
                                           GatewayClient& client);
  boost::asio::awaitable<void> Execute(GatewayRequest& request, const std::string& peer,
                                       std::shared_ptr<Attempt> attempt, GatewayClient& client);
  boost::asio::awaitable<void> Replay(std::string_view payload, GatewayClient& client);
  // Streams a response too large to buffer: `first` (what ReadHead read), then the rest, chunk by
  // chunk. `headers`: the headers the client gets (null: the upstream's, hop-by-hop ones
  // dropped). `*size`: the body's bytes read. The upstream's error, if it failed mid-body (the
  // client's stream is then left unfinished, and its connection closed).
  boost::asio::awaitable<boost::beast::error_code> Relay(
      UpstreamCall& call, std::string first,
      const std::vector<std::pair<std::string, std::string>>* headers, GatewayClient& client,
      uint64_t* size);
  // One store op through the ApplyPath: its result, or the request's error.
  boost::asio::awaitable<Result<OpResult>> ApplyOne(Op op, std::shared_ptr<const void> owner);
  boost::asio::awaitable<void> Heartbeats(std::shared_ptr<Attempt> attempt);
  // Stops the heartbeats, then Complete (with attempt->response) or Abort.
  boost::asio::awaitable<Result<OpResult>> Finish(std::shared_ptr<Attempt> attempt, bool complete);
  // The request for the upstream: hop-by-hop headers dropped, X-Forwarded-For appended, the
  // body moved out of `request`.
  GatewayRequest Upstream(GatewayRequest& request, const std::string& peer) const;
  void Count(GatewayOutcome outcome) const {
    if (options_.metrics) options_.metrics->GatewayRequest(outcome);
  }

  ApplyPath* const apply_;
  UpstreamPool* const pool_;
  const Options options_;
};

}  // namespace idem
