// The wire encoding of ops: what a client writes is what the server decodes, and a duration that
// is not given stays distinct from a zero one (a zero is refused by the engine, never "the
// default").
#include "protocol_codec.h"

#include <chrono>
#include <vector>

#include <gtest/gtest.h>

namespace idem {
namespace {

using namespace std::chrono_literals;

// `op` encoded in an ApplyRequest frame and decoded as the server does. The decoded op's strings
// borrow from the frame, so the two are kept together.
struct RoundTripped {
  FrameBytes frame;
  Op op;
};
RoundTripped RoundTrip(const Op& op) {
  RoundTripped out{EncodeApplyRequest(1, std::vector<Op>{op}), Op{}};
  const size_t prefix = 4;  // the frame's length
  const wire::Frame* frame = VerifyFrame(out.frame.data() + prefix, out.frame.size() - prefix);
  EXPECT_NE(nullptr, frame);
  if (frame == nullptr) return out;
  Result<Op> decoded = DecodeOp(*frame->body_as_ApplyRequest()->ops()->Get(0), Limits());
  EXPECT_TRUE(decoded.ok()) << decoded.status().ToString();
  if (decoded.ok()) out.op = *decoded;
  return out;
}

TEST(ProtocolCodec, DurationsNotGivenStayNotGiven) {
  const RoundTripped begin = RoundTrip(Op::Begin({.ns = "pay", .key = "k"}));
  const Op& op = begin.op;
  EXPECT_EQ(std::nullopt, op.lease);
  EXPECT_EQ(std::nullopt, op.wait);
  EXPECT_EQ(std::nullopt, op.ttl);
  EXPECT_EQ(std::nullopt, RoundTrip(Op::CompareAndSet({.ns = "pay", .key = "k"})).op.update.ttl);
}

TEST(ProtocolCodec, ZeroDurationsStayZero) {
  const RoundTripped begin =
      RoundTrip(Op::Begin({.ns = "pay", .key = "k", .lease = 0ms, .wait = 0ms, .ttl = 0ms}));
  const Op& op = begin.op;
  EXPECT_EQ(std::optional(0ms), op.lease);
  EXPECT_EQ(std::optional(0ms), op.wait);
  EXPECT_EQ(std::optional<Ttl>(0ms), op.ttl);
  EXPECT_EQ(std::optional<Ttl>(0ms),
            RoundTrip(Op::CompareAndSet({.ns = "pay", .key = "k", .update = {.ttl = 0ms}}))
                .op.update.ttl);
}

TEST(ProtocolCodec, GivenDurationsAndForeverRoundTrip) {
  const RoundTripped begin = RoundTrip(
      Op::Begin({.ns = "pay", .key = "k", .lease = 30s, .wait = 2s, .ttl = Ttl::Forever()}));
  const Op& op = begin.op;
  EXPECT_EQ(std::optional(30'000ms), op.lease);
  EXPECT_EQ(std::optional(2'000ms), op.wait);
  EXPECT_EQ(std::optional(Ttl::Forever()), op.ttl);
  EXPECT_EQ(std::optional<Ttl>(-5ms),
            RoundTrip(Op::Insert({.ns = "p", .key = "k", .ttl = -5ms})).op.ttl);
}

// Checkpoint is op type 15, appended in protocol version 2: it carries the fence and the payload,
// and the number after it is still unknown.
TEST(ProtocolCodec, CheckpointIsOpTypeFifteen) {
  const RoundTripped checkpoint =
      RoundTrip(Op::Checkpoint({.ns = "jobs", .key = "k", .fence = 9, .payload = "charged"}));
  const Op& op = checkpoint.op;
  EXPECT_EQ(OpType::kCheckpoint, op.type);
  EXPECT_EQ(15, static_cast<int>(op.type));
  EXPECT_EQ(std::optional<uint64_t>(9), op.condition.fence);
  EXPECT_EQ("charged", op.payload);
  flatbuffers::FlatBufferBuilder b;
  b.Finish(wire::CreateOp(b, static_cast<wire::OpType>(16), b.CreateString("jobs")));
  Result<Op> unknown = DecodeOp(*flatbuffers::GetRoot<wire::Op>(b.GetBufferPointer()), Limits());
  EXPECT_EQ(Status::Code::kNotSupported, unknown.status().code());
}

// The Hello's token (appended to the table): present when given, absent (not empty) when not.
TEST(ProtocolCodec, HelloCarriesTheTokenOnlyWhenGiven) {
  const size_t prefix = 4;
  FrameBytes with = EncodeHello(1, "client", "s3cret-token");
  const wire::Frame* frame = VerifyFrame(with.data() + prefix, with.size() - prefix);
  ASSERT_NE(nullptr, frame);
  ASSERT_NE(nullptr, frame->body_as_Hello()->token());
  EXPECT_EQ("s3cret-token", frame->body_as_Hello()->token()->str());
  FrameBytes without = EncodeHello(1, "client");
  frame = VerifyFrame(without.data() + prefix, without.size() - prefix);
  ASSERT_NE(nullptr, frame);
  EXPECT_EQ(nullptr, frame->body_as_Hello()->token());
}

// Codes 9 and 10 cross the wire as themselves; the number after them is still unknown.
TEST(ProtocolCodec, AuthenticationCodesRoundTrip) {
  for (const Status& s : {Status::Unauthenticated("token not accepted"),
                          Status::PermissionDenied("principal 'p' has no read permission")}) {
    FrameBytes bytes = EncodeError(7, s);
    const wire::Frame* frame = VerifyFrame(bytes.data() + 4, bytes.size() - 4);
    ASSERT_NE(nullptr, frame);
    EXPECT_EQ(s.ToString(), DecodeError(frame->error()).ToString());
  }
  EXPECT_EQ("UNAUTHENTICATED", CodeName(Status::Code::kUnauthenticated));
  EXPECT_EQ("PERMISSION_DENIED", CodeName(Status::Code::kPermissionDenied));
  EXPECT_EQ(Status::Code::kPermissionDenied, Status::FromCode(10, "x").code());
  EXPECT_TRUE(Status::FromCode(11, "x").IsCorruption());
}

}  // namespace
}  // namespace idem
