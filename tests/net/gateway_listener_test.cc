// The gateway's listener: a connect flood over max_connections holds a bounded number of
// descriptors, and TLS (ServerOptions::tls) on the gateway port: a TLS client's first request
// and its replay; a plain client to the TLS port fails cleanly and the gateway serves on.
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange unincluded
#include <vector>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/ssl.hpp>
#include <gtest/gtest.h>

#include "gateway_fixture.h"
#include "raw_socket.h"
#include "support/temp_dir.h"
#include "support/test_certs.h"

namespace idem::testing {
namespace {

using namespace std::chrono_literals;
namespace asio = boost::asio;
namespace beast = boost::beast;

// Descriptors of this process (the server, the upstream and the test's clients alike).
size_t OpenFds() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    ++n;
  }
  return n;
}

class GatewayListenerTest : public GatewayFixture {
 protected:
  GatewayListenerTest()
      : ca_("gateway test CA"),
        files_(WriteTlsFiles(
            dir_.path(), "server", ca_,
            ca_.Issue(
                {.common_name = "idem gateway", .dns = {"localhost"}, .ips = {"127.0.0.1"}}))) {}

  void StartTlsGateway() {
    StartGateway({}, [this](ServerOptions& options) {
      options.tls = TlsOptions{files_.cert_file, files_.key_file, ""};
    });
  }

  // One request over a new TLS connection that trusts the test CA; status 0 if it failed.
  GatewayReply TlsPost(const std::string& target, const Headers& headers,
                       const std::string& body = "{\"amount\":1}") const {
    asio::io_context io;
    asio::ssl::context context(asio::ssl::context::tls_client);
    context.load_verify_file(files_.ca_file);
    context.set_verify_mode(asio::ssl::verify_peer);
    beast::ssl_stream<beast::tcp_stream> stream(io, context);
    beast::error_code ec;
    beast::get_lowest_layer(stream).expires_after(20s);
    beast::get_lowest_layer(stream).connect(Endpoint(), ec);
    if (ec) return GatewayReply();
    stream.handshake(asio::ssl::stream_base::client, ec);
    if (ec) return GatewayReply();
    return Exchange(stream, "POST", target, headers, body);
  }

  TempDir dir_;
  TestCa ca_;
  TlsFiles files_;
};

// A connect flood over max_connections: refusals in flight are capped at
// max_refusing_connections, the rest wait in the listen queue, so the gateway's descriptors stay
// bounded (idemstored's descriptor budget counts on it); each client still gets its 503.
TEST_F(GatewayListenerTest, AConnectFloodHoldsAtMostMaxRefusingDescriptors) {
  StartGateway([](GatewayOptions& g) { g.max_connections = 1; });
  // The one connection served, held open with keep-alive.
  asio::io_context io;
  beast::tcp_stream held(io);
  held.connect(Endpoint());
  held.expires_after(20s);
  ASSERT_EQ(200, Exchange(held, "GET", "/status", {}).status);
  const size_t refusing = GatewayOptions().max_refusing_connections;
  const size_t before = OpenFds();
  constexpr size_t kFlood = 64;
  std::vector<std::unique_ptr<RawSocket>> flood;
  for (size_t i = 0; i < kFlood; ++i) flood.push_back(std::make_unique<RawSocket>(port_));
  // The gateway accepts what it will within milliseconds; watch it for a while.
  size_t most = 0;
  const auto until = std::chrono::steady_clock::now() + 300ms;
  while (std::chrono::steady_clock::now() < until) {
    most = std::max(most, OpenFds());
    std::this_thread::sleep_for(5ms);
  }
  // The clients' own kFlood descriptors, the refusals', and a few the server may open.
  EXPECT_LE(most, before + kFlood + refusing + 4);
  // Every client is refused in turn as the ones before it close.
  for (auto& socket : flood) {
    const std::string response = socket->ReadAll(5s);
    EXPECT_NE(std::string::npos, response.find("HTTP/1.1 503")) << response;
    socket.reset();
  }
  // The held connection is still served.
  EXPECT_EQ(200, Exchange(held, "GET", "/status", {}).status);
}

TEST_F(GatewayListenerTest, TlsClientsFirstRequestExecutesAndItsDuplicateReplays) {
  StartTlsGateway();
  const GatewayReply first = TlsPost("/pay", {Key("k1")});
  ASSERT_EQ(200, first.status) << first.body;
  EXPECT_FALSE(first.replayed());
  const GatewayReply again = TlsPost("/pay", {Key("k1")});
  EXPECT_TRUE(again.replayed());
  EXPECT_EQ(first.Replayable(), again.Replayable());
  EXPECT_EQ(1, upstream_.Executions("/pay"));
}

TEST_F(GatewayListenerTest, PlainClientToTheTlsGatewayFailsAndTheGatewayServesOn) {
  StartTlsGateway();
  // Plain HTTP where a TLS handshake is due: the gateway closes without an answer, at once.
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(0, Post("/pay", {Key("k1")}).status);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_EQ(0, upstream_.TotalExecutions());
  const GatewayReply tls = TlsPost("/pay", {Key("k1")});
  EXPECT_EQ(200, tls.status) << tls.body;
  EXPECT_FALSE(tls.replayed());
  EXPECT_EQ(1, upstream_.Executions("/pay"));
}

}  // namespace
}  // namespace idem::testing
