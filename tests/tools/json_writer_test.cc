// JSON text for the tools: what counts as valid UTF-8 (and so can be printed as a JSON string
// without loss), and how other bytes are escaped.
#include "json_writer.h"

#include <gtest/gtest.h>

namespace idem {
namespace {

TEST(JsonWriter, ValidUtf8IsRfc3629) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("plain ASCII \x01\x7f"));
  EXPECT_TRUE(IsValidUtf8(std::string_view("nul\0inside", 10)));
  EXPECT_TRUE(IsValidUtf8("\xc3\xbf\xc3\xbe"));   // "ÿþ" as text
  EXPECT_TRUE(IsValidUtf8("\xe2\x82\xac"));       // U+20AC
  EXPECT_TRUE(IsValidUtf8("\xed\x9f\xbf"));       // U+D7FF, the last before the surrogates
  EXPECT_TRUE(IsValidUtf8("\xf0\x9f\x98\x80"));   // U+1F600
  EXPECT_TRUE(IsValidUtf8("\xf4\x8f\xbf\xbf"));   // U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xff\xfe"));          // the bytes "ÿþ" would be in Latin-1
  EXPECT_FALSE(IsValidUtf8("\x80"));              // a continuation byte alone
  EXPECT_FALSE(IsValidUtf8("\xc3"));              // cut short
  EXPECT_FALSE(IsValidUtf8("\xe2\x82"));          // cut short
  EXPECT_FALSE(IsValidUtf8("\xc0\x80"));          // overlong NUL
  EXPECT_FALSE(IsValidUtf8("\xc1\xbf"));          // overlong
  EXPECT_FALSE(IsValidUtf8("\xe0\x9f\xbf"));      // overlong 3-byte
  EXPECT_FALSE(IsValidUtf8("\xf0\x8f\xbf\xbf"));  // overlong 4-byte
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));      // U+D800, a surrogate
  EXPECT_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xf5\x80\x80\x80"));  // above U+10FFFF
}

TEST(JsonWriter, QuoteKeepsUtf8AndEscapesTheRest) {
  EXPECT_EQ("\"h\xc3\xa9llo\"", JsonQuote("h\xc3\xa9llo"));
  EXPECT_EQ("\"a\\\"b\\n\\u0001\"", JsonQuote("a\"b\n\x01"));
  EXPECT_EQ("\"\\u00ed\\u00a0\\u0080\"", JsonQuote("\xed\xa0\x80"));  // never invalid JSON
}

TEST(JsonWriter, QuotedSizeIsTheQuotedTextsSize) {
  for (std::string_view s :
       {std::string_view(""), std::string_view("plain"), std::string_view("h\xc3\xa9llo"),
        std::string_view("a\"b\\c\n\r\t"), std::string_view("\x01\x1f\x7f\xff\xed\xa0\x80", 7),
        std::string_view("\0\xf0\x9f\x98\x80", 5)}) {
    EXPECT_EQ(JsonQuote(s).size(), JsonQuotedSize(s)) << JsonQuote(s);
  }
}

}  // namespace
}  // namespace idem
