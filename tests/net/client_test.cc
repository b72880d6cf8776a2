// The Client's failure contract (unreachable, timeouts, server gone, wrong protocol) and its
// concurrency (pipelining, many threads, a server stopping under load).
#include "idem/client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <future>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "hostile_frames.h"
#include "protocol_codec.h"
#include "test_server.h"

namespace idem {
namespace {

using namespace std::chrono_literals;

// A one-connection fake server: answers Hello (with `protocol_version`), then does `after`.
class FakeServer {
 public:
  // kAnswerRaw: sends answer_(id) as it is, length prefix included (or not).
  enum class After { kIgnoreRequests, kCloseOnFirstRequest, kAnswer, kAnswerRaw };
  // For kAnswer: the body of the response to request `id`.
  using Answer = std::function<std::vector<uint8_t>(uint64_t id)>;

  // `max_reply_bytes`: what the HelloReply announces (0: nothing).
  FakeServer(After after, uint32_t protocol_version = kProtocolVersion, Answer answer = nullptr,
             uint32_t max_reply_bytes = 0)
      : answer_(std::move(answer)), max_reply_bytes_(max_reply_bytes) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(0, ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr));
    EXPECT_EQ(0, ::listen(listen_fd_, 4));
    socklen_t len = sizeof addr;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this, after, protocol_version] { Serve(after, protocol_version); });
  }
  ~FakeServer() {
    ::shutdown(listen_fd_, SHUT_RDWR);
    ::close(listen_fd_);
    if (conn_fd_ >= 0) ::shutdown(conn_fd_, SHUT_RDWR);
    thread_.join();
    if (conn_fd_ >= 0) ::close(conn_fd_);
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  bool ReadFrame(uint64_t* id = nullptr) {
    uint8_t prefix[4];
    if (!ReadExactly(prefix, 4)) return false;
    std::vector<uint8_t> body(prefix[0] | prefix[1] << 8 | prefix[2] << 16);
    if (!ReadExactly(body.data(), body.size())) return false;
    const wire::Frame* frame = VerifyFrame(body.data(), body.size());
    if (id) *id = frame ? frame->id() : 0;
    return true;
  }
  bool ReadExactly(uint8_t* p, size_t n) {
    while (n > 0) {
      ssize_t got = ::recv(conn_fd_, p, n, 0);
      if (got <= 0) return false;
      p += got;
      n -= static_cast<size_t>(got);
    }
    return true;
  }
  void Serve(After after, uint32_t protocol_version) {
    conn_fd_ = ::accept(listen_fd_, nullptr, nullptr);
    if (conn_fd_ < 0 || !ReadFrame()) return;
    flatbuffers::FlatBufferBuilder b;
    auto version = b.CreateString("fake");
    wire::HelloReplyBuilder hello(b);
    hello.add_protocol_version(protocol_version);
    hello.add_server_version(version);
    hello.add_max_frame_bytes(1 << 20);
    hello.add_max_batch_ops(100);
    if (max_reply_bytes_ != 0) hello.add_max_reply_bytes(max_reply_bytes_);
    auto reply = hello.Finish();
    FrameBytes frame =
        FinishFrame(b, wire::CreateFrame(b, 1, wire::Body::HelloReply, reply.Union()));
    ::send(conn_fd_, frame.data(), frame.size(), MSG_NOSIGNAL);
    uint64_t id = 0;
    while (ReadFrame(&id)) {
      if (after == After::kCloseOnFirstRequest) {
        ::shutdown(conn_fd_, SHUT_RDWR);
        return;
      }
      if (after == After::kAnswerRaw) {
        std::vector<uint8_t> bytes = answer_(id);
        ::send(conn_fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      }
      if (after == After::kAnswer) {
        std::vector<uint8_t> body = answer_(id);
        uint32_t n = static_cast<uint32_t>(body.size());
        uint8_t prefix[4] = {uint8_t(n), uint8_t(n >> 8), uint8_t(n >> 16), uint8_t(n >> 24)};
        ::send(conn_fd_, prefix, 4, MSG_NOSIGNAL);
        ::send(conn_fd_, body.data(), body.size(), MSG_NOSIGNAL);
      }
    }
  }

  Answer answer_;
  const uint32_t max_reply_bytes_;
  int listen_fd_ = -1;
  int conn_fd_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
};

uint16_t UnusedPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);  // nothing listens there now
  return ntohs(addr.sin_port);
}

// Every StoreStats field crosses the wire in its own slot (distinct values catch a field that
// is dropped or swapped with another in the encoder or decoder).
TEST(ProtocolCodecTest, StatsRoundTripEveryField) {
  StoreStats in;
  uint64_t StoreStats::*fields[] = {&StoreStats::estimated_live_records,
                                    &StoreStats::sst_bytes,
                                    &StoreStats::memtable_bytes,
                                    &StoreStats::wal_bytes,
                                    &StoreStats::next_fence,
                                    &StoreStats::ops,
                                    &StoreStats::writes,
                                    &StoreStats::user_bytes_written,
                                    &StoreStats::flush_bytes_written,
                                    &StoreStats::compaction_bytes_read,
                                    &StoreStats::compaction_bytes_written,
                                    &StoreStats::compactions,
                                    &StoreStats::records_dropped_by_compaction,
                                    &StoreStats::live_sst_bytes,
                                    &StoreStats::wal_syncs,
                                    &StoreStats::block_cache_bytes,
                                    &StoreStats::block_cache_capacity_bytes,
                                    &StoreStats::table_readers_bytes,
                                    &StoreStats::expiry_windows,
                                    &StoreStats::reclaim_failures};
  uint64_t value = 1000;
  for (auto field : fields) in.*field = ++value;
  in.durability = Durability::kAsync;  // not the default
  FrameBytes bytes = EncodeStatsResponse(7, in);
  const wire::Frame* frame = VerifyFrame(bytes.data() + 4, bytes.size() - 4);
  ASSERT_NE(nullptr, frame);
  ASSERT_NE(nullptr, frame->body_as_StatsResponse());
  Result<StoreStats> out = DecodeStats(*frame->body_as_StatsResponse());
  ASSERT_OK(out);
  for (auto field : fields) EXPECT_EQ(in.*field, (*out).*field);
  EXPECT_EQ(Durability::kAsync, out->durability);
  EXPECT_EQ("async", frame->body_as_StatsResponse()->durability()->str());  // the flag's name
}

// The wire carries the durability as a name; a name the client does not know is a damaged
// reply, not a silently defaulted mode.
TEST(ProtocolCodecTest, StatsWithAnUnknownDurabilityIsCorruption) {
  flatbuffers::FlatBufferBuilder b;
  auto name = b.CreateString("fast");
  wire::StatsResponseBuilder stats(b);
  stats.add_durability(name);
  b.Finish(wire::CreateFrame(b, 7, wire::Body::StatsResponse, stats.Finish().Union()));
  const wire::Frame* frame = VerifyFrame(b.GetBufferPointer(), b.GetSize());
  ASSERT_NE(nullptr, frame);
  Result<StoreStats> out = DecodeStats(*frame->body_as_StatsResponse());
  EXPECT_EQ(Status::Code::kCorruption, out.status().code()) << out.status().ToString();
  EXPECT_NE(std::string::npos, out.status().ToString().find("\"fast\"")) << out.status().ToString();
}

// The bound a server checks max_reply_bytes against, before building a response: never below
// the encoded size, and close to it (2 KB of vtables, then 100 bytes per result) for every shape
// of result.
TEST(ProtocolCodecTest, ApplyResponseBytesBoundIsCloseAboveTheEncodedSize) {
  std::vector<Result<OpResult>> results;
  Record full;
  full.status = "PENDING";
  full.fingerprint = std::string(64, 'f');
  full.payload = std::string(1000, 'p');
  full.owner = "worker-7";
  full.version = 1, full.fence = 2, full.created_ms = 3, full.updated_ms = 4;
  full.expires_at_ms = 5, full.lease_until_ms = 6;
  full.kind = RecordKind::kStateMachine;
  for (int i = 0; i < 50; ++i) {
    OpResult found;
    found.outcome = Outcome::kFound;
    found.record = full;
    found.record->payload.resize(static_cast<size_t>(i * 37 % 1001));
    found.record->status.resize(static_cast<size_t>(1 + i % 7));
    results.push_back(found);
    OpResult empty_record;
    empty_record.outcome = Outcome::kInserted;
    empty_record.record = Record{};
    results.push_back(empty_record);
    OpResult issued;
    issued.outcome = Outcome::kIssued;
    issued.token = std::string(static_cast<size_t>(i), 't');
    results.push_back(issued);
    results.push_back(OpResult{});  // NOT_FOUND, no record
    results.push_back(Status::InvalidArgument(std::string(static_cast<size_t>(i * 3), 'm')));
    for (size_t n : {size_t{0}, size_t{1}, results.size()}) {
      std::span<const Result<OpResult>> some(results.data(), n);
      const size_t encoded = EncodeApplyResponse(7, some).size();
      const size_t bound = ApplyResponseBytesBound(some);
      EXPECT_GE(bound, encoded) << n << " results";
      EXPECT_LE(bound, encoded + 2200 + 100 * n) << n << " results";
    }
  }
}

TEST(ClientTest, UnreachableServerIsIOError) {
  ClientOptions options;
  options.address = "127.0.0.1:" + std::to_string(UnusedPort());
  auto client = Client::Connect(options);
  EXPECT_TRUE(client.status().IsIOError()) << client.status().ToString();
}

TEST(ClientTest, BadAddressIsInvalidArgument) {
  ClientOptions options;
  options.address = "no-port";
  EXPECT_TRUE(Client::Connect(options).status().IsInvalidArgument());
}

TEST(ClientTest, OtherProtocolVersionIsNotSupported) {
  FakeServer fake(FakeServer::After::kIgnoreRequests, kProtocolVersion + 1);
  ClientOptions options;
  options.address = fake.address();
  auto client = Client::Connect(options);
  EXPECT_EQ(Status::Code::kNotSupported, client.status().code()) << client.status().ToString();
}

TEST(ClientTest, NoAnswerIsTimedOut) {
  FakeServer fake(FakeServer::After::kIgnoreRequests);
  ClientOptions options;
  options.address = fake.address();
  options.request_timeout_ms = 200;
  auto client = Client::Connect(options);
  ASSERT_OK(client);
  const auto start = std::chrono::steady_clock::now();
  Result<OpResult> r = (*client)->Get({.ns = "ns", .key = "k"});
  EXPECT_TRUE(r.status().IsTimedOut()) << r.status().ToString();
  EXPECT_GE(std::chrono::steady_clock::now() - start, 150ms);
  EXPECT_TRUE((*client)->Stats().status().IsTimedOut());
}

TEST(ClientTest, ServerClosingFailsWaitingCallsAtOnce) {
  FakeServer fake(FakeServer::After::kCloseOnFirstRequest);
  ClientOptions options;
  options.address = fake.address();
  options.request_timeout_ms = 60'000;  // the failure must not wait for this
  options.reconnect = false;
  auto client = Client::Connect(options);
  ASSERT_OK(client);
  const auto start = std::chrono::steady_clock::now();
  Result<OpResult> r = (*client)->Get({.ns = "ns", .key = "k"});
  EXPECT_TRUE(r.status().IsIOError()) << r.status().ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  // Without reconnect, later calls fail at once with the same error.
  Result<OpResult> later = (*client)->Get({.ns = "ns", .key = "k"});
  EXPECT_EQ(r.status().ToString(), later.status().ToString());
}

// The server closes idle connections (ServerOptions::idle_timeout_ms); a quiet client must not
// be broken by it.
TEST(ClientTest, IdleTimeoutDoesNotBreakTheClient) {
  ServerOptions server_options;
  server_options.idle_timeout_ms = 100;
  testing::TestServer server(server_options);
  auto client = server.Connect();
  ASSERT_OK(client);
  ASSERT_OK((*client)->Insert({.ns = "ns", .key = "k", .status = "NEW"}));
  std::this_thread::sleep_for(400ms);  // the server has closed the connection by now
  Result<OpResult> r = (*client)->Get({.ns = "ns", .key = "k"});
  ASSERT_OK(r);
  EXPECT_EQ(Outcome::kFound, r->outcome);
}

// Time for the client's I/O thread to read the end of a connection the server closed: a call
// made before that would go out on the old connection and fail with it (in flight when the
// connection was lost), which is not what these tests are about.
constexpr auto kSeeTheClose = 100ms;

// A restart costs nothing to a client with nothing in flight: the next call reconnects, and
// calls made while it does wait for the handshake and then go out in order.
TEST(ClientTest, ReconnectsAfterAServerRestart) {
  testing::TestServer server;
  auto client = server.Connect();
  ASSERT_OK(client);
  ASSERT_OK((*client)->Insert({.ns = "ns", .key = "before", .status = "NEW"}));
  server.StopServer();
  server.StartServer();
  std::this_thread::sleep_for(kSeeTheClose);
  Result<OpResult> r = (*client)->Get({.ns = "ns", .key = "before"});
  ASSERT_OK(r);
  EXPECT_EQ(Outcome::kFound, r->outcome);

  server.StopServer();
  server.StartServer();
  std::this_thread::sleep_for(kSeeTheClose);
  constexpr int kRequests = 500;  // all sent while the client is still reconnecting
  std::atomic<int> inserted{0}, completed{0};
  std::promise<void> all_done;
  for (int i = 0; i < kRequests; ++i) {
    const std::string key = "after" + std::to_string(i);  // an Op borrows its strings
    std::vector<Op> ops = {Op::Insert({.ns = "ns", .key = key, .status = "NEW"})};
    (*client)->ApplyAsync(ops, [&](Status s, std::vector<Result<OpResult>> results) {
      if (s.ok() && results[0].ok() && results[0]->outcome == Outcome::kInserted) ++inserted;
      if (++completed == kRequests) all_done.set_value();
    });
  }
  ASSERT_EQ(std::future_status::ready, all_done.get_future().wait_for(30s));
  EXPECT_EQ(kRequests, inserted.load());
}

// While the server is down each call fails with IOError; after a failed attempt the client
// waits reconnect_backoff_ms before the next one, failing calls at once meanwhile; then it
// recovers by itself.
TEST(ClientTest, WhileTheServerIsDownCallsFailAtOnceThenRecover) {
  testing::TestServer server;
  ClientOptions options;
  options.reconnect_backoff_ms = 1'000;  // long enough to restart the server inside it
  options.reconnect_backoff_max_ms = 1'000;
  auto client = server.Connect(options);
  ASSERT_OK(client);
  ASSERT_OK((*client)->Insert({.ns = "ns", .key = "k", .status = "NEW"}));
  server.StopServer();
  std::this_thread::sleep_for(kSeeTheClose);

  Result<OpResult> first = (*client)->Get({.ns = "ns", .key = "k"});  // tries to connect: refused
  EXPECT_TRUE(first.status().IsIOError()) << first.status().ToString();
  EXPECT_NE(std::string::npos, first.status().message().find("connect to " + server.address()))
      << first.status().ToString();
  server.StartServer();
  // Within the backoff: no attempt, although the server is back.
  Result<OpResult> backing_off = (*client)->Get({.ns = "ns", .key = "k"});
  EXPECT_TRUE(backing_off.status().IsIOError()) << backing_off.status().ToString();
  EXPECT_NE(std::string::npos, backing_off.status().message().find("next attempt in"))
      << backing_off.status().ToString();

  std::this_thread::sleep_for(1'200ms);
  Result<OpResult> recovered = (*client)->Get({.ns = "ns", .key = "k"});
  ASSERT_OK(recovered);
  EXPECT_EQ(Outcome::kFound, recovered->outcome);
}

TEST(ClientTest, DestroyingTheClientFailsPendingCallsWithShutdown) {
  FakeServer fake(FakeServer::After::kIgnoreRequests);
  ClientOptions options;
  options.address = fake.address();
  auto client = Client::Connect(options);
  ASSERT_OK(client);
  std::promise<Status> done;
  std::vector<Op> ops = {Op::Get({.ns = "ns", .key = "k"})};
  (*client)->ApplyAsync(ops, [&](Status s, std::vector<Result<OpResult>>) { done.set_value(s); });
  client->reset();
  EXPECT_EQ(Status::Code::kShutdown, done.get_future().get().code());
}

TEST(ClientTest, ApplyInsideACallbackIsRefused) {
  testing::TestServer server;
  auto client = server.Connect();
  ASSERT_OK(client);
  std::promise<Status> nested;
  std::vector<Op> ops = {Op::Get({.ns = "ns", .key = "k"})};
  (*client)->ApplyAsync(ops, [&](Status, std::vector<Result<OpResult>>) {
    std::vector<Result<OpResult>> results;
    nested.set_value((*client)->Apply(ops, &results));
  });
  EXPECT_TRUE(nested.get_future().get().IsInvalidArgument());
}

TEST(ClientTest, ThousandsOfPipelinedRequests) {
  testing::TestServer server;
  auto client = server.Connect();
  ASSERT_OK(client);
  constexpr int kRequests = 5000;
  std::atomic<int> inserted{0}, completed{0};
  std::promise<void> all_done;
  for (int i = 0; i < kRequests; ++i) {
    std::string key = "p" + std::to_string(i);
    std::vector<Op> ops = {Op::Insert({.ns = "ns", .key = key, .status = "NEW"})};
    (*client)->ApplyAsync(ops, [&](Status s, std::vector<Result<OpResult>> results) {
      if (s.ok() && results.size() == 1 && results[0].ok() &&
          results[0]->outcome == Outcome::kInserted) {
        ++inserted;
      }
      if (++completed == kRequests) all_done.set_value();
    });
  }
  all_done.get_future().wait();
  EXPECT_EQ(kRequests, inserted.load());
  Result<StoreStats> stats = (*client)->Stats();
  ASSERT_OK(stats);
  std::printf("pipelined: %d requests in %llu RocksDB writes\n", kRequests,
              static_cast<unsigned long long>(stats->writes));
  EXPECT_EQ(uint64_t{kRequests}, stats->ops);
}

TEST(ClientTest, ManyThreadsShareOneClient) {
  testing::TestServer server;
  auto client = server.Connect();
  ASSERT_OK(client);
  constexpr int kThreads = 8, kPerThread = 200;
  std::atomic<int> inserted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        Result<OpResult> r = (*client)->Insert(
            {.ns = "ns", .key = std::to_string(t) + "-" + std::to_string(i), .status = "NEW"});
        if (r.ok() && r->outcome == Outcome::kInserted) ++inserted;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(kThreads * kPerThread, inserted.load());
}

// Stop() under load: every callback fires, and everything acknowledged is in the database.
TEST(ClientTest, ServerStopAnswersOrFailsEveryRequest) {
  testing::TestServer server;
  auto client = server.Connect();
  ASSERT_OK(client);
  constexpr int kRequests = 2000;
  std::mutex mu;
  std::vector<std::string> acknowledged;
  std::atomic<int> completed{0}, failed{0};
  std::promise<void> all_done;
  for (int i = 0; i < kRequests; ++i) {
    std::string key = "s" + std::to_string(i);
    std::vector<Op> ops = {Op::Insert({.ns = "ns", .key = key, .status = "NEW"})};
    (*client)->ApplyAsync(ops, [&, key](Status s, std::vector<Result<OpResult>> results) {
      if (s.ok() && results[0].ok()) {
        std::lock_guard<std::mutex> lock(mu);
        acknowledged.push_back(key);
      } else {
        EXPECT_TRUE(s.IsIOError() || s.code() == Status::Code::kShutdown) << s.ToString();
        ++failed;
      }
      if (++completed == kRequests) all_done.set_value();
    });
  }
  server.server().Stop();
  ASSERT_EQ(std::future_status::ready, all_done.get_future().wait_for(30s));
  std::printf("stop under load: %zu acknowledged, %d failed\n", acknowledged.size(), failed.load());
  for (const std::string& key : acknowledged) {
    Result<OpResult> r = server.engine().Get({.ns = "ns", .key = key});
    ASSERT_OK(r);
    EXPECT_EQ(Outcome::kFound, r->outcome) << key;
  }
}

// A hostile (or broken) server must not crash its clients either: an ApplyResponse without its
// body, or without its results vector, is Corruption for that call.
TEST(ClientTest, AResponseWithoutItsBodyIsCorruption) {
  FakeServer fake(FakeServer::After::kAnswer, kProtocolVersion, [](uint64_t id) {
    return testing::FrameWithoutBody(id, wire::Body::ApplyResponse);
  });
  ClientOptions options;
  options.address = fake.address();
  auto client = Client::Connect(options);
  ASSERT_OK(client);
  std::vector<Result<OpResult>> results;
  Status s = (*client)->Apply(std::vector<Op>{}, &results);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  s = (*client)->Apply(std::vector<Op>{Op::Get({.ns = "ns", .key = "k"})}, &results);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_TRUE((*client)->Stats().status().IsCorruption());
}

TEST(ClientTest, AResponseWithoutItsResultsIsCorruption) {
  FakeServer fake(FakeServer::After::kAnswer, kProtocolVersion, [](uint64_t id) {
    flatbuffers::FlatBufferBuilder b;
    auto response = wire::CreateApplyResponse(b);  // no results vector
    b.Finish(wire::CreateFrame(b, id, wire::Body::ApplyResponse, response.Union()));
    return testing::Body(b);
  });
  ClientOptions options;
  options.address = fake.address();
  auto client = Client::Connect(options);
  ASSERT_OK(client);
  std::vector<Result<OpResult>> results;
  Status s = (*client)->Apply(std::vector<Op>{}, &results);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
}

// A server may announce a max_reply_bytes of up to 4 GiB; the client holds it to its own
// ClientOptions::max_reply_bytes (64 MiB by default). A response whose length prefix claims
// more than that is Corruption at once, naming both limits, before a byte of it is allocated
// (before, the client reserved the claimed 1 GiB and waited for it until the request timed out).
TEST(ClientTest, AServersMaxReplyBytesIsCappedByTheClientsOwn) {
  constexpr uint32_t kClaimed = 1u << 30;
  FakeServer fake(
      FakeServer::After::kAnswerRaw, kProtocolVersion,
      [](uint64_t) {
        return std::vector<uint8_t>{uint8_t(kClaimed), uint8_t(kClaimed >> 8),
                                    uint8_t(kClaimed >> 16), uint8_t(kClaimed >> 24)};
      },
      /*max_reply_bytes=*/0xFFFFFFFF);
  ClientOptions options;
  options.address = fake.address();
  options.request_timeout_ms = 2'000;
  auto client = Client::Connect(options);
  ASSERT_OK(client);
  EXPECT_EQ(0xFFFFFFFFu, (*client)->server_info().max_reply_bytes);
  std::vector<Result<OpResult>> results;
  Status s = (*client)->Apply(std::vector<Op>{Op::Get({.ns = "ns", .key = "k"})}, &results);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find("1073741824")) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find("ClientOptions::max_reply_bytes")) << s.ToString();
}

// Eight results pointing at one record with a 512 KiB payload: a 512 KiB frame that decodes into
// 4 MiB of copies (with more ops, into gigabytes). A server never shares records: Corruption.
TEST(ClientTest, ResultsSharingOneRecordAreCorruption) {
  FakeServer fake(FakeServer::After::kAnswer, kProtocolVersion,
                  [](uint64_t id) { return testing::SharedResultFrame(id, 8, 512 * 1024); });
  ClientOptions options;
  options.address = fake.address();
  auto client = Client::Connect(options);
  ASSERT_OK(client);
  std::vector<Result<OpResult>> results;
  Status s = (*client)->Apply(std::vector<Op>(8, Op::Get({.ns = "ns", .key = "k"})), &results);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_TRUE(results.empty());
}

// Five 1 MiB records in one reply: above the server's max_reply_bytes (4 MiB by default). Before,
// the server built the reply and the client dropped the connection on its length; now the
// request fails with an error that names the limit and the connection stays up.
TEST(ClientTest, AReplyAboveMaxReplyBytesIsAClearError) {
  testing::TestServer server;
  auto client = server.Connect();
  ASSERT_OK(client);
  const std::string payload(1 << 20, 'p');
  const std::vector<std::string> keys = {"big-0", "big-1", "big-2", "big-3", "big-4"};
  std::vector<Op> gets;
  for (const std::string& key : keys) {
    ASSERT_OK((*client)->Insert({.ns = "ns", .key = key, .status = "NEW", .payload = payload}));
    gets.push_back(Op::Get({.ns = "ns", .key = key}));
  }
  std::vector<Result<OpResult>> results;
  Status s = (*client)->Apply(gets, &results);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find("max_reply_bytes")) << s.ToString();
  gets.resize(3);  // 3 MiB: fits
  ASSERT_OK((*client)->Apply(gets, &results));
  ASSERT_EQ(3u, results.size());
  ASSERT_OK(results[2]);
  ASSERT_TRUE(results[2]->record.has_value());
  EXPECT_TRUE(payload == results[2]->record->payload);
}

// A client takes responses up to what the server announces, not only its own default (4 MiB).
TEST(ClientTest, ResponsesUpToTheServersMaxReplyBytesAreRead) {
  ServerOptions options;
  options.max_reply_bytes = 8u << 20;
  testing::TestServer server(options);
  auto client = server.Connect();
  ASSERT_OK(client);
  EXPECT_EQ(8u << 20, (*client)->server_info().max_reply_bytes);
  const std::string payload(1 << 20, 'p');
  const std::vector<std::string> keys = {"big-0", "big-1", "big-2", "big-3", "big-4"};
  std::vector<Op> gets;
  for (const std::string& key : keys) {
    ASSERT_OK((*client)->Insert({.ns = "ns", .key = key, .status = "NEW", .payload = payload}));
    gets.push_back(Op::Get({.ns = "ns", .key = key}));
  }
  std::vector<Result<OpResult>> results;
  ASSERT_OK((*client)->Apply(gets, &results));  // a 5 MiB response
  ASSERT_EQ(5u, results.size());
  for (const Result<OpResult>& r : results) {
    ASSERT_OK(r);
    EXPECT_EQ(payload.size(), r->record->payload.size());
  }
}

}  // namespace
}  // namespace idem
