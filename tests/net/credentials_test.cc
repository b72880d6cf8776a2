// Credentials: the --auth-file format line by line, what a grant covers, and secret hashing.
#include "credentials.h"

#include <sys/stat.h>

#include <cctype>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "support/temp_dir.h"

namespace idem {
namespace {

// Hashes of fixed secrets, made once: every line below needs a well-formed one.
const std::string& HashOf(const std::string& secret) {
  static auto* hashes = new std::map<std::string, std::string>();
  auto [it, inserted] = hashes->try_emplace(secret);
  if (inserted) it->second = HashSecret(secret).value();
  return it->second;
}

// Hashes made outside idemstore (Python's hashlib) with a zero salt: the format is the one
// documented, SHA-256(SALT bytes || secret), not only consistent with itself.
const std::string kZeroSalt = "sha256$00000000000000000000000000000000$";
const std::string kKnownHash =
    kZeroSalt +
    "c714269629411af80671a81528bea20e523122cfd2668673d898d4244ae5b2f1";  // 0123456789abcdef
const std::string kShortSecretHash =
    kZeroSalt + "48816ea6f3d73d41e576b0ca88ac5d9bbbbd7540bdbe788c2dd66c726cef5ee4";  // short-secret
const std::string kOverlongSecretHash =
    kZeroSalt + "3f30c30bef23bfcf4ade00115157df30a6f5d7721c0ad429e2da7e7d8f26d68b";  // 1025 x 'L'

const std::string kCheckoutSecret = "checkout-secret-0123456789";
const std::string kOpsSecret = "ops-secret-0123456789abcdef";

std::string Line(const std::string& name, const std::string& secret, const std::string& grants) {
  return name + " " + HashOf(secret) + " " + grants + "\n";
}

// The message of parsing `text` (named "auth.conf"), which must fail.
std::string ParseError(const std::string& text) {
  Result<std::shared_ptr<const Credentials>> c = Credentials::Parse(text, "auth.conf");
  EXPECT_FALSE(c.ok()) << "accepted:\n" << text;
  if (c.ok()) return "";
  EXPECT_TRUE(c.status().IsInvalidArgument()) << c.status().ToString();
  return c.status().message();
}

::testing::AssertionResult StartsWith(const std::string& text, const std::string& prefix) {
  if (text.compare(0, prefix.size(), prefix) == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << text << "' does not start with '" << prefix << "'";
}

::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << text << "' does not contain '" << part << "'";
}

Grant GrantOf(const std::string& pattern, uint8_t permissions) { return {pattern, permissions}; }

constexpr uint8_t kRead = static_cast<uint8_t>(Permission::kRead);
constexpr uint8_t kWrite = static_cast<uint8_t>(Permission::kWrite);
constexpr uint8_t kAdmin = static_cast<uint8_t>(Permission::kAdmin);

TEST(CredentialsParse, AGoodFileWithCommentsBlankLinesAndTabs) {
  const std::string text =
      "# name  hash  grants\n\n" +
      Line("checkout", kCheckoutSecret, "payments:read,write  refunds:read   # the shop") +
      "   \t \n" + "ops\t" + HashOf(kOpsSecret) + "\t*:read,write,admin\r\n";
  auto c = Credentials::Parse(text, "auth.conf");
  ASSERT_OK(c);
  ASSERT_EQ(2u, (*c)->principals().size());
  const Principal& checkout = (*c)->principals()[0];
  EXPECT_EQ("checkout", checkout.name);
  EXPECT_EQ(HashOf(kCheckoutSecret), checkout.secret_hash);
  ASSERT_EQ(2u, checkout.grants.size());
  EXPECT_EQ("payments", checkout.grants[0].pattern);
  EXPECT_EQ(kRead | kWrite, checkout.grants[0].permissions);
  EXPECT_EQ("refunds", checkout.grants[1].pattern);
  EXPECT_EQ(kRead, checkout.grants[1].permissions);
  const Principal& ops = (*c)->principals()[1];
  EXPECT_EQ("ops", ops.name);
  ASSERT_EQ(1u, ops.grants.size());
  EXPECT_EQ("*", ops.grants[0].pattern);
  EXPECT_EQ(kRead | kWrite | kAdmin, ops.grants[0].permissions);
  EXPECT_EQ(&checkout, (*c)->Find("checkout"));
  EXPECT_EQ(&ops, (*c)->Find("ops"));
  EXPECT_EQ(nullptr, (*c)->Find("op"));
  EXPECT_EQ(nullptr, (*c)->Find("OPS"));
}

TEST(CredentialsParse, NamesMayUseLettersDigitsDotUnderscoreAndDash) {
  auto c = Credentials::Parse(Line("Svc_1.prod-eu", kOpsSecret, "a:read") +
                                  Line(std::string(64, 'n'), kCheckoutSecret, "a:read"),
                              "auth.conf");
  ASSERT_OK(c);
  EXPECT_EQ("Svc_1.prod-eu", (*c)->principals()[0].name);
}

TEST(CredentialsParse, NamespacesWithColonsSplitAtTheLastColon) {
  auto c =
      Credentials::Parse(Line("svc", kOpsSecret, "tenant:a:read tenant:b.*:write"), "auth.conf");
  ASSERT_OK(c);
  const Principal& p = (*c)->principals()[0];
  EXPECT_EQ("tenant:a", p.grants[0].pattern);
  EXPECT_EQ(kRead, p.grants[0].permissions);
  EXPECT_EQ("tenant:b.*", p.grants[1].pattern);
  EXPECT_EQ(kWrite, p.grants[1].permissions);
}

TEST(CredentialsParse, EachBadLineIsNamedWithItsLineNumber) {
  const std::string good = "# principals\n" + Line("ok", kOpsSecret, "payments:read");  // lines 1-2
  const std::string hash = HashOf(kCheckoutSecret);
  struct Case {
    std::string line, message;
  } cases[] = {
      {"svc\n", "principal 'svc' has no secret hash and no grant"},
      {"svc " + hash + "\n", "principal 'svc' has no grant"},
      {"svc " + hash + "   # payments:read\n", "principal 'svc' has no grant"},
      {"bad/name " + hash + " a:read\n", "principal name 'bad/name': 1 to 64 characters"},
      {std::string(65, 'n') + " " + hash + " a:read\n", "principal name 'nnnn"},
      {"svc sha256$abc a:read\n", "principal 'svc': malformed secret hash"},
      {"svc " + hash + " payments\n", "grant 'payments' has no permissions: NS:PERMS"},
      {"svc " + hash + " payments:\n", "grant 'payments:' gives no permission"},
      {"svc " + hash + " :read\n", "grant ':read' names no namespace"},
      {"svc " + hash + " payments:wirte\n", "unknown permission 'wirte'"},
      {"svc " + hash + " payments:read,,write\n", "unknown permission ''"},
      {"svc " + hash + " payments:Read\n", "unknown permission 'Read'"},
      {"svc " + hash + " payments:read;write\n", "unknown permission 'read;write'"},
      {"svc " + hash + " pay*ments:read\n", "grant 'pay*ments:read': '*' stands alone"},
      {"svc " + hash + " **:read\n", "grant '**:read': '*' stands alone"},
      {"svc " + hash + " tenant-a/*:read\n", "a namespace has only the characters"},
      {"svc " + hash + " " + std::string(256, 'a') + ":read\n", "at most 255 characters"},
  };
  for (const Case& c : cases) {
    const std::string message = ParseError(good + c.line);
    EXPECT_TRUE(StartsWith(message, "auth.conf:3: ")) << c.line;
    EXPECT_TRUE(Contains(message, c.message)) << c.line;
  }
}

TEST(CredentialsParse, AMalformedHashIsRefusedWithoutShowingIt) {
  const std::string salt = kKnownHash.substr(7, 32), digest = kKnownHash.substr(40);
  std::string upper_digest = digest;
  for (char& c : upper_digest) c = static_cast<char>(std::toupper(c));
  for (const std::string& bad : {
           std::string("0123456789abcdef"),                 // the secret, pasted by mistake
           "sha1$" + salt + "$" + digest,                   // another scheme
           "SHA256$" + salt + "$" + digest,                 // the scheme in capitals
           "sha256$" + salt + digest,                       // no separator
           "sha256$" + salt.substr(2) + "$" + digest,       // short salt
           "sha256$" + salt + "$" + digest.substr(1),       // short digest
           "sha256$" + salt + "$" + digest + "00",          // long digest
           "sha256$" + salt + "$" + digest + "$",           // trailing separator
           "sha256$" + salt + "$" + upper_digest,           // upper-case hex
           "sha256$" + salt + "$" + digest.substr(1) + "g"  // not hex
       }) {
    const std::string message = ParseError("svc " + bad + " payments:read\n");
    EXPECT_TRUE(StartsWith(message, "auth.conf:1: principal 'svc': malformed secret hash")) << bad;
    EXPECT_FALSE(Contains(message, bad)) << "the message shows the field: " << message;
    EXPECT_FALSE(SecretMatches("0123456789abcdef", bad)) << bad;
  }
}

TEST(CredentialsParse, ControlCharactersInAnErrorAreEscaped) {
  const std::string message = ParseError("ev\x1b[2Jil " + HashOf(kOpsSecret) + " a:read\n");
  EXPECT_TRUE(Contains(message, "'ev\\x1b[2Jil'")) << message;
}

TEST(CredentialsParse, ADuplicateNameIsRefusedNamingBothLines) {
  const std::string text =
      Line("ops", kOpsSecret, "*:admin") + "\n" + Line("ops", kCheckoutSecret, "payments:read");
  EXPECT_EQ("auth.conf:3: duplicate principal 'ops' (first on line 1)", ParseError(text));
}

TEST(CredentialsParse, TwoPrincipalsWithTheSameHashAreRefused) {
  const std::string text =
      Line("a", kOpsSecret, "payments:read") + Line("b", kOpsSecret, "orders:read");
  const std::string message = ParseError(text);
  EXPECT_TRUE(StartsWith(message, "auth.conf:2: principal 'b' has the same secret hash as line 1"))
      << message;
}

TEST(CredentialsParse, AFileWithoutPrincipalsIsRefused) {
  EXPECT_TRUE(StartsWith(ParseError(""), "auth.conf: no principal"));
  EXPECT_TRUE(StartsWith(ParseError("# nobody yet\n\n  \n"), "auth.conf: no principal"));
}

TEST(CredentialsParse, AtMostMaxPrincipals) {
  // One hash reused would be refused as a duplicate: vary the digest's last byte instead, since
  // the parser checks the hashes' format, not which secret they belong to.
  const std::string base = HashOf(kOpsSecret).substr(0, HashOf(kOpsSecret).size() - 8);
  std::string text;
  char suffix[9];
  for (size_t i = 0; i < Credentials::kMaxPrincipals; ++i) {
    std::snprintf(suffix, sizeof suffix, "%08zx", i);
    text += "p" + std::to_string(i) + " " + base + suffix + " a:read\n";
  }
  auto full = Credentials::Parse(text, "auth.conf");
  ASSERT_OK(full);
  EXPECT_EQ(Credentials::kMaxPrincipals, (*full)->principals().size());
  std::snprintf(suffix, sizeof suffix, "%08zx", Credentials::kMaxPrincipals);
  text += "one-more " + base + suffix + " a:read\n";
  EXPECT_EQ("auth.conf:10001: more than 10000 principals", ParseError(text));
}

TEST(CredentialsParse, TextLargerThanTheLimitIsRefusedBeforeParsing) {
  std::string text = Line("ops", kOpsSecret, "*:admin");
  text.resize(Credentials::kMaxFileBytes, '\n');
  ASSERT_OK(Credentials::Parse(text, "auth.conf"));
  text += "\n";
  EXPECT_EQ("auth.conf: " + std::to_string(Credentials::kMaxFileBytes + 1) +
                " bytes, larger than the limit of " + std::to_string(Credentials::kMaxFileBytes) +
                " bytes",
            ParseError(text));
}

class CredentialsLoad : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_.Sub(name);
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  testing::TempDir dir_;
};

TEST_F(CredentialsLoad, ReadsTheFileAndNamesItInErrors) {
  auto c = Credentials::Load(Write("auth.conf", Line("ops", kOpsSecret, "*:admin")));
  ASSERT_OK(c);
  EXPECT_EQ("ops", (*c)->principals().at(0).name);
  const std::string path = Write("bad.conf", "# header\nops nohash *:admin\n");
  auto bad = Credentials::Load(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(bad.status().IsInvalidArgument());
  EXPECT_TRUE(StartsWith(bad.status().message(), path + ":2: principal 'ops': malformed"))
      << bad.status().message();
}

TEST_F(CredentialsLoad, AMissingFileIsAnIOErrorNamingIt) {
  auto c = Credentials::Load(dir_.Sub("absent.conf"));
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(c.status().IsIOError()) << c.status().ToString();
  EXPECT_TRUE(StartsWith(c.status().message(), dir_.Sub("absent.conf") + ": cannot open: "))
      << c.status().message();
}

TEST_F(CredentialsLoad, ADirectoryOrAFifoIsRefusedWithoutWaiting) {
  auto d = Credentials::Load(dir_.path());
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(dir_.path() + ": not a regular file", d.status().message());
  const std::string fifo = dir_.Sub("fifo");
  ASSERT_EQ(0, ::mkfifo(fifo.c_str(), 0600));
  auto f = Credentials::Load(fifo);  // no writer: a blocking open would hang here
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(fifo + ": not a regular file", f.status().message());
}

TEST_F(CredentialsLoad, AFileLargerThanTheLimitIsRefusedBySize) {
  // Sparse: the size is what stat reports; nothing this large is ever read or allocated.
  const std::string path = Write("huge.conf", "");
  ASSERT_EQ(0, ::truncate(path.c_str(), 1LL << 40));
  auto c = Credentials::Load(path);
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(c.status().IsInvalidArgument());
  EXPECT_EQ(path + ": 1099511627776 bytes, larger than the limit of " +
                std::to_string(Credentials::kMaxFileBytes) + " bytes",
            c.status().message());
}

TEST(Grant, AnExactPatternCoversThatNamespaceOnly) {
  const Grant g = GrantOf("payments", kRead);
  EXPECT_TRUE(g.Covers("payments"));
  EXPECT_FALSE(g.Covers("payments2"));
  EXPECT_FALSE(g.Covers("payments-archive"));
  EXPECT_FALSE(g.Covers("pay"));
  EXPECT_FALSE(g.Covers("Payments"));
  EXPECT_FALSE(g.Covers("xpayments"));
}

TEST(Grant, APrefixCoversTheNamespacesStartingWithIt) {
  const Grant pay = GrantOf("pay*", kRead);
  EXPECT_TRUE(pay.Covers("payments"));
  EXPECT_TRUE(pay.Covers("pay"));
  EXPECT_TRUE(pay.Covers("payroll"));
  EXPECT_FALSE(pay.Covers("pa"));
  EXPECT_FALSE(pay.Covers("repay"));
  const Grant tenant = GrantOf("tenant-a.*", kRead);
  EXPECT_TRUE(tenant.Covers("tenant-a.orders"));
  EXPECT_FALSE(tenant.Covers("tenant-ab.orders"));  // shares characters, not the prefix
  EXPECT_FALSE(tenant.Covers("tenant-a"));
  EXPECT_FALSE(tenant.Covers("tenant-b.orders"));
}

TEST(Grant, StarCoversEveryNamespace) {
  const Grant all = GrantOf("*", kRead);
  for (const char* ns : {"payments", "a", "tenant-a.orders", "x:y"}) EXPECT_TRUE(all.Covers(ns));
}

TEST(Principal, AllowsNeedsAGrantCoveringTheNamespaceWithThePermission) {
  Principal p{
      "checkout",
      HashOf(kCheckoutSecret),
      {GrantOf("payments", kRead | kWrite), GrantOf("refunds", kRead), GrantOf("audit.*", kAdmin)}};
  EXPECT_TRUE(p.Allows("payments", Permission::kRead));
  EXPECT_TRUE(p.Allows("payments", Permission::kWrite));
  EXPECT_FALSE(p.Allows("payments", Permission::kAdmin));
  EXPECT_TRUE(p.Allows("refunds", Permission::kRead));
  EXPECT_FALSE(p.Allows("refunds", Permission::kWrite));  // read-only
  EXPECT_FALSE(p.Allows("orders", Permission::kRead));    // not granted at all
  EXPECT_FALSE(p.Allows("payments2", Permission::kRead));
  EXPECT_TRUE(p.Allows("audit.eu", Permission::kAdmin));
  EXPECT_FALSE(p.Allows("audit.eu", Permission::kRead));  // admin does not imply read
  // Permissions of grants that do not cover the namespace never combine.
  EXPECT_FALSE(p.Allows("refunds", Permission::kAdmin));
}

TEST(Principal, PayStarAllowsPaymentsButPaymentsDoesNotAllowPay) {
  Principal star{"s", "", {GrantOf("pay*", kWrite)}};
  Principal exact{"e", "", {GrantOf("payments", kWrite)}};
  EXPECT_TRUE(star.Allows("payments", Permission::kWrite));
  EXPECT_TRUE(star.Allows("pay", Permission::kWrite));
  EXPECT_TRUE(exact.Allows("payments", Permission::kWrite));
  EXPECT_FALSE(exact.Allows("pay", Permission::kWrite));
  EXPECT_FALSE(exact.Allows("paymentsX", Permission::kWrite));
}

TEST(Principal, AllowsEverywhereNeedsTheStarGrantItself) {
  Principal ops{"ops", "", {GrantOf("*", kRead | kAdmin)}};
  EXPECT_TRUE(ops.AllowsEverywhere(Permission::kAdmin));
  EXPECT_TRUE(ops.AllowsEverywhere(Permission::kRead));
  EXPECT_FALSE(ops.AllowsEverywhere(Permission::kWrite));
  EXPECT_TRUE(ops.Allows("anything", Permission::kAdmin));
  // Admin on every namespace that exists today is not admin on the whole store.
  Principal tenant{"t", "", {GrantOf("a*", kAdmin), GrantOf("tenant*", kAdmin)}};
  EXPECT_FALSE(tenant.AllowsEverywhere(Permission::kAdmin));
  Principal none{"n", "", {GrantOf("payments", kRead)}};
  EXPECT_FALSE(none.AllowsEverywhere(Permission::kRead));
}

TEST(SecretHash, RoundTrip) {
  auto hash = HashSecret(kCheckoutSecret);
  ASSERT_OK(hash);
  // sha256$<32 hex>$<64 hex>, lower case.
  ASSERT_EQ(7u + 32 + 1 + 64, hash->size()) << *hash;
  EXPECT_TRUE(StartsWith(*hash, "sha256$"));
  EXPECT_EQ(39u, hash->find('$', 7)) << *hash;
  EXPECT_EQ(std::string::npos, hash->substr(7, 32).find_first_not_of("0123456789abcdef"));
  EXPECT_EQ(std::string::npos, hash->substr(40).find_first_not_of("0123456789abcdef"));
  EXPECT_TRUE(SecretMatches(kCheckoutSecret, *hash));
}

TEST(SecretHash, AHashMadeElsewhereByTheDocumentedFormulaMatches) {
  EXPECT_TRUE(SecretMatches("0123456789abcdef", kKnownHash));
  EXPECT_FALSE(SecretMatches("0123456789abcdeF", kKnownHash));
  std::string upper = kKnownHash;
  for (char& c : upper) c = static_cast<char>(c == 's' || c == 'h' ? c : std::toupper(c));
  ASSERT_NE(kKnownHash, upper);
  EXPECT_FALSE(SecretMatches("0123456789abcdef", upper)) << "upper-case hex is not the format";
}

TEST(SecretHash, TheSaltIsFreshEachTime) {
  auto a = HashSecret(kCheckoutSecret), b = HashSecret(kCheckoutSecret);
  ASSERT_OK(a);
  ASSERT_OK(b);
  EXPECT_NE(*a, *b);
  EXPECT_NE(a->substr(7, 32), b->substr(7, 32));
  EXPECT_TRUE(SecretMatches(kCheckoutSecret, *a));
  EXPECT_TRUE(SecretMatches(kCheckoutSecret, *b));
}

TEST(SecretHash, AWrongSecretDoesNotMatch) {
  const std::string& hash = HashOf(kCheckoutSecret);
  EXPECT_FALSE(SecretMatches(kOpsSecret, hash));
  EXPECT_FALSE(SecretMatches(kCheckoutSecret + "x", hash));
  EXPECT_FALSE(SecretMatches(kCheckoutSecret.substr(1), hash));
  EXPECT_FALSE(SecretMatches("", hash));
  std::string flipped = kCheckoutSecret;
  flipped.back() ^= 1;
  EXPECT_FALSE(SecretMatches(flipped, hash));
}

TEST(SecretHash, ShortAndOverlongSecretsAreRefused) {
  auto shorter = HashSecret(std::string(kMinSecretBytes - 1, 'x'));
  ASSERT_FALSE(shorter.ok());
  EXPECT_TRUE(shorter.status().IsInvalidArgument());
  EXPECT_TRUE(Contains(shorter.status().message(), "at least 16")) << shorter.status().message();
  EXPECT_FALSE(HashSecret("").ok());
  ASSERT_OK(HashSecret(std::string(kMinSecretBytes, 'x')));
  ASSERT_OK(HashSecret(std::string(Credentials::kMaxTokenBytes, 'x')));
  auto longer = HashSecret(std::string(Credentials::kMaxTokenBytes + 1, 'x'));
  ASSERT_FALSE(longer.ok());
  EXPECT_TRUE(longer.status().IsInvalidArgument());
  EXPECT_TRUE(Contains(longer.status().message(), "at most 1024")) << longer.status().message();
}

TEST(SecretHash, NewSecretsAreBase64UrlWithoutPaddingAndDiffer) {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    const std::string s = NewSecret();
    ASSERT_EQ(43u, s.size()) << s;
    EXPECT_EQ(std::string::npos,
              s.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstu"
                                  "vwxyz0123456789-_"))
        << s;
    EXPECT_TRUE(seen.insert(s).second) << "repeated: " << s;
  }
  const std::string secret = NewSecret();
  auto hash = HashSecret(secret);
  ASSERT_OK(hash);
  EXPECT_TRUE(SecretMatches(secret, *hash));
}

class CredentialsAuthenticate : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = Credentials::Parse(Line("checkout", kCheckoutSecret, "payments:read,write") +
                                    Line("ops", kOpsSecret, "*:read,write,admin"),
                                "auth.conf");
    ASSERT_OK(c);
    credentials_ = *c;
  }
  std::shared_ptr<const Credentials> credentials_;
};

TEST_F(CredentialsAuthenticate, FindsThePrincipalWhoseSecretItIs) {
  const Principal* checkout = credentials_->Authenticate(kCheckoutSecret);
  ASSERT_NE(nullptr, checkout);
  EXPECT_EQ("checkout", checkout->name);
  const Principal* ops = credentials_->Authenticate(kOpsSecret);
  ASSERT_NE(nullptr, ops);
  EXPECT_EQ("ops", ops->name);
}

TEST_F(CredentialsAuthenticate, AWrongTokenMatchesNone) {
  EXPECT_EQ(nullptr, credentials_->Authenticate("not-the-secret-0123456789"));
  EXPECT_EQ(nullptr, credentials_->Authenticate(kCheckoutSecret + " "));
  EXPECT_EQ(nullptr, credentials_->Authenticate(""));
  EXPECT_EQ(nullptr, credentials_->Authenticate(HashOf(kCheckoutSecret)));  // the hash is no token
}

TEST_F(CredentialsAuthenticate, TokensOutsideTheSecretLengthsMatchNone) {
  // A file may hold a hash made by hand of any secret: a token shorter than kMinSecretBytes or
  // longer than kMaxTokenBytes is refused whatever the hashes say.
  const std::string shorter = "short-secret", longer(Credentials::kMaxTokenBytes + 1, 'L');
  ASSERT_TRUE(SecretMatches(shorter, kShortSecretHash));
  ASSERT_TRUE(SecretMatches(longer, kOverlongSecretHash));
  auto c = Credentials::Parse("short " + kShortSecretHash + " a:read\nlong " + kOverlongSecretHash +
                                  " a:read\n" + Line("known", "0123456789abcdef", "a:read"),
                              "auth.conf");
  ASSERT_OK(c);
  EXPECT_EQ(nullptr, (*c)->Authenticate(shorter));
  EXPECT_EQ(nullptr, (*c)->Authenticate(longer));
  const Principal* known = (*c)->Authenticate("0123456789abcdef");  // exactly kMinSecretBytes
  ASSERT_NE(nullptr, known);
  EXPECT_EQ("known", known->name);
}

// docs/security.md's example file is one the server accepts, with the grants it says.
TEST(CredentialsParse, TheDocumentedExampleParses) {
  std::ifstream doc(IDEM_SECURITY_DOC);
  ASSERT_TRUE(doc.good()) << IDEM_SECURITY_DOC;
  std::string text, line;
  bool in_section = false, in_block = false;
  while (std::getline(doc, line)) {
    if (line.starts_with("## ")) in_section = line == "## The credentials file";
    if (!in_section || !line.starts_with("```")) {
      if (in_block) text += line + "\n";
      continue;
    }
    if (in_block) break;  // the section's first block is the example
    in_block = true;
  }
  auto c = Credentials::Parse(text, "docs/security.md");
  ASSERT_OK(c);
  ASSERT_EQ(4u, (*c)->principals().size()) << text;
  const Principal* checkout = (*c)->Find("checkout");
  ASSERT_NE(nullptr, checkout);
  EXPECT_TRUE(checkout->Allows("payments", Permission::kWrite));
  EXPECT_FALSE(checkout->Allows("refunds", Permission::kWrite));
  const Principal* tenant = (*c)->Find("tenant-a");
  ASSERT_NE(nullptr, tenant);
  EXPECT_TRUE(tenant->Allows("tenant-a.orders", Permission::kWrite));
  EXPECT_FALSE(tenant->Allows("tenant-ab.orders", Permission::kRead));
  const Principal* prometheus = (*c)->Find("prometheus");
  ASSERT_NE(nullptr, prometheus);
  EXPECT_TRUE(prometheus->AllowsEverywhere(Permission::kAdmin));
  EXPECT_FALSE(prometheus->Allows("payments", Permission::kRead));
}

}  // namespace
}  // namespace idem
