#include "gateway_handler.h"

#include <algorithm>
#include <cctype>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "gateway_key.h"
#include "json_writer.h"

namespace idem {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using std::chrono::milliseconds;

constexpr char kProblemJson[] = "application/problem+json";
constexpr std::string_view kTypePrefix = "urn:idemstore:gateway:";
constexpr char kReplayedField[] = "Idempotent-Replayed";
constexpr char kOriginalStatusField[] = "Idempotent-Original-Status";

bool EqualsNoCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view View(beast::string_view s) { return std::string_view(s.data(), s.size()); }

// Runs `ops` through the ApplyPath and resumes the awaiting coroutine on its own executor.
template <typename Token>
auto AsyncApply(ApplyPath& path, DecodedOps ops, Token&& token) {
  return asio::async_initiate<Token, void(Status, std::vector<Result<OpResult>>)>(
      [&path](auto handler, DecodedOps request) {
        auto executor = asio::get_associated_executor(handler);
        // ApplyPath::Done is a std::function (copyable); the handler is move-only.
        auto shared = std::make_shared<std::decay_t<decltype(handler)>>(std::move(handler));
        path.Apply(Transport::kGateway, std::move(request),
                   [shared, executor](Status status, std::vector<Result<OpResult>> results) {
                     asio::post(executor, [shared, status = std::move(status),
                                           results = std::move(results)]() mutable {
                       (*shared)(std::move(status), std::move(results));
                     });
                   });
      },
      token, std::move(ops));
}

// The response stored for `header` and `body`: its status, the route's replay headers it has
// (in the upstream's order, named as the upstream named them) and the body.
StoredResponse ToStored(const GatewayRoute& route, const UpstreamCall::Header& header,
                        std::string body) {
  StoredResponse stored;
  stored.status = header.result_int();
  for (const auto& field : header) {
    const std::string_view name = View(field.name_string());
    const bool replayed =
        std::any_of(route.replay_headers.begin(), route.replay_headers.end(),
                    [name](const std::string& wanted) { return EqualsNoCase(name, wanted); });
    if (replayed) stored.headers.emplace_back(std::string(name), std::string(View(field.value())));
  }
  stored.body_size = body.size();
  stored.body = std::move(body);
  return stored;
}

bool Fenced(const Result<OpResult>& done) {
  return done.ok() && done->outcome == Outcome::kFenceMismatch;
}

// The marker kept for a response that is not stored: its status, headers and size, no body.
StoredResponse NotStored(const StoredResponse& stored) {
  StoredResponse marker = stored;
  marker.body_stored = false;
  marker.body.clear();
  return marker;
}

GatewayResponse Render(const StoredResponse& stored, bool replayed) {
  GatewayResponse r;
  r.version(11);
  r.result(stored.status);
  for (const auto& [name, value] : stored.headers) r.insert(name, value);
  if (replayed) r.set(kReplayedField, "true");
  r.body() = stored.body;
  r.prepare_payload();
  return r;
}

// The upstream's response for the client as it is: every end-to-end header, the body.
GatewayResponse AsIs(const UpstreamCall::Header& header, std::string body, bool head) {
  GatewayResponse r;
  r.version(11);
  r.result(header.result_int());
  for (const auto& field : header) {
    const std::string_view name = View(field.name_string());
    if (IsHopByHop(name) || (!head && EqualsNoCase(name, "Content-Length"))) continue;
    r.insert(field.name_string(), field.value());
  }
  r.body() = std::move(body);
  if (!head) r.prepare_payload();
  return r;
}

// No (complete) response from the upstream: 504 past upstream_timeout_ms, else 502.
GatewayResponse UpstreamFailure(beast::error_code ec, int64_t timeout_ms) {
  if (ec == beast::error::timeout) {
    return GatewayProblem(504, "upstream-timeout", "Gateway Timeout",
                          "the upstream did not answer within " + std::to_string(timeout_ms) +
                              " ms (upstream_timeout_ms)");
  }
  return GatewayProblem(502, "upstream-failed", "Bad Gateway",
                        "the upstream failed: " + ec.message());
}

}  // namespace

GatewayResponse GatewayProblem(unsigned status, std::string_view type, std::string_view title,
                               std::string_view detail) {
  JsonWriter j;
  j.BeginObject();
  j.Key("type");
  j.String(std::string(kTypePrefix) + std::string(type));
  j.Key("title");
  j.String(title);
  j.Key("status");
  j.Int(status);
  j.Key("detail");
  j.String(detail);
  j.EndObject();
  GatewayResponse r;
  r.version(11);
  r.result(status);
  r.set(http::field::content_type, kProblemJson);
  r.body() = j.Take();
  r.prepare_payload();
  return r;
}

// One attempt this gateway holds. Its strings are what the ops borrow (the ops' owner); its
// fields are touched on the connection's strand only (Execute and Heartbeats both run there).
struct GatewayHandler::Attempt {
  std::string ns;
  std::string key;
  std::string fingerprint;
  std::string response;  // Complete's
  uint64_t fence = 0;
  bool live = false;  // heartbeats go on while set
  std::optional<asio::steady_timer> timer;
};

asio::awaitable<Result<OpResult>> GatewayHandler::ApplyOne(Op op,
                                                           std::shared_ptr<const void> owner) {
  DecodedOps ops;
  ops.Add(op);
  ops.owner = std::move(owner);
  auto [status, results] = co_await AsyncApply(*apply_, std::move(ops), asio::use_awaitable);
  if (!status.ok()) co_return status;
  if (results.size() != 1) co_return Status::Corruption("gateway: one op, not one result");
  co_return std::move(results[0]);
}

asio::awaitable<void> GatewayHandler::Heartbeats(std::shared_ptr<Attempt> attempt) {
  const int64_t lease_ms = options_.gateway.route.lease_ms;
  while (attempt->live) {
    attempt->timer->expires_after(milliseconds(std::max<int64_t>(1, lease_ms / 3)));
    boost::system::error_code ec;
    co_await attempt->timer->async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (!attempt->live) break;
    Result<OpResult> beat = co_await ApplyOne(Op::Heartbeat({.ns = attempt->ns,
                                                             .key = attempt->key,
                                                             .fence = attempt->fence,
                                                             .lease = milliseconds(lease_ms)}),
                                              attempt);
    if (beat.ok() && beat->outcome != Outcome::kApplied) break;  // taken over, or finished
  }
}

asio::awaitable<Result<OpResult>> GatewayHandler::Finish(std::shared_ptr<Attempt> attempt,
                                                         bool complete) {
  attempt->live = false;
  if (attempt->timer) attempt->timer->cancel();
  Op op = complete ? Op::Complete({.ns = attempt->ns,
                                   .key = attempt->key,
                                   .fence = attempt->fence,
                                   .response = attempt->response})
                   : Op::Abort({.ns = attempt->ns, .key = attempt->key, .fence = attempt->fence});
  Result<OpResult> done = co_await ApplyOne(op, attempt);
  if (Fenced(done) && options_.log) {
    options_.log(LogRecord(LogLevel::kWarn, "gateway_fenced",
                           "gateway: an attempt finished after another took it over (its lease "
                           "had ended); its response was sent to its client, not stored")
                     .With("ns", attempt->ns));
  }
  co_return done;
}

GatewayRequest GatewayHandler::Upstream(GatewayRequest& request, const std::string& peer) const {
  GatewayRequest out;
  out.method_string(request.method_string());
  out.target(request.target());
  out.version(11);
  std::string forwarded;
  for (const auto& field : request) {
    const std::string_view name = View(field.name_string());
    if (IsHopByHop(name) || EqualsNoCase(name, "Host") || EqualsNoCase(name, "Content-Length")) {
      continue;
    }
    if (EqualsNoCase(name, "X-Forwarded-For")) {
      forwarded += (forwarded.empty() ? "" : ", ") + std::string(View(field.value()));
      continue;
    }
    out.insert(field.name_string(), field.value());
  }
  out.set("X-Forwarded-For", forwarded.empty() ? peer : forwarded + ", " + peer);
  out.body() = std::move(request.body());  // fingerprinted already: one copy of it at a time
  return out;
}

asio::awaitable<void> GatewayHandler::Handle(GatewayRequest request, std::string peer,
                                             GatewayClient& client) {
  const GatewayRoute& route = options_.gateway.route;
  const std::string_view method = View(request.method_string());
  const std::string_view target = View(request.target());
  const std::string_view path = target.substr(0, target.find('?'));
  const auto [first_key, end_key] = request.equal_range("Idempotency-Key");
  const size_t key_fields = static_cast<size_t>(std::distance(first_key, end_key));
  if (!RouteCovers(route, method, path) || (key_fields == 0 && !route.require_key)) {
    Count(GatewayOutcome::kPassthrough);
    co_await PassThrough(request, peer, client);
    co_return;
  }
  Result<std::string> key =
      Status::InvalidArgument("this route requires an Idempotency-Key header (docs/gateway.md)");
  if (key_fields > 1) {
    key = Status::InvalidArgument("more than one Idempotency-Key field");
  } else if (key_fields == 1) {
    key = ParseIdempotencyKey(View(first_key->value()));
  }
  if (!key.ok()) {
    Count(GatewayOutcome::kRejected);
    co_await client.Send(GatewayProblem(400, key_fields == 0 ? "key-required" : "key-malformed",
                                        "Bad Request", key.status().message()));
    co_return;
  }

  auto attempt = std::make_shared<Attempt>();
  attempt->ns = route.ns;
  const auto identity =
      route.identity_header.empty() ? request.end() : request.find(route.identity_header);
  attempt->key = ScopedStoreKey(
      identity == request.end() ? std::string_view() : View(identity->value()), *key);
  FingerprintInput input{.method = method, .target = target, .headers = {}, .body = request.body()};
  for (const std::string& name : route.fingerprint_headers) {
    const auto field = request.find(name);
    input.headers.emplace_back(Lower(name), field == request.end()
                                                ? std::nullopt
                                                : std::optional<std::string>(View(field->value())));
  }
  attempt->fingerprint = RequestFingerprint(input);
  std::optional<milliseconds> wait;
  if (route.wait_ms > 0) wait = milliseconds(route.wait_ms);
  Result<OpResult> begun = co_await ApplyOne(Op::Begin({.ns = attempt->ns,
                                                        .key = attempt->key,
                                                        .fingerprint = attempt->fingerprint,
                                                        .lease = milliseconds(route.lease_ms),
                                                        .wait = wait}),
                                             attempt);
  if (!begun.ok()) {
    Count(GatewayOutcome::kStoreError);
    const Status& s = begun.status();
    const bool client_fault = s.code() == Status::Code::kInvalidArgument;
    GatewayResponse r =
        GatewayProblem(client_fault ? 400 : 503, "store-unavailable",
                       client_fault ? "Bad Request" : "Service Unavailable",
                       "the idempotency store refused the request: " + s.ToString() +
                           "; the upstream was not called");
    if (!client_fault) r.set(http::field::retry_after, "1");
    co_await client.Send(std::move(r));
    co_return;
  }
  switch (begun->outcome) {
    case Outcome::kStarted:
      attempt->fence = begun->record->fence;
      co_await Execute(request, peer, attempt, client);
      co_return;
    case Outcome::kCompleted:
      co_await Replay(begun->record->payload, client);
      co_return;
    case Outcome::kInProgress: {
      Count(GatewayOutcome::kConflict);
      const int64_t now = options_.clock ? options_.clock->NowMillis() : 0;
      const int64_t left = begun->record->lease_until_ms - now;
      const int64_t seconds = std::max<int64_t>(1, (left + 999) / 1000);
      GatewayResponse r =
          GatewayProblem(409, "request-in-progress", "Conflict",
                         "a request with this Idempotency-Key is being processed; retry after "
                         "it finishes");
      r.set(http::field::retry_after, std::to_string(seconds));
      co_await client.Send(std::move(r));
      co_return;
    }
    case Outcome::kMismatch:
      Count(GatewayOutcome::kMismatch);
      co_await client.Send(GatewayProblem(
          422, "key-reused", "Unprocessable Content",
          "this Idempotency-Key was used for a different request (method, path, query, "
          "fingerprinted headers or body differ); the stored response is not served for it"));
      co_return;
    case Outcome::kExpired:
      Count(GatewayOutcome::kExpired);
      co_await client.Send(GatewayProblem(
          410, "key-expired", "Gone",
          "this Idempotency-Key was used and its response is no longer kept; the request is not "
          "executed again"));
      co_return;
    default:
      Count(GatewayOutcome::kStoreError);
      co_await client.Send(GatewayProblem(
          500, "key-not-an-attempt", "Internal Server Error",
          "the store holds a record of another kind at this Idempotency-Key's place (outcome " +
              std::string(OutcomeName(begun->outcome)) + ")"));
      co_return;
  }
}

asio::awaitable<void> GatewayHandler::Replay(std::string_view payload, GatewayClient& client) {
  Result<StoredResponse> stored = DecodeStoredResponse(payload);
  if (!stored.ok()) {
    Count(GatewayOutcome::kStoreError);
    co_await client.Send(GatewayProblem(
        502, "stored-response-damaged", "Bad Gateway",
        "the stored response of this request cannot be read (" + stored.status().message() +
            "); the request was executed and is not executed again"));
    co_return;
  }
  if (!stored->body_stored) {
    Count(GatewayOutcome::kConflict);
    GatewayResponse r = GatewayProblem(
        409, "response-not-stored", "Conflict",
        "the request with this Idempotency-Key WAS executed (status " +
            std::to_string(stored->status) + ", " + std::to_string(stored->body_size) +
            " bytes) but its response was too large to store, so it cannot be replayed");
    r.set(kReplayedField, "true");
    r.set(kOriginalStatusField, std::to_string(stored->status));
    co_await client.Send(std::move(r));
    co_return;
  }
  Count(GatewayOutcome::kReplayed);
  co_await client.Send(Render(*stored, /*replayed=*/true));
}

asio::awaitable<void> GatewayHandler::PassThrough(GatewayRequest& request, const std::string& peer,
                                                  GatewayClient& client) {
  const GatewayOptions& o = options_.gateway;
  const bool head = request.method() == http::verb::head;
  UpstreamCall call(pool_, std::chrono::steady_clock::now() + milliseconds(o.upstream_timeout_ms),
                    o.max_header_bytes);
  const auto sent_at = std::chrono::steady_clock::now();
  beast::error_code ec = co_await call.Send(Upstream(request, peer), head);
  std::string body;
  bool complete = false;
  if (!ec) ec = co_await call.ReadHead(o.max_stored_response_bytes, &body, &complete);
  if (ec) {
    if (options_.metrics)
      options_.metrics->GatewayUpstream(std::chrono::steady_clock::now() - sent_at);
    co_await client.Send(UpstreamFailure(ec, o.upstream_timeout_ms));
    co_return;
  }
  if (complete) {
    if (options_.metrics)
      options_.metrics->GatewayUpstream(std::chrono::steady_clock::now() - sent_at);
    call.Finish();
    co_await client.Send(AsIs(call.header(), std::move(body), head));
    co_return;
  }
  uint64_t size = 0;
  co_await Relay(call, std::move(body), nullptr, client, &size);
  if (options_.metrics)
    options_.metrics->GatewayUpstream(std::chrono::steady_clock::now() - sent_at);
}

}  // namespace idem

namespace idem {

asio::awaitable<beast::error_code> GatewayHandler::Relay(
    UpstreamCall& call, std::string first,
    const std::vector<std::pair<std::string, std::string>>* headers, GatewayClient& client,
    uint64_t* size) {
  http::response_header<> header;
  header.version(11);
  header.result(call.header().result_int());
  if (headers) {
    for (const auto& [name, value] : *headers) header.insert(name, value);
  } else {
    for (const auto& field : call.header()) {
      const std::string_view name = View(field.name_string());
      if (!IsHopByHop(name) && !EqualsNoCase(name, "Content-Length")) {
        header.insert(field.name_string(), field.value());
      }
    }
  }
  bool open = co_await client.StartStream(std::move(header), call.content_length());
  *size = first.size();
  if (open) open = co_await client.StreamBody(first);
  first = std::string();  // the buffered part goes now: memory stays one chunk from here on
  std::string chunk;
  for (bool done = false; !done;) {
    // The upstream is read to its end even when the client left: the size is the record's.
    beast::error_code ec = co_await call.ReadChunk(&chunk, &done);
    if (ec) co_return ec;
    *size += chunk.size();
    if (open && !chunk.empty()) open = co_await client.StreamBody(chunk);
  }
  call.Finish();
  if (open) co_await client.EndStream();
  co_return beast::error_code();
}

asio::awaitable<void> GatewayHandler::Execute(GatewayRequest& request, const std::string& peer,
                                              std::shared_ptr<Attempt> attempt,
                                              GatewayClient& client) {
  const GatewayOptions& o = options_.gateway;
  const bool head = request.method() == http::verb::head;
  attempt->live = true;
  const auto executor = co_await asio::this_coro::executor;  // the connection's strand
  attempt->timer.emplace(executor);
  asio::co_spawn(executor, Heartbeats(attempt), asio::detached);

  UpstreamCall call(pool_, std::chrono::steady_clock::now() + milliseconds(o.upstream_timeout_ms),
                    o.max_header_bytes);
  const auto sent_at = std::chrono::steady_clock::now();
  const auto observe = [this, sent_at] {
    if (options_.metrics) {
      options_.metrics->GatewayUpstream(std::chrono::steady_clock::now() - sent_at);
    }
  };
  beast::error_code ec = co_await call.Send(Upstream(request, peer), head);
  std::string body;
  bool complete = false;
  if (!ec) ec = co_await call.ReadHead(o.max_stored_response_bytes, &body, &complete);
  if (ec) {  // no response: a retry may run the request again
    observe();
    co_await Finish(attempt, false);
    Count(GatewayOutcome::kAborted);
    co_await client.Send(UpstreamFailure(ec, o.upstream_timeout_ms));
    co_return;
  }
  const unsigned status = call.header().result_int();
  if (status >= 500 && !o.route.store_server_errors) {  // passed on as it is, not kept
    co_await Finish(attempt, false);
    Count(GatewayOutcome::kAborted);
    if (complete) {
      observe();
      call.Finish();
      co_await client.Send(AsIs(call.header(), std::move(body), head));
    } else {
      uint64_t size = 0;
      (void)co_await Relay(call, std::move(body), nullptr, client, &size);
      observe();
    }
    co_return;
  }
  if (complete) {
    observe();
    call.Finish();
    StoredResponse stored = ToStored(o.route, call.header(), std::move(body));
    // A response whose record would exceed the store's payload limit is kept as a marker.
    bool kept = EncodedStoredResponseSize(stored) <= options_.max_payload_bytes;
    if (kept) {
      attempt->response = EncodeStoredResponse(stored);
    } else {
      attempt->response = EncodeStoredResponse(NotStored(stored));
    }
    Result<OpResult> done = co_await Finish(attempt, true);
    if (!done.ok() && kept && done.status().code() == Status::Code::kInvalidArgument) {
      // The namespace keeps smaller responses than the payload limit (its max_response_bytes).
      kept = false;
      attempt->response = EncodeStoredResponse(NotStored(stored));
      done = co_await Finish(attempt, true);
    }
    Count(Fenced(done) ? GatewayOutcome::kFenced
          : kept       ? GatewayOutcome::kFirst
                       : GatewayOutcome::kNotStored);
    co_await client.Send(Render(stored, /*replayed=*/false));
    co_return;
  }
  // Too large to store: streamed, then recorded as a marker with the size the client was sent.
  StoredResponse marker = ToStored(o.route, call.header(), std::string());
  marker.body_stored = false;
  uint64_t size = 0;
  ec = co_await Relay(call, std::move(body), &marker.headers, client, &size);
  observe();
  if (ec) {
    co_await Finish(attempt, false);
    Count(GatewayOutcome::kAborted);
    co_return;
  }
  marker.body_size = size;
  attempt->response = EncodeStoredResponse(marker);
  Result<OpResult> done = co_await Finish(attempt, true);
  Count(Fenced(done) ? GatewayOutcome::kFenced : GatewayOutcome::kNotStored);
}

}  // namespace idem
