// GatewayFixture: an in-process Server (engine in a temp dir on a ManualClock) whose gateway
// stands in front of a real TestUpstream, and a small synchronous HTTP client (one connection
// per request, so that requests from several threads are independent clients).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange unincluded
#include <vector>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <gtest/gtest.h>

#include "gateway_key.h"
#include "support/test_upstream.h"
#include "test_server.h"

namespace idem::testing {

using Headers = std::vector<std::pair<std::string, std::string>>;

struct GatewayReply {
  int status = 0;   // 0: the connection failed or closed without an answer
  Headers headers;  // in the order received
  std::string body;

  std::string Header(std::string_view name) const {
    for (const auto& [n, v] : headers) {
      if (boost::beast::iequals(n, boost::beast::string_view(name.data(), name.size()))) return v;
    }
    return "";
  }
  bool has(std::string_view name) const {
    for (const auto& h : headers) {
      if (boost::beast::iequals(h.first, boost::beast::string_view(name.data(), name.size())))
        return true;
    }
    return false;
  }
  bool replayed() const { return Header("Idempotent-Replayed") == "true"; }
  // What a replay must repeat byte for byte: status, headers (but Idempotent-Replayed) and body.
  std::string Replayable() const {
    std::string out = std::to_string(status) + "\n";
    for (const auto& [n, v] : headers) {
      if (!boost::beast::iequals(n, "Idempotent-Replayed")) out += n + ": " + v + "\n";
    }
    return out + "\n" + body;
  }
};

inline std::pair<std::string, std::string> Key(const std::string& key) {
  return {"Idempotency-Key", "\"" + key + "\""};
}

class GatewayFixture : public ::testing::Test {
 protected:
  // Starts the server with the gateway options `configure` adjusts (upstream and port are set).
  // `configure_server` adjusts the rest of the server's options (TLS, say).
  void StartGateway(const std::function<void(GatewayOptions&)>& configure = {},
                    const std::function<void(ServerOptions&)>& configure_server = {}) {
    ServerOptions options;
    if (configure_server) configure_server(options);
    GatewayOptions gateway;
    gateway.host = "127.0.0.1";
    gateway.port = 0;
    gateway.upstream = upstream_.url();
    gateway.route.identity_header = "Authorization";
    if (configure) configure(gateway);
    options.gateway = gateway;
    server_ = std::make_unique<TestServer>(options, clock_);
    port_ = server_->server().gateway_port();
    ASSERT_NE(0, port_);
  }

  GatewayReply Send(const std::string& method, const std::string& target, const Headers& headers,
                    const std::string& body = "") const {
    boost::asio::io_context io;
    boost::beast::tcp_stream stream(io);
    boost::beast::error_code ec;
    stream.connect(Endpoint(), ec);
    if (ec) return GatewayReply();
    stream.expires_after(std::chrono::seconds(20));
    return Exchange(stream, method, target, headers, body);
  }
  // The gateway's endpoint on 127.0.0.1.
  boost::asio::ip::tcp::endpoint Endpoint() const {
    return boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port_);
  }
  // One request and its response on a connected `stream` (plain or TLS); status 0 if it failed.
  template <typename Stream>
  static GatewayReply Exchange(Stream& stream, const std::string& method, const std::string& target,
                               const Headers& headers, const std::string& body = "") {
    namespace beast = boost::beast;
    namespace http = beast::http;
    GatewayReply reply;
    beast::error_code ec;
    http::request<http::string_body> request;
    request.method_string(method);
    request.target(target);
    request.version(11);
    request.set(http::field::host, "127.0.0.1");
    for (const auto& [name, value] : headers) request.insert(name, value);
    request.body() = body;
    request.prepare_payload();
    http::write(stream, request, ec);
    if (ec) return reply;
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(64u << 20);
    http::read(stream, buffer, parser, ec);
    if (ec) return reply;
    const auto& response = parser.get();
    reply.status = static_cast<int>(response.result_int());
    for (const auto& field : response) {
      reply.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    }
    reply.body = response.body();
    return reply;
  }
  GatewayReply Post(const std::string& target, const Headers& headers,
                    const std::string& body = "{\"amount\":1}") const {
    return Send("POST", target, headers, body);
  }

  // The engine's record of a client key (no Authorization header: the shared scope).
  Result<OpResult> Record(const std::string& key, const std::string& identity = "") {
    const std::string store_key = ScopedStoreKey(identity, key);
    return server_->engine().Get({.ns = "gateway", .key = store_key});
  }

  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>();
  TestUpstream upstream_;
  std::unique_ptr<TestServer> server_;
  uint16_t port_ = 0;
};

}  // namespace idem::testing
