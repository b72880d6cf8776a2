// How a token writes its 128 random bits: 22 base64url digits, most significant first, the first
// of them A-D, so a token never starts with '-'.
#include "token.h"

#include <array>
#include <set>
#include <string>

#include <gtest/gtest.h>

namespace idem {
namespace {

using Bits = std::array<uint8_t, kTokenRandomBytes>;

std::string Encode(const Bits& bits) { return EncodeToken(bits); }

TEST(Token, WritesTheBitsAsOneNumberMostSignificantDigitFirst) {
  Bits bits{};
  EXPECT_EQ(std::string(22, 'A'), Encode(bits));
  bits.back() = 0x01;
  EXPECT_EQ(std::string(21, 'A') + "B", Encode(bits));  // the lowest bit, in the last digit
  bits = Bits{0x80};
  EXPECT_EQ("C" + std::string(21, 'A'), Encode(bits));  // the top bit, in the first digit
  bits.fill(0xff);
  EXPECT_EQ("D" + std::string(21, '_'), Encode(bits));
}

// The first digit depends on the first byte only: every first byte is tried.
TEST(Token, TheFirstDigitIsAToDSoNeverADash) {
  for (int first = 0; first <= 0xff; ++first) {
    Bits bits;
    bits.fill(0xff);
    bits.front() = static_cast<uint8_t>(first);
    const std::string token = Encode(bits);
    ASSERT_EQ(kTokenBytes, token.size());
    EXPECT_NE(std::string_view::npos, std::string_view("ABCD").find(token.front()))
        << "first byte " << first << ": " << token;
  }
}

// No bit is lost: each of the 128 bits alone gives its own token.
TEST(Token, EveryBitCounts) {
  std::set<std::string> tokens = {Encode(Bits{})};
  for (size_t bit = 0; bit < kTokenRandomBytes * 8; ++bit) {
    Bits bits{};
    bits[bit / 8] = static_cast<uint8_t>(0x80 >> (bit % 8));
    tokens.insert(Encode(bits));
  }
  EXPECT_EQ(kTokenRandomBytes * 8 + 1, tokens.size());
}

}  // namespace
}  // namespace idem
