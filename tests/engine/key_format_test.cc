// KeyFormat: the spec a namespace's key rule is written in (EngineOptions::key_formats and
// idemstored --key-format), what it admits, and how it describes itself in refusals.
#include <initializer_list>
#include <string>

#include <gtest/gtest.h>

#include "idem/engine.h"
#include "idem/options.h"
#include "support/temp_dir.h"

namespace idem {
namespace {

// The rule in words, or the parse error's message.
std::string Parsed(std::string_view spec) {
  Result<KeyFormat> f = KeyFormat::Parse(spec);
  return f.ok() ? f->Describe() : f.status().message();
}

// For each key, '+' if the rule `spec` admits it, '-' if not.
std::string Verdicts(std::string_view spec, std::initializer_list<std::string_view> keys) {
  Result<KeyFormat> f = KeyFormat::Parse(spec);
  EXPECT_TRUE(f.ok()) << spec << ": " << f.status().ToString();
  std::string out;
  for (std::string_view key : keys) out += f.ok() && f->Admits(key) ? '+' : '-';
  return out;
}

TEST(KeyFormat, PartsAreOptionalAndInAnyOrder) {
  EXPECT_EQ("16..64 bytes of [A-Za-z0-9_-]", Parsed("min=16,max=64,chars=[A-Za-z0-9_-]"));
  EXPECT_EQ("16..64 bytes of [A-Za-z0-9_-]", Parsed("chars=[A-Za-z0-9_-],max=64,min=16"));
  EXPECT_EQ("at least 16 bytes", Parsed("min=16"));
  EXPECT_EQ("1..40 bytes", Parsed("max=40"));
  EXPECT_EQ("at least 1 byte of [0-9]", Parsed("chars=[0-9]"));
  EXPECT_EQ(
      "a UUID: 36 bytes, 8-4-4-4-12 lowercase hex digits (e.g. "
      "123e4567-e89b-12d3-a456-426614174000)",
      Parsed("uuid"));
}

TEST(KeyFormat, ASetHoldsRangesAndLiteralsIncludingCommasAndADashAtEitherEnd) {
  EXPECT_EQ("+-", Verdicts("chars=[a-c,.]", {"a,b.c", "abd"}));
  EXPECT_EQ("++-", Verdicts("chars=[-a]", {"-a-", "a", "b"}));
  EXPECT_EQ("+-", Verdicts("chars=[a-]", {"a-", "b"}));
  EXPECT_EQ("-", Verdicts("chars=[a-c]", {"-"}));
  EXPECT_EQ("+--", Verdicts("min=2,chars=[A-Za-z0-9_-],max=4", {"aZ_-", "aZ_-x", "a"}));
  EXPECT_EQ("-", Verdicts("chars=[ -~]", {"caf\xc3\xa9"}));            // printable ASCII only
  EXPECT_EQ("+", Verdicts("max=3", {std::string_view("\0\xff", 2)}));  // no set: any byte
}

TEST(KeyFormat, UuidIsTheLowercaseCanonicalForm) {
  EXPECT_EQ(
      "+-----",
      Verdicts("uuid",
               {"123e4567-e89b-12d3-a456-426614174000", "123E4567-E89B-12D3-A456-426614174000",
                "123e4567e89b12d3a456426614174000", "{123e4567-e89b-12d3-a456-426614174000}",
                "123e4567-e89b-12d3-a456_426614174000", "123e4567-e89b-12d3-a456-42661417400g"}));
}

TEST(KeyFormat, BadSpecsAreRefusedNamingTheRule) {
  const std::string kHow =
      "; expected \"uuid\" or min=N,max=N,chars=[SET] (each part optional), e.g. "
      "min=16,max=64,chars=[A-Za-z0-9_-]";
  EXPECT_EQ("key format: empty" + kHow, Parsed(""));
  EXPECT_EQ("key format: min=0: keys are at least 1 byte (leave min out for 1)" + kHow,
            Parsed("min=0"));
  EXPECT_EQ("key format: max=8 is below min=16" + kHow, Parsed("min=16,max=8"));
  EXPECT_EQ("key format: min takes a number of bytes, not 'x'" + kHow, Parsed("min=x"));
  EXPECT_EQ("key format: max takes a number of bytes, not ''" + kHow, Parsed("max="));
  EXPECT_EQ("key format: unknown part 'length=5'" + kHow, Parsed("length=5"));
  EXPECT_EQ("key format: uuid is a format of its own: give it alone" + kHow, Parsed("uuid,min=36"));
  EXPECT_EQ("key format: chars takes a set in brackets, like chars=[A-Za-z0-9_-]" + kHow,
            Parsed("chars=abc"));
  EXPECT_EQ("key format: chars=[ has no closing ]" + kHow, Parsed("chars=[abc"));
  EXPECT_EQ("key format: chars=[] allows nothing" + kHow, Parsed("chars=[]"));
  EXPECT_EQ("key format: chars=[z-a]: range z-a runs backwards" + kHow, Parsed("chars=[z-a]"));
  EXPECT_EQ(
      "key format: chars=[^a]: '^' is not accepted in a set (printable ASCII other than ] "
      "\\ ^)" +
          kHow,
      Parsed("chars=[^a]"));
  EXPECT_EQ("key format: chars given twice" + kHow, Parsed("chars=[a],chars=[b]"));
  EXPECT_EQ("key format: a part is empty" + kHow, Parsed("min=4,"));
  EXPECT_EQ("key format: 'x' follows chars=[...]" + kHow, Parsed("chars=[a]x"));
}

TEST(KeyFormat, OpenRefusesARuleNoKeyWithinTheLimitsCouldMeet) {
  testing::TempDir dir;
  EngineOptions options;
  options.key_formats["pay"] = *KeyFormat::Parse("max=600");
  Result<std::unique_ptr<Engine>> engine = Engine::Open(dir.Sub("db"), options);
  ASSERT_TRUE(engine.status().IsInvalidArgument()) << engine.status().ToString();
  EXPECT_EQ("key format of 'pay' (1..600 bytes) exceeds max_key_bytes 512",
            engine.status().message());
  options.key_formats.clear();
  options.key_formats["bad ns"] = *KeyFormat::Parse("uuid");
  EXPECT_TRUE(Engine::Open(dir.Sub("db"), options).status().IsInvalidArgument());
  options.key_formats.clear();
  options.key_formats["pay"] = *KeyFormat::Parse("max=512");
  EXPECT_TRUE(Engine::Open(dir.Sub("db"), options).ok());
}

}  // namespace
}  // namespace idem
