// Key-format policies: a namespace that declares a rule for its keys (a length range and a
// character set, or a UUID) refuses every operation naming another key with INVALID_ARGUMENT
// naming the key and the rule, and nothing is written. Namespaces without a rule take any key.
// The same cases against the Engine and against a Client over a real server
// (store_conformance.h: "keyed" requires 16..64 bytes of [A-Za-z0-9_-], "uuids" a UUID).
#include <chrono>

#include "store_conformance.h"

namespace idem::testing {
namespace {

using namespace std::chrono_literals;

constexpr std::string_view kRule = "the namespace requires 16..64 bytes of [A-Za-z0-9_-]";
constexpr std::string_view kGoodKey = "order_2026-12-02_0001";

// What the store says to `op`: the outcome's name, or "CODE: message" for an error.
std::string Answer(Store& store, const Op& op) {
  Result<OpResult> r = store.Execute(op);
  if (r.ok()) return Name(r);
  return Name(r) + ": " + r.status().message();
}

TEST_P(StoreConformanceTest, EveryOperationNamingAKeyIsCheckedAgainstTheNamespacesRule) {
  const std::string_view ns = "keyed", key = "ab";
  const Op ops[] = {
      Op::Insert({.ns = ns, .key = key, .status = "NEW"}),
      Op::CompareAndSet({.ns = ns, .key = key}),
      Op::Get({.ns = ns, .key = key}),
      Op::Delete({.ns = ns, .key = key}),
      Op::Begin({.ns = ns, .key = key}),
      Op::Complete({.ns = ns, .key = key, .fence = 1}),
      Op::Abort({.ns = ns, .key = key, .fence = 1}),
      Op::Heartbeat({.ns = ns, .key = key, .fence = 1}),
      Op::Checkpoint({.ns = ns, .key = key, .fence = 1}),
      Op::ConsumeToken({.ns = ns, .token = key}),
      Op::Lock({.ns = ns, .key = key, .owner = "alice"}),
      Op::Renew({.ns = ns, .key = key, .fence = 1}),
      Op::Unlock({.ns = ns, .key = key, .fence = 1}),
      Op::Transition({.ns = ns, .key = key, .to_status = "NEXT"}),
  };
  for (const Op& op : ops) {
    EXPECT_EQ("INVALID_ARGUMENT: key 'ab' in namespace 'keyed' is 2 bytes; " + std::string(kRule),
              Answer(store(), op))
        << OpTypeName(op.type);
  }
  // The same key in a namespace without a rule, and a good key in this one.
  EXPECT_EQ("INSERTED", Answer(store(), Op::Insert({.ns = "pay", .key = key, .status = "NEW"})));
  EXPECT_EQ("INSERTED", Answer(store(), Op::Insert({.ns = ns, .key = kGoodKey, .status = "NEW"})));
  EXPECT_EQ("FOUND", Answer(store(), Op::Get({.ns = ns, .key = kGoodKey})));
}

TEST_P(StoreConformanceTest, AKeyRuleNamesTheFirstByteOutsideTheSetAndTheLengthBounds) {
  EXPECT_EQ("INVALID_ARGUMENT: key 'order 2026-12-02-01' in namespace 'keyed' has ' ' at byte 5; " +
                std::string(kRule),
            Answer(store(), Op::Begin({.ns = "keyed", .key = "order 2026-12-02-01"})));
  EXPECT_EQ(
      "INVALID_ARGUMENT: key 'order\\x00\\xff2026-12-02' in namespace 'keyed' has byte 0x00 "
      "at byte 5; " +
          std::string(kRule),
      Answer(store(), Op::Begin({.ns = "keyed",
                                 .key = std::string_view("order\0\xff"
                                                         "2026-12-02",
                                                         17)})));
  const std::string long_key(65, 'k');
  EXPECT_EQ("INVALID_ARGUMENT: key '" + std::string(64, 'k') +
                "'... in namespace 'keyed' is 65 bytes; " + std::string(kRule),
            Answer(store(), Op::Begin({.ns = "keyed", .key = long_key})));
  EXPECT_EQ("STARTED", Answer(store(), Op::Begin({.ns = "keyed", .key = std::string(64, 'k')})));
  EXPECT_EQ("STARTED", Answer(store(), Op::Begin({.ns = "keyed", .key = std::string(16, 'k')})));
}

// UUIDs in RFC 9562's lowercase form only: an uppercase spelling of the same UUID would be a
// second key, and the same request would run twice.
TEST_P(StoreConformanceTest, AUuidNamespaceTakesLowercaseUuidsOnly) {
  constexpr std::string_view kUuid = "123e4567-e89b-12d3-a456-426614174000";
  const std::string rule =
      "the namespace requires a UUID: 36 bytes, 8-4-4-4-12 lowercase hex digits (e.g. "
      "123e4567-e89b-12d3-a456-426614174000)";
  EXPECT_EQ("STARTED", Answer(store(), Op::Begin({.ns = "uuids", .key = kUuid})));
  EXPECT_EQ(
      "INVALID_ARGUMENT: key '123E4567-E89B-12D3-A456-426614174000' in namespace 'uuids' "
      "has 'E' at byte 3; " +
          rule,
      Answer(store(), Op::Begin({.ns = "uuids", .key = "123E4567-E89B-12D3-A456-426614174000"})));
  EXPECT_EQ(
      "INVALID_ARGUMENT: key '123e4567e89b12d3a456426614174000' in namespace 'uuids' is 32 "
      "bytes; " +
          rule,
      Answer(store(), Op::Begin({.ns = "uuids", .key = "123e4567e89b12d3a456426614174000"})));
}

// IssueToken names no key: its tokens (22 bytes of [A-Za-z0-9_-]) meet "keyed"'s rule, so tokens
// work there; they could never be UUIDs, so it is refused in "uuids" instead of issuing tokens
// that ConsumeToken would refuse.
TEST_P(StoreConformanceTest, TokensAreIssuedOnlyWhereTheyMeetTheKeyRule) {
  Result<OpResult> issued = store().Execute(Op::IssueToken({.ns = "keyed"}));
  ASSERT_OK(issued);
  EXPECT_EQ("CONSUMED", Answer(store(), Op::ConsumeToken({.ns = "keyed", .token = issued->token})));
  EXPECT_EQ(
      "INVALID_ARGUMENT: namespace 'uuids' requires keys of a UUID: 36 bytes, 8-4-4-4-12 "
      "lowercase hex digits (e.g. 123e4567-e89b-12d3-a456-426614174000); its tokens would be 22 "
      "bytes of [A-Za-z0-9_-], so IssueToken is refused there",
      Answer(store(), Op::IssueToken({.ns = "uuids"})));
}

// In a batch, a key that breaks the rule fails its own op only, as every invalid input does.
TEST_P(StoreConformanceTest, ABadKeyInABatchFailsOnlyItsOwnOperation) {
  std::vector<Op> ops = {Op::Insert({.ns = "keyed", .key = kGoodKey, .status = "NEW"}),
                         Op::Insert({.ns = "keyed", .key = "short", .status = "NEW"}),
                         Op::Get({.ns = "keyed", .key = kGoodKey})};
  std::vector<Result<OpResult>> results;
  ASSERT_OK(store().Apply(ops, &results));
  ASSERT_EQ(3u, results.size());
  EXPECT_EQ("INSERTED", Name(results[0]));
  EXPECT_EQ("INVALID_ARGUMENT", Name(results[1]));
  EXPECT_EQ("FOUND", Name(results[2]));
}

}  // namespace
}  // namespace idem::testing
