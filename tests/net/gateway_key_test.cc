// The gateway's request identity as pure functions: which requests a route covers, the
// Idempotency-Key syntax (the IETF draft's sf-string), key scoping and the fingerprint.
#include "gateway_key.h"

#include <string>

#include <gtest/gtest.h>

namespace idem {
namespace {

std::string KeyOf(std::string_view field) {
  Result<std::string> key = ParseIdempotencyKey(field);
  return key.ok() ? *key : "ERROR: " + key.status().message();
}

bool Refused(std::string_view field) { return !ParseIdempotencyKey(field).ok(); }

TEST(GatewayKeyTest, CoversConfiguredMethodsAndPathPrefixes) {
  GatewayRoute route;
  EXPECT_TRUE(RouteCovers(route, "POST", "/anything"));
  EXPECT_TRUE(RouteCovers(route, "PATCH", "/"));
  EXPECT_FALSE(RouteCovers(route, "GET", "/anything"));
  EXPECT_FALSE(RouteCovers(route, "post", "/anything"));  // methods are case-sensitive
  route.path_prefixes = {"/v1/payments", "/v1/refunds"};
  EXPECT_TRUE(RouteCovers(route, "POST", "/v1/payments/42"));
  EXPECT_TRUE(RouteCovers(route, "POST", "/v1/refunds"));
  EXPECT_FALSE(RouteCovers(route, "POST", "/v1/users"));
}

TEST(GatewayKeyTest, AcceptsQuotedStringsAndUnescapes) {
  EXPECT_EQ("8e03978e-40d5-43e8-bc93-6894a57f9324",
            KeyOf("\"8e03978e-40d5-43e8-bc93-6894a57f9324\""));
  EXPECT_EQ("a b", KeyOf("  \"a b\"  "));  // spaces around the value are not part of it
  EXPECT_EQ("say \"hi\"", KeyOf(R"("say \"hi\"")"));
  EXPECT_EQ("back\\slash", KeyOf(R"("back\\slash")"));
  EXPECT_EQ(std::string(255, 'k'), KeyOf("\"" + std::string(255, 'k') + "\""));
}

TEST(GatewayKeyTest, RefusesWhatIsNotAnSfString) {
  EXPECT_TRUE(Refused("abc"));  // a bare token: the draft says sf-string
  EXPECT_NE(KeyOf("abc").find("bare token is not accepted"), std::string::npos);
  EXPECT_TRUE(Refused("\"\""));                               // empty
  EXPECT_TRUE(Refused("\"" + std::string(256, 'k') + "\""));  // 256 characters
  EXPECT_TRUE(Refused("\"abc"));                              // unclosed
  EXPECT_TRUE(Refused("\"a\"b\""));                           // unescaped quote
  EXPECT_TRUE(Refused(R"("a\nb")"));                          // not an sf-string escape
  EXPECT_TRUE(Refused("\"a\tb\""));                           // a control character
  EXPECT_TRUE(Refused("\"caf\xc3\xa9\""));                    // not ASCII
  EXPECT_TRUE(Refused("\"abc\\\""));                          // an escape at the end
  EXPECT_TRUE(Refused(""));
}

TEST(GatewayKeyTest, ScopesKeysByIdentity) {
  const std::string a = ScopedStoreKey("Bearer alice", "k1");
  const std::string b = ScopedStoreKey("Bearer bob", "k1");
  EXPECT_NE(a, b);
  EXPECT_EQ(a, ScopedStoreKey("Bearer alice", "k1"));
  EXPECT_EQ(kScopePrefixBytes + 2, a.size());
  EXPECT_EQ(':', a[32]);
  EXPECT_EQ("k1", a.substr(33));
  EXPECT_EQ(std::string::npos, a.find("alice"));  // the identity itself is not stored
  EXPECT_EQ(a.substr(0, 32).find_first_not_of("0123456789abcdef"), std::string::npos);
}

TEST(GatewayKeyTest, FingerprintSortsQueryParameters) {
  FingerprintInput x{.method = "POST", .target = "/pay?b=2&a=1", .headers = {}, .body = "{}"};
  FingerprintInput y{.method = "POST", .target = "/pay?a=1&b=2", .headers = {}, .body = "{}"};
  EXPECT_EQ(32u, RequestFingerprint(x).size());
  EXPECT_EQ(RequestFingerprint(x), RequestFingerprint(y));
  y.target = "/pay?a=1&b=3";
  EXPECT_NE(RequestFingerprint(x), RequestFingerprint(y));
}

TEST(GatewayKeyTest, FingerprintCoversMethodPathBodyAndHeaders) {
  const FingerprintInput base{
      .method = "POST", .target = "/pay", .headers = {{"content-type", "a/b"}}, .body = "1"};
  const std::string fp = RequestFingerprint(base);
  FingerprintInput other = base;
  other.method = "PATCH";
  EXPECT_NE(fp, RequestFingerprint(other));
  other = base;
  other.target = "/pay2";
  EXPECT_NE(fp, RequestFingerprint(other));
  other = base;
  other.body = "2";
  EXPECT_NE(fp, RequestFingerprint(other));
  other = base;
  other.headers[0].second = "a/c";
  EXPECT_NE(fp, RequestFingerprint(other));
  // An absent header differs from an empty one.
  FingerprintInput absent = base, empty = base;
  absent.headers[0].second = std::nullopt;
  empty.headers[0].second = "";
  EXPECT_NE(RequestFingerprint(absent), RequestFingerprint(empty));
  // Length prefixes: moving bytes from the path to the body is another request.
  FingerprintInput shifted{.method = "POST", .target = "/pa", .headers = {}, .body = "y1"};
  FingerprintInput unshifted{.method = "POST", .target = "/pay", .headers = {}, .body = "1"};
  EXPECT_NE(RequestFingerprint(shifted), RequestFingerprint(unshifted));
}

}  // namespace
}  // namespace idem
