// How an Op is built (idem/operation.h): named fields, durations as std::chrono types, and
// "not given" kept apart from zero.
#include "idem/operation.h"

#include <chrono>
#include <cstdint>
#include <optional>
#include <type_traits>

#include <gtest/gtest.h>

namespace idem {
namespace {

using namespace std::chrono_literals;
using Millis = std::chrono::milliseconds;

// A bare integer is not a duration: `.lease = 30000` does not compile, nor does a lossy one.
static_assert(!std::is_convertible_v<int64_t, std::optional<Millis>>);
static_assert(!std::is_convertible_v<int64_t, std::optional<Ttl>>);
static_assert(!std::is_convertible_v<std::chrono::microseconds, std::optional<Millis>>);
static_assert(!std::is_convertible_v<std::chrono::microseconds, std::optional<Ttl>>);
static_assert(std::is_convertible_v<std::chrono::hours, std::optional<Ttl>>);
static_assert(std::is_convertible_v<std::chrono::seconds, std::optional<Millis>>);

TEST(Op, BeginTakesItsLeaseAndWaitByName) {
  Op op = Op::Begin({.ns = "pay",
                     .key = "k",
                     .fingerprint = "fp",
                     .owner = "w",
                     .lease = 30s,
                     .wait = 2s,
                     .ttl = 1h});
  EXPECT_EQ(OpType::kBegin, op.type);
  EXPECT_EQ("pay", op.ns);
  EXPECT_EQ("k", op.key);
  EXPECT_EQ("fp", op.fingerprint);
  EXPECT_EQ("w", op.owner);
  EXPECT_EQ(Millis(30'000), op.lease);
  EXPECT_EQ(Millis(2'000), op.wait);
  EXPECT_EQ(Ttl(3'600'000ms), op.ttl);
}

TEST(Op, AFieldLeftOutIsNotGivenWhichIsNotZero) {
  Op plain = Op::Begin({.ns = "pay", .key = "k"});
  EXPECT_FALSE(plain.lease.has_value());
  EXPECT_FALSE(plain.wait.has_value());
  EXPECT_FALSE(plain.ttl.has_value());
  Op zero = Op::Begin({.ns = "pay", .key = "k", .lease = 0ms, .wait = 0ms, .ttl = 0ms});
  EXPECT_EQ(Millis(0), zero.lease);
  EXPECT_EQ(Millis(0), zero.wait);
  EXPECT_EQ(Ttl(0ms), zero.ttl);
  EXPECT_FALSE(Op::Insert({.ns = "pay", .key = "k", .status = "S"}).ttl.has_value());
  EXPECT_FALSE(Op::Lock({.ns = "l", .key = "k", .owner = "me"}).lease.has_value());
}

TEST(Op, FencedOpsCarryTheFenceAsTheirCondition) {
  EXPECT_EQ(7u, Op::Complete({.ns = "p", .key = "k", .fence = 7, .response = "r"}).condition.fence);
  EXPECT_EQ(7u, Op::Abort({.ns = "p", .key = "k", .fence = 7}).condition.fence);
  EXPECT_EQ(7u, Op::Heartbeat({.ns = "p", .key = "k", .fence = 7}).condition.fence);
  EXPECT_EQ(7u, Op::Renew({.ns = "p", .key = "k", .fence = 7}).condition.fence);
  EXPECT_EQ(7u, Op::Unlock({.ns = "p", .key = "k", .fence = 7}).condition.fence);
  Op complete = Op::Complete({.ns = "p", .key = "k", .fence = 7, .response = "r", .status = "X"});
  EXPECT_EQ("r", complete.payload);
  EXPECT_EQ("X", complete.status);
  EXPECT_EQ("why", Op::Abort({.ns = "p", .key = "k", .fence = 7, .response = "why"}).payload);
}

TEST(Op, TransitionAndTokensNameTheirParts) {
  Op t = Op::Transition(
      {.ns = "o", .key = "k", .to_status = "PAID", .expect_version = 3, .payload = "receipt"});
  EXPECT_EQ("PAID", t.status);
  EXPECT_EQ(3u, t.condition.version);
  EXPECT_EQ("receipt", t.update.payload);
  EXPECT_FALSE(Op::Transition({.ns = "o", .key = "k", .to_status = "PAID"}).update.payload);
  EXPECT_EQ("tok", Op::ConsumeToken({.ns = "t", .token = "tok"}).key);
  EXPECT_EQ(Ttl(10min), Op::IssueToken({.ns = "t", .ttl = 10min}).ttl);
}

TEST(Ttl, ForeverIsItsOwnValueAndMinusOneMillisecondOnTheWire) {
  EXPECT_TRUE(Ttl::Forever().forever());
  EXPECT_FALSE(Ttl(24h).forever());
  EXPECT_EQ(Millis(86'400'000), Ttl(24h).duration());
  EXPECT_EQ(Ttl::Forever(), Ttl(-1ms));
}

}  // namespace
}  // namespace idem
