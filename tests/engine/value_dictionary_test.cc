// Dictionary compression of stored values (engine/src/value_dictionary.h): what is compressed
// comes back as it was, a header's length is checked before anything is allocated, and what is
// not a compressed value or a dictionary is Corruption.
#include "value_dictionary.h"

#include <random>
#include <string>

#include <gtest/gtest.h>

namespace idem {
namespace {

std::string Record(int i) {
  return "{\"ref\":\"order-" + std::to_string(i * 7919) +
         "\",\"code\":201,\"status\":\"SUCCEEDED\",\"amount\":" + std::to_string(i % 1000) +
         ",\"body\":\"accepted for settlement\"}";
}

std::shared_ptr<const ValueDictionary> Trained(size_t samples = 1024) {
  std::deque<std::string> s;
  for (size_t i = 0; i < samples; ++i) s.push_back(Record(static_cast<int>(i)));
  Result<std::shared_ptr<const ValueDictionary>> d = ValueDictionary::Train(s, 4096);
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  return d.ok() ? *d : nullptr;
}

TEST(ValueDictionaryTest, RecordsShapedAlikeCompressToAFractionAndComeBack) {
  auto dictionary = Trained();
  ASSERT_NE(nullptr, dictionary);
  EXPECT_LE(dictionary->bytes().size(), 4096u);
  size_t raw = 0, stored = 0;
  std::string compressed, back;
  for (int i = 5000; i < 5200; ++i) {
    const std::string value = Record(i);
    ASSERT_TRUE(dictionary->Compress(value, &compressed)) << i;
    raw += value.size();
    stored += compressed.size();
    ASSERT_TRUE(dictionary->Decompress(compressed, value.size(), &back).ok());
    ASSERT_EQ(value, back);
  }
  EXPECT_LT(stored * 3, raw) << stored << " of " << raw;

  // A dictionary loaded from its bytes (a segment's header) reads what the trained one wrote.
  Result<std::shared_ptr<const ValueDictionary>> loaded =
      ValueDictionary::Load(dictionary->bytes());
  ASSERT_TRUE(loaded.ok());
  ASSERT_TRUE(dictionary->Compress(Record(7), &compressed));
  ASSERT_TRUE((*loaded)->Decompress(compressed, 1 << 20, &back).ok());
  EXPECT_EQ(Record(7), back);
}

TEST(ValueDictionaryTest, ShortAndIncompressibleValuesAreStoredAsGiven) {
  auto dictionary = Trained();
  ASSERT_NE(nullptr, dictionary);
  std::string out;
  EXPECT_FALSE(dictionary->Compress(std::string(ValueDictionary::kMinValueBytes - 1, 'a'), &out));
  std::mt19937_64 rng(3);
  std::string noise(200, '\0');
  for (char& c : noise) c = static_cast<char>(rng());
  EXPECT_FALSE(dictionary->Compress(noise, &out));
}

TEST(ValueDictionaryTest, WhatDoesNotDecompressWithinItsLimitIsCorruption) {
  auto dictionary = Trained();
  ASSERT_NE(nullptr, dictionary);
  std::string compressed, back;
  const std::string value = Record(42);
  ASSERT_TRUE(dictionary->Compress(value, &compressed));
  // The header's length, checked before anything is allocated.
  Status over = dictionary->Decompress(compressed, value.size() - 1, &back);
  EXPECT_TRUE(over.IsCorruption());
  EXPECT_NE(std::string::npos, over.message().find("more than")) << over.ToString();
  EXPECT_TRUE(dictionary->Decompress(compressed.substr(0, compressed.size() - 3), 1 << 20, &back)
                  .IsCorruption());
  EXPECT_TRUE(dictionary->Decompress("", 1 << 20, &back).IsCorruption());
  EXPECT_TRUE(dictionary->Decompress(std::string(40, '\xff'), 1 << 20, &back).IsCorruption());
}

TEST(ValueDictionaryTest, OnlyAZstdDictionaryLoads) {
  EXPECT_TRUE(ValueDictionary::Load("").status().IsCorruption());
  EXPECT_TRUE(ValueDictionary::Load(std::string(1000, 'x')).status().IsCorruption());
  EXPECT_TRUE(ValueDictionary::Load(std::string(ValueDictionary::kMaxBytes + 1, 'x'))
                  .status()
                  .IsCorruption());
  // Too few samples to train on: an error, not a dictionary.
  std::deque<std::string> few = {Record(1), Record(2)};
  EXPECT_TRUE(ValueDictionary::Train(few, 4096).status().IsInvalidArgument());
}

TEST(ValueSamplerTest, KeepsOneInFourOfTheLatestValuesLongEnoughToCompress) {
  ValueSampler sampler(64);
  sampler.Offer("short");  // not counted
  for (int i = 0; i < 16; ++i) sampler.Offer(Record(i));
  EXPECT_EQ(16u, sampler.offered());
  ASSERT_EQ(4u, sampler.samples().size());
  EXPECT_EQ(Record(0), sampler.samples().front());
  EXPECT_EQ(Record(12), sampler.samples().back());
  EXPECT_TRUE(sampler.ready());  // 64 / 16
  for (int i = 16; i < 1000; ++i) sampler.Offer(Record(i));
  ASSERT_EQ(64u, sampler.samples().size());  // the oldest went
  EXPECT_EQ(Record(996), sampler.samples().back());
  sampler.Offer(std::string(5000, 'x'));
  sampler.Offer(std::string(5000, 'x'));
  sampler.Offer(std::string(5000, 'x'));
  sampler.Offer(std::string(5000, 'y'));
  EXPECT_EQ(ValueSampler::kMaxSampleBytes, sampler.samples().back().size());
  EXPECT_TRUE(sampler.Outgrew(16));
  EXPECT_FALSE(sampler.Outgrew(17));
}

}  // namespace
}  // namespace idem
