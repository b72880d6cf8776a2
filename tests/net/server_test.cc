// The real server on 127.0.0.1:0 under hostile and awkward clients: bad frames, partial
// frames, random bytes, idle clients, too many clients. After each, the server must still
// serve other connections.
#include <chrono>
#include <future>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "hostile_frames.h"
#include "protocol_codec.h"
#include "raw_socket.h"
#include "test_server.h"

namespace idem {
namespace {

using namespace std::chrono_literals;

using testing::RawSocket;
using ReadResult = RawSocket::ReadResult;
namespace fb = flatbuffers;

class ServerTest : public ::testing::Test {
 protected:
  void StartServer(ServerOptions options = {}) {
    server_ = std::make_unique<testing::TestServer>(options);
  }

  // A raw connection that has done the handshake.
  std::unique_ptr<RawSocket> Greeted() {
    auto socket = std::make_unique<RawSocket>(server_->port());
    EXPECT_TRUE(socket->connected());
    EXPECT_TRUE(socket->Send(EncodeHello(1, "raw")));
    std::vector<uint8_t> body;
    EXPECT_EQ(ReadResult::kFrame, socket->ReadFrame(&body));
    const wire::Frame* frame = VerifyFrame(body.data(), body.size());
    EXPECT_TRUE(frame && frame->body_as_HelloReply());
    return socket;
  }

  // Reads one frame and returns its whole-request error (ok if none); id in *id.
  static Status ReadError(RawSocket& socket, uint64_t* id = nullptr) {
    std::vector<uint8_t> body;
    if (socket.ReadFrame(&body) != ReadResult::kFrame) return Status::IOError("no frame");
    const wire::Frame* frame = VerifyFrame(body.data(), body.size());
    if (frame == nullptr) return Status::IOError("unverifiable response");
    if (id) *id = frame->id();
    return DecodeError(frame->error());
  }

  // The server still works for a new client.
  void ExpectServing() {
    auto client = server_->Connect();
    ASSERT_OK(client);
    Result<OpResult> r = (*client)->Insert(
        {.ns = "ns", .key = "probe-" + std::to_string(probe_++), .status = "NEW"});
    ASSERT_OK(r);
    EXPECT_EQ(Outcome::kInserted, r->outcome);
  }

  std::unique_ptr<testing::TestServer> server_;
  int probe_ = 0;
};

TEST_F(ServerTest, LengthAboveTheLimitGetsAnErrorThenClose) {
  ServerOptions options;
  options.max_frame_bytes = 64 * 1024;
  StartServer(options);
  auto socket = Greeted();
  uint8_t prefix[4] = {0x01, 0x00, 0x01, 0x00};  // 65537
  ASSERT_TRUE(socket->Send(prefix, 4));
  uint64_t id = 99;
  Status error = ReadError(*socket, &id);
  EXPECT_TRUE(error.IsInvalidArgument()) << error.ToString();
  EXPECT_NE(std::string::npos, error.message().find("max_frame_bytes"));
  EXPECT_EQ(0u, id);
  EXPECT_TRUE(socket->WaitClosed());
  ExpectServing();
}

TEST_F(ServerTest, ZeroLengthFrameClosesTheConnection) {
  StartServer();
  auto socket = Greeted();
  uint8_t prefix[4] = {0, 0, 0, 0};
  ASSERT_TRUE(socket->Send(prefix, 4));
  EXPECT_TRUE(ReadError(*socket).IsInvalidArgument());
  EXPECT_TRUE(socket->WaitClosed());
  ExpectServing();
}

TEST_F(ServerTest, FrameFailingVerificationGetsCorruptionThenClose) {
  StartServer();
  auto socket = Greeted();
  ASSERT_TRUE(socket->SendFrame(std::vector<uint8_t>(64, 0xAB)));
  EXPECT_TRUE(ReadError(*socket).IsCorruption());
  EXPECT_TRUE(socket->WaitClosed());
  ExpectServing();
}

TEST_F(ServerTest, TruncatedFrameThenEofClosesQuietly) {
  StartServer();
  auto socket = Greeted();
  FrameBytes frame = EncodeApplyRequest(2, std::vector<Op>{Op::Get({.ns = "ns", .key = "k"})});
  ASSERT_TRUE(socket->Send(frame.data(), frame.size() / 2));
  socket->ShutdownWrite();
  EXPECT_TRUE(socket->WaitClosed());
  ExpectServing();
}

// A client may shut down its sending side as soon as it has sent its requests: it still gets
// every response, then the server closes.
TEST_F(ServerTest, EofAfterWholeRequestsStillGetsTheirResponsesThenClose) {
  StartServer();
  auto socket = Greeted();
  for (uint64_t id = 2; id <= 4; ++id) {
    ASSERT_TRUE(
        socket->Send(EncodeApplyRequest(id, std::vector<Op>{Op::Get({.ns = "ns", .key = "k"})})));
  }
  socket->ShutdownWrite();
  for (uint64_t id = 2; id <= 4; ++id) {
    std::vector<uint8_t> body;
    ASSERT_EQ(ReadResult::kFrame, socket->ReadFrame(&body));
    const wire::Frame* frame = VerifyFrame(body.data(), body.size());
    ASSERT_NE(nullptr, frame);
    EXPECT_EQ(id, frame->id());
    EXPECT_NE(nullptr, frame->body_as_ApplyResponse());
  }
  EXPECT_TRUE(socket->WaitClosed());
  ExpectServing();
}

TEST_F(ServerTest, AFrameSplitIntoSingleBytesIsStillOneRequest) {
  StartServer();
  auto socket = Greeted();
  FrameBytes frame =
      EncodeApplyRequest(2, std::vector<Op>{Op::Insert({.ns = "ns", .key = "k", .status = "NEW"})});
  for (size_t i = 0; i < frame.size(); ++i) ASSERT_TRUE(socket->Send(frame.data() + i, 1));
  uint64_t id = 0;
  ASSERT_OK(ReadError(*socket, &id));
  EXPECT_EQ(2u, id);
}

TEST_F(ServerTest, NoHelloFirstIsRefused) {
  StartServer();
  RawSocket socket(server_->port());
  ASSERT_TRUE(socket.Send(EncodeStatsRequest(1)));
  EXPECT_TRUE(ReadError(socket).IsInvalidArgument());
  EXPECT_TRUE(socket.WaitClosed());
}

TEST_F(ServerTest, UnknownOpTypeLeavesTheConnectionUsable) {
  StartServer();
  auto socket = Greeted();
  fb::FlatBufferBuilder b;
  auto op = wire::CreateOp(b, static_cast<wire::OpType>(42), b.CreateString("ns"),
                           b.CreateVector(std::vector<uint8_t>{'k'}));
  auto request = wire::CreateApplyRequest(b, b.CreateVector(std::vector{op}));
  ASSERT_TRUE(socket->Send(
      FinishFrame(b, wire::CreateFrame(b, 5, wire::Body::ApplyRequest, request.Union()))));
  std::vector<uint8_t> body;
  ASSERT_EQ(ReadResult::kFrame, socket->ReadFrame(&body));
  const wire::Frame* frame = VerifyFrame(body.data(), body.size());
  ASSERT_NE(nullptr, frame);
  ASSERT_NE(nullptr, frame->body_as_ApplyResponse());
  Result<OpResult> r = DecodeOpResult(*frame->body_as_ApplyResponse()->results()->Get(0));
  EXPECT_EQ(Status::Code::kNotSupported, r.status().code());
  // Same connection, next request.
  ASSERT_TRUE(
      socket->Send(EncodeApplyRequest(6, std::vector<Op>{Op::Get({.ns = "ns", .key = "k"})})));
  uint64_t id = 0;
  ASSERT_OK(ReadError(*socket, &id));
  EXPECT_EQ(6u, id);
}

TEST_F(ServerTest, OversizedKeyIsAnOpErrorAndTheClientStaysConnected) {
  StartServer();
  auto client = server_->Connect();
  ASSERT_OK(client);
  Result<OpResult> r =
      (*client)->Insert({.ns = "ns", .key = std::string(100'000, 'k'), .status = "NEW"});
  EXPECT_TRUE(r.status().IsInvalidArgument()) << r.status().ToString();
  ASSERT_OK((*client)->Insert({.ns = "ns", .key = "k", .status = "NEW"}));
}

TEST_F(ServerTest, RequestFrameAboveTheServerLimitFailsLocallyInTheClient) {
  ServerOptions options;
  options.max_frame_bytes = 64 * 1024;
  StartServer(options);
  auto client = server_->Connect();
  ASSERT_OK(client);
  EXPECT_EQ(64u * 1024, (*client)->server_info().max_frame_bytes);
  Result<OpResult> r = (*client)->Insert(
      {.ns = "ns", .key = "k", .status = "NEW", .payload = std::string(100'000, 'p')});
  EXPECT_TRUE(r.status().IsInvalidArgument()) << r.status().ToString();
  ASSERT_OK((*client)->Insert({.ns = "ns", .key = "k", .status = "NEW"}));
}

// Thousands of random frames (seeded, so a failure replays): mutations of valid requests and
// pure noise, each with a correct length prefix. Every frame gets exactly one answer, either a
// response or an error frame followed by a close; then the server still serves.
TEST_F(ServerTest, RandomFramesNeverBreakTheServer) {
  StartServer();
  std::mt19937 rng(20261129);
  std::vector<FrameBytes> seeds;
  seeds.push_back(EncodeApplyRequest(
      3,
      std::vector<Op>{Op::Insert({.ns = "ns",
                                  .key = "k",
                                  .status = "NEW",
                                  .payload = "p",
                                  .fingerprint = "f",
                                  .ttl = 1s}),
                      Op::CompareAndSet({.ns = "ns",
                                         .key = "k",
                                         .condition = {.status_in = {"A", "B"}, .version = 1},
                                         .update = {.status = "X", .payload = "y", .ttl = 5ms}})}));
  seeds.push_back(EncodeApplyRequest(
      4, std::vector<Op>{Op::Delete({.ns = "ns", .key = "k", .condition = {.fence = 3}}),
                         Op::Get({.ns = "ns", .key = "k"})}));
  seeds.push_back(EncodeStatsRequest(5));
  seeds.push_back(EncodeHello(6, "again"));

  auto socket = Greeted();
  int closes = 0, answers = 0;
  for (int i = 0; i < 3000; ++i) {
    std::vector<uint8_t> body;
    if (i % 10 == 0) {  // noise
      body.resize(1 + rng() % 200);
      for (auto& byte : body) byte = static_cast<uint8_t>(rng());
    } else {  // a valid frame with a few bytes flipped
      const FrameBytes& seed = seeds[rng() % seeds.size()];
      body.assign(seed.data() + 4, seed.data() + seed.size());
      for (int flips = 1 + rng() % 4; flips > 0; --flips) {
        body[rng() % body.size()] ^= static_cast<uint8_t>(1 + rng() % 255);
      }
    }
    ASSERT_TRUE(socket->SendFrame(body));
    std::vector<uint8_t> reply;
    ReadResult r = socket->ReadFrame(&reply);
    ASSERT_NE(ReadResult::kTimedOut, r) << "frame " << i << " got no answer";
    const wire::Frame* frame =
        r == ReadResult::kFrame ? VerifyFrame(reply.data(), reply.size()) : nullptr;
    if (r == ReadResult::kFrame) {
      ASSERT_NE(nullptr, frame) << "server sent an unverifiable frame";
    }
    if (frame && frame->id() != 0) {
      ++answers;
      continue;
    }
    // Connection-level error: the server closes; carry on with a new connection.
    EXPECT_TRUE(r == ReadResult::kClosed || socket->WaitClosed());
    ++closes;
    socket = Greeted();
  }
  std::printf("random frames: %d answered, %d closed the connection\n", answers, closes);
  EXPECT_GT(answers, 0);
  EXPECT_GT(closes, 0);
  ExpectServing();
}

TEST_F(ServerTest, IdleClientsAreDisconnected) {
  ServerOptions options;
  options.idle_timeout_ms = 200;
  StartServer(options);
  auto socket = Greeted();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(ReadError(*socket).IsTimedOut());  // the server says why before closing
  EXPECT_TRUE(socket->WaitClosed());
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(150));
  ExpectServing();
}

// A client that half-closes and then stops reading leaves the server draining with a write that
// never completes: the idle timeout still ends it (the error frame is queued behind the stuck
// write, so the linger deadline closes it), and its slot under max_connections comes free.
TEST_F(ServerTest, AHalfClosedClientThatStopsReadingIsDisconnectedWhenIdle) {
  ServerOptions options;
  options.idle_timeout_ms = 200;
  options.max_connections = 1;
  StartServer(options);
  ASSERT_OK(server_->engine().Insert(
      {.ns = "ns", .key = "big", .status = "NEW", .payload = std::string(1 << 20, 'p')}));
  auto socket = Greeted();
  socket->ShrinkReceiveBuffer();
  // 6 MiB of replies: more than the kernel's buffers hold, less than max_queued_reply_bytes, so
  // the server reads every request and then the EOF.
  for (uint64_t id = 2; id < 8; ++id) {
    ASSERT_TRUE(
        socket->Send(EncodeApplyRequest(id, std::vector<Op>{Op::Get({.ns = "ns", .key = "big"})})));
  }
  socket->ShutdownWrite();
  // The only connection slot is the raw socket's until the server closes it.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  Status served = Status::IOError("not tried");
  while (!served.ok() && std::chrono::steady_clock::now() < deadline) {
    auto client = server_->Connect();
    served = client.ok() ? (*client)->Insert({.ns = "ns", .key = "after", .status = "NEW"}).status()
                         : client.status();
  }
  ASSERT_OK(served);
  EXPECT_TRUE(socket->WaitClosed());
}

TEST_F(ServerTest, ASlowlyTrickledFrameIsIdle) {
  ServerOptions options;
  options.idle_timeout_ms = 200;
  StartServer(options);
  auto socket = Greeted();
  FrameBytes frame = EncodeApplyRequest(2, std::vector<Op>{Op::Get({.ns = "ns", .key = "k"})});
  ASSERT_TRUE(socket->Send(frame.data(), 6));  // and never the rest
  EXPECT_TRUE(ReadError(*socket).IsTimedOut());
  EXPECT_TRUE(socket->WaitClosed());
}

TEST_F(ServerTest, ConnectionsPastTheLimitGetBusy) {
  ServerOptions options;
  options.max_connections = 2;
  StartServer(options);
  auto a = server_->Connect();
  auto b = server_->Connect();
  ASSERT_OK(a);
  ASSERT_OK(b);
  RawSocket third(server_->port());
  uint64_t id = 99;
  EXPECT_TRUE(ReadError(third, &id).IsBusy());
  EXPECT_EQ(0u, id);
  EXPECT_TRUE(third.WaitClosed());
  auto refused = server_->Connect();
  EXPECT_TRUE(refused.status().IsBusy()) << refused.status().ToString();
  // The two admitted clients are unaffected.
  ASSERT_OK((*a)->Insert({.ns = "ns", .key = "a", .status = "NEW"}));
  ASSERT_OK((*b)->Insert({.ns = "ns", .key = "b", .status = "NEW"}));
  // A slot frees when a client leaves (the server notices asynchronously: poll with a deadline).
  a->reset();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  Result<std::unique_ptr<Client>> again = Status::Busy("not tried");
  while (std::chrono::steady_clock::now() < deadline) {
    again = server_->Connect();
    if (again.ok()) break;
  }
  ASSERT_OK(again);
  ASSERT_OK((*again)->Get({.ns = "ns", .key = "a"}));
}

// Refusals hold descriptors until the refused peer has read BUSY, so only
// max_refusing_connections are in progress at once; the rest wait in the listen queue and are
// refused in turn, each still with BUSY.
class RefusalTest : public ServerTest, public ::testing::WithParamInterface<int> {};

TEST_P(RefusalTest, RefusalsPastTheirCapWaitInTheListenQueueAndStillGetBusy) {
  ServerOptions options;
  options.io_threads = GetParam();
  options.max_connections = 1;
  options.max_refusing_connections = 2;
  StartServer(options);
  auto served = server_->Connect();
  ASSERT_OK(served);
  std::vector<std::unique_ptr<RawSocket>> refused;
  for (int i = 0; i < 6; ++i) refused.push_back(std::make_unique<RawSocket>(server_->port()));
  // Two are answered at once; the third waits until one of them has gone (a refused peer that
  // does not close is waited for up to Connection::kLingerMs, 1 s).
  std::vector<uint8_t> body;
  EXPECT_TRUE(ReadError(*refused[0]).IsBusy());
  EXPECT_TRUE(ReadError(*refused[1]).IsBusy());
  EXPECT_EQ(ReadResult::kTimedOut, refused[2]->ReadFrame(&body, std::chrono::milliseconds(100)));
  for (int i = 0; i < 6; ++i) {
    if (i >= 2) {
      EXPECT_TRUE(ReadError(*refused[i]).IsBusy()) << "connection " << i;
    }
    EXPECT_TRUE(refused[i]->WaitClosed());
    refused[i].reset();  // frees its refusal slot
  }
  ASSERT_OK((*served)->Insert({.ns = "ns", .key = "still", .status = "NEW"}));
}

INSTANTIATE_TEST_SUITE_P(IoThreads, RefusalTest, ::testing::Values(1, 3));

TEST_F(ServerTest, ListenBindsBeforeThereIsAStoreAndServeStartsServing) {
  ServerOptions options;
  options.port = 0;
  options.log = [](const LogRecord&) {};
  auto server = Server::Listen(options);
  ASSERT_OK(server);
  // The port is taken already: a second server cannot have it.
  options.port = (*server)->port();
  auto second = Server::Listen(options);
  ASSERT_FALSE(second.ok());
  EXPECT_TRUE(second.status().IsIOError()) << second.status().ToString();
  EXPECT_NE(std::string::npos, second.status().message().find(std::to_string(options.port)));

  // A client that connects now waits in the listen queue until there is a store to serve.
  std::future<Result<std::unique_ptr<Client>>> early = std::async(std::launch::async, [&] {
    ClientOptions client_options;
    client_options.address = "127.0.0.1:" + std::to_string(options.port);
    return Client::Connect(client_options);
  });
  testing::TempDir dir;
  auto engine = ServingEngine::Open(dir.Sub("db"),
                                    testing::TestEngineOptions(std::make_shared<ManualClock>()));
  ASSERT_OK(engine);
  ASSERT_OK((*server)->Serve(engine->get()));
  EXPECT_TRUE((*server)->Serve(engine->get()).IsInvalidArgument()) << "served twice";
  Result<std::unique_ptr<Client>> client = early.get();
  ASSERT_OK(client);
  ASSERT_OK((*client)->Insert({.ns = "ns", .key = "k", .status = "NEW"}));
  client->reset();
  (*server)->Stop();
}

TEST_F(ServerTest, AServerThatNeverServedStopsAndFreesItsPort) {
  ServerOptions options;
  options.port = 0;
  auto server = Server::Listen(options);
  ASSERT_OK(server);
  options.port = (*server)->port();
  server->reset();  // Stop() without Serve()
  ASSERT_OK(Server::Listen(options));
}

// A Begin waiting on an attempt in progress holds no engine thread: with a single engine
// thread, or with the event loop applying, other clients' requests go through while it waits.
class WaitingBeginTest : public ServerTest, public ::testing::WithParamInterface<int> {};

TEST_P(WaitingBeginTest, AWaitingBeginDoesNotStallOtherRequests) {
  ServerOptions options;
  options.engine_threads = GetParam();
  StartServer(options);
  auto a = server_->Connect();
  auto b = server_->Connect();
  ASSERT_OK(a);
  ASSERT_OK(b);
  Result<OpResult> started = (*a)->Execute(Op::Begin({.ns = "ns", .key = "k"}));
  ASSERT_OK(started);
  std::promise<Result<OpResult>> waited;
  std::vector<Op> wait_op = {Op::Begin({.ns = "ns", .key = "k", .wait = 1min})};
  (*a)->ApplyAsync(wait_op, [&](Status s, std::vector<Result<OpResult>> r) {
    waited.set_value(s.ok() ? std::move(r[0]) : Result<OpResult>(s));
  });
  auto future = waited.get_future();
  for (int i = 0; i < 50; ++i)
    ASSERT_OK((*b)->Insert({.ns = "ns", .key = "other-" + std::to_string(i), .status = "NEW"}));
  EXPECT_EQ(std::future_status::timeout, future.wait_for(std::chrono::milliseconds(0)));
  ASSERT_OK((*b)->Execute(
      Op::Complete({.ns = "ns", .key = "k", .fence = started->record->fence, .response = "done"})));
  ASSERT_EQ(std::future_status::ready, future.wait_for(std::chrono::seconds(30)));
  Result<OpResult> r = future.get();
  ASSERT_OK(r);
  EXPECT_EQ(Outcome::kCompleted, r->outcome);
  EXPECT_EQ("done", r->record->payload);
}

INSTANTIATE_TEST_SUITE_P(EngineThreads, WaitingBeginTest, ::testing::Values(0, 1));

// Stop() does not wait out a long Begin wait: the waiter gets the current state at once.
TEST_F(ServerTest, StopAnswersWaitingBegins) {
  StartServer();
  auto client = server_->Connect();
  ASSERT_OK(client);
  ASSERT_OK((*client)->Execute(Op::Begin({.ns = "ns", .key = "k"})));
  std::promise<Result<OpResult>> waited;
  std::vector<Op> wait_op = {Op::Begin({.ns = "ns", .key = "k", .wait = 1min})};
  (*client)->ApplyAsync(wait_op, [&](Status s, std::vector<Result<OpResult>> r) {
    waited.set_value(s.ok() ? std::move(r[0]) : Result<OpResult>(s));
  });
  // Make sure the server has the request before stopping (a Stats round trip orders after it).
  ASSERT_OK((*client)->Stats());
  const auto start = std::chrono::steady_clock::now();
  server_->server().Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(4));
  auto future = waited.get_future();
  ASSERT_EQ(std::future_status::ready, future.wait_for(std::chrono::seconds(10)));
  Result<OpResult> r = future.get();
  ASSERT_OK(r);
  EXPECT_EQ(Outcome::kInProgress, r->outcome);
}

TEST_F(ServerTest, NonLoopbackNeedsAllowRemote) {
  testing::TempDir dir;
  auto engine = ServingEngine::Open(dir.Sub("db"),
                                    testing::TestEngineOptions(std::make_shared<ManualClock>()));
  ASSERT_OK(engine);
  ServerOptions options;
  options.host = "0.0.0.0";
  options.port = 0;
  auto server = Server::Start(engine->get(), options);
  EXPECT_TRUE(server.status().IsInvalidArgument()) << server.status().ToString();
  options.host = "not-an-ip";
  EXPECT_TRUE(Server::Start(engine->get(), options).status().IsInvalidArgument());
}

// A frame that names a body type but carries no body took the server down (a null
// dereference in the handler). Now it is an error on that request; the connection and every
// other client carry on.
TEST_F(ServerTest, ApplyRequestWithoutItsBodyIsAnErrorAndTheServerCarriesOn) {
  StartServer();
  auto other = server_->Connect();
  ASSERT_OK(other);
  auto socket = Greeted();
  ASSERT_TRUE(socket->SendFrame(testing::FrameWithoutBody(2, wire::Body::ApplyRequest)));
  uint64_t id = 0;
  Status error = ReadError(*socket, &id);
  EXPECT_TRUE(error.IsInvalidArgument()) << error.ToString();
  EXPECT_EQ(2u, id);
  ASSERT_TRUE(
      socket->Send(EncodeApplyRequest(3, std::vector<Op>{Op::Get({.ns = "ns", .key = "k"})})));
  ASSERT_OK(ReadError(*socket, &id));
  EXPECT_EQ(3u, id);
  ASSERT_OK((*other)->Insert({.ns = "ns", .key = "other", .status = "NEW"}));
  ExpectServing();
}

// A 4 MB frame of 10,000 references to one op with 1,000,000 statuses held the event loop for
// 11-25 s, for every client. Now it is refused quickly and other clients are served meanwhile.
TEST_F(ServerTest, AFrameOfSharedObjectsDoesNotStallTheServer) {
  StartServer();
  auto socket = Greeted();
  ASSERT_TRUE(socket->SendFrame(testing::SharedOpFrame(2, 10'000, 1'000'000)));
  EXPECT_TRUE(ReadError(*socket).IsCorruption());
  EXPECT_TRUE(socket->WaitClosed());
  ExpectServing();
}

// A client that asks for large records and stops reading: the server reads no more of its
// requests once max_queued_reply_bytes of replies wait for it (TCP backpressure), instead of
// building every reply (two unread requests of 1,000 Gets held 3.8 GB).
TEST_F(ServerTest, UnreadRepliesStopTheServerReadingThatConnection) {
  StartServer();  // defaults: 4 MiB replies, 8 MiB of them queued per connection
  auto client = server_->Connect();
  ASSERT_OK(client);
  const std::string payload(1 << 20, 'p');
  ASSERT_OK((*client)->Insert({.ns = "ns", .key = "big", .status = "NEW", .payload = payload}));
  auto ops = [&] { return server_->engine().Stats()->ops; };
  auto socket = Greeted();
  socket->ShrinkReceiveBuffer();
  const uint64_t before = ops();
  constexpr int kRequests = 40;  // 40 MiB of replies
  int applied = 0;
  for (int i = 0; i < kRequests; ++i) {
    ASSERT_TRUE(socket->Send(
        EncodeApplyRequest(10 + i, std::vector<Op>{Op::Get({.ns = "ns", .key = "big"})})));
    // Wait until the server has applied it; a server that stopped reading never does.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
    while (ops() - before < uint64_t(i) + 1 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
    applied = static_cast<int>(ops() - before);
    if (applied <= i) break;
  }
  std::printf("requests applied before the server stopped reading: %d of %d\n", applied, kRequests);
  // The kernel's socket buffers take a few MiB of replies (the server's send buffer grows up to
  // tcp_wmem's maximum, 4 MiB by default); the server queues 8 MiB more, and the request in
  // flight when it stops adds one.
  long wmem_max = 4 << 20;
  if (FILE* f = std::fopen("/proc/sys/net/ipv4/tcp_wmem", "r")) {
    long low = 0, initial = 0;
    if (std::fscanf(f, "%ld %ld %ld", &low, &initial, &wmem_max) != 3) wmem_max = 4 << 20;
    std::fclose(f);
  }
  EXPECT_LE(applied, static_cast<int>(wmem_max >> 20) + 8 + 4);
  EXPECT_LT(applied, kRequests);
  // Reading resumes as the client reads: every request sent is answered, in order.
  int sent = std::min(applied + 1, kRequests);
  for (int i = 0; i < sent; ++i) {
    std::vector<uint8_t> body;
    ASSERT_EQ(ReadResult::kFrame, socket->ReadFrame(&body));
    const wire::Frame* frame = VerifyFrame(body.data(), body.size());
    ASSERT_NE(nullptr, frame);
    EXPECT_EQ(10u + i, frame->id());
    ASSERT_NE(nullptr, frame->body_as_ApplyResponse());
  }
  ExpectServing();
}

}  // namespace
}  // namespace idem
