#include "http_handler.h"

#include <optional>
#include <string_view>
#include <vector>

#include "authorization.h"
#include "http_ops.h"
#include "json_writer.h"
#include "record_json.h"

namespace idem {
namespace {

namespace http = boost::beast::http;

constexpr std::string_view kJson = "application/json";
constexpr std::string_view kProblemJson = "application/problem+json";
constexpr std::string_view kMetricsType = "text/plain; version=0.0.4; charset=utf-8";

HttpResponse Response(http::status status, std::string_view content_type, std::string body) {
  HttpResponse r{status, 11};
  r.set(http::field::server, "idemstored");
  r.set(http::field::content_type, std::string(content_type));
  r.body() = std::move(body);
  r.prepare_payload();
  return r;
}

// A convenience route: METHOD /v1/COLLECTION/{ns}[/{key}][:ACTION] applies one op.
struct Route {
  http::verb method;
  std::string_view collection;
  bool keyed;               // the path has a {key} segment (the token for token-consume)
  std::string_view action;  // after an unencoded ':' in the last segment; "" for none
  std::string_view op;      // OpTypeName
};

const std::vector<Route>& Routes() {
  static const std::vector<Route> routes = {
      {http::verb::get, "records", true, "", "get"},
      {http::verb::put, "records", true, "", "insert"},
      {http::verb::delete_, "records", true, "", "delete"},
      {http::verb::post, "records", true, "cas", "cas"},
      {http::verb::post, "records", true, "transition", "transition"},
      {http::verb::post, "attempts", true, "begin", "begin"},
      {http::verb::post, "attempts", true, "complete", "complete"},
      {http::verb::post, "attempts", true, "abort", "abort"},
      {http::verb::post, "attempts", true, "heartbeat", "heartbeat"},
      {http::verb::post, "attempts", true, "checkpoint", "checkpoint"},
      {http::verb::post, "locks", true, "lock", "lock"},
      {http::verb::post, "locks", true, "renew", "renew"},
      {http::verb::post, "locks", true, "unlock", "unlock"},
      {http::verb::post, "tokens", false, "", "token-issue"},
      {http::verb::post, "tokens", true, "consume", "token-consume"},
  };
  return routes;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// RFC 3986 percent-decoding of one path segment: %XX is any byte, so keys may be any bytes.
// '+' is a plus. A '%' not followed by two hex digits is refused.
Result<std::string> PercentDecode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out.push_back(s[i]);
      continue;
    }
    const int h = i + 1 < s.size() ? HexDigit(s[i + 1]) : -1;
    const int l = i + 2 < s.size() ? HexDigit(s[i + 2]) : -1;
    if (h < 0 || l < 0) {
      return Status::InvalidArgument("path segment \"" + std::string(s) + "\": '%' at offset " +
                                     std::to_string(i) + " is not followed by two hex digits");
    }
    out.push_back(static_cast<char>(h * 16 + l));
    i += 2;
  }
  return out;
}

std::vector<std::string_view> Split(std::string_view path) {
  std::vector<std::string_view> parts;
  while (!path.empty()) {
    const size_t slash = path.find('/');
    parts.push_back(path.substr(0, slash));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return parts;
}

// Every result, or an error in its place, as /v1/apply answers them.
std::string ResultsJson(std::span<const Result<OpResult>> results) {
  JsonWriter j;
  j.BeginObject();
  j.Key("results");
  j.BeginArray();
  for (const Result<OpResult>& r : results) {
    if (r.ok()) {
      WriteOpResultJson(*r, j);
    } else {
      j.BeginObject();
      j.Key("error");
      WriteStatusJson(r.status(), j);
      j.EndObject();
    }
  }
  j.EndArray();
  j.EndObject();
  return j.Take();
}

// At least the size of ResultsJson(results), and at most 512 bytes per result more: every string
// and byte field is counted exactly as it will be written (escapes, or base64), the fixed names
// and numbers are bounded per result. Checked before building, so a refused reply is never built.
size_t ResultsJsonBound(std::span<const Result<OpResult>> results) {
  size_t bytes = 32;
  for (const Result<OpResult>& r : results) {
    bytes += 512;
    if (!r.ok()) {
      bytes += JsonQuotedSize(r.status().message());
      continue;
    }
    bytes += JsonQuotedSize(r->token);
    if (r->record) {
      const Record& rec = *r->record;
      bytes += JsonQuotedSize(rec.status) + JsonQuotedSize(rec.owner) +
               BytesJsonSize("fingerprint", rec.fingerprint) +
               BytesJsonSize("payload", rec.payload);
    }
  }
  return bytes;
}

// The token of "Authorization: Bearer TOKEN" (RFC 6750; the scheme's case does not matter);
// nullopt without the header or with another scheme.
std::optional<std::string_view> BearerToken(const HttpRequest& request) {
  auto it = request.find(http::field::authorization);
  if (it == request.end()) return std::nullopt;
  std::string_view value(it->value().data(), it->value().size());
  constexpr std::string_view kScheme = "bearer ";
  if (value.size() < kScheme.size()) return std::nullopt;
  for (size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(value[i])) != kScheme[i]) return std::nullopt;
  }
  value.remove_prefix(kScheme.size());
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  while (!value.empty() && value.back() == ' ') value.remove_suffix(1);
  return value;
}

}  // namespace

http::status HttpStatusFor(Status::Code code) {
  switch (code) {
    case Status::Code::kOk:
      return http::status::ok;
    case Status::Code::kInvalidArgument:
    case Status::Code::kNotSupported:
      return http::status::bad_request;
    case Status::Code::kNotFound:
      return http::status::not_found;
    case Status::Code::kBusy:
    case Status::Code::kShutdown:
      return http::status::service_unavailable;
    case Status::Code::kTimedOut:
      return http::status::gateway_timeout;
    case Status::Code::kIOError:
    case Status::Code::kCorruption:
      return http::status::internal_server_error;
    case Status::Code::kUnauthenticated:
      return http::status::unauthorized;
    case Status::Code::kPermissionDenied:
      return http::status::forbidden;
  }
  return http::status::internal_server_error;
}

HttpResponse ProblemResponse(http::status status, Status::Code code, std::string_view detail) {
  JsonWriter j;
  j.BeginObject();
  j.Key("type");
  j.String("about:blank");
  j.Key("title");
  const boost::beast::string_view reason = http::obsolete_reason(status);
  j.String(std::string_view(reason.data(), reason.size()));
  j.Key("status");
  j.Int(static_cast<int>(status));
  j.Key("code");
  j.String(CodeName(code));
  j.Key("detail");
  j.String(detail);
  j.EndObject();
  HttpResponse r = Response(status, kProblemJson, j.Take());
  if (status == http::status::service_unavailable) r.set(http::field::retry_after, "1");
  // RFC 6750: a 401 names the scheme the client must use.
  if (status == http::status::unauthorized) r.set(http::field::www_authenticate, "Bearer");
  return r;
}

HttpResponse ProblemResponse(const Status& error) {
  return ProblemResponse(HttpStatusFor(error.code()), error.code(), error.message());
}

void HttpHandler::Handle(const HttpRequest& request, std::string_view peer_address, Reply reply) {
  const std::string_view target(request.target().data(), request.target().size());
  const std::string_view path = target.substr(0, target.find('?'));
  const http::verb method = request.method();
  auto method_not_allowed = [&](std::string_view allow) {
    HttpResponse r = ProblemResponse(
        http::status::method_not_allowed, Status::Code::kInvalidArgument,
        std::string(request.method_string().data(), request.method_string().size()) + " " +
            std::string(path) + ": allowed: " + std::string(allow));
    r.set(http::field::allow, std::string(allow));
    reply(std::move(r));
  };
  auto only = [&](http::verb allowed, std::string_view allow) -> bool {
    if (method == allowed) return true;
    method_not_allowed(allow);
    return false;
  };

  if (path == "/healthz") {
    if (only(http::verb::get, "GET"))
      reply(Response(http::status::ok, kJson, R"({"status":"ok"})"));
    return;
  }
  if (path == "/readyz") {
    if (!only(http::verb::get, "GET")) return;
    Status ready = options_.readiness ? options_.readiness() : Status::Ok();
    reply(ready.ok() ? Response(http::status::ok, kJson, R"({"status":"ready"})")
                     : ProblemResponse(http::status::service_unavailable, ready.code(),
                                       "not ready: " + ready.message()));
    return;
  }
  if (apply_ == nullptr) {
    Status ready = options_.readiness ? options_.readiness() : Status::Busy("no store");
    reply(ProblemResponse(http::status::service_unavailable, ready.code(), ready.message()));
    return;
  }
  // Everything past the probes needs a token when authentication is on: each request is
  // authenticated on its own (HTTP is stateless), and counted against the peer like a Hello.
  std::shared_ptr<const Principal> principal;
  if (options_.auth != nullptr) {
    Result<Identity> identity = options_.auth->Authenticate(peer_address, BearerToken(request));
    if (!identity.ok()) {
      reply(ProblemResponse(identity.status()));
      return;
    }
    principal = std::move(identity->principal);
  }
  // Ok, or the 403 has been sent.
  auto allowed_everywhere = [&](std::string_view what) -> bool {
    if (!principal) return true;
    Status s = CheckAdminEverywhere(*principal, what);
    if (s.ok()) return true;
    if (options_.server_metrics) options_.server_metrics->PermissionDenied();
    reply(ProblemResponse(s));
    return false;
  };

  if (path == "/metrics") {
    if (!only(http::verb::get, "GET")) return;
    if (!allowed_everywhere("read the metrics")) return;
    if (!options_.metrics) {
      reply(ProblemResponse(http::status::not_found, Status::Code::kNotFound,
                            "this server serves no metrics"));
      return;
    }
    options_.metrics([reply = std::move(reply)](std::string body) {
      reply(Response(http::status::ok, kMetricsType, std::move(body)));
    });
    return;
  }
  if (path == "/v1/admin/backup") {
    if (!only(http::verb::post, "POST")) return;
    if (!allowed_everywhere("take a backup")) return;
    if (!options_.backup) {
      reply(ProblemResponse(http::status::not_found, Status::Code::kNotFound,
                            "this server takes no backups"));
      return;
    }
    std::string to;
    if (Status s = DecodeBackupBody(request.body(), &to); !s.ok()) {
      reply(ProblemResponse(s));
      return;
    }
    options_.backup(std::move(to), [reply = std::move(reply)](Result<BackupManifest> manifest) {
      if (!manifest.ok()) {
        reply(ProblemResponse(manifest.status()));
        return;
      }
      JsonWriter j;
      j.BeginObject();
      WriteBackupManifestFields(*manifest, j);
      j.EndObject();
      reply(Response(http::status::ok, kJson, j.Take()));
    });
    return;
  }
  if (path == "/v1/apply") {
    if (!only(http::verb::post, "POST")) return;
    DecodedOps ops;
    if (Status s = DecodeApplyBody(request.body(), options_.limits, &ops); !s.ok()) {
      reply(ProblemResponse(s));
      return;
    }
    ops.principal = principal;
    Apply(std::move(ops), /*single=*/false, std::move(reply));
    return;
  }

  // /v1/COLLECTION/{ns}[/{key}][:ACTION]
  std::vector<std::string_view> parts = Split(path);
  auto not_found = [&] {
    reply(ProblemResponse(http::status::not_found, Status::Code::kNotFound,
                          "no route " + std::string(path) + " (docs/http-api.md lists them)"));
  };
  if (parts.size() < 4 || parts.size() > 5 || !parts[0].empty() || parts[1] != "v1") {
    not_found();
    return;
  }
  const std::string_view collection = parts[2];
  const bool keyed = parts.size() == 5;
  std::string_view last = parts.back();
  std::string_view action;
  if (const size_t colon = last.rfind(':'); colon != std::string_view::npos) {
    action = last.substr(colon + 1);
    last = last.substr(0, colon);
  }
  const Route* route = nullptr;
  std::string allow;
  for (const Route& r : Routes()) {
    if (r.collection != collection || r.keyed != keyed || r.action != action) continue;
    if (r.method == method) route = &r;
    const boost::beast::string_view name = http::to_string(r.method);
    allow += (allow.empty() ? "" : ", ") + std::string(name.data(), name.size());
  }
  if (allow.empty()) {
    not_found();
    return;
  }
  if (route == nullptr) {
    method_not_allowed(allow);
    return;
  }
  Result<std::string> ns = PercentDecode(keyed ? parts[3] : last);
  if (!ns.ok()) {
    reply(ProblemResponse(ns.status()));
    return;
  }
  std::optional<std::string> key;
  if (keyed) {
    Result<std::string> k = PercentDecode(last);
    if (!k.ok()) {
      reply(ProblemResponse(k.status()));
      return;
    }
    key = std::move(*k);
  }
  DecodedOps ops;
  if (Status s = DecodeRouteOp(route->op, std::move(*ns), std::move(key), request.body(), &ops);
      !s.ok()) {
    reply(ProblemResponse(s));
    return;
  }
  ops.principal = std::move(principal);
  Apply(std::move(ops), /*single=*/true, std::move(reply));
}

void HttpHandler::Apply(DecodedOps ops, bool single, Reply reply) {
  apply_->Apply(
      Transport::kHttp, std::move(ops),
      [this, single, reply = std::move(reply)](Status status,
                                               std::vector<Result<OpResult>> results) {
        if (!status.ok()) {
          reply(ProblemResponse(status));
          return;
        }
        // A request refused for its permissions has every result PERMISSION_DENIED (each naming
        // a namespace): a 403 like any refusal, with the first op's.
        if (!results.empty() && !results[0].ok() &&
            (single || results[0].status().IsPermissionDenied())) {
          reply(ProblemResponse(results[0].status()));
          return;
        }
        const size_t bound = ResultsJsonBound(results);
        if (options_.max_reply_bytes != 0 && bound > options_.max_reply_bytes) {
          reply(ProblemResponse(Status::InvalidArgument(
              "response of about " + std::to_string(bound) + " bytes exceeds max_reply_bytes " +
              std::to_string(options_.max_reply_bytes) +
              "; the operations were applied, their results are not returned (read fewer or "
              "smaller records per request)")));
          return;
        }
        if (single) {
          JsonWriter j;
          WriteOpResultJson(*results[0], j);
          reply(Response(http::status::ok, kJson, j.Take()));
          return;
        }
        reply(Response(http::status::ok, kJson, ResultsJson(results)));
      });
}

}  // namespace idem
