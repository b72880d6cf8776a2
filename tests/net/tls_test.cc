// TLS on the real server (both listeners) and in the Client, over 127.0.0.1, with certificates
// made by the test (support/test_certs.h): what a client with the right CA gets, what every
// wrong combination gets (a clear error, never a hang), and that the server serves on after each.
#include <chrono>
#include <fstream>
#include <functional>
#include <future>
#include <string>
#include <thread>
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange unincluded

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <gtest/gtest.h>

#include "credentials.h"
#include "exposition_parser.h"
#include "protocol_codec.h"
#include "raw_socket.h"
#include "support/test_certs.h"
#include "test_server.h"
#include "tls_context.h"

namespace idem {
namespace {

using namespace std::chrono_literals;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using testing::CertSpec;
using testing::RawSocket;
using testing::TestCa;
using testing::TestCert;
using testing::TlsFiles;

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A hand-driven TLS connection (Asio, async under run_for so that nothing waits forever): for
// what the Client cannot do, such as stopping after the handshake or speaking HTTP.
class TlsProbe {
 public:
  TlsProbe(uint16_t port, const std::string& ca_file) {
    context_.load_verify_file(ca_file);
    context_.set_verify_mode(asio::ssl::verify_peer);
    boost::system::error_code ec;
    stream_.lowest_layer().connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), ec);
    connected_ = !ec;
  }

  boost::system::error_code Handshake() {
    boost::system::error_code result = asio::error::timed_out;
    stream_.async_handshake(asio::ssl::stream_base::client,
                            [&](const boost::system::error_code& ec) { result = ec; });
    Run();
    return result;
  }

  bool Write(const std::string& bytes) {
    boost::system::error_code result = asio::error::timed_out;
    asio::async_write(stream_, asio::buffer(bytes),
                      [&](const boost::system::error_code& ec, size_t) { result = ec; });
    Run();
    return !result;
  }

  // Everything the server sends until it closes; `closed` false if it did not within 10 s.
  std::string ReadUntilClosed(bool* closed) {
    std::string out;
    *closed = false;
    std::function<void()> read = [&] {
      stream_.async_read_some(asio::buffer(buf_),
                              [&](const boost::system::error_code& ec, size_t n) {
                                out.append(buf_.data(), n);
                                if (ec) {
                                  *closed = true;
                                  return;
                                }
                                read();
                              });
    };
    read();
    Run();
    return out;
  }

  bool connected() const { return connected_; }

 private:
  void Run() {
    io_.restart();
    io_.run_for(10s);
  }

  asio::io_context io_;
  asio::ssl::context context_{asio::ssl::context::tls_client};
  asio::ssl::stream<tcp::socket> stream_{io_, context_};
  std::array<char, 4096> buf_;
  bool connected_ = false;
};

class TlsTest : public ::testing::Test {
 protected:
  TlsTest()
      : ca_("idem test CA"),
        other_ca_("another CA"),
        server_cert_(
            ca_.Issue({.common_name = "idem server", .dns = {"localhost"}, .ips = {"127.0.0.1"}})),
        files_(testing::WriteTlsFiles(dir_.path(), "server", ca_, server_cert_)) {}

  ServerOptions TlsServerOptions() {
    ServerOptions options;
    options.tls = TlsOptions{files_.cert_file, files_.key_file, ""};
    return options;
  }
  void StartServer(ServerOptions options) {
    server_ = std::make_unique<testing::TestServer>(std::move(options));
  }

  ClientOptions TlsClient(const std::string& ca_file) const {
    ClientOptions options;
    options.tls = ClientTlsOptions{.ca_file = ca_file};
    options.reconnect = false;
    return options;
  }
  ClientOptions TrustingClient() const { return TlsClient(files_.ca_file); }

  // One op through `client`: "" when it was applied, else the error.
  static std::string Insert(Client& client, const std::string& key) {
    Result<OpResult> r = client.Insert({.ns = "ns", .key = key, .status = "NEW"});
    if (!r.ok()) return r.status().ToString();
    return r->outcome == Outcome::kInserted ? "" : "not inserted";
  }

  // A new TLS client with the right CA connects and applies an op.
  void ExpectServingTls() {
    auto client = server_->Connect(TrustingClient());
    ASSERT_OK(client);
    EXPECT_EQ("", Insert(**client, "probe-" + std::to_string(probe_++)));
  }

  // Connect()'s error with `options`, or "connected".
  std::string ConnectError(ClientOptions options) {
    auto client = server_->Connect(std::move(options));
    return client.ok() ? "connected" : client.status().ToString();
  }

  std::string Write(const std::string& name, const std::string& content) {
    const std::string path = dir_.Sub(name);
    testing::WriteTestFile(path, content);
    return path;
  }

  double Metric(const std::string& name) {
    return testing::ParseExposition(server_->server().MetricsText()).ValueOr0(name);
  }

  testing::TempDir dir_;
  TestCa ca_, other_ca_;
  TestCert server_cert_;
  TlsFiles files_;
  std::unique_ptr<testing::TestServer> server_;
  int probe_ = 0;
};

TEST_F(TlsTest, ClientWithTheServersCaAppliesOps) {
  StartServer(TlsServerOptions());
  auto client = server_->Connect(TrustingClient());
  ASSERT_OK(client);
  EXPECT_EQ("", Insert(**client, "k1"));
  Result<OpResult> get = (*client)->Get({.ns = "ns", .key = "k1"});
  ASSERT_OK(get);
  EXPECT_EQ(Outcome::kFound, get->outcome);
}

TEST_F(TlsTest, PipelinedRequestsOverTlsAllAnswered) {
  StartServer(TlsServerOptions());
  auto client = server_->Connect(TrustingClient());
  ASSERT_OK(client);
  constexpr int kRequests = 200;
  std::vector<std::promise<Status>> done(kRequests);
  for (int i = 0; i < kRequests; ++i) {
    const std::string key = "p" + std::to_string(i);
    Op op = Op::Insert({.ns = "ns", .key = key, .status = "NEW"});
    (*client)->ApplyAsync(
        std::span<const Op>(&op, 1),
        [&done, i](Status s, std::vector<Result<OpResult>>) { done[i].set_value(std::move(s)); });
  }
  for (auto& d : done) {
    Status s = d.get_future().get();
    EXPECT_TRUE(s.ok()) << s.ToString();
  }
}

TEST_F(TlsTest, PlainClientToTlsPortFailsAndServerServesOn) {
  StartServer(TlsServerOptions());
  ClientOptions plain;
  plain.reconnect = false;
  const std::string error = ConnectError(plain);
  EXPECT_TRUE(Contains(error, "IO_ERROR")) << error;
  ExpectServingTls();
  EXPECT_EQ(1, Metric("idem_tls_handshake_failures_total"));
}

TEST_F(TlsTest, TlsClientToPlainPortFailsAndServerServesOn) {
  StartServer(ServerOptions{});
  const std::string error = ConnectError(TrustingClient());
  EXPECT_TRUE(Contains(error, "IO_ERROR")) << error;
  EXPECT_TRUE(Contains(error, "TLS handshake with " + server_->address() + " failed")) << error;
  auto plain = server_->Connect();
  ASSERT_OK(plain);
  EXPECT_EQ("", Insert(**plain, "after"));
}

TEST_F(TlsTest, ServerCertificateFromAnotherCaIsRefused) {
  StartServer(TlsServerOptions());
  const std::string other_ca = Write("other-ca.pem", other_ca_.cert_pem());
  const std::string error = ConnectError(TlsClient(other_ca));
  EXPECT_TRUE(Contains(error, "certificate verify failed")) << error;
  ExpectServingTls();
}

TEST_F(TlsTest, ExpiredServerCertificateIsRefused) {
  TestCert expired =
      ca_.Issue({.ips = {"127.0.0.1"}, .not_before_s = -2 * 24 * 3600, .not_after_s = -24 * 3600});
  ServerOptions options = TlsServerOptions();
  options.tls->cert_file = Write("expired.pem", expired.cert_pem);
  options.tls->key_file = Write("expired.key", expired.key_pem);
  StartServer(options);
  const std::string error = ConnectError(TrustingClient());
  EXPECT_TRUE(Contains(error, "certificate verify failed (certificate has expired)")) << error;
}

TEST_F(TlsTest, CertificateForAnotherAddressIsRefused) {
  TestCert elsewhere = ca_.Issue({.dns = {"db.example"}, .ips = {"10.1.2.3"}});
  ServerOptions options = TlsServerOptions();
  options.tls->cert_file = Write("elsewhere.pem", elsewhere.cert_pem);
  options.tls->key_file = Write("elsewhere.key", elsewhere.key_pem);
  StartServer(options);
  const std::string error = ConnectError(TrustingClient());  // to 127.0.0.1
  EXPECT_TRUE(Contains(error, "certificate verify failed (IP address mismatch)")) << error;
}

TEST_F(TlsTest, ServerNameIsCheckedAgainstTheCertificatesDnsNames) {
  StartServer(TlsServerOptions());
  ClientOptions right = TrustingClient();
  right.tls->server_name = "localhost";
  EXPECT_EQ("connected", ConnectError(right));
  ClientOptions wrong = TrustingClient();
  wrong.tls->server_name = "db.example";
  const std::string error = ConnectError(wrong);
  EXPECT_TRUE(Contains(error, "certificate verify failed (hostname mismatch)")) << error;
}

TEST_F(TlsTest, MutualTlsRefusesAClientWithoutACertificate) {
  ServerOptions options = TlsServerOptions();
  options.tls->client_ca_file = files_.ca_file;
  StartServer(options);
  const std::string error = ConnectError(TrustingClient());
  EXPECT_TRUE(Contains(error, "IO_ERROR")) << error;

  TestCert client_cert = ca_.Issue({.common_name = "checkout", .client = true});
  ClientOptions with_cert = TrustingClient();
  with_cert.tls->cert_file = Write("client.pem", client_cert.cert_pem);
  with_cert.tls->key_file = Write("client.key", client_cert.key_pem);
  auto client = server_->Connect(with_cert);
  ASSERT_OK(client);
  EXPECT_EQ("", Insert(**client, "mtls"));
}

TEST_F(TlsTest, MutualTlsRefusesAClientCertificateFromAnotherCa) {
  ServerOptions options = TlsServerOptions();
  options.tls->client_ca_file = files_.ca_file;
  StartServer(options);
  TestCert stranger = other_ca_.Issue({.common_name = "stranger", .client = true});
  ClientOptions client = TrustingClient();
  client.tls->cert_file = Write("stranger.pem", stranger.cert_pem);
  client.tls->key_file = Write("stranger.key", stranger.key_pem);
  const std::string error = ConnectError(client);
  EXPECT_TRUE(Contains(error, "IO_ERROR")) << error;
  // Under TLS 1.3 the client's side of the handshake ends before the server has checked the
  // client's certificate: the client can see the refusal before the server has counted it.
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (Metric("idem_tls_handshake_failures_total") < 1 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_GE(Metric("idem_tls_handshake_failures_total"), 1);
}

TEST_F(TlsTest, SilentPeerIsClosedAtTheAuthTimeout) {
  ServerOptions options = TlsServerOptions();
  options.auth_timeout_ms = 200;
  StartServer(options);
  RawSocket silent(server_->port());
  ASSERT_TRUE(silent.connected());
  EXPECT_TRUE(silent.WaitClosed(5s));  // well before the 300 s idle timeout
  ExpectServingTls();
}

TEST_F(TlsTest, HandshakeWithoutHelloGetsTimedOutThenClose) {
  ServerOptions options = TlsServerOptions();
  options.auth_timeout_ms = 200;
  StartServer(options);
  TlsProbe probe(server_->port(), files_.ca_file);
  ASSERT_TRUE(probe.connected());
  ASSERT_FALSE(probe.Handshake());
  bool closed = false;
  const std::string bytes = probe.ReadUntilClosed(&closed);
  EXPECT_TRUE(closed);
  ASSERT_GT(bytes.size(), 4u);
  const wire::Frame* frame =
      VerifyFrame(reinterpret_cast<const uint8_t*>(bytes.data()) + 4, bytes.size() - 4);
  ASSERT_NE(nullptr, frame);
  Status error = DecodeError(frame->error());
  EXPECT_EQ(Status::Code::kTimedOut, error.code()) << error.ToString();
  EXPECT_TRUE(Contains(error.message(), "auth_timeout_ms")) << error.ToString();
}

TEST_F(TlsTest, GreetedConnectionOutlivesTheAuthTimeout) {
  ServerOptions options = TlsServerOptions();
  options.auth_timeout_ms = 100;
  StartServer(options);
  auto client = server_->Connect(TrustingClient());
  ASSERT_OK(client);
  // Requests for three deadlines' worth of time: the deadline is for being greeted only.
  const auto until = std::chrono::steady_clock::now() + 300ms;
  int ops = 0;
  while (std::chrono::steady_clock::now() < until) {
    ASSERT_EQ("", Insert(**client, "g" + std::to_string(ops++)));
  }
}

TEST_F(TlsTest, ReloadSwapsTheCertificateForNewConnectionsOnly) {
  StartServer(TlsServerOptions());
  auto old_client = server_->Connect(TrustingClient());
  ASSERT_OK(old_client);

  TestCert next = other_ca_.Issue({.ips = {"127.0.0.1"}});
  testing::WriteTestFile(files_.cert_file, next.cert_pem);
  testing::WriteTestFile(files_.key_file, next.key_pem);
  ASSERT_OK(server_->server().Reload());

  const std::string other_ca = Write("other-ca.pem", other_ca_.cert_pem());
  EXPECT_EQ("connected", ConnectError(TlsClient(other_ca)));
  EXPECT_TRUE(Contains(ConnectError(TrustingClient()), "certificate verify failed"));
  EXPECT_EQ("", Insert(**old_client, "still-open"));  // its session predates the reload
}

TEST_F(TlsTest, ReloadWithABrokenKeyFailsAndKeepsTheOldCertificate) {
  StartServer(TlsServerOptions());
  testing::WriteTestFile(files_.key_file, "not a key\n");
  Status reload = server_->server().Reload();
  EXPECT_TRUE(reload.IsInvalidArgument()) << reload.ToString();
  EXPECT_TRUE(Contains(reload.message(), files_.key_file)) << reload.ToString();
  ExpectServingTls();
}

TEST_F(TlsTest, ReloadWithAMismatchedKeyFails) {
  StartServer(TlsServerOptions());
  TestCert other = ca_.Issue({.ips = {"127.0.0.1"}});
  testing::WriteTestFile(files_.key_file, other.key_pem);  // not server_cert_'s key
  Status reload = server_->server().Reload();
  EXPECT_TRUE(reload.IsInvalidArgument()) << reload.ToString();
  EXPECT_TRUE(Contains(reload.message(), "does not match")) << reload.ToString();
  ExpectServingTls();
}

TEST_F(TlsTest, ListenFailsNamingAMissingKeyFile) {
  ServerOptions options = TlsServerOptions();
  options.port = 0;
  options.tls->key_file = dir_.Sub("missing.key");
  auto server = Server::Listen(options);
  ASSERT_FALSE(server.ok());
  EXPECT_TRUE(server.status().IsIOError()) << server.status().ToString();
  EXPECT_TRUE(Contains(server.status().message(), dir_.Sub("missing.key")))
      << server.status().ToString();
  EXPECT_TRUE(Contains(server.status().message(), "No such file or directory"))
      << server.status().ToString();
}

TEST_F(TlsTest, ListenFailsNamingACertificateFileThatIsNoCertificate) {
  ServerOptions options = TlsServerOptions();
  options.port = 0;
  options.tls->cert_file = Write("garbage.pem", "hello\n");
  auto server = Server::Listen(options);
  ASSERT_FALSE(server.ok());
  EXPECT_TRUE(server.status().IsInvalidArgument()) << server.status().ToString();
  EXPECT_TRUE(
      Contains(server.status().message(), "TLS certificate file '" + dir_.Sub("garbage.pem")))
      << server.status().ToString();
}

TEST_F(TlsTest, ClientFailsNamingAnUnreadableCaFile) {
  StartServer(TlsServerOptions());
  const std::string error = ConnectError(TlsClient(dir_.Sub("nowhere.pem")));
  EXPECT_TRUE(Contains(error, "IO_ERROR")) << error;
  EXPECT_TRUE(Contains(error, dir_.Sub("nowhere.pem"))) << error;
}

class TlsHttpTest : public TlsTest {
 protected:
  void SetUp() override {
    ServerOptions options = TlsServerOptions();
    options.http = HttpListenerOptions{};
    options.http->port = 0;
    StartServer(options);
  }
};

TEST_F(TlsHttpTest, HealthzOverTls) {
  TlsProbe probe(server_->server().http_port(), files_.ca_file);
  ASSERT_TRUE(probe.connected());
  ASSERT_FALSE(probe.Handshake());
  ASSERT_TRUE(probe.Write("GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"));
  bool closed = false;
  const std::string response = probe.ReadUntilClosed(&closed);
  EXPECT_TRUE(response.starts_with("HTTP/1.1 200")) << response;
}

TEST_F(TlsHttpTest, PlainHttpToTheTlsListenerGetsNoAnswer) {
  RawSocket plain(server_->server().http_port());
  ASSERT_TRUE(plain.connected());
  const std::string request = "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n";
  ASSERT_TRUE(plain.Send(request.data(), request.size()));
  EXPECT_TRUE(plain.WaitClosed(5s));
  EXPECT_EQ(1, Metric("idem_tls_handshake_failures_total"));
  TlsProbe probe(server_->server().http_port(), files_.ca_file);
  EXPECT_FALSE(probe.Handshake());  // still serving
}

// --allow-remote opens the port to the network: the server refuses it without TLS and
// authentication unless told the network is trusted, and names what is missing.
TEST_F(TlsTest, AllowRemoteNeedsTlsAndAuthenticationOrInsecureRemote) {
  auto engine = ServingEngine::Open(dir_.Sub("db"),
                                    testing::TestEngineOptions(std::make_shared<ManualClock>()));
  ASSERT_OK(engine);
  Result<std::string> hash = HashSecret("a-secret-of-enough-bytes");
  ASSERT_OK(hash);
  const std::string auth_file = Write("auth", "ops " + *hash + " *:read,write,admin\n");
  auto start = [&](bool tls, bool auth, bool insecure) -> Status {
    ServerOptions options;
    options.port = 0;
    options.allow_remote = true;
    options.insecure_remote = insecure;
    if (tls) options.tls = TlsOptions{files_.cert_file, files_.key_file, ""};
    if (auth) options.auth_file = auth_file;
    options.log = [](const LogRecord&) {};
    Result<std::unique_ptr<Server>> server = Server::Start(engine->get(), options);
    if (server.ok()) (*server)->Stop();
    return server.status();
  };
  Status neither = start(false, false, false);
  EXPECT_TRUE(neither.IsInvalidArgument()) << neither.ToString();
  EXPECT_NE(std::string::npos,
            neither.message().find("--allow-remote without TLS (--tls-cert, "
                                   "--tls-key) and authentication (--auth-file)"))
      << neither.ToString();
  EXPECT_NE(std::string::npos, neither.message().find("--insecure-remote")) << neither.ToString();
  Status no_auth = start(true, false, false);
  EXPECT_NE(std::string::npos, no_auth.message().find("without authentication (--auth-file)"))
      << no_auth.ToString();
  Status no_tls = start(false, true, false);
  EXPECT_NE(std::string::npos, no_tls.message().find("without TLS (--tls-cert, --tls-key) would"))
      << no_tls.ToString();
  EXPECT_TRUE(start(true, true, false).ok());
  EXPECT_TRUE(start(false, false, true).ok());
}

}  // namespace
}  // namespace idem
