#include "validation.h"

#include <chrono>

#include <gtest/gtest.h>

namespace idem {
namespace {

using namespace std::chrono_literals;

Limits L() { return Limits(); }

TEST(Validation, NamespaceLengthAndCharset) {
  EXPECT_TRUE(ValidateNamespace("payments.v2:eu-west_1", L()).ok());
  EXPECT_TRUE(ValidateNamespace("", L()).IsInvalidArgument());
  EXPECT_TRUE(ValidateNamespace(std::string(64, 'n'), L()).ok());
  Status too_long = ValidateNamespace(std::string(65, 'n'), L());
  EXPECT_TRUE(too_long.IsInvalidArgument());
  EXPECT_NE(std::string::npos, too_long.message().find("1..64"));
  EXPECT_TRUE(ValidateNamespace("has space", L()).IsInvalidArgument());
  EXPECT_TRUE(ValidateNamespace(std::string("nul\0", 4), L()).IsInvalidArgument());
  EXPECT_TRUE(ValidateNamespace("slash/no", L()).IsInvalidArgument());
}

TEST(Validation, NamespaceNeverExceedsTheOneByteKeyPrefix) {
  Limits limits;
  limits.max_namespace_bytes = 1000;
  EXPECT_TRUE(ValidateNamespace(std::string(255, 'n'), limits).ok());
  EXPECT_TRUE(ValidateNamespace(std::string(256, 'n'), limits).IsInvalidArgument());
}

TEST(Validation, KeyLimits) {
  EXPECT_TRUE(ValidateOp(Op::Get({.ns = "ns", .key = std::string(512, 'k')}), L()).ok());
  Status s = ValidateOp(Op::Get({.ns = "ns", .key = std::string(513, 'k')}), L());
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(std::string::npos, s.message().find("key is 513 bytes"));
  EXPECT_TRUE(ValidateOp(Op::Get({.ns = "ns"}), L()).IsInvalidArgument());
  EXPECT_TRUE(ValidateOp(Op::Get({.ns = "ns", .key = std::string("\0\xff", 2)}), L())
                  .ok());  // keys are bytes
}

TEST(Validation, InsertFieldLimits) {
  EXPECT_TRUE(ValidateOp(Op::Insert({.ns = "ns", .key = "k", .status = "PENDING"}), L()).ok());
  EXPECT_TRUE(ValidateOp(Op::Insert({.ns = "ns", .key = "k"}), L()).IsInvalidArgument());
  EXPECT_TRUE(ValidateOp(Op::Insert({.ns = "ns", .key = "k", .status = std::string(33, 's')}), L())
                  .IsInvalidArgument());
  EXPECT_TRUE(
      ValidateOp(
          Op::Insert({.ns = "ns", .key = "k", .status = "S", .fingerprint = std::string(64, 'f')}),
          L())
          .ok());
  EXPECT_TRUE(
      ValidateOp(
          Op::Insert({.ns = "ns", .key = "k", .status = "S", .fingerprint = std::string(65, 'f')}),
          L())
          .IsInvalidArgument());
  std::string big(1 << 20, 'p');
  EXPECT_TRUE(
      ValidateOp(Op::Insert({.ns = "ns", .key = "k", .status = "S", .payload = big}), L()).ok());
  big.push_back('p');
  Status s = ValidateOp(Op::Insert({.ns = "ns", .key = "k", .status = "S", .payload = big}), L());
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(std::string::npos, s.message().find("payload"));
}

TEST(Validation, ConditionAndUpdateLimits) {
  Condition c;
  for (int i = 0; i < 17; ++i) c.status_in.push_back("S");
  EXPECT_TRUE(
      ValidateOp(Op::CompareAndSet({.ns = "ns", .key = "k", .condition = c, .update = {}}), L())
          .IsInvalidArgument());
  c.status_in.resize(16);
  EXPECT_TRUE(
      ValidateOp(Op::CompareAndSet({.ns = "ns", .key = "k", .condition = c, .update = {}}), L())
          .ok());
  c.status_in[3] = "";
  EXPECT_TRUE(
      ValidateOp(Op::Delete({.ns = "ns", .key = "k", .condition = c}), L()).IsInvalidArgument());
  Update u;
  u.status = "";
  EXPECT_TRUE(ValidateOp(Op::CompareAndSet({.ns = "ns", .key = "k", .update = u}), L())
                  .IsInvalidArgument());
}

TEST(Validation, UnknownOpTypeIsNotSupported) {
  Op op = Op::Get({.ns = "ns", .key = "k"});
  op.type = static_cast<OpType>(200);
  EXPECT_EQ(Status::Code::kNotSupported, ValidateOp(op, L()).code());
}

TEST(Validation, TtlResolution) {
  RetentionPolicy p;
  p.default_ttl_ms = 1000;
  p.max_ttl_ms = 5000;
  EXPECT_EQ(11000, *ResolveExpiry(std::nullopt, p, 10000));
  EXPECT_EQ(15000, *ResolveExpiry(5000ms, p, 10000));
  Result<int64_t> over = ResolveExpiry(5001ms, p, 10000);
  ASSERT_FALSE(over.ok());
  EXPECT_NE(std::string::npos, over.status().message().find("1 ms .. 5000 ms"));
  EXPECT_TRUE(ResolveExpiry(Ttl::Forever(), p, 0).status().IsInvalidArgument());
  EXPECT_TRUE(ResolveExpiry(-7ms, p, 0).status().IsInvalidArgument());
  p.allow_forever = true;
  EXPECT_EQ(kNeverExpires, *ResolveExpiry(Ttl::Forever(), p, 0));
}

TEST(Validation, ZeroTtlIsOutOfRangeNotTheDefault) {
  RetentionPolicy p;
  p.default_ttl_ms = 1000;
  p.max_ttl_ms = 5000;
  Result<int64_t> zero = ResolveExpiry(0ms, p, 10000);
  ASSERT_TRUE(zero.status().IsInvalidArgument());
  EXPECT_EQ(
      "ttl 0 ms is out of range: 1 ms .. 5000 ms (this namespace's max_ttl_ms); leave it "
      "out for the namespace's default (1000 ms)",
      zero.status().message());
}

TEST(Validation, ZeroLeaseIsOutOfRangeNotTheDefault) {
  LifecyclePolicy p;
  p.default_lease_ms = 30000;
  p.max_lease_ms = 86400000;
  EXPECT_EQ(30000, *ResolveLease(std::nullopt, p));
  EXPECT_EQ(1, *ResolveLease(1ms, p));
  Result<int64_t> zero = ResolveLease(0ms, p);
  ASSERT_TRUE(zero.status().IsInvalidArgument());
  EXPECT_EQ(
      "lease 0 ms is out of range: 1 ms .. 86400000 ms (this namespace's max_lease_ms); "
      "leave it out for the namespace's default (30000 ms)",
      zero.status().message());
  EXPECT_TRUE(ResolveLease(-1ms, p).status().IsInvalidArgument());
  EXPECT_TRUE(ResolveLease(86400001ms, p).status().IsInvalidArgument());
}

TEST(Validation, PolicyConsistency) {
  RetentionPolicy p;
  EXPECT_TRUE(ValidatePolicy("ns", p).ok());
  p.default_ttl_ms = p.max_ttl_ms + 1;
  EXPECT_TRUE(ValidatePolicy("ns", p).IsInvalidArgument());
  p.default_ttl_ms = kForever;
  EXPECT_TRUE(ValidatePolicy("ns", p).IsInvalidArgument());
  p.allow_forever = true;
  EXPECT_TRUE(ValidatePolicy("ns", p).ok());
}

}  // namespace
}  // namespace idem
