// Authenticator: tokens in, principals (or UNAUTHENTICATED with its reason) out; failures counted,
// logged and limited per peer address; reloads swap the credentials and re-check what open
// connections authenticated as.
#include "authenticator.h"

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "auth_fixture.h"
#include "support/temp_dir.h"

namespace idem {
namespace {

using testing::kAdminToken;
using testing::kCheckoutToken;
using testing::kReaderToken;

class AuthenticatorTest : public ::testing::Test {
 protected:
  void SetUp() override { Open(10); }

  void Open(uint32_t limit) {
    Authenticator::Options options;
    options.auth_file = file_.path();
    options.failures_per_minute = limit;
    auto auth = Authenticator::Open(
        options, clock_, [this](const LogRecord& r) { logged_.push_back(r); }, &metrics_);
    ASSERT_OK(auth);
    auth_ = std::move(*auth);
  }
  // The principal's name, or the error's code and message.
  std::string Who(std::optional<std::string_view> token, std::string_view peer = "10.0.0.1") {
    Result<Identity> id = auth_->Authenticate(peer, token);
    return id.ok() ? id->principal->name : id.status().ToString();
  }
  double Failures(std::string_view reason) const {
    for (const MetricFamily& f : metrics_.Families()) {
      if (f.name != "idem_auth_failures_total") continue;
      for (const MetricSample& s : f.samples) {
        if (s.labels.at(0).second == reason) return s.value;
      }
    }
    return -1;
  }
  std::string Field(const LogRecord& r, const std::string& key) const {
    for (const LogField& f : r.fields) {
      if (f.key == key) return std::get<std::string>(f.value);
    }
    return "";
  }

  testing::CredentialsFile file_;
  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>(0);
  ServerMetrics metrics_;
  std::vector<LogRecord> logged_;
  std::unique_ptr<Authenticator> auth_;
};

TEST_F(AuthenticatorTest, AValidTokenIsItsPrincipal) {
  EXPECT_EQ("checkout", Who(kCheckoutToken));
  EXPECT_EQ("admin", Who(kAdminToken));
  EXPECT_EQ(0, Failures("bad_token"));
  EXPECT_TRUE(logged_.empty());
}

TEST_F(AuthenticatorTest, NoTokenWrongTokenAndOverlongTokenAreUnauthenticated) {
  EXPECT_EQ("UNAUTHENTICATED: this server requires a token: --token or IDEM_TOKEN",
            Who(std::nullopt));
  EXPECT_EQ("UNAUTHENTICATED: this server requires a token: --token or IDEM_TOKEN", Who(""));
  EXPECT_EQ("UNAUTHENTICATED: token not accepted", Who("not-the-secret-0123456789"));
  EXPECT_EQ("UNAUTHENTICATED: token not accepted",
            Who(std::string(Credentials::kMaxTokenBytes + 1, 'x')));
  // A valid secret with a byte more is not that secret.
  EXPECT_EQ("UNAUTHENTICATED: token not accepted", Who(kAdminToken + "x"));
  EXPECT_EQ(2, Failures("no_token"));
  EXPECT_EQ(3, Failures("bad_token"));
  ASSERT_EQ(5u, logged_.size());
  EXPECT_EQ("auth_failed", logged_[0].event);
  EXPECT_EQ("10.0.0.1", Field(logged_[0], "peer"));
  EXPECT_EQ("no_token", Field(logged_[0], "reason"));
  EXPECT_EQ("bad_token", Field(logged_[2], "reason"));
}

TEST_F(AuthenticatorTest, PastTheLimitAPeerIsRefusedEvenWithAGoodTokenUntilTheMinuteHasPassed) {
  Open(3);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ("UNAUTHENTICATED: token not accepted", Who("wrong-token-0123456789"));
  const std::string refused = Who(kAdminToken);
  EXPECT_NE(std::string::npos, refused.find("UNAUTHENTICATED: too many failed attempts"))
      << refused;
  EXPECT_EQ(1, Failures("rate_limited"));
  EXPECT_EQ("rate_limited", Field(logged_.back(), "reason"));
  EXPECT_EQ("admin", Who(kAdminToken, "10.0.0.2"));  // another address
  clock_->Advance(FailureLimiter::kWindowMs);
  EXPECT_EQ("admin", Who(kAdminToken));
}

TEST_F(AuthenticatorTest, AReloadAddsAPrincipalForTheNextAuthentication) {
  const std::string token = "newcomer-secret-0123456789";
  EXPECT_EQ("UNAUTHENTICATED: token not accepted", Who(token));
  file_.Write(testing::CredentialsFile::DefaultPrincipals() + "newcomer " + token +
              " orders:read\n");
  const uint64_t before = auth_->generation();
  ASSERT_OK(auth_->Reload());
  EXPECT_EQ(before + 1, auth_->generation());
  EXPECT_EQ("newcomer", Who(token));
}

TEST_F(AuthenticatorTest, AReloadOfABadFileKeepsTheCredentialsAndSaysWhere) {
  file_.WriteRaw("admin sha256$nothex$nothex *:read\n");
  const uint64_t before = auth_->generation();
  Status s = auth_->Reload();
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find(file_.path() + ":1")) << s.ToString();
  EXPECT_EQ(before, auth_->generation());
  EXPECT_EQ("checkout", Who(kCheckoutToken));
}

TEST_F(AuthenticatorTest, RecheckRefreshesTheGrantsOfAPrincipalStillThere) {
  Result<Identity> id = auth_->Authenticate("10.0.0.1", kReaderToken);
  ASSERT_OK(id);
  ASSERT_OK(auth_->Recheck(&*id, "10.0.0.1"));  // nothing changed
  EXPECT_FALSE(id->principal->Allows("payments", Permission::kWrite));
  // Same secret, more grants: the file is rewritten with a new salt, so the hash is the reader's
  // old one copied over.
  const std::string old_hash = id->principal->secret_hash;
  file_.WriteRaw("reader " + old_hash + " payments:read,write\n");
  ASSERT_OK(auth_->Reload());
  ASSERT_OK(auth_->Recheck(&*id, "10.0.0.1"));
  EXPECT_TRUE(id->principal->Allows("payments", Permission::kWrite));
  EXPECT_EQ(auth_->generation(), id->generation);
}

TEST_F(AuthenticatorTest, RecheckRevokesAPrincipalRemovedOrWithANewSecret) {
  Result<Identity> reader = auth_->Authenticate("10.0.0.1", kReaderToken);
  Result<Identity> checkout = auth_->Authenticate("10.0.0.1", kCheckoutToken);
  ASSERT_OK(reader);
  ASSERT_OK(checkout);
  // reader is gone; checkout has the same secret, hashed again (a new salt: a new hash).
  file_.Write("admin " + kAdminToken + " *:admin\ncheckout " + kCheckoutToken + " payments:read\n");
  ASSERT_OK(auth_->Reload());
  EXPECT_EQ("UNAUTHENTICATED: credentials of 'reader' were revoked",
            auth_->Recheck(&*reader, "10.0.0.1").ToString());
  EXPECT_EQ("UNAUTHENTICATED: credentials of 'checkout' were revoked",
            auth_->Recheck(&*checkout, "10.0.0.1").ToString());
  EXPECT_EQ(2, Failures("revoked"));
  EXPECT_EQ("reader", Field(logged_[0], "principal"));
  // Revocations are not the peer's failed attempts.
  EXPECT_EQ("checkout", Who(kCheckoutToken));
}

TEST_F(AuthenticatorTest, OpenRefusesAFileThatDoesNotParseNamingItsLine) {
  file_.WriteRaw("# comment\nadmin sha256$00$00 *:fly\n");
  Authenticator::Options options;
  options.auth_file = file_.path();
  auto auth = Authenticator::Open(options, clock_, nullptr, nullptr);
  ASSERT_FALSE(auth.ok());
  EXPECT_NE(std::string::npos, auth.status().message().find(file_.path() + ":2"))
      << auth.status().ToString();
  options.auth_file = file_.path() + ".missing";
  EXPECT_TRUE(Authenticator::Open(options, clock_, nullptr, nullptr).status().IsIOError());
  options.auth_file = file_.path();
  options.failures_per_minute = 0;
  file_.Write(testing::CredentialsFile::DefaultPrincipals());
  EXPECT_TRUE(Authenticator::Open(options, clock_, nullptr, nullptr).status().IsInvalidArgument());
}

}  // namespace
}  // namespace idem
