#include "frame_parser.h"

#include <algorithm>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace idem {
namespace {

using State = FrameParser::State;

std::vector<uint8_t> Framed(const std::vector<uint8_t>& body) {
  uint32_t n = static_cast<uint32_t>(body.size());
  std::vector<uint8_t> out(4 + body.size());
  out[0] = uint8_t(n);
  out[1] = uint8_t(n >> 8);
  out[2] = uint8_t(n >> 16);
  out[3] = uint8_t(n >> 24);
  std::copy(body.begin(), body.end(), out.begin() + 4);
  return out;
}

TEST(FrameParserTest, WholeFrameInOneFeed) {
  FrameParser parser(1024);
  std::vector<uint8_t> bytes = Framed({1, 2, 3});
  size_t consumed = 0;
  ASSERT_EQ(State::kComplete, parser.Feed(bytes.data(), bytes.size(), &consumed));
  EXPECT_EQ(7u, consumed);
  EXPECT_EQ((std::vector<uint8_t>{1, 2, 3}), parser.TakeFrame());
}

TEST(FrameParserTest, ByteByByteNeedsMoreUntilTheLastByte) {
  FrameParser parser(1024);
  std::vector<uint8_t> bytes = Framed({9, 8, 7, 6, 5});
  for (size_t i = 0; i + 1 < bytes.size(); ++i) {
    size_t consumed = 0;
    ASSERT_EQ(State::kNeedMore, parser.Feed(&bytes[i], 1, &consumed)) << "byte " << i;
    EXPECT_EQ(1u, consumed);
  }
  size_t consumed = 0;
  ASSERT_EQ(State::kComplete, parser.Feed(&bytes.back(), 1, &consumed));
  EXPECT_EQ((std::vector<uint8_t>{9, 8, 7, 6, 5}), parser.TakeFrame());
}

TEST(FrameParserTest, StopsAtTheEndOfTheFirstFrame) {
  FrameParser parser(1024);
  std::vector<uint8_t> bytes = Framed({1});
  std::vector<uint8_t> second = Framed({2, 2});
  bytes.insert(bytes.end(), second.begin(), second.end());
  size_t consumed = 0;
  ASSERT_EQ(State::kComplete, parser.Feed(bytes.data(), bytes.size(), &consumed));
  EXPECT_EQ(5u, consumed);
  EXPECT_EQ(std::vector<uint8_t>{1}, parser.TakeFrame());
  size_t more = 0;
  ASSERT_EQ(State::kComplete, parser.Feed(bytes.data() + consumed, bytes.size() - consumed, &more));
  EXPECT_EQ((std::vector<uint8_t>{2, 2}), parser.TakeFrame());
}

TEST(FrameParserTest, LengthAboveTheLimitIsBadBeforeAnyBodyArrives) {
  FrameParser parser(100);
  uint8_t prefix[4] = {0xff, 0xff, 0xff, 0x7f};  // ~2 GiB: must not be allocated
  size_t consumed = 0;
  ASSERT_EQ(State::kBad, parser.Feed(prefix, 4, &consumed));
  EXPECT_EQ(0x7fffffffu, parser.bad_length());
  uint8_t more = 0;
  EXPECT_EQ(State::kBad, parser.Feed(&more, 1, &consumed));  // stays bad
}

TEST(FrameParserTest, LengthAtTheLimitIsAccepted) {
  FrameParser parser(5);
  std::vector<uint8_t> bytes = Framed({1, 2, 3, 4, 5});
  size_t consumed = 0;
  EXPECT_EQ(State::kComplete, parser.Feed(bytes.data(), bytes.size(), &consumed));
}

TEST(FrameParserTest, ZeroLengthIsBad) {
  FrameParser parser(100);
  uint8_t prefix[4] = {0, 0, 0, 0};
  size_t consumed = 0;
  EXPECT_EQ(State::kBad, parser.Feed(prefix, 4, &consumed));
}

// The client's parser outlives a connection: a new stream must not start inside the old one's
// partial frame, nor stay bad.
TEST(FrameParserTest, ResetStartsANewStream) {
  FrameParser parser(1024);
  std::vector<uint8_t> partial = Framed({1, 2, 3, 4});
  size_t consumed = 0;
  ASSERT_EQ(State::kNeedMore, parser.Feed(partial.data(), 6, &consumed));
  parser.Reset();
  std::vector<uint8_t> next = Framed({5, 6});
  ASSERT_EQ(State::kComplete, parser.Feed(next.data(), next.size(), &consumed));
  EXPECT_EQ((std::vector<uint8_t>{5, 6}), parser.TakeFrame());

  const uint8_t zero_length[4] = {0, 0, 0, 0};
  ASSERT_EQ(State::kBad, parser.Feed(zero_length, 4, &consumed));
  parser.Reset();
  ASSERT_EQ(State::kComplete, parser.Feed(next.data(), next.size(), &consumed));
  EXPECT_EQ((std::vector<uint8_t>{5, 6}), parser.TakeFrame());
}

TEST(FrameParserTest, RandomSplitsReassembleEveryFrame) {
  std::mt19937 rng(7);
  std::vector<std::vector<uint8_t>> frames;
  std::vector<uint8_t> stream;
  for (int i = 0; i < 200; ++i) {
    std::vector<uint8_t> body(1 + rng() % 300);
    for (auto& b : body) b = static_cast<uint8_t>(rng());
    std::vector<uint8_t> framed = Framed(body);
    stream.insert(stream.end(), framed.begin(), framed.end());
    frames.push_back(std::move(body));
  }
  FrameParser parser(300);
  std::vector<std::vector<uint8_t>> got;
  size_t pos = 0;
  while (pos < stream.size()) {
    size_t chunk = std::min<size_t>(1 + rng() % 64, stream.size() - pos);
    size_t offset = 0;
    while (offset < chunk) {
      size_t consumed = 0;
      State s = parser.Feed(stream.data() + pos + offset, chunk - offset, &consumed);
      ASSERT_NE(State::kBad, s);
      offset += consumed;
      if (s == State::kComplete) got.push_back(parser.TakeFrame());
    }
    pos += chunk;
  }
  EXPECT_EQ(frames, got);
}

}  // namespace
}  // namespace idem
