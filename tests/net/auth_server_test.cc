// Authentication and authorization (--auth-file) of a real Server on 127.0.0.1: the binary
// protocol through idem::Client and raw sockets, the HTTP listener through raw HTTP/1.1, and
// Reload(). Every refusal is checked to have changed nothing, by reading back as admin.
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "auth_fixture.h"
#include "exposition_parser.h"
#include "protocol_codec.h"
#include "raw_socket.h"
#include "support/outcome_name.h"
#include "test_server.h"

namespace idem {
namespace {

using testing::Exposition;
using testing::kAdminToken;
using testing::kCheckoutToken;
using testing::kReaderToken;
using testing::Name;
using testing::ParseExposition;
using testing::RawSocket;
using ReadResult = RawSocket::ReadResult;
using Json = nlohmann::json;

struct HttpReply {
  int status = 0;
  std::string head;  // status line and headers
  Json body;         // null when not JSON
};

class AuthServerTest : public ::testing::Test {
 protected:
  void SetUp() override { Start(10); }

  void Start(uint32_t failure_limit) {
    server_.reset();
    ServerOptions options;
    options.auth_file = file_.path();
    options.auth_failures_per_minute = failure_limit;
    options.http = HttpListenerOptions{};
    options.http->port = 0;
    server_ = std::make_unique<testing::TestServer>(options);
  }

  Result<std::unique_ptr<Client>> Connect(const std::string& token) {
    ClientOptions options;
    options.token = token;
    options.reconnect = false;
    return server_->Connect(options);
  }
  std::unique_ptr<Client> Must(const std::string& token) {
    auto client = Connect(token);
    EXPECT_TRUE(client.ok()) << client.status().ToString();
    return client.ok() ? std::move(*client) : nullptr;
  }
  // What is stored at ns/key, read by the admin: "NOT_FOUND" when nothing is.
  std::string Stored(const std::string& ns, const std::string& key) {
    if (!admin_) admin_ = Must(kAdminToken);
    return Name(admin_->Get({.ns = ns, .key = key}));
  }
  Exposition Metrics() { return ParseExposition(server_->server().MetricsText()); }
  double AuthFailures(const std::string& reason) {
    return Metrics().ValueOr0("idem_auth_failures_total", {{"reason", reason}});
  }

  // One HTTP/1.1 request on its own connection ("Connection: close"); `token` "" sends no
  // Authorization header.
  HttpReply Http(const std::string& method, const std::string& target, const std::string& token,
                 const std::string& body = "") {
    RawSocket socket(server_->server().http_port());
    std::string request =
        method + " " + target + " HTTP/1.1\r\nHost: test\r\nConnection: close\r\n";
    if (!token.empty()) request += "Authorization: Bearer " + token + "\r\n";
    if (!body.empty()) request += "Content-Type: application/json\r\n";
    request += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    EXPECT_TRUE(socket.Send(request.data(), request.size()));
    const std::string response = socket.ReadAll(std::chrono::seconds(10));
    HttpReply r;
    const size_t end = response.find("\r\n\r\n");
    r.head = response.substr(0, end);
    if (response.size() > 12) r.status = std::stoi(response.substr(9, 3));
    if (end != std::string::npos) {
      r.body = Json::parse(response.substr(end + 4), nullptr, /*allow_exceptions=*/false);
    }
    return r;
  }

  testing::CredentialsFile file_;
  std::unique_ptr<testing::TestServer> server_;
  std::unique_ptr<Client> admin_;
};

// --- binary protocol: authentication --------------------------------------------------------

TEST_F(AuthServerTest, AValidTokenWorks) {
  auto client = Must(kCheckoutToken);
  ASSERT_NE(nullptr, client);
  EXPECT_EQ("INSERTED", Name(client->Insert({.ns = "payments", .key = "p1", .status = "NEW"})));
  EXPECT_EQ("FOUND", Name(client->Get({.ns = "payments", .key = "p1"})));
}

TEST_F(AuthServerTest, NoTokenWrongTokenAndOverlongTokenAreUnauthenticated) {
  auto none = Connect("");
  EXPECT_EQ("UNAUTHENTICATED: this server requires a token: --token or IDEM_TOKEN",
            none.status().ToString());
  auto wrong = Connect("wrong-secret-0123456789");
  EXPECT_EQ("UNAUTHENTICATED: token not accepted", wrong.status().ToString());
  auto overlong = Connect(std::string(Credentials::kMaxTokenBytes + 1, 'a'));
  EXPECT_EQ("UNAUTHENTICATED: token not accepted", overlong.status().ToString());
  EXPECT_EQ(1, AuthFailures("no_token"));
  EXPECT_EQ(2, AuthFailures("bad_token"));
  // Authentication failures are not protocol errors.
  EXPECT_EQ(0, Metrics().ValueOr0("idem_protocol_errors_total", {{"code", "UNAUTHENTICATED"}}));
}

// A client that does not wait for the HelloReply: its requests after a refused Hello are never
// run, and the connection is closed after the error.
TEST_F(AuthServerTest, RequestsPipelinedBehindARefusedHelloChangeNothing) {
  for (const std::string& token : {std::string(), std::string("wrong-secret-0123456789")}) {
    RawSocket socket(server_->port());
    ASSERT_TRUE(socket.connected());
    FrameBytes hello = EncodeHello(1, "raw", token);
    FrameBytes insert = EncodeApplyRequest(
        2, std::vector<Op>{Op::Insert({.ns = "payments", .key = "sneaky", .status = "NEW"})});
    std::vector<uint8_t> both(hello.data(), hello.data() + hello.size());
    both.insert(both.end(), insert.data(), insert.data() + insert.size());
    ASSERT_TRUE(socket.Send(both));
    std::vector<uint8_t> body;
    ASSERT_EQ(ReadResult::kFrame, socket.ReadFrame(&body));
    const wire::Frame* frame = VerifyFrame(body.data(), body.size());
    ASSERT_NE(nullptr, frame);
    EXPECT_EQ(1u, frame->id());
    EXPECT_TRUE(DecodeError(frame->error()).IsUnauthenticated());
    EXPECT_TRUE(socket.WaitClosed());  // no second frame: the insert got no answer
  }
  EXPECT_EQ("NOT_FOUND", Stored("payments", "sneaky"));
}

// Before its Hello is accepted a peer could announce a frame of max_frame_bytes (4 MiB) and
// have the server buffer it; a Hello is about a kilobyte. The length prefix alone now refuses it.
TEST_F(AuthServerTest, AFirstFrameLongerThanAHelloIsRefusedFromItsLengthPrefix) {
  RawSocket socket(server_->port());
  ASSERT_TRUE(socket.connected());
  const uint32_t n = (4u << 20) - 16;  // under the default max_frame_bytes
  const uint8_t prefix[4] = {uint8_t(n), uint8_t(n >> 8), uint8_t(n >> 16), uint8_t(n >> 24)};
  ASSERT_TRUE(socket.Send(prefix, 4));
  std::vector<uint8_t> body;
  ASSERT_EQ(ReadResult::kFrame, socket.ReadFrame(&body, std::chrono::seconds(5)));
  const wire::Frame* frame = VerifyFrame(body.data(), body.size());
  ASSERT_NE(nullptr, frame);
  const Status error = DecodeError(frame->error());
  EXPECT_TRUE(error.IsInvalidArgument()) << error.ToString();
  EXPECT_NE(std::string::npos, error.message().find("(the first frame is a Hello)"))
      << error.ToString();
  EXPECT_TRUE(socket.WaitClosed());
  // Once greeted, a client's frames may be as long as max_frame_bytes again.
  auto client = Connect(kCheckoutToken);
  ASSERT_OK(client);
  const std::string big(64u << 10, 'x');
  Result<OpResult> r =
      (*client)->Insert({.ns = "payments", .key = "big", .status = "NEW", .payload = big});
  ASSERT_OK(r);
}

TEST_F(AuthServerTest, PastTheFailureLimitEvenAGoodTokenIsRefusedAsRateLimited) {
  Start(3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ("UNAUTHENTICATED: token not accepted",
              Connect("wrong-secret-0123456789").status().ToString());
  }
  auto good = Connect(kAdminToken);
  ASSERT_FALSE(good.ok());
  EXPECT_TRUE(good.status().IsUnauthenticated());
  EXPECT_NE(std::string::npos, good.status().message().find("too many failed attempts"))
      << good.status().ToString();
  EXPECT_EQ(3, AuthFailures("bad_token"));
  EXPECT_EQ(1, AuthFailures("rate_limited"));
  // HTTP counts against the same address.
  EXPECT_EQ(401, Http("GET", "/metrics", kAdminToken).status);
  EXPECT_EQ(2, AuthFailures("rate_limited"));
}

// --- binary protocol: permissions --------------------------------------------------------

TEST_F(AuthServerTest, AReadOnlyTokenCannotWrite) {
  auto reader = Must(kReaderToken);
  ASSERT_NE(nullptr, reader);
  Result<OpResult> r = reader->Insert({.ns = "payments", .key = "r1", .status = "NEW"});
  EXPECT_EQ(
      "PERMISSION_DENIED: principal 'reader' has no write permission on namespace "
      "'payments'",
      r.status().ToString());
  EXPECT_EQ("NOT_FOUND", Name(reader->Get({.ns = "payments", .key = "r1"})));  // may read
  EXPECT_EQ("NOT_FOUND", Stored("payments", "r1"));
  EXPECT_EQ(1, Metrics().ValueOr0("idem_permission_denied_total"));
}

TEST_F(AuthServerTest, ATokenScopedToPaymentsCannotTouchOrders) {
  auto checkout = Must(kCheckoutToken);
  ASSERT_NE(nullptr, checkout);
  Result<OpResult> w = checkout->Insert({.ns = "orders", .key = "o1", .status = "NEW"});
  EXPECT_TRUE(w.status().IsPermissionDenied()) << w.status().ToString();
  EXPECT_NE(std::string::npos, w.status().message().find("'orders'")) << w.status().ToString();
  Result<OpResult> r = checkout->Get({.ns = "orders", .key = "o1"});
  EXPECT_EQ("PERMISSION_DENIED: principal 'checkout' has no read permission on namespace 'orders'",
            r.status().ToString());
  EXPECT_EQ("NOT_FOUND", Stored("orders", "o1"));
}

TEST_F(AuthServerTest, ABatchWithOneDeniedOpAppliesNothing) {
  auto checkout = Must(kCheckoutToken);
  ASSERT_NE(nullptr, checkout);
  std::vector<Op> ops = {Op::Insert({.ns = "payments", .key = "m1", .status = "NEW"}),
                         Op::Insert({.ns = "orders", .key = "m2", .status = "NEW"}),
                         Op::Get({.ns = "refunds", .key = "m3"})};
  std::vector<Result<OpResult>> results;
  ASSERT_OK(checkout->Apply(ops, &results));
  ASSERT_EQ(3u, results.size());
  EXPECT_EQ(
      "PERMISSION_DENIED: principal 'checkout' has no write permission on namespace "
      "'orders'",
      results[1].status().ToString());
  for (size_t i : {0, 2}) {
    EXPECT_TRUE(results[i].status().IsPermissionDenied()) << i;
    EXPECT_NE(std::string::npos, results[i].status().message().find("because of op #1"))
        << results[i].status().ToString();
  }
  EXPECT_EQ("NOT_FOUND", Stored("payments", "m1"));
  EXPECT_EQ("NOT_FOUND", Stored("orders", "m2"));
  EXPECT_EQ(1, Metrics().ValueOr0("idem_permission_denied_total"));
}

TEST_F(AuthServerTest, AdminRequestsNeedAdmin) {
  auto checkout = Must(kCheckoutToken);
  ASSERT_NE(nullptr, checkout);
  ASSERT_EQ("INSERTED", Name(checkout->Insert({.ns = "payments", .key = "a1", .status = "NEW"})));
  EXPECT_TRUE(checkout->Stats().status().IsPermissionDenied());
  EXPECT_TRUE(checkout->GetServerStats().status().IsPermissionDenied());
  Result<ScanPage> scan = checkout->Scan({.ns = "payments", .limit = 10});
  EXPECT_EQ(
      "PERMISSION_DENIED: principal 'checkout' has no admin permission on namespace "
      "'payments'",
      scan.status().ToString());
  EXPECT_TRUE(checkout->Purge({.ns = "payments"}).status().IsPermissionDenied());
  EXPECT_TRUE(checkout->Compact("payments").IsPermissionDenied());
  Status whole = checkout->Compact("");
  EXPECT_TRUE(whole.IsPermissionDenied()) << whole.ToString();
  EXPECT_NE(std::string::npos, whole.message().find("\"*\"")) << whole.ToString();
  testing::TempDir backups;
  EXPECT_TRUE(checkout->Backup(backups.Sub("b1")).status().IsPermissionDenied());
  EXPECT_EQ(7, Metrics().ValueOr0("idem_permission_denied_total"));
  EXPECT_EQ("FOUND", Stored("payments", "a1"));  // the purge deleted nothing
  // The connection is still usable after a denial.
  EXPECT_EQ("FOUND", Name(checkout->Get({.ns = "payments", .key = "a1"})));

  auto admin = Must(kAdminToken);
  ASSERT_NE(nullptr, admin);
  ASSERT_OK(admin->GetServerStats());
  Result<ScanPage> page = admin->Scan({.ns = "payments", .limit = 10});
  ASSERT_OK(page);
  EXPECT_EQ(1u, page->records.size());
  ASSERT_OK(admin->Compact("payments"));
  ASSERT_OK(admin->Compact(""));
  ASSERT_OK(admin->Backup(backups.Sub("b2")));
  Result<PurgeStep> purge = admin->Purge({.ns = "payments"});
  ASSERT_OK(purge);
  EXPECT_EQ(1u, purge->deleted);
}

// --- HTTP -----------------------------------------------------------------------------------

TEST_F(AuthServerTest, HttpNeedsABearerToken) {
  const std::string insert = R"({"status":"NEW"})";
  HttpReply none = Http("PUT", "/v1/records/payments/h1", "", insert);
  EXPECT_EQ(401, none.status) << none.head;
  EXPECT_EQ("UNAUTHENTICATED", none.body.value("code", "")) << none.head;
  EXPECT_NE(std::string::npos, none.head.find("WWW-Authenticate: Bearer")) << none.head;
  EXPECT_NE(std::string::npos, none.head.find("application/problem+json")) << none.head;
  HttpReply bad = Http("PUT", "/v1/records/payments/h1", "wrong-secret-0123456789", insert);
  EXPECT_EQ(401, bad.status) << bad.head;
  EXPECT_EQ("token not accepted", bad.body.value("detail", ""));
  EXPECT_EQ("NOT_FOUND", Stored("payments", "h1"));

  HttpReply ok = Http("PUT", "/v1/records/payments/h1", kCheckoutToken, insert);
  EXPECT_EQ(200, ok.status) << ok.head;
  EXPECT_EQ("INSERTED", ok.body.value("outcome", ""));
}

TEST_F(AuthServerTest, HttpDeniedIs403AndChangesNothing) {
  HttpReply one = Http("PUT", "/v1/records/orders/h2", kCheckoutToken, R"({"status":"NEW"})");
  EXPECT_EQ(403, one.status) << one.head;
  EXPECT_EQ("PERMISSION_DENIED", one.body.value("code", ""));
  EXPECT_NE(std::string::npos, one.body.value("detail", "").find("'orders'")) << one.body;
  const Json ops = {
      {"ops",
       {{{"op", "insert"}, {"namespace", "payments"}, {"key", "h3"}, {"status", "NEW"}},
        {{"op", "insert"}, {"namespace", "orders"}, {"key", "h4"}, {"status", "NEW"}}}}};
  HttpReply batch = Http("POST", "/v1/apply", kCheckoutToken, ops.dump());
  EXPECT_EQ(403, batch.status) << batch.head;
  EXPECT_NE(std::string::npos, batch.body.value("detail", "").find("'orders'")) << batch.body;
  EXPECT_EQ("NOT_FOUND", Stored("orders", "h2"));
  EXPECT_EQ("NOT_FOUND", Stored("payments", "h3"));
  EXPECT_EQ("NOT_FOUND", Stored("orders", "h4"));
  testing::TempDir backups;
  HttpReply backup =
      Http("POST", "/v1/admin/backup", kCheckoutToken, Json{{"to", backups.Sub("b")}}.dump());
  EXPECT_EQ(403, backup.status) << backup.head;
}

TEST_F(AuthServerTest, HttpProbesAreOpenAndMetricsNeedAdminEverywhere) {
  EXPECT_EQ(200, Http("GET", "/healthz", "").status);
  EXPECT_EQ(200, Http("GET", "/readyz", "").status);
  EXPECT_EQ(401, Http("GET", "/metrics", "").status);
  HttpReply denied = Http("GET", "/metrics", kCheckoutToken);
  EXPECT_EQ(403, denied.status) << denied.head;
  EXPECT_NE(std::string::npos, denied.body.value("detail", "").find("\"*\"")) << denied.body;
  HttpReply metrics = Http("GET", "/metrics", kAdminToken);
  EXPECT_EQ(200, metrics.status) << metrics.head;
}

// --- Reload ---------------------------------------------------------------------------------

TEST_F(AuthServerTest, AReloadAddsAPrincipalWithoutARestart) {
  const std::string token = "newcomer-secret-0123456789";
  EXPECT_TRUE(Connect(token).status().IsUnauthenticated());
  file_.Write(testing::CredentialsFile::DefaultPrincipals() + "newcomer " + token +
              " orders:read,write\n");
  ASSERT_OK(server_->server().Reload());
  auto newcomer = Must(token);
  ASSERT_NE(nullptr, newcomer);
  EXPECT_EQ("INSERTED", Name(newcomer->Insert({.ns = "orders", .key = "n1", .status = "NEW"})));
  EXPECT_EQ(200, Http("GET", "/v1/records/orders/n1", token).status);
}

TEST_F(AuthServerTest, AnOpenConnectionKeepsWorkingAfterAReloadThatKeepsItsPrincipal) {
  auto checkout = Must(kCheckoutToken);
  ASSERT_NE(nullptr, checkout);
  ASSERT_EQ("INSERTED", Name(checkout->Insert({.ns = "payments", .key = "k1", .status = "NEW"})));
  // The same secret (hashed anew: a new salt) would be a new hash; keep checkout's own line and
  // grant it orders as well.
  auto parsed = Credentials::Load(file_.path());
  ASSERT_OK(parsed);
  const std::string checkout_hash = (*parsed)->Find("checkout")->secret_hash;
  const std::string admin_hash = (*parsed)->Find("admin")->secret_hash;
  file_.WriteRaw("admin " + admin_hash + " *:read,write,admin\ncheckout " + checkout_hash +
                 " payments:read,write orders:write\n");
  ASSERT_OK(server_->server().Reload());
  EXPECT_EQ("INSERTED", Name(checkout->Insert({.ns = "payments", .key = "k2", .status = "NEW"})));
  EXPECT_EQ("INSERTED", Name(checkout->Insert({.ns = "orders", .key = "k3", .status = "NEW"})));
  EXPECT_EQ(0, AuthFailures("revoked"));
}

TEST_F(AuthServerTest, ARevokedPrincipalsOpenConnectionGetsUnauthenticatedAndIsClosed) {
  auto reader = Must(kReaderToken);
  ASSERT_NE(nullptr, reader);
  ASSERT_EQ("NOT_FOUND", Name(reader->Get({.ns = "payments", .key = "x"})));
  file_.Write("admin " + kAdminToken + " *:read,write,admin\n");
  ASSERT_OK(server_->server().Reload());
  EXPECT_EQ("UNAUTHENTICATED: credentials of 'reader' were revoked",
            reader->Get({.ns = "payments", .key = "x"}).status().ToString());
  // Closed by the server: the next call fails (this client does not reconnect).
  EXPECT_FALSE(reader->Get({.ns = "payments", .key = "x"}).ok());
  EXPECT_EQ(1, AuthFailures("revoked"));
  EXPECT_TRUE(Connect(kReaderToken).status().IsUnauthenticated());
}

// A client left with a revoked token reconnected after every backoff (2 s at most), each
// refused Hello counting against its address's failure limit: within a minute it barred every
// other client behind the same address. It now tries again after a minute.
TEST_F(AuthServerTest, AClientWithARefusedTokenDoesNotSpendItsAddresssFailureLimit) {
  ClientOptions options;
  options.token = kReaderToken;
  options.reconnect_backoff_ms = 1;
  options.reconnect_backoff_max_ms = 2;
  auto reader = server_->Connect(options);
  ASSERT_OK(reader);
  file_.Write("admin " + kAdminToken + " *:read,write,admin\n");
  ASSERT_OK(server_->server().Reload());
  EXPECT_TRUE((*reader)->Get({.ns = "payments", .key = "x"}).status().IsUnauthenticated());
  for (int i = 0; i < 5; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // past the 2 ms backoff
    Status s = (*reader)->Get({.ns = "payments", .key = "x"}).status();
    EXPECT_TRUE(s.IsUnauthenticated()) << s.ToString();
  }
  EXPECT_EQ(1, AuthFailures("bad_token"));  // one reconnection, refused; then none for a minute
}

TEST_F(AuthServerTest, AReloadOfABadFileKeepsTheOldCredentialsAndReturnsTheError) {
  auto checkout = Must(kCheckoutToken);
  ASSERT_NE(nullptr, checkout);
  file_.WriteRaw("checkout not-a-hash payments:read\n");
  Status s = server_->server().Reload();
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find(file_.path() + ":1")) << s.ToString();
  EXPECT_EQ("INSERTED", Name(checkout->Insert({.ns = "payments", .key = "b1", .status = "NEW"})));
  EXPECT_TRUE(Connect(kReaderToken).ok());
}

TEST(AuthServerStartTest, ABadAuthFileStopsTheServerFromListening) {
  testing::TempDir dir;
  testing::CredentialsFile file;
  file.WriteRaw("# principals\nops sha256$zz *:admin\n");
  ServerOptions options;
  options.port = 0;
  options.auth_file = file.path();
  auto server = Server::Listen(options);
  ASSERT_FALSE(server.ok());
  EXPECT_TRUE(server.status().IsInvalidArgument()) << server.status().ToString();
  EXPECT_NE(std::string::npos, server.status().message().find(file.path() + ":2"))
      << server.status().ToString();
}

}  // namespace
}  // namespace idem
