// The gateway in front of a real upstream: which requests run once, what duplicates get (409,
// a wait for the replay, the replay byte for byte, 422), and what passes through.
#include <atomic>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gateway_fixture.h"
#include "support/concurrency.h"

namespace idem::testing {
namespace {

class GatewayReplayTest : public GatewayFixture {};

TEST_F(GatewayReplayTest, FirstRequestExecutesAndDuplicatesReplayByteForByte) {
  StartGateway();
  const GatewayReply first = Post("/pay", {Key("k1")});
  ASSERT_EQ(200, first.status) << first.body;
  EXPECT_EQ("{\"execution\":1,\"path\":\"/pay\"}", first.body);
  EXPECT_EQ("/executions/1", first.Header("Location"));
  EXPECT_FALSE(first.has("X-Execution"));  // not a replay header: the first answer is a replay's
  EXPECT_FALSE(first.replayed());
  for (int i = 0; i < 3; ++i) {
    const GatewayReply again = Post("/pay", {Key("k1")});
    EXPECT_TRUE(again.replayed());
    EXPECT_EQ(first.Replayable(), again.Replayable());
  }
  EXPECT_EQ(1, upstream_.Executions("/pay"));
}

TEST_F(GatewayReplayTest, ConcurrentDuplicatesAreRefusedWhileTheFirstRuns) {
  StartGateway();  // wait_ms 0: 409 at once
  std::vector<GatewayReply> replies(16);
  RunConcurrently(16, [&](int i) {
    replies[i] = Post("/pay", {Key("same"), {"X-Test-Delay-Ms", "400"}});
  });
  int executed = 0, conflicts = 0;
  for (const GatewayReply& r : replies) {
    if (r.status == 200) {
      ++executed;
      EXPECT_FALSE(r.replayed());
    } else {
      ASSERT_EQ(409, r.status) << r.body;
      EXPECT_EQ("application/problem+json", r.Header("Content-Type"));
      EXPECT_NE(r.body.find("request-in-progress"), std::string::npos);
      EXPECT_GE(std::stoi(r.Header("Retry-After")), 1);
      ++conflicts;
    }
  }
  EXPECT_EQ(1, executed);
  EXPECT_EQ(15, conflicts);
  EXPECT_EQ(1, upstream_.Executions("/pay"));
  const GatewayReply after = Post("/pay", {Key("same"), {"X-Test-Delay-Ms", "400"}});
  EXPECT_TRUE(after.replayed());
  EXPECT_EQ("{\"execution\":1,\"path\":\"/pay\"}", after.body);
}

TEST_F(GatewayReplayTest, ConcurrentDuplicatesWaitForTheReplay) {
  StartGateway([](GatewayOptions& g) { g.route.wait_ms = 10'000; });
  std::vector<GatewayReply> replies(16);
  RunConcurrently(16, [&](int i) {
    replies[i] = Post("/pay", {Key("same"), {"X-Test-Delay-Ms", "400"}});
  });
  const GatewayReply* first = nullptr;
  int replays = 0;
  for (const GatewayReply& r : replies) {
    ASSERT_EQ(200, r.status) << r.body;
    if (r.replayed()) {
      ++replays;
    } else {
      first = &r;
    }
  }
  ASSERT_NE(nullptr, first);
  EXPECT_EQ(15, replays);
  for (const GatewayReply& r : replies) EXPECT_EQ(first->Replayable(), r.Replayable());
  EXPECT_EQ(1, upstream_.Executions("/pay"));
}

TEST_F(GatewayReplayTest, KeyReusedForAnotherRequestIs422AndNotExecuted) {
  StartGateway();
  ASSERT_EQ(200, Post("/pay", {Key("k")}, "{\"amount\":1}").status);
  const GatewayReply other = Post("/pay", {Key("k")}, "{\"amount\":2}");
  EXPECT_EQ(422, other.status);
  EXPECT_NE(other.body.find("key-reused"), std::string::npos);
  EXPECT_FALSE(other.replayed());
  EXPECT_EQ(422, Post("/pay?x=1", {Key("k")}, "{\"amount\":1}").status);  // another query
  EXPECT_EQ(422, Post("/refund", {Key("k")}, "{\"amount\":1}").status);   // another path
  EXPECT_EQ(422, Post("/pay", {Key("k"), {"Content-Type", "text/plain"}}, "{\"amount\":1}").status);
  EXPECT_EQ(1, upstream_.TotalExecutions());
}

TEST_F(GatewayReplayTest, QueryParameterOrderIsTheSameRequest) {
  StartGateway();
  ASSERT_EQ(200, Post("/pay?a=1&b=2", {Key("q")}).status);
  EXPECT_TRUE(Post("/pay?b=2&a=1", {Key("q")}).replayed());
  EXPECT_EQ(1, upstream_.Executions("/pay"));
}

TEST_F(GatewayReplayTest, IdentitiesScopeKeys) {
  StartGateway();
  const GatewayReply alice = Post("/pay", {Key("k"), {"Authorization", "Bearer alice"}});
  const GatewayReply bob = Post("/pay", {Key("k"), {"Authorization", "Bearer bob"}});
  ASSERT_EQ(200, alice.status);
  ASSERT_EQ(200, bob.status);
  EXPECT_FALSE(bob.replayed());
  EXPECT_NE(alice.body, bob.body);
  EXPECT_EQ(2, upstream_.Executions("/pay"));
  EXPECT_EQ(alice.body, Post("/pay", {Key("k"), {"Authorization", "Bearer alice"}}).body);
}

TEST_F(GatewayReplayTest, UncoveredRequestsPassThrough) {
  StartGateway([](GatewayOptions& g) { g.route.path_prefixes = {"/pay"}; });
  // GET is not covered: executed every time, even with a key; its headers all pass.
  const GatewayReply get1 = Send("GET", "/things", {Key("g")});
  const GatewayReply get2 = Send("GET", "/things", {Key("g")});
  EXPECT_EQ(200, get1.status);
  EXPECT_FALSE(get2.replayed());
  EXPECT_EQ("2", get2.Header("X-Execution"));
  // A POST outside the path prefixes, and a covered POST without a key, pass through too.
  EXPECT_EQ(200, Post("/other", {Key("o")}).status);
  EXPECT_EQ(200, Post("/other", {Key("o")}).status);
  EXPECT_EQ(200, Post("/pay", {}).status);
  EXPECT_EQ(200, Post("/pay", {}).status);
  EXPECT_EQ(2, upstream_.Executions("/things"));
  EXPECT_EQ(2, upstream_.Executions("/other"));
  EXPECT_EQ(2, upstream_.Executions("/pay"));
}

TEST_F(GatewayReplayTest, RequiredKeyMissingOrMalformedIs400) {
  StartGateway([](GatewayOptions& g) { g.route.require_key = true; });
  const GatewayReply missing = Post("/pay", {});
  EXPECT_EQ(400, missing.status);
  EXPECT_NE(missing.body.find("key-required"), std::string::npos);
  const GatewayReply bare = Post("/pay", {{"Idempotency-Key", "bare-token"}});
  EXPECT_EQ(400, bare.status);
  EXPECT_NE(bare.body.find("sf-string"), std::string::npos);
  EXPECT_EQ(400, Post("/pay", {{"Idempotency-Key", "\"" + std::string(256, 'k') + "\""}}).status);
  EXPECT_EQ(400, Post("/pay", {Key("a"), Key("b")}).status);  // two keys
  EXPECT_EQ(0, upstream_.TotalExecutions());
}

TEST_F(GatewayReplayTest, RequestBodyOverTheLimitIs413AndNotExecuted) {
  StartGateway([](GatewayOptions& g) { g.max_request_body_bytes = 1024; });
  const GatewayReply big = Post("/pay", {Key("big")}, std::string(2048, 'x'));
  EXPECT_EQ(413, big.status);
  EXPECT_EQ(0, upstream_.TotalExecutions());
  EXPECT_EQ(Outcome::kNotFound, Record("big")->outcome);  // no store op either
}

TEST_F(GatewayReplayTest, ServerErrorsAbortUnlessStored) {
  StartGateway();  // store_server_errors false
  const GatewayReply failed = Post("/pay", {Key("e"), {"X-Test-Status", "503"}});
  EXPECT_EQ(503, failed.status);
  EXPECT_EQ("1", failed.Header("X-Execution"));         // passed on as it is
  EXPECT_EQ(Outcome::kNotFound, Record("e")->outcome);  // aborted: released
  const GatewayReply retried = Post("/pay", {Key("e")});
  EXPECT_EQ(200, retried.status);
  EXPECT_FALSE(retried.replayed());
  EXPECT_EQ(2, upstream_.Executions("/pay"));
}

TEST_F(GatewayReplayTest, ServerErrorsStoredAreReplayed) {
  StartGateway([](GatewayOptions& g) { g.route.store_server_errors = true; });
  const GatewayReply failed = Post("/pay", {Key("e"), {"X-Test-Status", "500"}});
  EXPECT_EQ(500, failed.status);
  const GatewayReply again = Post("/pay", {Key("e"), {"X-Test-Status", "500"}});
  EXPECT_EQ(500, again.status);
  EXPECT_TRUE(again.replayed());
  EXPECT_EQ(failed.Replayable(), again.Replayable());
  EXPECT_EQ(1, upstream_.Executions("/pay"));
}

TEST_F(GatewayReplayTest, OversizedResponseIsPassedOnAndNotReplayable) {
  StartGateway([](GatewayOptions& g) { g.max_stored_response_bytes = 4096; });
  const GatewayReply big = Post("/pay", {Key("big"), {"X-Test-Body-Bytes", "300000"}});
  ASSERT_EQ(200, big.status);
  ASSERT_EQ(300000u, big.body.size());
  EXPECT_EQ('a', big.body[0]);
  EXPECT_EQ(static_cast<char>('a' + 299999 % 26), big.body.back());
  const GatewayReply again = Post("/pay", {Key("big"), {"X-Test-Body-Bytes", "300000"}});
  EXPECT_EQ(409, again.status);
  EXPECT_NE(again.body.find("response-not-stored"), std::string::npos);
  EXPECT_NE(again.body.find("WAS executed"), std::string::npos);
  EXPECT_TRUE(again.replayed());
  EXPECT_EQ("200", again.Header("Idempotent-Original-Status"));
  EXPECT_FALSE(again.has("Retry-After"));
  EXPECT_EQ(1, upstream_.Executions("/pay"));
  // A large pass-through response streams too.
  EXPECT_EQ(300000u, Send("GET", "/big", {{"X-Test-Body-Bytes", "300000"}}).body.size());
}

TEST_F(GatewayReplayTest, MetricsCountOutcomes) {
  StartGateway();
  ASSERT_EQ(200, Post("/pay", {Key("m")}).status);
  ASSERT_TRUE(Post("/pay", {Key("m")}).replayed());
  ASSERT_EQ(422, Post("/pay", {Key("m")}, "other").status);
  ASSERT_EQ(200, Send("GET", "/x", {}).status);
  const std::string text = server_->server().MetricsText();
  EXPECT_NE(text.find("idem_gateway_requests_total{outcome=\"first\"} 1"), std::string::npos)
      << text;
  EXPECT_NE(text.find("idem_gateway_requests_total{outcome=\"replayed\"} 1"), std::string::npos);
  EXPECT_NE(text.find("idem_gateway_requests_total{outcome=\"mismatch\"} 1"), std::string::npos);
  EXPECT_NE(text.find("idem_gateway_requests_total{outcome=\"passthrough\"} 1"), std::string::npos);
  EXPECT_NE(text.find("idem_gateway_upstream_seconds_count 2"), std::string::npos);
  EXPECT_NE(text.find("idem_ops_total{op=\"begin\",outcome=\"STARTED\"} 1"), std::string::npos);
  EXPECT_NE(text.find("idem_request_duration_seconds_count{transport=\"gateway\",op=\"begin\"}"),
            std::string::npos);
}

}  // namespace
}  // namespace idem::testing
