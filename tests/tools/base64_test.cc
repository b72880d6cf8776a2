// Base64 as RFC 4648 defines it: its test vectors, and a strict decoder that names where the
// text goes wrong.
#include "base64.h"

#include <gtest/gtest.h>

namespace idem {
namespace {

std::string DecodeError(std::string_view text) {
  Result<std::string> r = Base64Decode(text);
  return r.ok() ? "decoded" : r.status().message();
}

// RFC 4648 section 10.
TEST(Base64, Rfc4648TestVectors) {
  const std::pair<std::string_view, std::string_view> vectors[] = {
      {"", ""},
      {"f", "Zg=="},
      {"fo", "Zm8="},
      {"foo", "Zm9v"},
      {"foob", "Zm9vYg=="},
      {"fooba", "Zm9vYmE="},
      {"foobar", "Zm9vYmFy"},
  };
  for (const auto& [bytes, text] : vectors) {
    EXPECT_EQ(text, Base64Encode(bytes)) << bytes;
    Result<std::string> decoded = Base64Decode(text);
    ASSERT_TRUE(decoded.ok()) << text << ": " << decoded.status().ToString();
    EXPECT_EQ(bytes, *decoded) << text;
  }
}

TEST(Base64, EveryByteValueAndLengthRoundTrips) {
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes += static_cast<char>(255 - i);
  for (size_t n = 0; n <= bytes.size(); ++n) {
    const std::string_view prefix = std::string_view(bytes).substr(0, n);
    const std::string text = Base64Encode(prefix);
    EXPECT_EQ((n + 2) / 3 * 4, text.size());
    Result<std::string> decoded = Base64Decode(text);
    ASSERT_TRUE(decoded.ok()) << n << ": " << decoded.status().ToString();
    EXPECT_EQ(prefix, *decoded) << n;
  }
  EXPECT_EQ("//79", Base64Encode("\xff\xfe\xfd"));  // the last two letters of the alphabet
  EXPECT_EQ("+/+/", Base64Encode("\xfb\xff\xbf"));
}

TEST(Base64, PaddingMayBeLeftOut) {
  EXPECT_EQ("f", *Base64Decode("Zg"));
  EXPECT_EQ("fo", *Base64Decode("Zm8"));
  EXPECT_EQ("fooba", *Base64Decode("Zm9vYmE"));
}

TEST(Base64, RejectsWhatIsNotBase64NamingThePosition) {
  EXPECT_EQ("not base64: '!' at character 3", DecodeError("Zm!v"));
  EXPECT_EQ("not base64: byte 0x20 at character 5", DecodeError("Zm9v Zm9v"));
  EXPECT_EQ("not base64: byte 0x0a at character 5", DecodeError("Zm9v\nZm9v"));
  EXPECT_EQ("not base64: '-' at character 1", DecodeError("-_8="));  // base64url is not accepted
  EXPECT_EQ("not base64: '=' before the end at character 3", DecodeError("Zg=v"));
  EXPECT_EQ("not base64: '=' before the end at character 3", DecodeError("Zg==="));
  EXPECT_EQ("not base64: padding on a text whose length is not a multiple of 4 at character 3",
            DecodeError("Zg="));
  EXPECT_EQ("not base64: a lone last character (no length ends so) at character 5",
            DecodeError("Zm9vY"));
  // "Zh==" would also decode to "f" if the unused bits were ignored: one encoding per bytes.
  EXPECT_EQ("not base64: 'h' with unused bits set (not canonical) at character 2",
            DecodeError("Zh=="));
  EXPECT_EQ("not base64: '9' with unused bits set (not canonical) at character 3",
            DecodeError("Zm9="));
}

}  // namespace
}  // namespace idem
