// The gateway when things fail: the upstream dies, is down or slow; the gateway's own attempt
// outlives its lease (heartbeats keep it; without them another takes it over, and the late
// Complete is fenced off); a damaged record; options Listen refuses.
#include <future>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "gateway_fixture.h"

namespace idem::testing {
namespace {

using namespace std::chrono_literals;

class GatewayFailureTest : public GatewayFixture {
 protected:
  // Begin on the store itself, as the gateway would for Post("/pay", {Key(key)}) (no
  // Authorization, no Content-Type, the default body).
  Result<OpResult> BeginAsGateway(const std::string& key,
                                  std::optional<std::chrono::milliseconds> lease = {}) {
    store_key_ = ScopedStoreKey("", key);
    fingerprint_ = RequestFingerprint({.method = "POST",
                                       .target = "/pay",
                                       .headers = {{"content-type", std::nullopt}},
                                       .body = "{\"amount\":1}"});
    return server_->engine().Execute(Op::Begin(
        {.ns = "gateway", .key = store_key_, .fingerprint = fingerprint_, .lease = lease}));
  }

  std::string store_key_;
  std::string fingerprint_;
};

TEST_F(GatewayFailureTest, UpstreamDyingAbortsAndTheRetryExecutes) {
  StartGateway();
  const GatewayReply died = Post("/pay", {Key("d"), {"X-Test-Die", "1"}});
  EXPECT_EQ(502, died.status);
  EXPECT_NE(died.body.find("upstream-failed"), std::string::npos);
  EXPECT_EQ(Outcome::kNotFound, Record("d")->outcome);
  const GatewayReply retried = Post("/pay", {Key("d")});
  EXPECT_EQ(200, retried.status);
  EXPECT_FALSE(retried.replayed());
  EXPECT_EQ(2, upstream_.Executions("/pay"));
}

TEST_F(GatewayFailureTest, UpstreamDownIs502AndAborted) {
  StartGateway();
  upstream_.StopAccepting();
  const GatewayReply down = Post("/pay", {Key("x")});
  EXPECT_EQ(502, down.status);
  EXPECT_EQ("application/problem+json", down.Header("Content-Type"));
  EXPECT_EQ(Outcome::kNotFound, Record("x")->outcome);
}

TEST_F(GatewayFailureTest, UpstreamTimeoutIs504AndAborted) {
  StartGateway([](GatewayOptions& g) { g.upstream_timeout_ms = 200; });
  const GatewayReply slow = Post("/pay", {Key("t"), {"X-Test-Delay-Ms", "3000"}});
  EXPECT_EQ(504, slow.status);
  EXPECT_NE(slow.body.find("upstream-timeout"), std::string::npos);
  EXPECT_EQ(Outcome::kNotFound, Record("t")->outcome);
}

// The engine's clock runs in step with real time while the upstream takes 1.2 s, four leases:
// only the heartbeats keep the attempt, so a duplicate meanwhile is a conflict, not a takeover.
TEST_F(GatewayFailureTest, HeartbeatsKeepASlowAttempt) {
  StartGateway([](GatewayOptions& g) { g.route.lease_ms = 300; });
  auto first = std::async(std::launch::async, [&] {
    return Post("/pay", {Key("slow"), {"X-Test-Delay-Ms", "1200"}});
  });
  for (int i = 0; i < 40; ++i) {  // 800 ms of engine time, past two leases
    std::this_thread::sleep_for(20ms);
    clock_->Advance(20);
  }
  const GatewayReply duplicate = Post("/pay", {Key("slow")});
  EXPECT_EQ(409, duplicate.status) << duplicate.body;
  EXPECT_EQ(200, first.get().status);
  EXPECT_EQ(1, upstream_.Executions("/pay"));
  EXPECT_TRUE(Post("/pay", {Key("slow")}).replayed());
}

// A gateway that stopped heartbeating (it crashed, as far as the store can tell): once its
// lease ends the next duplicate takes over with a new fence, and the first attempt's late
// response is not stored.
TEST_F(GatewayFailureTest, LapsedAttemptIsTakenOverAndItsLateResponseFenced) {
  StartGateway([](GatewayOptions& g) { g.route.lease_ms = 30'000; });  // heartbeats in 10 s
  auto stale = std::async(std::launch::async, [&] {
    return Post("/pay", {Key("c"), {"X-Test-Delay-Ms", "1500"}});
  });
  while (upstream_.Executions("/pay") == 0) std::this_thread::sleep_for(5ms);
  const uint64_t stale_fence = Record("c")->record->fence;
  clock_->Advance(31'000);  // the lease ends; no heartbeat came
  const GatewayReply takeover = Post("/pay", {Key("c")});
  ASSERT_EQ(200, takeover.status);
  EXPECT_EQ("{\"execution\":2,\"path\":\"/pay\"}", takeover.body);
  EXPECT_GT(Record("c")->record->fence, stale_fence);
  const GatewayReply late = stale.get();
  EXPECT_EQ(200, late.status);  // executed: its client gets its answer
  EXPECT_EQ("{\"execution\":1,\"path\":\"/pay\"}", late.body);
  const GatewayReply replay = Post("/pay", {Key("c")});
  EXPECT_TRUE(replay.replayed());
  EXPECT_EQ(takeover.body, replay.body);  // not the fenced one's
  EXPECT_NE(
      server_->server().MetricsText().find("idem_gateway_requests_total{outcome=\"fenced\"} 1"),
      std::string::npos);
}

// The same with the store driven directly: an attempt begun with a short lease and never
// completed is taken over by the gateway, and the old holder's Complete is refused.
TEST_F(GatewayFailureTest, CrashedHolderIsTakenOverAndItsCompleteRefused) {
  StartGateway();
  Result<OpResult> begun = BeginAsGateway("crash", 1000ms);
  ASSERT_TRUE(begun.ok());
  ASSERT_EQ(Outcome::kStarted, begun->outcome);
  EXPECT_EQ(409, Post("/pay", {Key("crash")}).status);  // the holder's lease runs
  clock_->Advance(1001);
  const GatewayReply took = Post("/pay", {Key("crash")});
  ASSERT_EQ(200, took.status) << took.body;
  Result<OpResult> late = server_->engine().Execute(Op::Complete(
      {.ns = "gateway", .key = store_key_, .fence = begun->record->fence, .response = "late"}));
  ASSERT_TRUE(late.ok());
  EXPECT_EQ(Outcome::kFenceMismatch, late->outcome);
  EXPECT_EQ(took.body, Post("/pay", {Key("crash")}).body);
  EXPECT_EQ(1, upstream_.Executions("/pay"));
}

TEST_F(GatewayFailureTest, DamagedStoredResponseIs502) {
  StartGateway();
  Result<OpResult> begun = BeginAsGateway("dmg");
  ASSERT_TRUE(begun.ok());
  // A record claiming 65535 headers, holding none.
  const std::string damage("IGR1\x00\xc8\x00\xff\xff", 9);
  ASSERT_TRUE(server_->engine()
                  .Execute(Op::Complete({.ns = "gateway",
                                         .key = store_key_,
                                         .fence = begun->record->fence,
                                         .response = damage}))
                  .ok());
  const GatewayReply damaged = Post("/pay", {Key("dmg")});
  EXPECT_EQ(502, damaged.status);
  EXPECT_NE(damaged.body.find("stored-response-damaged"), std::string::npos);
  EXPECT_EQ(0, upstream_.TotalExecutions());
  EXPECT_EQ(200, Post("/pay", {Key("fine")}).status);  // the gateway serves on
}

TEST_F(GatewayFailureTest, ListenRefusesOptionsThatCannotWork) {
  auto listen = [&](const std::function<void(ServerOptions&)>& change) {
    ServerOptions options;
    options.port = 0;
    options.log = [](const LogRecord&) {};
    GatewayOptions gateway;
    gateway.port = 0;
    gateway.upstream = upstream_.url();
    options.gateway = gateway;
    change(options);
    return Server::Listen(options).status();
  };
  EXPECT_TRUE(listen([](ServerOptions&) {}).ok());
  // A stored response could never fit in a record.
  Status too_big = listen([](ServerOptions& o) {
    o.gateway->max_stored_response_bytes = o.limits.max_payload_bytes + 1;
  });
  EXPECT_EQ(Status::Code::kInvalidArgument, too_big.code());
  EXPECT_NE(too_big.message().find("max_payload_bytes"), std::string::npos);
  EXPECT_EQ(Status::Code::kInvalidArgument,
            listen([](ServerOptions& o) { o.gateway->upstream = "https://127.0.0.1:1"; }).code());
  EXPECT_EQ(Status::Code::kInvalidArgument,
            listen([](ServerOptions& o) { o.limits.max_key_bytes = 100; }).code());
  EXPECT_EQ(Status::Code::kInvalidArgument,
            listen([](ServerOptions& o) { o.gateway->route.lease_ms = 0; }).code());
}

// A response whose encoding exceeds the payload limit is passed on and kept as not stored.
TEST_F(GatewayFailureTest, ResponseWhoseRecordWouldNotFitIsNotStored) {
  StartGateway([](GatewayOptions& g) { g.max_stored_response_bytes = 1u << 20; });
  const size_t limit = server_->engine().options().limits.max_payload_bytes;
  const std::string bytes = std::to_string(limit - 10);  // the body fits, the record does not
  const GatewayReply first = Post("/pay", {Key("edge"), {"X-Test-Body-Bytes", bytes}});
  ASSERT_EQ(200, first.status);
  EXPECT_EQ(limit - 10, first.body.size());
  const GatewayReply again = Post("/pay", {Key("edge"), {"X-Test-Body-Bytes", bytes}});
  EXPECT_EQ(409, again.status);
  EXPECT_NE(again.body.find("response-not-stored"), std::string::npos);
  EXPECT_EQ(1, upstream_.Executions("/pay"));
}

}  // namespace
}  // namespace idem::testing
