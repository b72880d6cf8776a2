// The request handler without sockets: frames in, frames out, against a real Engine.
#include "request_handler.h"

#include <chrono>
#include <filesystem>

#include <gtest/gtest.h>

#include "hostile_frames.h"
#include "idem/serving.h"
#include "support/temp_dir.h"
#include "test_server.h"

namespace idem {
namespace {

namespace fb = flatbuffers;

class RequestHandlerTest : public ::testing::Test {
 protected:
  RequestHandlerTest() {
    EngineOptions options = testing::TestEngineOptions(clock_);
    options.limits.max_batch_ops = 8;
    engine_ = std::move(*ServingEngine::Open(dir_.Sub("db"), options));
    queue_ = std::make_unique<CommitQueue>(engine_.get(), 8, /*engine_threads=*/0);
    ServerInfo info;
    info.server_version = "test";
    info.max_frame_bytes = 1 << 20;
    info.limits = engine_->options().limits;
    handler_ = std::make_unique<RequestHandler>(engine_.get(), queue_.get(), nullptr, info);
  }

  // Feeds one whole frame (length prefix included, as encoded) and returns the handler's verdict;
  // the reply's body lands in reply_.
  Status Handle(const FrameBytes& frame) {
    return HandleBody(std::vector<uint8_t>(frame.data() + 4, frame.data() + frame.size()));
  }
  Status HandleBody(std::vector<uint8_t> body) {
    reply_.clear();
    Status s = handler_->Handle(std::move(body), &session_, [this](FrameBytes f) {
      reply_.assign(f.data() + 4, f.data() + f.size());
    });
    EXPECT_FALSE(reply_.empty()) << "every frame gets a reply";
    return s;
  }
  const wire::Frame* Reply() {
    const wire::Frame* frame = VerifyFrame(reply_.data(), reply_.size());
    EXPECT_NE(nullptr, frame);
    return frame;
  }
  void Greet() { ASSERT_OK(Handle(EncodeHello(1, "test"))); }
  // "INSERTED", "NOT_SUPPORTED", ... for each result of the ApplyResponse reply.
  std::vector<std::string> Outcomes() {
    std::vector<std::string> out;
    const wire::ApplyResponse* response = Reply()->body_as_ApplyResponse();
    EXPECT_NE(nullptr, response);
    if (response == nullptr) return out;
    for (const wire::OpResult* r : *response->results()) {
      Result<OpResult> decoded = DecodeOpResult(*r);
      out.emplace_back(decoded.ok() ? OutcomeName(decoded->outcome)
                                    : CodeName(decoded.status().code()));
    }
    return out;
  }
  Status ReplyError() { return DecodeError(Reply()->error()); }

  testing::TempDir dir_;
  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>();
  std::unique_ptr<ServingEngine> engine_;
  std::unique_ptr<CommitQueue> queue_;
  std::unique_ptr<RequestHandler> handler_;
  Session session_;
  std::vector<uint8_t> reply_;
};

TEST_F(RequestHandlerTest, HelloIsAnsweredWithLimits) {
  ASSERT_OK(Handle(EncodeHello(5, "unit-test")));
  EXPECT_EQ(5u, Reply()->id());
  const wire::HelloReply* hello = Reply()->body_as_HelloReply();
  ASSERT_NE(nullptr, hello);
  EXPECT_EQ(kProtocolVersion, hello->protocol_version());
  EXPECT_EQ(8u, hello->max_batch_ops());
  EXPECT_EQ(1u << 20, hello->max_frame_bytes());
  EXPECT_EQ("unit-test", session_.client_name);
}

TEST_F(RequestHandlerTest, TheFirstFrameMustBeHello) {
  Status s = Handle(EncodeApplyRequest(1, std::vector<Op>{Op::Get({.ns = "ns", .key = "k"})}));
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_EQ(1u, Reply()->id());  // the offending frame's id, not 0 (docs/protocol.md §2)
  EXPECT_TRUE(ReplyError().IsInvalidArgument());
}

// A Hello from a client speaking protocol `version`.
std::vector<uint8_t> HelloBody(uint32_t version, std::string_view client_name) {
  fb::FlatBufferBuilder b;
  auto hello = wire::CreateHello(b, version, b.CreateString(client_name));
  b.Finish(wire::CreateFrame(b, 1, wire::Body::Hello, hello.Union()));
  return std::vector<uint8_t>(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
}

TEST_F(RequestHandlerTest, AnotherProtocolVersionIsRefused) {
  Status s = HandleBody(HelloBody(99, "future"));
  EXPECT_EQ(Status::Code::kNotSupported, s.code());
  EXPECT_EQ(1u, Reply()->id());  // the Hello's id, not 0 (docs/protocol.md §2)
  EXPECT_EQ(Status::Code::kNotSupported, ReplyError().code());
}

// Version 1 sent 0 for "the namespace's default" lease, TTL and wait; version 2 refuses a zero
// lease or TTL. A version 1 client is refused at Hello rather than misread.
TEST_F(RequestHandlerTest, AVersion1ClientIsRefusedAtHello) {
  Status s = HandleBody(HelloBody(1, "idemctl 0.1.0"));
  EXPECT_EQ(Status::Code::kNotSupported, s.code());
  EXPECT_EQ("protocol version 1 not supported; this server speaks 2", ReplyError().message());
}

TEST_F(RequestHandlerTest, ApplyRunsTheOpsInOrder) {
  Greet();
  std::vector<Op> ops = {Op::Insert({.ns = "ns", .key = "k", .status = "NEW"}),
                         Op::Insert({.ns = "ns", .key = "k", .status = "NEW"}),
                         Op::Get({.ns = "ns", .key = "k"}), Op::Delete({.ns = "ns", .key = "k"}),
                         Op::Get({.ns = "ns", .key = "k"})};
  ASSERT_OK(Handle(EncodeApplyRequest(7, ops)));
  EXPECT_EQ(7u, Reply()->id());
  EXPECT_EQ((std::vector<std::string>{"INSERTED", "EXISTS", "FOUND", "DELETED", "NOT_FOUND"}),
            Outcomes());
}

TEST_F(RequestHandlerTest, UnknownOpTypeFailsThatOpOnly) {
  Greet();
  fb::FlatBufferBuilder b;
  auto bad = wire::CreateOp(b, static_cast<wire::OpType>(200), b.CreateString("ns"),
                            b.CreateVector(std::vector<uint8_t>{'k'}));
  auto good = wire::CreateOp(b, wire::OpType::Insert, b.CreateString("ns"),
                             b.CreateVector(std::vector<uint8_t>{'k'}), b.CreateString("NEW"));
  auto request = wire::CreateApplyRequest(b, b.CreateVector(std::vector{bad, good, bad}));
  b.Finish(wire::CreateFrame(b, 3, wire::Body::ApplyRequest, request.Union()));
  ASSERT_OK(
      HandleBody(std::vector<uint8_t>(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize())));
  EXPECT_EQ((std::vector<std::string>{"NOT_SUPPORTED", "INSERTED", "NOT_SUPPORTED"}), Outcomes());
}

TEST_F(RequestHandlerTest, TooManyOpsFailTheRequestButNotTheConnection) {
  Greet();
  std::vector<Op> ops(9, Op::Get({.ns = "ns", .key = "k"}));
  ASSERT_OK(Handle(EncodeApplyRequest(4, ops)));
  EXPECT_EQ(4u, Reply()->id());
  EXPECT_TRUE(ReplyError().IsInvalidArgument());
  ASSERT_OK(Handle(EncodeApplyRequest(5, std::vector<Op>(8, Op::Get({.ns = "ns", .key = "k"})))));
  EXPECT_EQ(8u, Outcomes().size());
}

TEST_F(RequestHandlerTest, InvalidOpsAreErrorsOfTheirOwn) {
  Greet();
  std::string long_key(600, 'k');
  std::vector<Op> ops = {Op::Insert({.ns = "ns", .key = long_key, .status = "NEW"}),
                         Op::Insert({.ns = "bad ns!", .key = "k", .status = "NEW"}),
                         Op::Insert({.ns = "ns", .key = "k", .status = "NEW"})};
  ASSERT_OK(Handle(EncodeApplyRequest(2, ops)));
  EXPECT_EQ((std::vector<std::string>{"INVALID_ARGUMENT", "INVALID_ARGUMENT", "INSERTED"}),
            Outcomes());
}

TEST_F(RequestHandlerTest, GarbageFailsVerificationAndClosesTheConnection) {
  Greet();
  Status s = HandleBody({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_EQ(0u, Reply()->id());
  EXPECT_TRUE(ReplyError().IsCorruption());
}

TEST_F(RequestHandlerTest, RequestIdZeroIsReserved) {
  Greet();
  Status s = Handle(EncodeStatsRequest(0));
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();  // and the connection closes
  EXPECT_EQ(0u, Reply()->id());
  EXPECT_TRUE(ReplyError().IsInvalidArgument());
}

TEST_F(RequestHandlerTest, UnknownRequestTypeIsNotSupported) {
  Greet();
  ServerInfo info;
  ASSERT_OK(Handle(EncodeHelloReply(9, info)));  // a response type, sent by a "client"
  EXPECT_EQ(9u, Reply()->id());
  EXPECT_EQ(Status::Code::kNotSupported, ReplyError().code());
}

TEST_F(RequestHandlerTest, Stats) {
  Greet();
  ASSERT_OK(Handle(EncodeApplyRequest(
      2, std::vector<Op>{Op::Insert({.ns = "ns", .key = "k", .status = "NEW"})})));
  ASSERT_OK(Handle(EncodeStatsRequest(3)));
  const wire::StatsResponse* stats = Reply()->body_as_StatsResponse();
  ASSERT_NE(nullptr, stats);
  EXPECT_EQ(1u, stats->ops());
  EXPECT_EQ("async", stats->durability()->str());
}

// A union's value is optional in FlatBuffers: a frame can say "ApplyRequest" and carry none, and
// the Verifier accepts it. Every body type without its body is a clear error, never a crash.
TEST_F(RequestHandlerTest, ABodyTypeWithoutItsBodyIsAnError) {
  Greet();
  for (uint8_t type = 1; type <= uint8_t(wire::Body::MAX); ++type) {
    SCOPED_TRACE("body type " + std::to_string(type));
    Status s = HandleBody(testing::FrameWithoutBody(10 + type, wire::Body(type)));
    EXPECT_TRUE(s.ok()) << s.ToString();  // the connection stays usable
    EXPECT_EQ(10u + type, Reply()->id());
    Status error = ReplyError();
    EXPECT_TRUE(error.IsInvalidArgument()) << error.ToString();
    EXPECT_NE(std::string::npos, error.message().find("no body")) << error.ToString();
  }
  ASSERT_OK(Handle(EncodeApplyRequest(
      30, std::vector<Op>{Op::Insert({.ns = "ns", .key = "k", .status = "NEW"})})));
  EXPECT_EQ((std::vector<std::string>{"INSERTED"}), Outcomes());
}

// Backups themselves are tested against a real server (idemctl_backup_test): their reply comes
// from a thread of their own.
TEST_F(RequestHandlerTest, ABackupRequestToAHandlerWithoutBackupsIsNotSupported) {
  Greet();
  ASSERT_OK(Handle(EncodeBackupRequest(2, dir_.Sub("backup"))));
  EXPECT_EQ(2u, Reply()->id());
  EXPECT_EQ(Status::Code::kNotSupported, ReplyError().code()) << ReplyError().ToString();
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub("backup")));
}

// The directory a remote client names is written by the server: it must be absolute (the
// server's working directory is not the client's) and at most 4096 bytes; refused before any
// thread starts, so the reply comes at once.
TEST_F(RequestHandlerTest, ABackupDirectoryMustBeAnAbsolutePathOfBoundedLength) {
  handler_ = std::make_unique<RequestHandler>(engine_.get(), queue_.get(), nullptr, ServerInfo{},
                                              nullptr, engine_.get());
  Greet();
  ASSERT_OK(Handle(EncodeBackupRequest(2, "backups/nightly")));
  EXPECT_EQ(Status::Code::kInvalidArgument, ReplyError().code()) << ReplyError().ToString();
  EXPECT_NE(std::string::npos, ReplyError().message().find("absolute")) << ReplyError().ToString();
  ASSERT_OK(Handle(EncodeBackupRequest(3, "")));
  EXPECT_EQ(Status::Code::kInvalidArgument, ReplyError().code()) << ReplyError().ToString();
  ASSERT_OK(Handle(EncodeBackupRequest(4, "/" + std::string(4096, 'a'))));
  EXPECT_EQ(Status::Code::kInvalidArgument, ReplyError().code()) << ReplyError().ToString();
  EXPECT_NE(std::string::npos, ReplyError().message().find("4096")) << ReplyError().ToString();
  EXPECT_FALSE(std::filesystem::exists("backups"));
}

TEST_F(RequestHandlerTest, AHelloWithoutItsBodyIsRefused) {
  Status s = HandleBody(testing::FrameWithoutBody(1, wire::Body::Hello));
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_TRUE(ReplyError().IsInvalidArgument());
  EXPECT_FALSE(session_.greeted);
}

// 10,000 references to one op whose condition lists 1,000,000 statuses: 4 MB on the wire, 10^10
// strings for a Verifier that checks a shared object once per reference (11-25 s before). A
// frame without shared objects never lists more statuses than it has 4-byte offsets, so this one
// fails verification, after work proportional to its size.
TEST_F(RequestHandlerTest, SharedObjectsCannotMultiplyTheVerifiersWork) {
  Greet();
  std::vector<uint8_t> frame = testing::SharedOpFrame(2, 10'000, 1'000'000);
  EXPECT_LT(frame.size(), 4'100'000u);
  const auto start = std::chrono::steady_clock::now();
  Status s = HandleBody(std::move(frame));
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_TRUE(ReplyError().IsCorruption());
  EXPECT_LT(elapsed, std::chrono::seconds(2));  // ~10 ms; generous for sanitizer builds
}

// 100 references to that op verified in ~1 s and decoded into 100 vectors of 1,000,000 views
// (1.6 GB) before the engine refused them for max_status_set.
TEST_F(RequestHandlerTest, AValidFrameSharingOneOpIsRefusedBeforeDecoding) {
  Greet();
  Status s = HandleBody(testing::SharedOpFrame(2, 8, 1'000'000));
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_TRUE(ReplyError().IsCorruption());
}

// Without sharing, one op may list as many statuses as the frame holds offsets: that op, and
// only it, fails for max_status_set (as 17 statuses do), and no vector is sized from the count.
TEST_F(RequestHandlerTest, AMillionStatusesInOneOpAreThatOpsError) {
  Greet();
  fb::FlatBufferBuilder b;
  auto s = b.CreateString("S");
  auto big = wire::CreateCondition(b, b.CreateVector(std::vector(1'000'000, s)));
  auto bad = wire::CreateOp(b, wire::OpType::CompareAndSet, b.CreateString("ns"),
                            b.CreateVector(std::vector<uint8_t>{'k'}), 0, 0, 0, 0, big);
  auto good = wire::CreateOp(b, wire::OpType::Insert, b.CreateString("ns"),
                             b.CreateVector(std::vector<uint8_t>{'k'}), b.CreateString("NEW"));
  auto request = wire::CreateApplyRequest(b, b.CreateVector(std::vector{bad, good}));
  b.Finish(wire::CreateFrame(b, 3, wire::Body::ApplyRequest, request.Union()));
  ASSERT_OK(HandleBody(testing::Body(b)));
  EXPECT_EQ((std::vector<std::string>{"INVALID_ARGUMENT", "INSERTED"}), Outcomes());
  Result<OpResult> first = DecodeOpResult(*Reply()->body_as_ApplyResponse()->results()->Get(0));
  EXPECT_NE(std::string::npos, first.status().message().find("max_status_set"))
      << first.status().ToString();
}

// Eight Inserts pointing at one 64 KiB payload: a 66 KB frame asking for 512 KiB of writes (with
// max_batch_ops ops, 10,000 times the frame). Payloads are never shared by an encoder: refused.
TEST_F(RequestHandlerTest, OpsSharingOnePayloadAreRefused) {
  Greet();
  ASSERT_OK(HandleBody(testing::SharedPayloadFrame(4, 8, 64 * 1024)));
  EXPECT_EQ(4u, Reply()->id());
  Status error = ReplyError();
  EXPECT_TRUE(error.IsInvalidArgument()) << error.ToString();
  EXPECT_NE(std::string::npos, error.message().find("payload")) << error.ToString();
  ASSERT_OK(
      Handle(EncodeApplyRequest(5, std::vector<Op>{Op::Get({.ns = "ns", .key = "shared-0"})})));
  EXPECT_EQ((std::vector<std::string>{"NOT_FOUND"}), Outcomes());
}

}  // namespace
}  // namespace idem
