// The HTTP/JSON API (docs/http-api.md) of a real Server on 127.0.0.1 port 0, driven by a real
// HTTP/1.1 client (Boost.Beast, synchronous) and by raw sockets where a client misbehaves.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <thread>
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange unincluded
#include <vector>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base64.h"
#include "idem/backup.h"
#include "idem/engine.h"
#include "raw_socket.h"
#include "test_server.h"

namespace idem {
namespace {

using namespace std::chrono_literals;
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Json = nlohmann::json;

struct Reply {
  int status = 0;
  std::string content_type;
  std::string allow;
  Json body;  // null when the body is not JSON
  std::string raw;
};

// One keep-alive HTTP/1.1 connection.
class HttpClient {
 public:
  explicit HttpClient(uint16_t port) : stream_(io_) {
    stream_.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  }

  Reply Send(http::verb method, const std::string& target, const std::string& body = "") {
    http::request<http::string_body> request{method, target, 11};
    request.set(http::field::host, "127.0.0.1");
    if (!body.empty()) request.set(http::field::content_type, "application/json");
    request.body() = body;
    request.prepare_payload();
    http::write(stream_, request);
    return Read();
  }

  Reply Read() {
    http::response<http::string_body> response;
    stream_.expires_after(10s);
    http::read(stream_, buffer_, response);
    Reply r;
    r.status = static_cast<int>(response.result_int());
    r.content_type = std::string(response[http::field::content_type]);
    r.allow = std::string(response[http::field::allow]);
    r.raw = response.body();
    r.body = Json::parse(r.raw, nullptr, /*allow_exceptions=*/false);
    return r;
  }

  beast::tcp_stream& stream() { return stream_; }

 private:
  asio::io_context io_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
};

class HttpApiTest : public ::testing::Test {
 protected:
  void SetUp() override { Start(); }

  void Start(HttpListenerOptions http = {}) {
    server_.reset();
    http.port = 0;
    ServerOptions options;
    options.http = std::move(http);
    server_ = std::make_unique<testing::TestServer>(options);
    client_ = std::make_unique<HttpClient>(port());
  }
  uint16_t port() { return server_->server().http_port(); }

  Reply Apply(const Json& ops) {
    return client_->Send(http::verb::post, "/v1/apply", Json{{"ops", ops}}.dump());
  }
  // The one result of a one-op /v1/apply.
  Json ApplyOne(const Json& op) {
    Reply r = Apply(Json::array({op}));
    EXPECT_EQ(200, r.status) << r.raw;
    return r.body["results"][0];
  }
  Reply Post(const std::string& target, const Json& body = Json::object()) {
    return client_->Send(http::verb::post, target, body.dump());
  }

  std::unique_ptr<testing::TestServer> server_;
  std::unique_ptr<HttpClient> client_;
};

// The problem document of an error response, checked for RFC 9457's members.
void ExpectProblem(const Reply& r, int status, const std::string& code,
                   const std::string& detail_part = "") {
  EXPECT_EQ(status, r.status) << r.raw;
  EXPECT_EQ("application/problem+json", r.content_type);
  EXPECT_EQ(status, r.body.value("status", 0)) << r.raw;
  EXPECT_EQ(code, r.body.value("code", "")) << r.raw;
  EXPECT_TRUE(r.body.contains("title") && r.body.contains("type")) << r.raw;
  EXPECT_NE(std::string::npos, r.body.value("detail", "").find(detail_part)) << r.raw;
}

TEST_F(HttpApiTest, ApplyInsertsThenAnswersExistsWithTheRecord) {
  Json insert = {{"op", "insert"},      {"namespace", "payments"},      {"key", "order-42"},
                 {"status", "PENDING"}, {"payload", "{\"amount\":10}"}, {"ttl_ms", 86'400'000}};
  Json first = ApplyOne(insert);
  EXPECT_EQ("INSERTED", first["outcome"]);
  EXPECT_EQ("PENDING", first["record"]["status"]);
  EXPECT_EQ("plain", first["record"]["kind"]);
  EXPECT_EQ("{\"amount\":10}", first["record"]["payload"]);
  EXPECT_EQ(1, first["record"]["version"]);
  Json again = ApplyOne(insert);
  EXPECT_EQ("EXISTS", again["outcome"]);
  EXPECT_EQ(true, again["fingerprint_matches"]);
}

TEST_F(HttpApiTest, OneRequestIsOneBatchAndEachOpSeesTheOnesBefore) {
  Reply r = Apply(
      Json::array({{{"op", "insert"}, {"namespace", "ns"}, {"key", "k"}, {"status", "A"}},
                   {{"op", "cas"},
                    {"namespace", "ns"},
                    {"key", "k"},
                    {"expect_status", {"A"}},
                    {"status", "B"}},
                   {{"op", "get"}, {"namespace", "ns"}, {"key", "k"}},
                   {{"op", "delete"}, {"namespace", "ns"}, {"key", "k"}, {"expect_version", 1}},
                   {{"op", "delete"}, {"namespace", "ns"}, {"key", "k"}, {"expect_version", 2}},
                   {{"op", "get"}, {"namespace", "ns"}, {"key", "k"}}}));
  ASSERT_EQ(200, r.status) << r.raw;
  std::vector<std::string> outcomes;
  for (const Json& result : r.body["results"]) outcomes.push_back(result["outcome"]);
  EXPECT_EQ((std::vector<std::string>{"INSERTED", "APPLIED", "FOUND", "CONDITION_FAILED", "DELETED",
                                      "NOT_FOUND"}),
            outcomes);
}

TEST_F(HttpApiTest, RecordRoutesInsertGetCasDelete) {
  Reply put =
      client_->Send(http::verb::put, "/v1/records/ns/order-1", R"({"status":"NEW","payload":"p"})");
  EXPECT_EQ(200, put.status) << put.raw;
  EXPECT_EQ("INSERTED", put.body["outcome"]);
  EXPECT_EQ("EXISTS",
            client_->Send(http::verb::put, "/v1/records/ns/order-1", R"({"status":"NEW"})")
                .body["outcome"]);
  Reply get = client_->Send(http::verb::get, "/v1/records/ns/order-1");
  EXPECT_EQ("FOUND", get.body["outcome"]);
  EXPECT_EQ("p", get.body["record"]["payload"]);
  EXPECT_EQ("APPLIED",
            Post("/v1/records/ns/order-1:cas", {{"expect_status", {"NEW"}}, {"status", "PAID"}})
                .body["outcome"]);
  EXPECT_EQ("CONDITION_FAILED",
            Post("/v1/records/ns/order-1:cas", {{"expect_status", {"NEW"}}, {"status", "X"}})
                .body["outcome"]);
  EXPECT_EQ("DELETED",
            client_->Send(http::verb::delete_, "/v1/records/ns/order-1").body["outcome"]);
  Reply gone = client_->Send(http::verb::get, "/v1/records/ns/order-1");
  EXPECT_EQ(200, gone.status);
  EXPECT_EQ("NOT_FOUND", gone.body["outcome"]);
  EXPECT_FALSE(gone.body.contains("record"));
}

TEST_F(HttpApiTest, TransitionRouteMovesTheStatus) {
  ASSERT_EQ(
      "INSERTED",
      client_->Send(http::verb::put, "/v1/records/ns/m", R"({"status":"A"})").body["outcome"]);
  Json moved = Post("/v1/records/ns/m:transition", {{"status", "B"}}).body;
  EXPECT_EQ("APPLIED", moved["outcome"]) << moved.dump();
  EXPECT_EQ("B", moved["record"]["status"]);
  EXPECT_EQ("ALREADY", Post("/v1/records/ns/m:transition", {{"status", "B"}}).body["outcome"]);
}

TEST_F(HttpApiTest, BeginCompleteReplayOverTheAttemptRoutes) {
  Json started = Post("/v1/attempts/pay/req-1:begin", {{"fingerprint", "f1"}}).body;
  ASSERT_EQ("STARTED", started["outcome"]) << started.dump();
  const uint64_t fence = started["record"]["fence"];
  EXPECT_EQ("IN_PROGRESS",
            Post("/v1/attempts/pay/req-1:begin", {{"fingerprint", "f1"}}).body["outcome"]);
  EXPECT_EQ("MISMATCH",
            Post("/v1/attempts/pay/req-1:begin", {{"fingerprint", "f2"}}).body["outcome"]);
  EXPECT_EQ("APPLIED",
            Post("/v1/attempts/pay/req-1:heartbeat", {{"fence", fence}}).body["outcome"]);
  Json done =
      Post("/v1/attempts/pay/req-1:complete", {{"fence", fence}, {"payload", "200 OK"}}).body;
  EXPECT_EQ("APPLIED", done["outcome"]) << done.dump();
  Json replay = Post("/v1/attempts/pay/req-1:begin", {{"fingerprint", "f1"}}).body;
  EXPECT_EQ("COMPLETED", replay["outcome"]);
  EXPECT_EQ(true, replay["replay"]);
  EXPECT_EQ("200 OK", replay["record"]["payload"]);
}

TEST_F(HttpApiTest, AStaleFenceIsRefusedAfterATakeover) {
  Json first = Post("/v1/attempts/pay/k:begin", {{"lease_ms", 1000}}).body;
  ASSERT_EQ("STARTED", first["outcome"]);
  server_->clock().Advance(1001);  // the first holder's lease ends
  Json second = Post("/v1/attempts/pay/k:begin", {{"lease_ms", 1000}}).body;
  ASSERT_EQ("STARTED", second["outcome"]);
  EXPECT_GT(second["record"]["fence"].get<uint64_t>(), first["record"]["fence"].get<uint64_t>());
  EXPECT_EQ(
      "FENCE_MISMATCH",
      Post("/v1/attempts/pay/k:complete", {{"fence", first["record"]["fence"]}}).body["outcome"]);
  EXPECT_EQ(
      "RELEASED",
      Post("/v1/attempts/pay/k:abort", {{"fence", second["record"]["fence"]}}).body["outcome"]);
}

TEST_F(HttpApiTest, AWaitingBeginIsAnsweredWhenTheAttemptCompletes) {
  Json started = Post("/v1/attempts/pay/w:begin").body;
  ASSERT_EQ("STARTED", started["outcome"]);
  // A second client waits; the server's event loop must go on serving the first.
  auto waiting = std::async(std::launch::async, [this] {
    HttpClient other(port());
    return other.Send(http::verb::post, "/v1/attempts/pay/w:begin", R"({"wait_ms":10000})");
  });
  EXPECT_EQ(std::future_status::timeout, waiting.wait_for(200ms));  // it waits
  EXPECT_EQ("APPLIED", Post("/v1/attempts/pay/w:complete",
                            {{"fence", started["record"]["fence"]}, {"payload", "done"}})
                           .body["outcome"]);
  ASSERT_EQ(std::future_status::ready, waiting.wait_for(5s));
  Reply r = waiting.get();
  EXPECT_EQ("COMPLETED", r.body["outcome"]) << r.raw;
  EXPECT_EQ("done", r.body["record"]["payload"]);
}

// POST /v1/admin/backup: the server writes the backup on its own file system and answers its
// manifest; the directory it names restores.
TEST_F(HttpApiTest, AdminBackupAnswersTheManifestAndTheBackupRestores) {
  EXPECT_EQ(
      "INSERTED",
      ApplyOne({{"op", "insert"}, {"namespace", "ns"}, {"key", "k"}, {"status", "A"}})["outcome"]);
  testing::TempDir target;
  const std::string dir = target.Sub("backup");
  Reply r = Post("/v1/admin/backup", {{"to", dir}});
  ASSERT_EQ(200, r.status) << r.raw;
  EXPECT_EQ("application/json", r.content_type);
  for (const char* field : {"created_utc", "idemstore_version", "created_ms", "fence_high_water",
                            "fence_floor", "estimated_records"}) {
    EXPECT_TRUE(r.body.contains(field)) << field << " in " << r.raw;
  }
  auto manifest = ReadBackupManifest(dir);
  ASSERT_TRUE(manifest.ok()) << manifest.status().ToString();
  EXPECT_EQ(manifest->fence_floor, r.body["fence_floor"].get<uint64_t>());
  EXPECT_EQ(manifest->created_utc, r.body["created_utc"].get<std::string>());

  // On the server's clock: the record's TTL counts from it.
  auto restored = Engine::Open(
      dir, testing::TestEngineOptions(std::make_shared<ManualClock>(server_->clock().NowMillis())));
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  auto got = (*restored)->Get({.ns = "ns", .key = "k"});
  EXPECT_TRUE(got.ok() && got->outcome == Outcome::kFound)
      << (got.ok() ? OutcomeName(got->outcome) : got.status().ToString());
}

// The directory is the server's: a relative path (whose meaning depends on the server's working
// directory), a missing parent and an existing directory are refused, and so is a body that is
// not {"to": "DIR"}.
TEST_F(HttpApiTest, AdminBackupRefusesADirectoryItShouldNotWrite) {
  testing::TempDir target;
  ExpectProblem(Post("/v1/admin/backup", {{"to", "relative/backup"}}), 400, "INVALID_ARGUMENT",
                "absolute");
  ExpectProblem(Post("/v1/admin/backup", {{"to", target.Sub("missing/backup")}}), 400,
                "INVALID_ARGUMENT", "parent");
  ExpectProblem(Post("/v1/admin/backup", {{"to", target.path()}}), 400, "INVALID_ARGUMENT",
                "already exists");
  ExpectProblem(Post("/v1/admin/backup", {{"to", 7}}), 400, "INVALID_ARGUMENT", "\"to\"");
  ExpectProblem(Post("/v1/admin/backup", {{"to", "/x"}, {"extra", 1}}), 400, "INVALID_ARGUMENT",
                "unknown field");
  ExpectProblem(Post("/v1/admin/backup", Json::object()), 400, "INVALID_ARGUMENT", "\"to\"");
  EXPECT_FALSE(std::filesystem::exists(target.Sub("missing")));
  Reply get = client_->Send(http::verb::get, "/v1/admin/backup");
  EXPECT_EQ(405, get.status) << get.raw;
  EXPECT_EQ("POST", get.allow);
}

TEST_F(HttpApiTest, LockAndTokenRoutes) {
  Json locked = Post("/v1/locks/jobs/nightly:lock", {{"owner", "w1"}}).body;
  ASSERT_EQ("ACQUIRED", locked["outcome"]);
  EXPECT_EQ("HELD", Post("/v1/locks/jobs/nightly:lock", {{"owner", "w2"}}).body["outcome"]);
  const uint64_t fence = locked["record"]["fence"];
  EXPECT_EQ("APPLIED", Post("/v1/locks/jobs/nightly:renew", {{"fence", fence}}).body["outcome"]);
  EXPECT_EQ("RELEASED", Post("/v1/locks/jobs/nightly:unlock", {{"fence", fence}}).body["outcome"]);

  Json issued = Post("/v1/tokens/forms", {{"payload", "form 7"}}).body;
  ASSERT_EQ("ISSUED", issued["outcome"]) << issued.dump();
  const std::string token = issued["token"];
  Json consumed = Post("/v1/tokens/forms/" + token + ":consume").body;
  EXPECT_EQ("CONSUMED", consumed["outcome"]);
  EXPECT_EQ("form 7", consumed["record"]["payload"]);
  EXPECT_EQ("ALREADY_CONSUMED", Post("/v1/tokens/forms/" + token + ":consume").body["outcome"]);
}

TEST_F(HttpApiTest, ABinaryPayloadAndKeyRoundTripByteExact) {
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes.push_back(static_cast<char>(i));
  // base64 of the 256 bytes 0x00..0xff, and the key bytes ff fe 00 2f as a path segment.
  const std::string b64 =
      "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+P0BB"
      "QkNERUZHSElKS0xNTk9QUVJTVFVWV1hZWltcXV5fYGFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6e3x9fn+AgYKD"
      "hIWGh4iJiouMjY6PkJGSk5SVlpeYmZqbnJ2en6ChoqOkpaanqKmqq6ytrq+wsbKztLW2t7i5uru8vb6/wMHCw8TF"
      "xsfIycrLzM3Oz9DR0tPU1dbX2Nna29zd3t/g4eLj5OXm5+jp6uvs7e7v8PHy8/T19vf4+fr7/P3+/w==";
  Reply put = client_->Send(http::verb::put, "/v1/records/bin/%FF%fe%00%2F",
                            Json{{"status", "S"}, {"payload_b64", b64}}.dump());
  ASSERT_EQ("INSERTED", put.body["outcome"]) << put.raw;
  Json got = ApplyOne({{"op", "get"}, {"namespace", "bin"}, {"key_b64", "//4ALw=="}});
  EXPECT_EQ("FOUND", got["outcome"]);
  EXPECT_FALSE(got["record"].contains("payload"));
  EXPECT_EQ(b64, got["record"]["payload_b64"]);
  // The store holds exactly the bytes: read through the binary protocol too.
  auto native = server_->Connect();
  ASSERT_OK(native);
  Result<OpResult> r = (*native)->Get({.ns = "bin", .key = std::string("\xff\xfe\x00/", 4)});
  ASSERT_OK(r);
  ASSERT_EQ(Outcome::kFound, r->outcome);
  EXPECT_EQ(bytes, r->record->payload);
}

// A record of the largest payload the store takes (max_payload_bytes, 1 MiB) is answered whole,
// as text (escapes included) and as base64: the reply limit (4 MiB) is on the real JSON size.
TEST_F(HttpApiTest, LargestPayloadsAreReadBackWholeAndOnlyRealOverflowsAreRefused) {
  std::string text(1 << 20, 'a');
  for (size_t i = 0; i < text.size(); i += 4096) text[i] = '"';  // escaped: 2 JSON bytes
  std::string bytes(1 << 20, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(0x80 + i % 64);
  Reply put_text = client_->Send(http::verb::put, "/v1/records/big/text",
                                 Json{{"status", "S"}, {"payload", text}}.dump());
  ASSERT_EQ(200, put_text.status) << put_text.raw.substr(0, 400);
  auto native = server_->Connect();
  ASSERT_OK(native);
  ASSERT_OK((*native)->Insert({.ns = "big", .key = "binary", .status = "S", .payload = bytes}));

  Reply get_text = client_->Send(http::verb::get, "/v1/records/big/text");
  ASSERT_EQ(200, get_text.status) << get_text.raw.substr(0, 400);
  EXPECT_TRUE(get_text.body["record"]["payload"] == text);
  Reply get_binary = client_->Send(http::verb::get, "/v1/records/big/binary");
  ASSERT_EQ(200, get_binary.status) << get_binary.raw.substr(0, 400);
  ASSERT_TRUE(get_binary.body["record"].contains("payload_b64"));
  Result<std::string> got =
      Base64Decode(get_binary.body["record"]["payload_b64"].get<std::string>());
  ASSERT_OK(got);
  EXPECT_TRUE(*got == bytes);

  // Five such records are about 5 MiB of JSON: over max_reply_bytes, refused as documented.
  Json gets = Json::array();
  for (int i = 0; i < 5; ++i)
    gets.push_back({{"op", "get"}, {"namespace", "big"}, {"key", "text"}});
  ExpectProblem(Apply(gets), 400, "INVALID_ARGUMENT", "exceeds max_reply_bytes");
}

TEST_F(HttpApiTest, PerOpErrorsAreInTheResultsAndOtherOpsApply) {
  Reply r = Apply(Json::array(
      {{{"op", "insert"}, {"namespace", "ns"}, {"key", "z"}, {"status", "S"}, {"ttl_ms", 0}},
       {{"op", "insert"}, {"namespace", "ns"}, {"key", "ok"}, {"status", "S"}}}));
  ASSERT_EQ(200, r.status) << r.raw;
  EXPECT_EQ("INVALID_ARGUMENT", r.body["results"][0]["error"]["code"]) << r.raw;
  EXPECT_FALSE(r.body["results"][0].contains("outcome"));
  EXPECT_EQ("INSERTED", r.body["results"][1]["outcome"]);
  // The same error on a one-op route is the response's problem.
  ExpectProblem(client_->Send(http::verb::put, "/v1/records/ns/z", R"({"status":"S","ttl_ms":0})"),
                400, "INVALID_ARGUMENT", "ttl");
}

TEST_F(HttpApiTest, MalformedBodiesAre400AndApplyNothing) {
  auto post = [&](const std::string& body) {
    return client_->Send(http::verb::post, "/v1/apply", body);
  };
  ExpectProblem(post("{\"ops\":["), 400, "INVALID_ARGUMENT", "not JSON");
  ExpectProblem(post("[]"), 400, "INVALID_ARGUMENT", "expected an object");
  ExpectProblem(post(R"({"ops":[],"extra":1})"), 400, "INVALID_ARGUMENT", "unknown field");
  ExpectProblem(post(R"({"ops":[{"op":"insert","namespace":"ns","key":"a","ttl_ms":"1h"}]})"), 400,
                "INVALID_ARGUMENT", "ops[0].ttl_ms: expected an integer");
  ExpectProblem(post(R"({"ops":[{"op":"insert","namespace":"ns","key":"a","fence":1}]})"), 400,
                "INVALID_ARGUMENT", "unknown field \"fence\" for op insert");
  ExpectProblem(post(R"({"ops":[{"op":"upsert","namespace":"ns","key":"a"}]})"), 400,
                "INVALID_ARGUMENT", "unknown op");
  ExpectProblem(post(R"({"ops":[{"op":"get","namespace":"ns","key":"a","key_b64":"YQ=="}]})"), 400,
                "INVALID_ARGUMENT", "both given");
  ExpectProblem(
      post(
          R"({"ops":[{"op":"insert","namespace":"ns","key":"a","payload":"x","payload_b64":"eA=="}]})"),
      400, "INVALID_ARGUMENT", "both given");
  ExpectProblem(post(R"({"ops":[{"op":"insert","namespace":"ns","key":"a","payload_b64":"!"}]})"),
                400, "INVALID_ARGUMENT", "payload_b64");
  ExpectProblem(post(R"({"ops":[{"op":"complete","namespace":"ns","key":"a","fence":-1}]})"), 400,
                "INVALID_ARGUMENT", "non-negative integer");
  ExpectProblem(Post("/v1/records/ns/a:cas", Json{{"key", "b"}}), 400, "INVALID_ARGUMENT",
                "given by the path");
  ExpectProblem(client_->Send(http::verb::get, "/v1/records/ns/%zz"), 400, "INVALID_ARGUMENT",
                "two hex digits");
  // The first op was well-formed; the request as a whole was refused, so it did not apply.
  post(R"({"ops":[{"op":"insert","namespace":"ns","key":"a"},{"op":"get"}]})");
  EXPECT_EQ("NOT_FOUND", client_->Send(http::verb::get, "/v1/records/ns/a").body["outcome"]);
}

// The process's peak resident memory (VmHWM), in bytes.
size_t PeakRssBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

// An 8 MiB body of empty ops is refused while it is parsed: the op count is checked as the
// parser meets them, not on a document built first (which took 250 MB), and nesting deeper
// than the schema goes is refused too.
TEST_F(HttpApiTest, TooManyOpsAndDeepNestingAreRefusedWhileParsing) {
  std::string body = R"({"ops":[{})";
  while (body.size() < (8u << 20) - 16) body += ",{}";
  body += "]}";
  const size_t peak_before = PeakRssBytes();
  Reply r = client_->Send(http::verb::post, "/v1/apply", body);
  ExpectProblem(r, 400, "INVALID_ARGUMENT", "operations; max_batch_ops is");
  EXPECT_LT(PeakRssBytes() - peak_before, 64u << 20);

  std::string deep = R"({"ops":[{"op":"get","namespace":"n","key":"k","x":)";
  deep += std::string(100'000, '[') + std::string(100'000, ']') + "}]}";
  ExpectProblem(client_->Send(http::verb::post, "/v1/apply", deep), 400, "INVALID_ARGUMENT",
                "nests deeper");
}

TEST_F(HttpApiTest, UnknownRoutesAre404AndWrongMethods405WithAllow) {
  ExpectProblem(client_->Send(http::verb::get, "/nowhere"), 404, "NOT_FOUND", "no route");
  ExpectProblem(client_->Send(http::verb::get, "/v1/records/ns"), 404, "NOT_FOUND");
  ExpectProblem(Post("/v1/records/ns/k:frobnicate"), 404, "NOT_FOUND");
  Reply r = client_->Send(http::verb::get, "/v1/apply");
  ExpectProblem(r, 405, "INVALID_ARGUMENT");
  EXPECT_EQ("POST", r.allow);
  r = client_->Send(http::verb::patch, "/v1/records/ns/k");
  ExpectProblem(r, 405, "INVALID_ARGUMENT");
  EXPECT_EQ("GET, PUT, DELETE", r.allow);
  // Still the same keep-alive connection, still serving.
  EXPECT_EQ(200, client_->Send(http::verb::get, "/healthz").status);
}

TEST_F(HttpApiTest, HealthReadinessAndMetrics) {
  Reply health = client_->Send(http::verb::get, "/healthz");
  EXPECT_EQ(200, health.status);
  EXPECT_EQ("ok", health.body["status"]);
  EXPECT_EQ(200, client_->Send(http::verb::get, "/readyz").status);

  // An operation over HTTP is counted under its own transport.
  EXPECT_EQ(200, client_->Send(http::verb::get, "/v1/records/ns/counted").status);
  Reply metrics = client_->Send(http::verb::get, "/metrics");
  EXPECT_EQ(200, metrics.status);
  EXPECT_EQ("text/plain; version=0.0.4; charset=utf-8", metrics.content_type);
  EXPECT_NE(std::string::npos,
            metrics.raw.find("idem_ops_total{op=\"get\",outcome=\"NOT_FOUND\"} 1\n"))
      << metrics.raw;
  EXPECT_NE(
      std::string::npos,
      metrics.raw.find("idem_request_duration_seconds_count{transport=\"http\",op=\"get\"} 1\n"))
      << metrics.raw;

  // Its connection and bytes are counted too.
  EXPECT_NE(std::string::npos, metrics.raw.find("idem_connections_accepted_total 1\n"))
      << metrics.raw;
  EXPECT_NE(std::string::npos, metrics.raw.find("idem_received_bytes_total{transport=\"http\"}"))
      << metrics.raw;
  EXPECT_NE(std::string::npos, metrics.raw.find("idem_sent_bytes_total{transport=\"http\"}"))
      << metrics.raw;

  server_->server().RequestStop();  // idemstored's main thread would now call Stop()
  ExpectProblem(client_->Send(http::verb::get, "/readyz"), 503, "SHUTDOWN", "stopping");
}

// Both listeners on ports of their own choosing, answering while the database opens.
class OpeningServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.port = 0;
    options_.http = HttpListenerOptions{};
    options_.http->port = 0;
    options_.log = [](const LogRecord&) {};
    Result<std::unique_ptr<Server>> server = Server::Listen(options_);
    ASSERT_OK(server);
    server_ = std::move(*server);
    ASSERT_OK(server_->AnswerWhileOpening());
  }
  ServerOptions options_;
  std::unique_ptr<Server> server_;
};

// Opening a database can take a while (a journal's replay): clients that connect meanwhile are
// told so at once, as Redis answers LOADING, instead of waiting unanswered in the listen queue
// (a liveness probe that times out there gets the server restarted mid-open).
TEST_F(OpeningServerTest, BothListenersSayTheDatabaseIsOpeningUntilServeAndThenServe) {
  EXPECT_TRUE(server_->AnswerWhileOpening().IsInvalidArgument()) << "twice";

  ClientOptions client_options;
  client_options.address = "127.0.0.1:" + std::to_string(server_->port());
  Result<std::unique_ptr<Client>> early = Client::Connect(client_options);
  ASSERT_FALSE(early.ok());
  EXPECT_TRUE(early.status().IsBusy()) << early.status().ToString();
  EXPECT_NE(std::string::npos, early.status().message().find("opening"))
      << early.status().ToString();

  HttpClient http_client(server_->http_port());
  Reply health = http_client.Send(http::verb::get, "/healthz");
  EXPECT_EQ(200, health.status) << "alive while opening";
  ExpectProblem(http_client.Send(http::verb::get, "/readyz"), 503, "BUSY", "opening");
  ExpectProblem(http_client.Send(http::verb::get, "/v1/records/ns/k"), 503, "BUSY", "opening");
  ExpectProblem(http_client.Send(http::verb::get, "/metrics"), 503, "BUSY", "opening");

  testing::TempDir dir;
  auto engine = ServingEngine::Open(dir.Sub("db"),
                                    testing::TestEngineOptions(std::make_shared<ManualClock>()));
  ASSERT_OK(engine);
  ASSERT_OK(server_->Serve(engine->get()));
  EXPECT_TRUE(server_->AnswerWhileOpening().IsInvalidArgument()) << "after Serve";
  Result<std::unique_ptr<Client>> client = Client::Connect(client_options);
  ASSERT_OK(client);
  ASSERT_OK((*client)->Insert({.ns = "ns", .key = "k", .status = "NEW"}));
  // The same keep-alive HTTP connection is served now.
  EXPECT_EQ(200, http_client.Send(http::verb::get, "/readyz").status);
  EXPECT_EQ(200, http_client.Send(http::verb::get, "/v1/records/ns/k").status);
  client->reset();
  server_->Stop();
}

TEST_F(OpeningServerTest, AServerStoppedWhileOpeningStopsAndFreesItsPorts) {
  HttpClient http_client(server_->http_port());
  EXPECT_EQ(200, http_client.Send(http::verb::get, "/healthz").status);
  options_.port = server_->port();
  options_.http->port = server_->http_port();
  server_.reset();  // Stop() without Serve(): the database could not be opened
  ASSERT_OK(Server::Listen(options_));
}

TEST_F(HttpApiTest, OversizedBodyIs413BeforeItIsRead) {
  HttpListenerOptions small;
  small.max_body_bytes = 4096;
  Start(small);
  // Only the headers are sent: the limit is applied to Content-Length, before the body.
  testing::RawSocket raw(port());
  const std::string head =
      "POST /v1/apply HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000\r\n\r\n";
  ASSERT_TRUE(raw.Send(head.data(), head.size()));
  std::string response = raw.ReadAll(5s);
  EXPECT_NE(std::string::npos, response.find("HTTP/1.1 413")) << response;
  EXPECT_NE(std::string::npos, response.find("max_body_bytes")) << response;
  EXPECT_NE(std::string::npos, response.find("Connection: close")) << response;

  // A client already sending the body still reads the 413 (no reset from unread input).
  testing::RawSocket sending(port());
  const std::string whole = "POST /v1/apply HTTP/1.1\r\nHost: x\r\nContent-Length: 200000\r\n\r\n" +
                            std::string(200000, ' ');
  ASSERT_TRUE(sending.Send(whole.data(), whole.size()));
  response = sending.ReadAll(5s);
  EXPECT_NE(std::string::npos, response.find("HTTP/1.1 413")) << response;
}

TEST_F(HttpApiTest, OversizedHeadersAre431) {
  HttpListenerOptions small;
  small.max_header_bytes = 2048;
  Start(small);
  testing::RawSocket raw(port());
  const std::string head =
      "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(4096, 'a') + "\r\n\r\n";
  ASSERT_TRUE(raw.Send(head.data(), head.size()));
  std::string response = raw.ReadAll(5s);
  EXPECT_NE(std::string::npos, response.find("HTTP/1.1 431")) << response;
}

TEST_F(HttpApiTest, GarbageIs400ThenClose) {
  testing::RawSocket raw(port());
  const std::string junk = "\x16\x03\x01 definitely not http\r\n\r\n";
  ASSERT_TRUE(raw.Send(junk.data(), junk.size()));
  std::string response = raw.ReadAll(5s);
  EXPECT_NE(std::string::npos, response.find("HTTP/1.1 400")) << response;
}

TEST_F(HttpApiTest, PipelinedRequestsAreAnsweredInOrderOnOneConnection) {
  std::string requests;
  for (int i = 0; i < 3; ++i) {
    const std::string body = Json{{"status", "S" + std::to_string(i)}}.dump();
    requests += "PUT /v1/records/ns/p" + std::to_string(i) +
                " HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) +
                "\r\n\r\n" + body;
  }
  requests += "GET /v1/records/ns/p1 HTTP/1.1\r\nHost: x\r\n\r\n";
  asio::write(client_->stream().socket(), asio::buffer(requests));
  for (int i = 0; i < 3; ++i) {
    Reply r = client_->Read();
    EXPECT_EQ("INSERTED", r.body["outcome"]) << i;
    EXPECT_EQ("S" + std::to_string(i), r.body["record"]["status"]);
  }
  Reply get = client_->Read();
  EXPECT_EQ("S1", get.body["record"]["status"]);
}

TEST_F(HttpApiTest, IdleAndTricklingClientsAreClosed) {
  HttpListenerOptions quick;
  quick.idle_timeout_ms = 200;
  Start(quick);
  testing::RawSocket idle(port());
  testing::RawSocket slow(port());
  const std::string partial = "GET /healthz HTTP/1.1\r\nHo";
  ASSERT_TRUE(slow.Send(partial.data(), partial.size()));
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(idle.WaitClosed());
  EXPECT_EQ("", slow.ReadAll(5s));  // closed without an answer: it never finished a request
  EXPECT_LT(std::chrono::steady_clock::now() - start, 4s);
  EXPECT_EQ(200, HttpClient(port()).Send(http::verb::get, "/healthz").status);
}

TEST_F(HttpApiTest, ConnectionsOverTheLimitGet503) {
  HttpListenerOptions one;
  one.max_connections = 1;
  Start(one);  // client_ holds the one connection
  EXPECT_EQ(200, client_->Send(http::verb::get, "/healthz").status);
  testing::RawSocket second(port());
  std::string response = second.ReadAll(5s);
  EXPECT_NE(std::string::npos, response.find("HTTP/1.1 503")) << response;
  EXPECT_NE(std::string::npos, response.find("Retry-After: 1")) << response;
  client_.reset();
  // The slot is free again once the first connection closed.
  for (int attempt = 0; attempt < 100; ++attempt) {
    HttpClient again(port());
    if (again.Send(http::verb::get, "/healthz").status == 200) return;
    std::this_thread::sleep_for(10ms);
  }
  ADD_FAILURE() << "the freed connection slot was never reused";
}

// Descriptors of this process (the server and the test's clients alike).
size_t OpenFds() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    ++n;
  }
  return n;
}

// A connect flood: refusals in flight are capped at max_refusing_connections, the rest wait in
// the listen queue, so the server's descriptors stay bounded; each client still gets its 503.
TEST_F(HttpApiTest, AConnectFloodHoldsAtMostMaxRefusingDescriptors) {
  HttpListenerOptions small;
  small.max_connections = 1;
  small.max_refusing_connections = 4;
  Start(small);  // client_ holds the one connection
  EXPECT_EQ(200, client_->Send(http::verb::get, "/healthz").status);
  const size_t before = OpenFds();
  constexpr size_t kFlood = 64;
  std::vector<std::unique_ptr<testing::RawSocket>> flood;
  for (size_t i = 0; i < kFlood; ++i) flood.push_back(std::make_unique<testing::RawSocket>(port()));
  // The server accepts what it will within milliseconds; watch it for a while.
  size_t most = 0;
  const auto until = std::chrono::steady_clock::now() + 300ms;
  while (std::chrono::steady_clock::now() < until) {
    most = std::max(most, OpenFds());
    std::this_thread::sleep_for(5ms);
  }
  // The clients' own kFlood descriptors, the refusals', and a few the server may open.
  EXPECT_LE(most, before + kFlood + small.max_refusing_connections + 4);
  // Every client is refused in turn as the ones before it close.
  for (auto& socket : flood) {
    std::string response = socket->ReadAll(5s);
    EXPECT_NE(std::string::npos, response.find("HTTP/1.1 503")) << response;
    socket.reset();
  }
}

TEST_F(HttpApiTest, SixteenConcurrentInsertsOfOneKeyInsertExactlyOnce) {
  std::vector<std::future<std::string>> clients;
  for (int i = 0; i < 16; ++i) {
    clients.push_back(std::async(std::launch::async, [this, i] {
      HttpClient c(port());
      return c
          .Send(http::verb::put, "/v1/records/race/one",
                Json{{"status", "S"}, {"payload", std::to_string(i)}}.dump())
          .body["outcome"]
          .get<std::string>();
    }));
  }
  int inserted = 0, exists = 0;
  for (auto& f : clients) {
    const std::string outcome = f.get();
    inserted += outcome == "INSERTED";
    exists += outcome == "EXISTS";
  }
  EXPECT_EQ(1, inserted);
  EXPECT_EQ(15, exists);
}

}  // namespace
}  // namespace idem
