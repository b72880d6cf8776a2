// Authorization: what each permission allows, as pure functions of a principal's grants; a request
// with one op denied is refused whole.
#include "authorization.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace idem {
namespace {

Principal Checkout() {
  Principal p;
  p.name = "checkout";
  p.grants = {{"payments", uint8_t(Permission::kRead) | uint8_t(Permission::kWrite)},
              {"refunds", uint8_t(Permission::kRead)}};
  return p;
}

DecodedOps Request(std::vector<Result<Op>> ops) {
  DecodedOps request;
  for (Result<Op>& op : ops) request.Add(std::move(op));
  return request;
}

TEST(Authorization, GetNeedsReadEveryOtherOpWrite) {
  EXPECT_EQ(Permission::kRead, PermissionFor(OpType::kGet));
  for (OpType t : {OpType::kInsert, OpType::kCompareAndSet, OpType::kDelete, OpType::kBegin,
                   OpType::kComplete, OpType::kAbort, OpType::kHeartbeat, OpType::kIssueToken,
                   OpType::kConsumeToken, OpType::kLock, OpType::kRenew, OpType::kUnlock,
                   OpType::kTransition, OpType::kCheckpoint, static_cast<OpType>(200)}) {
    EXPECT_EQ(Permission::kWrite, PermissionFor(t)) << OpTypeName(t);
  }
}

TEST(Authorization, MessagesNameThePrincipalThePermissionAndTheNamespace) {
  EXPECT_TRUE(CheckPermission(Checkout(), "payments", Permission::kWrite).ok());
  EXPECT_EQ(
      "PERMISSION_DENIED: principal 'checkout' has no write permission on namespace "
      "'refunds'",
      CheckPermission(Checkout(), "refunds", Permission::kWrite).ToString());
  EXPECT_EQ(
      "PERMISSION_DENIED: principal 'checkout' may not read the stats: that needs admin "
      "permission on every namespace (\"*\")",
      CheckAdminEverywhere(Checkout(), "read the stats").ToString());
}

TEST(Authorization, ARequestWhoseOpsAreAllAllowedIsNotRefused) {
  EXPECT_EQ(std::nullopt,
            DeniedResults(Checkout(), Request({Op::Insert({.ns = "payments", .key = "k"}),
                                               Op::Get({.ns = "refunds", .key = "k"})})));
}

TEST(Authorization, OneDeniedOpRefusesEveryOpOfTheRequest) {
  auto denied = DeniedResults(Checkout(), Request({Op::Insert({.ns = "payments", .key = "k"}),
                                                   Op::Delete({.ns = "refunds", .key = "k"}),
                                                   Op::Get({.ns = "orders", .key = "k"})}));
  ASSERT_TRUE(denied.has_value());
  ASSERT_EQ(3u, denied->size());
  EXPECT_EQ(
      "PERMISSION_DENIED: request refused because of op #1 (counting from 0): principal "
      "'checkout' has no write permission on namespace 'refunds'; nothing of the request "
      "was applied",
      (*denied)[0].status().ToString());
  EXPECT_EQ(
      "PERMISSION_DENIED: principal 'checkout' has no write permission on namespace "
      "'refunds'",
      (*denied)[1].status().ToString());
  EXPECT_EQ("PERMISSION_DENIED: principal 'checkout' has no read permission on namespace 'orders'",
            (*denied)[2].status().ToString());
}

// An op that did not decode has no namespace to check: it does not refuse the others, and it is
// refused with them when another op is denied.
TEST(Authorization, OpsThatDidNotDecodeAreSkipped) {
  EXPECT_EQ(std::nullopt,
            DeniedResults(Checkout(), Request({Status::InvalidArgument("bad op"),
                                               Op::Insert({.ns = "payments", .key = "k"})})));
  auto denied = DeniedResults(Checkout(), Request({Status::InvalidArgument("bad op"),
                                                   Op::Insert({.ns = "orders", .key = "k"})}));
  ASSERT_TRUE(denied.has_value());
  EXPECT_TRUE((*denied)[0].status().IsPermissionDenied());
  EXPECT_NE(std::string::npos, (*denied)[0].status().message().find("op #1"));
}

}  // namespace
}  // namespace idem
