#include "server_flags.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli_app.h"
#include "duration.h"

namespace idem {
namespace {

Status Bad(std::string_view flag, std::string_view why) {
  return Status::InvalidArgument(std::string(flag) + ": " + std::string(why));
}

template <typename Int>
Result<Int> ParseInt(std::string_view flag, std::string_view text, Int min, Int max) {
  Int value{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < min || value > max) {
    return Bad(flag, "expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) +
                         "], got \"" + std::string(text) + "\"");
  }
  return value;
}

// One of two named values: `text` must be `first.name` or `second.name`.
template <typename T>
Status ParseChoice(std::string_view flag, std::string_view text,
                   std::pair<std::string_view, T> first, std::pair<std::string_view, T> second,
                   T* out) {
  if (text == first.first)
    *out = first.second;
  else if (text == second.first)
    *out = second.second;
  else
    return Bad(flag, "expected " + std::string(first.first) + " or " + std::string(second.first));
  return Status::Ok();
}

// A size given in MiB, in [1, max_mib], stored in bytes.
Status ParseMiB(std::string_view flag, std::string_view text, size_t max_mib, size_t* bytes) {
  Result<size_t> mib = ParseInt<size_t>(flag, text, 1, max_mib);
  if (mib.ok()) *bytes = *mib << 20;
  return mib.status();
}

Result<int64_t> ParseDuration(std::string_view flag, std::string_view text) {
  Result<int64_t> ms = ParseDurationMs(text);
  if (!ms.ok()) return Bad(flag, ms.status().message());
  return ms;
}

// "HOST:PORT" or "[V6]:PORT".
Status ParseListen(std::string_view flag, std::string_view text, std::string* host_out,
                   uint16_t* port_out) {
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return Bad(flag, "expected HOST:PORT");
  std::string_view host = text.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  Result<uint16_t> port = ParseInt<uint16_t>(flag, text.substr(colon + 1), 0, 65535);
  if (!port.ok()) return port.status();
  *host_out = std::string(host);
  *port_out = *port;
  return Status::Ok();
}

struct RetentionSpec {
  int64_t default_ttl_ms = 0;
  std::optional<int64_t> max_ttl_ms;
  bool forever = false;
  int64_t remember_ms = 0;
};

// "NS=DEFAULT_TTL[,max=DUR][,forever][,remember=DUR]".
Status ParseRetention(std::string_view text, std::map<std::string, RetentionSpec>* out) {
  size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    return Bad("--retention", "expected NS=DEFAULT_TTL[,max=DUR][,forever][,remember=DUR]");
  }
  std::string ns(text.substr(0, eq));
  std::vector<std::string_view> parts;
  std::string_view rest = text.substr(eq + 1);
  while (true) {
    size_t comma = rest.find(',');
    parts.push_back(rest.substr(0, comma));
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  RetentionSpec spec;
  Result<int64_t> ttl = ParseDuration("--retention " + ns, parts[0]);
  if (!ttl.ok()) return ttl.status();
  spec.default_ttl_ms = *ttl;
  for (size_t i = 1; i < parts.size(); ++i) {
    if (parts[i] == "forever") {
      spec.forever = true;
    } else if (parts[i].starts_with("max=")) {
      Result<int64_t> max = ParseDuration("--retention " + ns, parts[i].substr(4));
      if (!max.ok()) return max.status();
      spec.max_ttl_ms = *max;
    } else if (parts[i].starts_with("remember=")) {
      Result<int64_t> remember = ParseDuration("--retention " + ns, parts[i].substr(9));
      if (!remember.ok()) return remember.status();
      if (*remember > RetentionPolicy::kMaxRememberMs) {
        return Bad("--retention " + ns, "remember=" + std::string(parts[i].substr(9)) +
                                            " is longer than the limit of 3650d");
      }
      spec.remember_ms = *remember;
    } else {
      return Bad("--retention " + ns, "unknown part \"" + std::string(parts[i]) + "\"");
    }
  }
  (*out)[ns] = spec;
  return Status::Ok();
}

// Splits "a,b,c" (at least one part).
std::vector<std::string_view> SplitCommas(std::string_view text) {
  std::vector<std::string_view> parts;
  while (true) {
    size_t comma = text.find(',');
    parts.push_back(text.substr(0, comma));
    if (comma == std::string_view::npos) return parts;
    text = text.substr(comma + 1);
  }
}

struct LifecycleSpec {
  std::optional<int64_t> lease_ms, max_lease_ms, completed_ttl_ms;
  std::optional<size_t> max_response_bytes;
  bool remember_failures = false;
};

// "NS=lease=DUR[,max-lease=DUR][,completed-ttl=DUR][,remember-failures][,max-response=BYTES]".
Status ParseLifecycle(std::string_view text, std::map<std::string, LifecycleSpec>* out) {
  constexpr std::string_view kFlag = "--lifecycle";
  size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    return Bad(kFlag,
               "expected NS=PART[,PART...] with parts lease=DUR, max-lease=DUR, "
               "completed-ttl=DUR, remember-failures, max-response=BYTES");
  }
  std::string ns(text.substr(0, eq));
  const std::string where = std::string(kFlag) + " " + ns;
  LifecycleSpec spec;
  for (std::string_view part : SplitCommas(text.substr(eq + 1))) {
    size_t peq = part.find('=');
    std::string_view key = part.substr(0, peq);
    std::string_view value =
        peq == std::string_view::npos ? std::string_view() : part.substr(peq + 1);
    if (key == "remember-failures" && peq == std::string_view::npos) {
      spec.remember_failures = true;
      continue;
    }
    if (key == "max-response") {
      Result<size_t> n = ParseInt<size_t>(where, value, 0, size_t{1} << 30);
      if (!n.ok()) return n.status();
      spec.max_response_bytes = *n;
      continue;
    }
    std::optional<int64_t>* target = key == "lease"           ? &spec.lease_ms
                                     : key == "max-lease"     ? &spec.max_lease_ms
                                     : key == "completed-ttl" ? &spec.completed_ttl_ms
                                                              : nullptr;
    if (target == nullptr) return Bad(where, "unknown part \"" + std::string(part) + "\"");
    Result<int64_t> ms = ParseDuration(where, value);
    if (!ms.ok()) return ms.status();
    *target = *ms;
  }
  (*out)[ns] = spec;
  return Status::Ok();
}

// The gateway's upstream: "http://HOST[:PORT]" (HOST an IP address, "[V6]" or a name; PORT 80
// when left out; a trailing "/" is dropped). Requests keep their own paths, so the URL has
// none; the gateway speaks plain HTTP/1.1 to the upstream, so https:// is refused rather than
// sent in clear.
Result<std::string> ParseUpstream(std::string_view text) {
  constexpr std::string_view kFlag = "--gateway-upstream";
  const std::string expected = "expected http://HOST:PORT, got \"" + std::string(text) + "\"";
  if (text.starts_with("https://")) {
    return Bad(kFlag,
               "https:// upstreams are not supported yet: give the upstream's plain "
               "http://HOST:PORT (loopback or a trusted network)");
  }
  if (!text.starts_with("http://")) return Bad(kFlag, expected);
  std::string_view authority = text.substr(7);
  if (authority.ends_with('/')) authority.remove_suffix(1);
  if (authority.find_first_of("/?#@") != std::string_view::npos) {
    return Bad(kFlag, "no path, query or user part: requests keep their own paths; " + expected);
  }
  // A port follows the host's last ':' (a "[V6]" host's after its ']').
  const size_t host_end = authority.starts_with('[') ? authority.find(']') : 0;
  const bool has_port =
      host_end != std::string_view::npos && authority.find(':', host_end) != std::string_view::npos;
  std::string host(authority);
  uint16_t port = 80;
  if (has_port && !ParseListen(kFlag, authority, &host, &port).ok()) host.clear();
  if (host.empty() || port == 0) return Bad(kFlag, expected + " (a port in 1..65535)");
  return "http://" + std::string(authority);
}

// RFC 9110's token: header names and methods.
bool IsToken(std::string_view text) {
  constexpr std::string_view kSymbols = "!#$%&'*+-.^_`|~";
  return !text.empty() && std::all_of(text.begin(), text.end(), [&](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           kSymbols.find(c) != std::string_view::npos;
  });
}

// "a,b,c" with optional spaces around each item; "" is the empty list. `check` names what is
// wrong with one item (empty: it is fine).
Result<std::vector<std::string>> ParseList(
    std::string_view flag, std::string_view text,
    const std::function<std::string(std::string_view)>& check) {
  std::vector<std::string> items;
  if (text.find_first_not_of(' ') == std::string_view::npos) return items;
  for (std::string_view part : SplitCommas(text)) {
    while (part.starts_with(' ')) part.remove_prefix(1);
    while (part.ends_with(' ')) part.remove_suffix(1);
    if (part.empty()) return Bad(flag, "an empty item in \"" + std::string(text) + "\"");
    if (std::string why = check(part); !why.empty()) return Bad(flag, why);
    items.emplace_back(part);
  }
  return items;
}

std::string CheckHeaderName(std::string_view name) {
  return IsToken(name) ? std::string()
                       : "\"" + std::string(name) + "\" is not a header name (RFC 9110 token)";
}

std::string CheckMethod(std::string_view method) {
  if (!IsToken(method)) return "\"" + std::string(method) + "\" is not an HTTP method";
  if (std::any_of(method.begin(), method.end(), [](char c) { return c >= 'a' && c <= 'z'; })) {
    return "\"" + std::string(method) +
           "\": methods are case-sensitive and requests send them in capitals (POST, not post)";
  }
  return {};
}

std::string CheckPathPrefix(std::string_view prefix) {
  const bool printable = std::all_of(prefix.begin(), prefix.end(), [](char c) {
    return c > ' ' && c < 0x7f && c != '?' && c != '#';
  });
  return prefix.starts_with('/') && printable
             ? std::string()
             : "\"" + std::string(prefix) +
                   "\" is not a path prefix (starts with '/'; no spaces, '?' or '#')";
}

// What a parse collects before it resolves the per-namespace policies.
struct ParseState {
  ServerFlags flags;
  std::map<std::string, RetentionSpec> retention;
  std::map<std::string, LifecycleSpec> lifecycle;
  HttpListenerOptions http;
  bool http_listen = false;
  std::string http_limit_flag;  // the last --http-* limit given, for the error it may cause
  TlsOptions tls;               // on when any of its files is given
  GatewayOptions gateway;       // on when --gateway-upstream is given
  std::string gateway_flag;     // the last other --gateway-* flag given, for the error it may cause
};

// One flag. Its name without the dashes is also its key in a configuration file.
struct FlagSpec {
  std::string name;
  std::string value_form;    // shown in --help, e.g. "HOST:PORT"; empty for a switch
  std::string default_text;  // the default as it would be typed; empty: none (off)
  std::string help;
  bool repeatable = false;
  // Checks one value as typed (a switch gets "true" or "false") and applies it.
  std::function<Status(std::string_view)> apply;
};

std::string Listen(const std::string& host, uint16_t port) {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
         std::to_string(port);
}

// Every flag, in --help order. Defaults are read from EngineOptions and ServerOptions, never
// restated. Every apply function validates as strictly as its flag always has.
std::vector<FlagSpec> Flags(ParseState& s) {
  const EngineOptions engine;
  const ServerOptions server;
  const HttpListenerOptions http;
  auto mib = [](size_t bytes) { return std::to_string(bytes >> 20); };
  // A file's path, checked when it is opened (Server::Listen names it if it cannot be used).
  auto file = [](std::string* path) {
    return [path](std::string_view v) {
      *path = std::string(v);
      return Status::Ok();
    };
  };
  auto http_limit = [&s](std::string_view flag, Status status) {
    s.http_limit_flag = std::string(flag);
    return status;
  };
  const GatewayOptions gateway;
  const GatewayRoute& route = gateway.route;
  auto joined = [](const std::vector<std::string>& items) {
    std::string text;
    for (const std::string& item : items) text += (text.empty() ? "" : ",") + item;
    return text;
  };
  // Every --gateway-* flag but --gateway-upstream: remembered for the error "needs
  // --gateway-upstream", and its value checked and applied to s.gateway.
  auto gateway_flag = [&s](std::string_view flag, Status status) {
    s.gateway_flag = std::string(flag);
    return status;
  };
  auto gateway_list = [gateway_flag](std::string flag, std::vector<std::string>* out,
                                     std::string (*check)(std::string_view)) {
    return [flag, out, check, gateway_flag](std::string_view v) {
      Result<std::vector<std::string>> items = ParseList(flag, v, check);
      if (items.ok()) *out = std::move(*items);
      return gateway_flag(flag, items.status());
    };
  };
  auto gateway_duration = [gateway_flag](std::string flag, int64_t* out, int64_t min_ms) {
    return [flag, out, min_ms, gateway_flag](std::string_view v) {
      Result<int64_t> ms = ParseDuration(flag, v);
      if (ms.ok() && *ms < min_ms) {
        return gateway_flag(
            flag, Bad(flag, min_ms == 1 ? "must be positive"
                                        : "must be at least " + FormatDurationMs(min_ms)));
      }
      if (ms.ok()) *out = *ms;
      return gateway_flag(flag, ms.status());
    };
  };
  auto gateway_number = [gateway_flag](std::string flag, size_t* out, size_t min, size_t max) {
    return [flag, out, min, max, gateway_flag](std::string_view v) {
      Result<size_t> n = ParseInt<size_t>(flag, v, min, max);
      if (n.ok()) *out = *n;
      return gateway_flag(flag, n.status());
    };
  };
  auto gateway_switch = [gateway_flag](std::string flag, bool* out) {
    return [flag, out, gateway_flag](std::string_view v) {
      return gateway_flag(flag, ParseChoice(flag, v, {"true", true}, {"false", false}, out));
    };
  };
  return {
      {"listen", "HOST:PORT", Listen(server.host, server.port),
       "address to listen on (port 0 = any free port, printed in the start\nline)", false,
       [&s](std::string_view v) {
         return ParseListen("--listen", v, &s.flags.server.host, &s.flags.server.port);
       }},
      {"allow-remote", "", "false",
       "required to listen on a non-loopback address (both listeners);\n"
       "needs TLS and --auth-file, or --insecure-remote",
       false,
       [&s](std::string_view v) {
         return ParseChoice("--allow-remote", v, {"true", true}, {"false", false},
                            &s.flags.server.allow_remote);
       }},
      {"insecure-remote", "", "false",
       "with --allow-remote: serve without TLS or without --auth-file\n"
       "(the network is trusted: anyone on it reads and changes records)",
       false,
       [&s](std::string_view v) {
         return ParseChoice("--insecure-remote", v, {"true", true}, {"false", false},
                            &s.flags.server.insecure_remote);
       }},
      {"tls-cert", "FILE", "",
       "PEM certificate chain; with --tls-key turns TLS on for both\n"
       "listeners (TLS 1.2 or 1.3). SIGHUP reads the files again",
       false, file(&s.tls.cert_file)},
      {"tls-key", "FILE", "", "PEM private key of --tls-cert", false, file(&s.tls.key_file)},
      {"tls-client-ca", "FILE", "",
       "mutual TLS: clients must present a certificate signed by one of\n"
       "the CAs in this PEM file",
       false, file(&s.tls.client_ca_file)},
      {"auth-timeout", "DUR", FormatDurationMs(server.auth_timeout_ms),
       "with TLS or --auth-file: close a connection not greeted (TLS\n"
       "handshake done, Hello accepted) this long after it was accepted",
       false,
       [&s](std::string_view v) {
         Result<int64_t> ms = ParseDuration("--auth-timeout", v);
         if (ms.ok() && *ms == 0) return Bad("--auth-timeout", "must be positive");
         if (ms.ok()) s.flags.server.auth_timeout_ms = *ms;
         return ms.status();
       }},
      {"auth-file", "FILE", "",
       "turn authentication on (both listeners): the principals, their\n"
       "hashed secrets and grants (docs/security.md; idemctl auth token).\n"
       "Clients then need a token (idemctl --token or IDEM_TOKEN). A file\n"
       "that cannot be read or parsed stops the start, naming\n"
       "FILE:LINE; SIGHUP re-reads it",
       false,
       [&s](std::string_view v) {
         if (v.empty()) return Bad("--auth-file", "must name a file");
         s.flags.server.auth_file = std::string(v);
         return Status::Ok();
       }},
      {"auth-failure-limit", "N", std::to_string(server.auth_failures_per_minute),
       "failed authentications per client IP address per minute; past\n"
       "it, that address is refused (UNAUTHENTICATED) until the minute\n"
       "has passed, even with a good token",
       false,
       [&s](std::string_view v) {
         Result<uint32_t> n = ParseInt<uint32_t>("--auth-failure-limit", v, 1, 1'000'000);
         if (n.ok()) s.flags.server.auth_failures_per_minute = *n;
         return n.status();
       }},
      {"http-listen", "HOST:PORT", "",
       "also serve the HTTP/JSON API, /healthz, /readyz (and /metrics)\n"
       "there (docs/http-api.md); off unless given. ./dev run: 7879",
       false,
       [&s](std::string_view v) {
         s.http_listen = true;
         return ParseListen("--http-listen", v, &s.http.host, &s.http.port);
       }},
      {"http-max-connections", "N", std::to_string(http.max_connections),
       "HTTP connections; more get 503 and are closed; counted in the\n"
       "open-files budget beside --max-connections",
       false,
       [&s, http_limit](std::string_view v) {
         Result<size_t> n = ParseInt<size_t>("--http-max-connections", v, 1, 1'000'000);
         if (n.ok()) s.http.max_connections = *n;
         return http_limit("--http-max-connections", n.status());
       }},
      {"http-max-header-bytes", "N", std::to_string(http.max_header_bytes),
       "request line and headers; larger: 431", false,
       [&s, http_limit](std::string_view v) {
         Result<size_t> n = ParseInt<size_t>("--http-max-header-bytes", v, 1024, 64u << 20);
         if (n.ok()) s.http.max_header_bytes = *n;
         return http_limit("--http-max-header-bytes", n.status());
       }},
      {"http-max-body-bytes", "N", std::to_string(http.max_body_bytes),
       "request body; larger: 413, refused from Content-Length before\nthe body is read", false,
       [&s, http_limit](std::string_view v) {
         Result<size_t> n = ParseInt<size_t>("--http-max-body-bytes", v, 1024, size_t{1} << 32);
         if (n.ok()) s.http.max_body_bytes = *n;
         return http_limit("--http-max-body-bytes", n.status());
       }},
      {"http-idle-timeout", "DUR", FormatDurationMs(http.idle_timeout_ms),
       "close HTTP connections with no complete request this long after\n"
       "their last response",
       false,
       [&s, http_limit](std::string_view v) {
         Result<int64_t> ms = ParseDuration("--http-idle-timeout", v);
         if (ms.ok() && *ms == 0) return Bad("--http-idle-timeout", "must be positive");
         if (ms.ok()) s.http.idle_timeout_ms = *ms;
         return http_limit("--http-idle-timeout", ms.status());
       }},
      {"gateway-upstream", "URL", "",
       "turn the Idempotency-Key gateway on (docs/gateway.md): a reverse\n"
       "proxy to this upstream, http://HOST[:PORT] (https:// is not\n"
       "supported yet); off unless given, and the other --gateway-*\n"
       "flags need it",
       false,
       [&s](std::string_view v) {
         Result<std::string> url = ParseUpstream(v);
         if (url.ok()) s.gateway.upstream = std::move(*url);
         return url.status();
       }},
      {"gateway-listen", "HOST:PORT", Listen(gateway.host, gateway.port),
       "the gateway's address, where clients send their requests", false,
       [&s, gateway_flag](std::string_view v) {
         return gateway_flag("--gateway-listen",
                             ParseListen("--gateway-listen", v, &s.gateway.host, &s.gateway.port));
       }},
      {"gateway-methods", "LIST", joined(route.methods),
       "methods the gateway makes idempotent (comma-separated, in\n"
       "capitals); requests with others pass through",
       false,
       [&s, gateway_flag, gateway_list](std::string_view v) {
         Status st = gateway_list("--gateway-methods", &s.gateway.route.methods, CheckMethod)(v);
         if (st.ok() && s.gateway.route.methods.empty()) {
           st = Bad("--gateway-methods", "needs at least one method");
         }
         return gateway_flag("--gateway-methods", st);
       }},
      {"gateway-paths", "LIST", joined(route.path_prefixes),
       "path prefixes the gateway makes idempotent (comma-separated,\n"
       "e.g. /v1/payments,/v1/orders); empty: every path",
       false, gateway_list("--gateway-paths", &s.gateway.route.path_prefixes, CheckPathPrefix)},
      {"gateway-require-key", "", route.require_key ? "true" : "false",
       "a covered request without an Idempotency-Key header gets 400\n"
       "instead of passing through",
       false, gateway_switch("--gateway-require-key", &s.gateway.route.require_key)},
      {"gateway-namespace", "NS", route.ns,
       "namespace of the gateway's records (its --retention and\n"
       "--lifecycle apply)",
       false,
       [&s, gateway_flag](std::string_view v) {
         const size_t max = s.flags.engine.limits.max_namespace_bytes;
         if (v.empty() || v.size() > max || !std::all_of(v.begin(), v.end(), [](char c) {
               return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' ||
                      c == ':' || c == '-';
             })) {
           return gateway_flag("--gateway-namespace",
                               Bad("--gateway-namespace", "expected 1.." + std::to_string(max) +
                                                              " characters of [A-Za-z0-9_.:-]"));
         }
         s.gateway.route.ns = std::string(v);
         return gateway_flag("--gateway-namespace", Status::Ok());
       }},
      {"gateway-identity-header", "NAME", route.identity_header,
       "request header naming the client: keys are scoped by a hash of\n"
       "its value, so clients never share records. \"\": one scope for\n"
       "every client",
       false,
       [&s, gateway_flag](std::string_view v) {
         if (!v.empty() && !IsToken(v)) {
           return gateway_flag("--gateway-identity-header",
                               Bad("--gateway-identity-header", CheckHeaderName(v)));
         }
         s.gateway.route.identity_header = std::string(v);
         return gateway_flag("--gateway-identity-header", Status::Ok());
       }},
      {"gateway-fingerprint-headers", "LIST", joined(route.fingerprint_headers),
       "request headers that count in the fingerprint besides method,\n"
       "path, query and body: a duplicate that differs gets 422",
       false,
       gateway_list("--gateway-fingerprint-headers", &s.gateway.route.fingerprint_headers,
                    CheckHeaderName)},
      {"gateway-replay-headers", "LIST", joined(route.replay_headers),
       "response headers stored and replayed with the status and body", false,
       gateway_list("--gateway-replay-headers", &s.gateway.route.replay_headers, CheckHeaderName)},
      {"gateway-lease", "DUR", FormatDurationMs(route.lease_ms),
       "lease of a first request's attempt, renewed every third of it\n"
       "while the upstream works; a gateway that dies mid-request frees\n"
       "the key this long after its last renewal",
       false, gateway_duration("--gateway-lease", &s.gateway.route.lease_ms, 1'000)},
      {"gateway-wait", "DUR", FormatDurationMs(route.wait_ms),
       "a duplicate of a request in flight waits this long for its\n"
       "answer; 0: 409 with Retry-After at once",
       false, gateway_duration("--gateway-wait", &s.gateway.route.wait_ms, 0)},
      {"gateway-store-5xx", "", route.store_server_errors ? "true" : "false",
       "store and replay the upstream's 5xx answers; default: abort the\n"
       "attempt so that a retry runs the request again",
       false, gateway_switch("--gateway-store-5xx", &s.gateway.route.store_server_errors)},
      {"gateway-max-connections", "N", std::to_string(gateway.max_connections),
       "gateway client connections; more get 503 and are closed. Each\n"
       "may hold an upstream connection: both count in the open-files\n"
       "budget",
       false,
       gateway_number("--gateway-max-connections", &s.gateway.max_connections, 1, 1'000'000)},
      {"gateway-max-header-bytes", "N", std::to_string(gateway.max_header_bytes),
       "request line and headers, and the upstream's response headers;\n"
       "larger requests: 431",
       false,
       gateway_number("--gateway-max-header-bytes", &s.gateway.max_header_bytes, 1024, 64u << 20)},
      {"gateway-max-request-body", "BYTES", std::to_string(gateway.max_request_body_bytes),
       "a request's body, read whole (a covered one's is fingerprinted);\n"
       "larger: 413, before any store operation or upstream call",
       false,
       gateway_number("--gateway-max-request-body", &s.gateway.max_request_body_bytes, 0,
                      size_t{1} << 30)},
      {"gateway-max-stored-response", "BYTES", std::to_string(gateway.max_stored_response_bytes),
       "largest response body stored for replays; a larger one reaches\n"
       "the client, and duplicates get 409 response-not-stored",
       false,
       gateway_number("--gateway-max-stored-response", &s.gateway.max_stored_response_bytes, 0,
                      size_t{1} << 30)},
      {"gateway-upstream-timeout", "DUR", FormatDurationMs(gateway.upstream_timeout_ms),
       "no complete upstream response by then: 504, attempt aborted", false,
       gateway_duration("--gateway-upstream-timeout", &s.gateway.upstream_timeout_ms, 1)},
      {"gateway-idle-timeout", "DUR", FormatDurationMs(gateway.idle_timeout_ms),
       "close gateway client connections with no complete request this\n"
       "long after their last response",
       false, gateway_duration("--gateway-idle-timeout", &s.gateway.idle_timeout_ms, 1)},
      {"data", "DIR", s.flags.data_dir, "database directory, created if missing", false,
       [&s](std::string_view v) {
         s.flags.data_dir = std::string(v);
         return Status::Ok();
       }},
      {"durability", "sync|async", "sync",
       "sync: acknowledge after the WAL is fsynced;\n"
       "async: after the OS has the write (survives a process crash only)",
       false,
       [&s](std::string_view v) {
         return ParseChoice("--durability", v, {"sync", Durability::kSync},
                            {"async", Durability::kAsync}, &s.flags.engine.durability);
       }},
      {"log-format", "text|json", "text",
       "the log on stderr: text lines or JSON lines with ts, level,\n"
       "event, msg and fields (docs/operations.md#logging)",
       false,
       [&s](std::string_view v) {
         return ParseChoice("--log-format", v, {"text", LogFormat::kText},
                            {"json", LogFormat::kJson}, &s.flags.server.log_format);
       }},
      {"io-threads", "N", std::to_string(server.io_threads), "event-loop threads: sockets, parsing",
       false,
       [&s](std::string_view v) {
         Result<int> n = ParseInt<int>("--io-threads", v, 1, 256);
         if (n.ok()) s.flags.server.io_threads = *n;
         return n.status();
       }},
      {"engine-threads", "N", std::to_string(server.engine_threads),
       "threads applying group commits to the database (0: the event\n"
       "loop applies each turn's requests as one batch and, with\n"
       "--durability sync, a sync thread fsyncs while it goes on)",
       false,
       [&s](std::string_view v) {
         Result<int> n = ParseInt<int>("--engine-threads", v, 0, 256);
         if (n.ok()) s.flags.server.engine_threads = *n;
         return n.status();
       }},
      {"max-connections", "N", std::to_string(server.max_connections),
       "more get a BUSY error and are closed. Must fit the open-files\n"
       "limit, which idemstored raises to the hard limit at start:\n"
       "N + 352 (BUSY replies, the server's own files, RocksDB's\n"
       "minimum of 256) descriptors; RocksDB's table files get the\n"
       "rest. The default is lowered to fit (with a warning); a number\n"
       "given here or in --config that does not fit stops the start\n"
       "(exit 2). Raise the limit with LimitNOFILE= (systemd) or\n"
       "ulimit -n",
       false,
       [&s](std::string_view v) {
         Result<size_t> n = ParseInt<size_t>("--max-connections", v, 1, 1'000'000);
         if (n.ok()) s.flags.server.max_connections = *n;
         s.flags.max_connections_set = n.ok();
         return n.status();
       }},
      {"max-frame-bytes", "N", std::to_string(server.max_frame_bytes), "largest frame accepted",
       false,
       [&s](std::string_view v) {
         // Floor: a HelloReply or an error frame must fit; ceiling: the 32-bit length prefix.
         Result<size_t> n = ParseInt<size_t>("--max-frame-bytes", v, 1024, 0xffffffffu);
         if (n.ok()) s.flags.server.max_frame_bytes = *n;
         return n.status();
       }},
      {"max-reply-bytes", "N", std::to_string(server.max_reply_bytes),
       "largest response sent, announced to clients; a request whose\n"
       "response would be larger gets INVALID_ARGUMENT naming this limit\n"
       "(its operations were applied, their results are not returned):\n"
       "read fewer or smaller records per request",
       false,
       [&s](std::string_view v) {
         // Floor: an error frame must fit; ceiling: the 32-bit length prefix.
         Result<size_t> n = ParseInt<size_t>("--max-reply-bytes", v, 1024, 0xffffffffu);
         if (n.ok()) s.flags.server.max_reply_bytes = *n;
         return n.status();
       }},
      {"max-queued-reply-bytes", "N", std::to_string(server.max_queued_reply_bytes),
       "per connection: while this many response bytes wait for a client\n"
       "that does not read them, no more of its requests are read",
       false,
       [&s](std::string_view v) {
         Result<size_t> n = ParseInt<size_t>("--max-queued-reply-bytes", v, 1, size_t{1} << 40);
         if (n.ok()) s.flags.server.max_queued_reply_bytes = *n;
         return n.status();
       }},
      {"max-admin-requests", "N", std::to_string(server.max_admin_requests),
       "admin requests (backup, scan, purge, compact) running at once,\n"
       "each on a thread of its own; more are answered BUSY",
       false,
       [&s](std::string_view v) {
         Result<size_t> n = ParseInt<size_t>("--max-admin-requests", v, 1, 1024);
         if (n.ok()) s.flags.server.max_admin_requests = *n;
         return n.status();
       }},
      {"idle-timeout", "DUR", FormatDurationMs(server.idle_timeout_ms),
       "close connections idle this long", false,
       [&s](std::string_view v) {
         Result<int64_t> ms = ParseDuration("--idle-timeout", v);
         if (ms.ok() && *ms == 0) return Bad("--idle-timeout", "must be positive");
         if (ms.ok()) s.flags.server.idle_timeout_ms = *ms;
         return ms.status();
       }},
      {"default-ttl", "DUR", FormatDurationMs(engine.default_retention.default_ttl_ms),
       "TTL of records in namespaces without a policy", false,
       [&s](std::string_view v) {
         Result<int64_t> ms = ParseDuration("--default-ttl", v);
         if (ms.ok()) s.flags.engine.default_retention.default_ttl_ms = *ms;
         return ms.status();
       }},
      {"max-ttl", "DUR", FormatDurationMs(engine.default_retention.max_ttl_ms),
       "longest TTL they accept", false,
       [&s](std::string_view v) {
         Result<int64_t> ms = ParseDuration("--max-ttl", v);
         if (ms.ok()) s.flags.engine.default_retention.max_ttl_ms = *ms;
         return ms.status();
       }},
      {"retention", "NS=DUR[,max=DUR][,forever][,remember=DUR]", "",
       "a namespace's policy: default TTL, longest TTL, whether records\n"
       "may live forever, how long a finished record's key is remembered\n"
       "after it expired: Begin and Insert on it answer EXPIRED instead of\n"
       "running again (default 0: not remembered) (repeatable)",
       true, [&s](std::string_view v) { return ParseRetention(v, &s.retention); }},
      {"default-lease", "DUR", FormatDurationMs(engine.default_lifecycle.default_lease_ms),
       "lease of Begin/Lock without one", false,
       [&s](std::string_view v) {
         Result<int64_t> ms = ParseDuration("--default-lease", v);
         if (ms.ok() && *ms == 0) return Bad("--default-lease", "must be positive");
         if (ms.ok()) s.flags.engine.default_lifecycle.default_lease_ms = *ms;
         return ms.status();
       }},
      {"lifecycle", "NS=PART[,PART...]", "",
       "a namespace's request-lifecycle policy (repeatable); parts:\n"
       "lease=DUR (default lease), max-lease=DUR, completed-ttl=DUR\n"
       "(retention of completed attempts; default: the TTL policy),\n"
       "remember-failures (Abort keeps a FAILED record that Begin\n"
       "replays; default: release the key), max-response=BYTES",
       true, [&s](std::string_view v) { return ParseLifecycle(v, &s.lifecycle); }},
      {"block-cache-mb", "N", mib(engine.block_cache_bytes),
       "RocksDB block cache: caps the memory that reads use", false,
       [&s](std::string_view v) {
         return ParseMiB("--block-cache-mb", v, 1 << 20, &s.flags.engine.block_cache_bytes);
       }},
      {"write-buffer-mb", "N", mib(engine.write_buffer_bytes),
       "size of one memtable (RocksDB's write buffer); up to 3 exist at\nonce", false,
       [&s](std::string_view v) {
         return ParseMiB("--write-buffer-mb", v, 1 << 14, &s.flags.engine.write_buffer_bytes);
       }},
      {"memtable", "hash|skiplist", "hash",
       "how a memtable indexes its records: hash (O(1) insert and lookup\n"
       "of keys in any order, sorted when flushed) or RocksDB's skiplist",
       false,
       [&s](std::string_view v) {
         using Memtable = EngineOptions::Memtable;
         return ParseChoice("--memtable", v, {"hash", Memtable::kHash},
                            {"skiplist", Memtable::kSkipList}, &s.flags.engine.memtable);
       }},
      {"layout", "leveled|windows|journal", "leveled",
       "where records are written: leveled (one LSM; expired records\n"
       "leave when compaction rewrites their files), windows (one\n"
       "column family per window of death times, dropped whole once it\n"
       "has ended) or journal (segment files appended to and deleted\n"
       "once every record in them is dead; docs/operations.md).\n"
       "leveled and windows read what the\n"
       "other wrote; journal converts a leveled or windows database at\n"
       "its first start, for good; a journal database opens only as\n"
       "journal",
       false,
       [&s](std::string_view v) {
         using Layout = EngineOptions::Layout;
         if (v == "journal") {
           s.flags.engine.layout = Layout::kJournal;
           return Status::Ok();
         }
         Status st = ParseChoice("--layout", v, {"leveled", Layout::kLeveled},
                                 {"windows", Layout::kExpiryWindows}, &s.flags.engine.layout);
         return st.ok() ? st : Bad("--layout", "expected leveled, windows or journal");
       }},
      {"journal-compression", "on|off", engine.journal_dictionary_bytes != 0 ? "on" : "off",
       "with --layout journal: store records compressed with a dictionary\n"
       "each segment carries, trained on earlier records: under half the\n"
       "disk per record, for ~1.2 us of CPU per write (a quarter to a third\n"
       "of the peak write rate on one CPU) and ~0.2 us per read",
       false,
       [&s](std::string_view v) {
         return ParseChoice<size_t>("--journal-compression", v,
                                    {"on", EngineOptions::kDefaultJournalDictionaryBytes},
                                    {"off", 0}, &s.flags.engine.journal_dictionary_bytes);
       }},
      {"journal-index-save-interval", "DUR",
       FormatDurationMs(engine.journal_index_save_interval_ms),
       "with --layout journal: save the journal's index this often while\n"
       "running (0: only at a clean stop), so that a start after a crash\n"
       "loads it and replays only what came after; writes wait while it\n"
       "is copied (35 ms at 20M records here)",
       false,
       [&s](std::string_view v) {
         Result<int64_t> ms = ParseDuration("--journal-index-save-interval", v);
         if (ms.ok()) s.flags.engine.journal_index_save_interval_ms = *ms;
         return ms.status();
       }},
      {"expiry-window", "DUR", FormatDurationMs(engine.expiry_window_ms),
       "with --layout windows: the width of a window (1s..30d); a lookup\n"
       "probes every window not yet ended, and dead records leave the\n"
       "disk at most one width (plus the expiry grace) after they die",
       false,
       [&s](std::string_view v) {
         Result<int64_t> ms = ParseDuration("--expiry-window", v);
         if (!ms.ok()) return ms.status();
         if (*ms < EngineOptions::kMinExpiryWindowMs || *ms > EngineOptions::kMaxExpiryWindowMs) {
           return Bad("--expiry-window", "must be between 1s and 30d");
         }
         s.flags.engine.expiry_window_ms = *ms;
         return Status::Ok();
       }},
      {"expiry-window-merge-files", "N", std::to_string(engine.expiry_window_merge_files),
       "with --layout windows: merge a window's small table files once N\n"
       "have accumulated (0: never). More files cost a lookup of an older\n"
       "record a Bloom probe each; merging rewrites their bytes once more",
       false,
       [&s](std::string_view v) {
         Result<int> n = ParseInt<int>("--expiry-window-merge-files", v, 0,
                                       EngineOptions::kMaxExpiryWindowMergeFiles);
         if (!n.ok()) return n.status();
         if (*n == 1) return Bad("--expiry-window-merge-files", "must be 0 (never) or at least 2");
         s.flags.engine.expiry_window_merge_files = *n;
         return Status::Ok();
       }},
      {"background-priority", "normal|low", "normal",
       "CPU priority of RocksDB's flush and compaction threads: normal\n"
       "shares the CPU evenly; low (nice 19) keeps them from delaying\n"
       "requests, but only for a server with CPUs to itself: next to any\n"
       "busy process on its CPUs, flushes starve and writes stop for\n"
       "seconds",
       false,
       [&s](std::string_view v) {
         using Priority = EngineOptions::BackgroundPriority;
         return ParseChoice("--background-priority", v, {"normal", Priority::kNormal},
                            {"low", Priority::kLow}, &s.flags.engine.background_priority);
       }},
      {"wal-prezero", "on|off", engine.wal_prezero_chunk_bytes != 0 ? "on" : "off",
       "with --durability sync: keep zeros written ahead of the WAL's end\n"
       "so that each fsync overwrites instead of appending (on: no\n"
       "file-system journal commit per fsync)",
       false,
       [&s](std::string_view v) {
         return ParseChoice<uint64_t>("--wal-prezero", v,
                                      {"on", EngineOptions::kDefaultWalPrezeroChunkBytes},
                                      {"off", 0}, &s.flags.engine.wal_prezero_chunk_bytes);
       }},
      {"rocksdb-options", "\"NAME=VALUE;...\"", "",
       "RocksDB options over idemstore's own (RocksDB's option-string\n"
       "form; e.g. \"level0_file_num_compaction_trigger=8\")",
       false,
       [&s](std::string_view v) {
         s.flags.engine.rocksdb_options = std::string(v);
         return Status::Ok();
       }},
      {"state-graph", "NS=A>B>C[,A>D]", "",
       "the statuses Transition may move a namespace's records between\n"
       "(repeatable; namespaces without one allow any)",
       true,
       [&s](std::string_view v) {
         size_t eq = v.find('=');
         if (eq == std::string_view::npos || eq == 0) {
           return Bad("--state-graph", "expected NS=FROM>TO>...[,FROM>TO...]");
         }
         Result<StateGraph> graph = StateGraph::Parse(v.substr(eq + 1));
         if (!graph.ok()) return Bad("--state-graph", graph.status().message());
         s.flags.engine.state_graphs[std::string(v.substr(0, eq))] = std::move(*graph);
         return Status::Ok();
       }},
      {"key-format", "NS=min=N,max=N,chars=[SET]|NS=uuid", "",
       "the keys a namespace accepts (repeatable; parts optional; e.g.\n"
       "payments=min=16,max=64,chars=[A-Za-z0-9_-]): every operation\n"
       "naming another key is refused with INVALID_ARGUMENT naming the\n"
       "rule. uuid: 36 bytes of 8-4-4-4-12 lowercase hex digits",
       true,
       [&s](std::string_view v) {
         size_t eq = v.find('=');
         if (eq == std::string_view::npos || eq == 0) {
           return Bad("--key-format", "expected NS=uuid or NS=min=N,max=N,chars=[SET]");
         }
         const std::string ns(v.substr(0, eq));
         Result<KeyFormat> format = KeyFormat::Parse(v.substr(eq + 1));
         if (!format.ok()) return Bad("--key-format " + ns, format.status().message());
         s.flags.engine.key_formats[ns] = std::move(*format);
         return Status::Ok();
       }},
  };
}

constexpr const char* kFooter =
    R"(Durations: a number and a unit: 500ms, 30s, 15m, 24h, 7d (or a sum: 1h30m).
Every flag can also be a key of the --config file, named without its dashes
(`listen = "127.0.0.1:7878"`; repeatable flags take arrays: `retention = ["a=1d", "b=1h"]`);
a flag given on the command line replaces that key of the file.
SIGINT/SIGTERM: stop accepting, answer requests in flight, close the database, exit 0.
Exit codes: 0 after a clean stop, 2 for a bad flag or file, 1 when the database or a listening
socket cannot be opened.)";

// The command line's grammar: CLI11 reads the command line and the --config file into text per
// flag (with its own wording for unknown flags, missing values and malformed files); the
// FlagSpecs then check and apply that text, so a value means the same in both places.
struct Grammar {
  std::unique_ptr<CLI::App> app = NewCliApp(
      "idemstored", "Serves an idemstore database over TCP (protocol: docs/protocol.md).");
  std::vector<CLI::Option*> options;  // options[i] reads specs[i]
  CLI::Option* config = nullptr;
  CLI::Option* print_config = nullptr;

  explicit Grammar(const std::vector<FlagSpec>& specs) {
    app->footer(kFooter);
    for (const FlagSpec& spec : specs) {
      CLI::Option* opt;
      if (spec.value_form.empty()) {
        // A switch that a --config file can also turn off: "allow-remote = false".
        opt = app->add_flag("--" + spec.name, spec.help);
      } else {
        opt = app->add_option("--" + spec.name, spec.help)->type_name(spec.value_form);
        if (!spec.default_text.empty()) opt->default_str(spec.default_text);
      }
      // A repeated flag: a repeatable one adds a value, any other keeps its last.
      opt->multi_option_policy(spec.repeatable ? CLI::MultiOptionPolicy::TakeAll
                                               : CLI::MultiOptionPolicy::TakeLast);
      options.push_back(opt);
    }
    config = app->set_config("--config", "",
                             "read flags from FILE (TOML, or INI: key = value, one a line); a\n"
                             "flag given on the command line replaces the file's")
                 ->type_name("FILE");
    print_config =
        app->add_flag("--print-config")
            ->description("print the effective configuration in --config's format and exit")
            ->configurable(false);
  }
};

std::string Trimmed(std::string_view text) {
  size_t begin = text.find_first_not_of(" \t\r");
  if (begin == std::string_view::npos) return {};
  size_t end = text.find_last_not_of(" \t\r");
  return std::string(text.substr(begin, end - begin + 1));
}

// The line of `path` that sets `key` (0 if none is found): CLI11's items carry no lines.
int LineOf(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string name = Trimmed(line.substr(0, line.find('=')));
    if (name == key || name == "\"" + key + "\"") return number;
  }
  return 0;
}

std::string Where(const std::string& path, const std::string& key) {
  const int line = LineOf(path, key);
  return path + (line > 0 ? ":" + std::to_string(line) : "") + ": ";
}

// CLI11 (2.1) cuts a line at its first '#', even inside quotes: a value holding one would be
// read cut short, silently (data = "/srv/a#b" would open "/srv/a"). Refused, naming the line.
Status RefuseHashInQuotes(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    char quote = 0;
    for (char c : line) {
      if (quote == 0 && c == '#') break;  // a comment
      if (quote != 0 && c == '#') {
        return Bad("--config", path + ":" + std::to_string(number) +
                                   ": a '#' inside a quoted value is not supported (it would "
                                   "be read as the start of a comment)");
      }
      if (c == '"' || c == '\'') quote = quote == 0 ? c : (quote == c ? 0 : quote);
    }
  }
  return Status::Ok();
}

// Checks every key of the --config file on its own, so that an error names the file and the
// line: CLI11 (2.1) skips keys that no flag has, and a value is checked by its FlagSpec only
// after the file and the command line are merged. A value's error reads
// "FILE:LINE: KEY: why" (the FlagSpec's own message, without its flag's dashes).
Status CheckConfigFile(const CLI::App& app, const std::string& path) {
  if (Status st = RefuseHashInQuotes(path); !st.ok()) return st;
  std::vector<CLI::ConfigItem> items = app.get_config_formatter_base()->from_file(path);
  ParseState scratch;
  const std::vector<FlagSpec> specs = Flags(scratch);
  for (const CLI::ConfigItem& item : items) {
    if (item.name == "++" || item.name == "--") continue;  // a [section]'s start and end
    const std::string key = item.fullname();
    const CLI::Option* opt = item.parents.empty() ? app.get_option_no_throw("--" + key) : nullptr;
    auto spec = std::find_if(specs.begin(), specs.end(),
                             [&key](const FlagSpec& f) { return f.name == key; });
    if (opt == nullptr || !opt->get_configurable() || spec == specs.end()) {
      return Bad("--config", Where(path, item.name) + "unknown key \"" + key + "\" (see --help)");
    }
    for (const std::string& value : item.inputs) {
      Status st = spec->apply(value);
      if (st.ok()) continue;
      std::string why = st.message();
      if (why.starts_with("--")) why.erase(0, 2);
      return Bad("--config", Where(path, item.name) + why);
    }
  }
  return Status::Ok();
}

// A value as --config reads it back: a number as is, anything else quoted, so that commas and
// spaces stay inside it.
std::string Quoted(const std::string& value) {
  if (!value.empty() && value.find_first_not_of("0123456789") == std::string::npos) return value;
  const char quote = value.find('"') == std::string::npos ? '"' : '\'';
  return quote + value + quote;
}

// Every flag in --config's format: the ones given (on the command line or in a file) as keys,
// the others as comments showing their default, so that reading the text back gives the same
// flags, none of them more explicit than before (--max-connections' default may be lowered).
std::string EffectiveConfig(const std::vector<FlagSpec>& specs, const Grammar& grammar) {
  std::string out =
      "# idemstored's configuration (idemstored --print-config); read by idemstored --config "
      "FILE.\n"
      "# Commented keys show defaults.\n";
  for (size_t i = 0; i < specs.size(); ++i) {
    const FlagSpec& spec = specs[i];
    const CLI::Option* opt = grammar.options[i];
    std::string value;
    if (opt->count() == 0) {
      value = spec.repeatable ? "[]" : Quoted(spec.default_text);
      if (spec.value_form.empty()) value = spec.default_text;
      out += "# " + spec.name + " = " + value + "\n";
      continue;
    }
    if (spec.value_form.empty()) {
      value = opt->as<std::string>();  // "true" or "false": checked by its FlagSpec
    } else if (spec.repeatable) {
      for (const std::string& v : opt->reduced_results()) {
        value += (value.empty() ? "[" : ", ") + Quoted(v);
      }
      value += "]";
    } else {
      value = Quoted(opt->as<std::string>());
    }
    out += spec.name + " = " + value + "\n";
  }
  return out;
}

// The gateway's lease, wait and stored responses against its namespace's lifecycle policy and
// the store's limits, which would otherwise refuse its Begin or Complete on every request.
Status CheckGatewayFitsItsNamespace(const GatewayOptions& gateway, const EngineOptions& engine) {
  const std::string& ns = gateway.route.ns;
  auto policy = engine.lifecycle.find(ns);
  const LifecyclePolicy& lifecycle =
      policy != engine.lifecycle.end() ? policy->second : engine.default_lifecycle;
  if (gateway.route.lease_ms > lifecycle.max_lease_ms) {
    return Bad("--gateway-lease", FormatDurationMs(gateway.route.lease_ms) +
                                      " is longer than namespace " + ns + "'s longest lease, " +
                                      FormatDurationMs(lifecycle.max_lease_ms) + " (--lifecycle " +
                                      ns + "=max-lease=DUR)");
  }
  if (gateway.route.wait_ms > engine.limits.max_wait_ms) {
    return Bad("--gateway-wait", "at most " + FormatDurationMs(engine.limits.max_wait_ms) +
                                     " (the longest wait a Begin may ask for)");
  }
  if (engine.key_formats.count(ns) > 0) {
    return Bad("--key-format " + ns,
               "namespace " + ns + " holds the gateway's records, whose keys are made from " +
                   "the Idempotency-Key header (docs/gateway.md): give it no key format");
  }
  const size_t max_response =
      std::min(lifecycle.max_response_bytes, engine.limits.max_payload_bytes);
  if (gateway.max_stored_response_bytes > max_response) {
    return Bad("--gateway-max-stored-response",
               std::to_string(gateway.max_stored_response_bytes) + " is more than namespace " + ns +
                   " stores: responses of at most " + std::to_string(max_response) +
                   " bytes (--lifecycle " + ns + "=max-response=BYTES, the payload limit)");
  }
  return Status::Ok();
}

}  // namespace

Result<ServerFlags> ParseServerFlags(std::span<const std::string_view> args) {
  ParseState s;
  s.flags.engine.durability = Durability::kSync;
  const std::vector<FlagSpec> specs = Flags(s);
  Grammar grammar(specs);
  Result<CliRequest> request = ParseCli(*grammar.app, args);
  if (!request.ok()) return request.status();
  if (*request != CliRequest::kRun) {
    s.flags.help = *request == CliRequest::kHelp;
    s.flags.version = *request == CliRequest::kVersion;
    return std::move(s.flags);
  }
  if (grammar.config->count() > 0) {
    if (Status st = CheckConfigFile(*grammar.app, grammar.config->as<std::string>()); !st.ok()) {
      return st;
    }
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    const CLI::Option* opt = grammar.options[i];
    if (opt->count() == 0) continue;
    if (specs[i].value_form.empty()) {
      // A switch's text: "true" when given bare, else the value given (--allow-remote=false).
      if (Status st = specs[i].apply(opt->as<std::string>()); !st.ok()) return st;
      continue;
    }
    for (const std::string& value : opt->reduced_results()) {
      if (Status st = specs[i].apply(value); !st.ok()) return st;
    }
  }
  ServerFlags& flags = s.flags;

  // Retention policies are resolved last, so --max-ttl applies whatever the flag order.
  for (const auto& [ns, spec] : s.retention) {
    RetentionPolicy policy;
    policy.default_ttl_ms = spec.default_ttl_ms;
    policy.max_ttl_ms = spec.max_ttl_ms.value_or(
        std::max(flags.engine.default_retention.max_ttl_ms, spec.default_ttl_ms));
    policy.allow_forever = spec.forever;
    policy.remember_ms = spec.remember_ms;
    flags.engine.retention[ns] = policy;
  }
  // Lifecycle policies start from the defaults (including --default-lease), whatever the order.
  for (const auto& [ns, spec] : s.lifecycle) {
    LifecyclePolicy policy = flags.engine.default_lifecycle;
    policy.default_lease_ms = spec.lease_ms.value_or(policy.default_lease_ms);
    policy.max_lease_ms =
        spec.max_lease_ms.value_or(std::max(policy.max_lease_ms, policy.default_lease_ms));
    policy.completed_ttl_ms = spec.completed_ttl_ms.value_or(policy.completed_ttl_ms);
    policy.max_response_bytes = spec.max_response_bytes.value_or(policy.max_response_bytes);
    policy.remember_failures = spec.remember_failures;
    flags.engine.lifecycle[ns] = policy;
  }
  // Checked here as well as by Engine::Open, so that a bad flag stops the start with exit 2.
  for (const auto& [ns, format] : flags.engine.key_formats) {
    if (std::max(format.min_bytes(), format.max_bytes().value_or(0)) >
        flags.engine.limits.max_key_bytes) {
      return Bad("--key-format " + ns, "keys are at most " +
                                           std::to_string(flags.engine.limits.max_key_bytes) +
                                           " bytes (max_key_bytes)");
    }
  }
  if (!s.tls.cert_file.empty() || !s.tls.key_file.empty() || !s.tls.client_ca_file.empty()) {
    if (s.tls.cert_file.empty()) {
      return Bad(s.tls.key_file.empty() ? "--tls-client-ca" : "--tls-key",
                 "needs --tls-cert and --tls-key");
    }
    if (s.tls.key_file.empty()) return Bad("--tls-cert", "needs --tls-key");
    flags.server.tls = std::move(s.tls);
  }
  if (s.http_listen) {
    flags.server.http = std::move(s.http);
  } else if (!s.http_limit_flag.empty()) {
    return Bad(s.http_limit_flag, "needs --http-listen (the HTTP listener is off without it)");
  }
  if (!s.gateway.upstream.empty()) {
    if (Status st = CheckGatewayFitsItsNamespace(s.gateway, flags.engine); !st.ok()) return st;
    flags.server.gateway = std::move(s.gateway);
  } else if (!s.gateway_flag.empty()) {
    return Bad(s.gateway_flag, "needs --gateway-upstream (the gateway is off without it)");
  }
  flags.server.limits = flags.engine.limits;
  flags.print_config = grammar.print_config->count() > 0;
  flags.effective_config = EffectiveConfig(specs, grammar);
  return std::move(s.flags);
}

std::string ServerFlagsUsage() {
  ParseState unused;
  const std::vector<FlagSpec> specs = Flags(unused);
  Grammar grammar(specs);
  return grammar.app->help();
}

}  // namespace idem
