// The journal's format (engine/src/journal_format.h): entries round-trip, and a scan tells the
// clean end, a torn tail and damage apart, applying only whole entries.
#include "journal_format.h"

#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "crc32c.h"
#include "support/temp_dir.h"

namespace idem::journal {
namespace {

using Tail = SegmentScan::Tail;

struct Seen {
  OpType type;
  int64_t keep_until_ms;
  std::string key;
  std::string value;
  uint64_t offset;
  uint64_t sequence;

  auto Tie() const { return std::tie(type, keep_until_ms, key, value, offset, sequence); }
  bool operator==(const Seen& o) const { return Tie() == o.Tie(); }
  bool operator<(const Seen& o) const { return Tie() < o.Tie(); }
};

// A segment written entry by entry, the way the journal writes one: header, entries back to
// back, zeros to `capacity`. Each entry says the segment was synced up to where it starts.
class SegmentImage {
 public:
  static constexpr uint64_t kSalt = 0x5a175a17;
  explicit SegmentImage(size_t capacity = 4096) {
    bytes_ = EncodeSegmentHeader(SegmentHeader{7, 1'700'000'000'000, 0, kSalt, {}});
    bytes_.resize(capacity, '\0');
  }
  // Appends one entry of `ops`; returns where it starts.
  uint64_t Append(const std::vector<OpView>& ops, uint64_t sequence,
                  std::optional<uint64_t> synced = std::nullopt) {
    EntryBuilder builder;
    for (const OpView& op : ops) EXPECT_TRUE(builder.Add(op).ok());
    const uint64_t at = end_;
    const std::string entry = builder.Finish(EntryStamp{sequence, synced.value_or(at), kSalt});
    bytes_.replace(at, entry.size(), entry);
    starts_.push_back(at);
    end_ += entry.size();
    return at;
  }
  std::string& bytes() { return bytes_; }
  uint64_t end() const { return end_; }
  uint64_t start(size_t entry) const { return starts_.at(entry); }

 private:
  std::string bytes_;
  uint64_t end_ = kSegmentHeaderBytes;
  std::vector<uint64_t> starts_;
};

OpView Put(std::string_view key, std::string_view value, int64_t keep_until = 100) {
  return OpView{OpType::kPut, keep_until, key, value};
}
OpView Delete(std::string_view key, int64_t keep_until = 100) {
  return OpView{OpType::kDelete, keep_until, key, {}};
}

SegmentScan Scan(std::string_view bytes, std::vector<Seen>* seen = nullptr,
                 uint64_t after_sequence = 0) {
  Result<SegmentScan> scan =
      ScanSegment(bytes, after_sequence, [&](const OpView& op, uint64_t offset, uint64_t seq) {
        if (seen != nullptr) {
          seen->push_back(
              {op.type, op.keep_until_ms, std::string(op.key), std::string(op.value), offset, seq});
        }
      });
  EXPECT_TRUE(scan.ok()) << scan.status().ToString();
  return scan.ok() ? *scan : SegmentScan{};
}

TEST(JournalSegmentHeaderTest, RoundTripsAndRejectsWhatIsNotOne) {
  const std::string header = EncodeSegmentHeader(SegmentHeader{42, -5, 1234, 0xfeedf00d, {}});
  ASSERT_EQ(kSegmentHeaderBytes, header.size());
  Result<SegmentHeader> decoded = DecodeSegmentHeader(header);
  ASSERT_OK(decoded);
  EXPECT_EQ(42u, decoded->number);
  EXPECT_EQ(-5, decoded->created_ms);
  EXPECT_EQ(1234u, decoded->after_sequence);
  EXPECT_EQ(0xfeedf00du, decoded->salt);

  EXPECT_TRUE(
      DecodeSegmentHeader(header.substr(0, kSegmentHeaderBytes - 1)).status().IsCorruption());
  EXPECT_NE(std::string::npos,
            DecodeSegmentHeader(std::string(64, '\0')).status().message().find("never written"));
  std::string bad = header;
  bad[0] = 'X';
  EXPECT_NE(std::string::npos, DecodeSegmentHeader(bad).status().message().find("magic"));
  bad = header;
  bad[8] = 4;  // version (1: no dictionary, 3 with one, 2 with one and values compressed alone)
  EXPECT_NE(std::string::npos, DecodeSegmentHeader(bad).status().message().find("version"));
  for (size_t at : {20, 36, 44}) {  // number, after sequence, salt
    bad = header;
    bad[at] ^= 1;
    EXPECT_NE(std::string::npos, DecodeSegmentHeader(bad).status().message().find("checksum"));
  }
  // A scan of a file that is not a segment is an error, not an empty segment.
  EXPECT_TRUE(ScanSegment(bad, 0, nullptr).status().IsCorruption());
}

TEST(JournalEntryTest, OperationsRoundTripAtTheirOffsets) {
  EntryBuilder builder;
  ASSERT_TRUE(builder.Add(Put("k1", "v1", 10)).ok());
  ASSERT_TRUE(builder.Add(Delete("k2", 20)).ok());
  const std::string big(1000, 'x');
  ASSERT_TRUE(builder.Add(Put("k3", big, -1)).ok());
  ASSERT_EQ(3u, builder.ops());
  const std::vector<uint32_t> offsets = builder.offsets();
  const std::string entry = builder.Finish(EntryStamp{9, 0, 0});
  EXPECT_EQ(0u, entry.size() % kAlignment);
  EXPECT_EQ(kEntryHeaderBytes + OpBytes(2, 2) + OpBytes(2, 0) + OpBytes(2, 1000), entry.size());
  EXPECT_EQ(0u, builder.ops());  // empty again

  const std::vector<OpView> expected = {Put("k1", "v1", 10), Delete("k2", 20), Put("k3", big, -1)};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(0u, offsets[i] % kAlignment);
    const std::string_view at = std::string_view(entry).substr(offsets[i]);
    // A reader fetches a prefix, learns the size from it, then decodes exactly that.
    std::optional<size_t> size = PeekOpBytes(at.substr(0, kOpHeaderBytes));
    ASSERT_TRUE(size.has_value());
    Result<OpView> op = DecodeOp(at.substr(0, *size));
    ASSERT_OK(op);
    EXPECT_EQ(expected[i], *op);
    EXPECT_TRUE(DecodeOp(at.substr(0, *size - 1)).status().IsCorruption());
  }
}

TEST(JournalEntryTest, BuilderRefusesWhatTheFormatCannotHold) {
  EntryBuilder builder;
  EXPECT_TRUE(builder.Add(Put("", "v")).IsInvalidArgument());
  EXPECT_TRUE(builder.Add(Put(std::string(kMaxKeyBytes + 1, 'k'), "v")).IsInvalidArgument());
  EXPECT_TRUE(builder.Add(OpView{OpType::kDelete, 0, "k", "v"}).IsInvalidArgument());
  EXPECT_TRUE(builder.Add(OpView{static_cast<OpType>(3), 0, "k", ""}).IsInvalidArgument());
  EXPECT_EQ(0u, builder.ops());
  EXPECT_EQ(kEntryHeaderBytes, builder.bytes());
  EXPECT_TRUE(builder.Add(Put(std::string(kMaxKeyBytes, 'k'), "v")).ok());
}

TEST(JournalEntryTest, DecodeOpRejectsDamageWithoutReadingPastItsInput) {
  EntryBuilder builder;
  ASSERT_TRUE(builder.Add(Put("key", "value")).ok());
  const std::string op = builder.Finish(EntryStamp{1, 0, 0}).substr(kEntryHeaderBytes);
  ASSERT_TRUE(DecodeOp(op).ok());
  EXPECT_FALSE(PeekOpBytes(op.substr(0, kOpHeaderBytes - 1)).has_value());
  for (size_t i = 0; i < kOpHeaderBytes + 8; ++i) {
    std::string bad = op;
    bad[i] ^= 0x10;
    EXPECT_FALSE(DecodeOp(bad).ok()) << "byte " << i;
  }
  // A value length far past the input: cut off, not read.
  std::string huge = op;
  huge[11] = static_cast<char>(0x7f);
  EXPECT_TRUE(DecodeOp(huge).status().IsCorruption());
}

TEST(JournalScanTest, AWholeSegmentIsReadInOrderWithItsOffsets) {
  SegmentImage image;
  image.Append({Put("a", "1", 50), Put("b", "2", 70)}, 5);
  image.Append({Delete("a", 60)}, 6);
  image.Append({Put("c", std::string(300, 'z'), 40)}, 9);
  std::vector<Seen> seen;
  const SegmentScan scan = Scan(image.bytes(), &seen);
  EXPECT_EQ(Tail::kClean, scan.tail);
  EXPECT_EQ(7u, scan.header.number);
  EXPECT_EQ(3u, scan.entries);
  EXPECT_EQ(4u, scan.ops);
  EXPECT_EQ(image.end(), scan.end_offset);
  EXPECT_EQ(5u, scan.first_sequence);
  EXPECT_EQ(9u, scan.last_sequence);
  EXPECT_EQ(70, scan.max_keep_until_ms);
  ASSERT_EQ(4u, seen.size());
  EXPECT_EQ("a", seen[0].key);
  EXPECT_EQ(OpType::kDelete, seen[2].type);
  EXPECT_EQ(9u, seen[3].sequence);
  for (const Seen& s : seen) {  // every offset is where DecodeOp finds that operation
    Result<OpView> op = DecodeOp(std::string_view(image.bytes()).substr(s.offset));
    ASSERT_TRUE(op.ok());
    EXPECT_EQ(s.key, op->key);
  }
  // A segment file cut to its data (no zeros after it) ends cleanly too.
  image.bytes().resize(image.end());
  EXPECT_EQ(Tail::kClean, Scan(image.bytes()).tail);
  // So does an empty one.
  EXPECT_EQ(Tail::kClean, Scan(EncodeSegmentHeader(SegmentHeader{1, 0, 0, 0, {}})).tail);
}

TEST(JournalScanTest, EveryCutOfTheLastEntryIsATornTailThatKeepsTheEntriesBefore) {
  SegmentImage whole;
  whole.Append({Put("a", "1")}, 1);
  whole.Append({Put("b", "2")}, 2);
  const uint64_t last = whole.Append({Put("c", std::string(100, 'c')), Put("d", "4")}, 3);
  for (uint64_t cut = last; cut < whole.end(); ++cut) {
    for (char fill : {'\0', '\xAB'}) {
      std::string bytes = whole.bytes();
      std::fill(bytes.begin() + static_cast<ptrdiff_t>(cut),
                bytes.begin() + static_cast<ptrdiff_t>(whole.end()), fill);
      if (bytes == whole.bytes()) continue;  // zeros over the padding: the entry is whole
      std::vector<Seen> seen;
      const SegmentScan scan = Scan(bytes, &seen);
      SCOPED_TRACE("cut at " + std::to_string(cut) + (fill ? " with junk" : " with zeros"));
      EXPECT_EQ(2u, scan.entries);
      EXPECT_EQ(2u, seen.size());  // nothing of the torn entry: a batch is all or nothing
      EXPECT_EQ(last, scan.end_offset);
      EXPECT_EQ(cut == last && fill == '\0' ? Tail::kClean : Tail::kTorn, scan.tail);
      EXPECT_EQ(0u, scan.entries_after_bad);
    }
  }
}

TEST(JournalScanTest, DamageThatLaterEntriesSaySynced) {
  SegmentImage image;
  image.Append({Put("a", "1")}, 1);
  const uint64_t second = image.Append({Put("b", "2")}, 2);
  image.Append({Put("c", "3")}, 3);  // written once the second was synced
  image.Append({Put("d", "4")}, 4);
  image.bytes()[second + kEntryHeaderBytes + kOpHeaderBytes] ^= 0x01;  // b's key
  std::vector<Seen> seen;
  const SegmentScan scan = Scan(image.bytes(), &seen);
  EXPECT_EQ(Tail::kDamaged, scan.tail);
  EXPECT_EQ(second, scan.bad_offset);
  EXPECT_NE(std::string::npos, scan.what.find("checksum")) << scan.what;
  EXPECT_EQ(2u, scan.entries_after_bad);
  EXPECT_EQ(3u, scan.resume_sequence);
  EXPECT_EQ(1u, seen.size());  // the visitor stops at the damage
  EXPECT_EQ(second, scan.end_offset);
}

TEST(JournalScanTest, UnsyncedEntriesPersistedOutOfOrderAreATornTail) {
  // A power cut kept the third entry's page but not the second's; neither was synced.
  SegmentImage image;
  const uint64_t first = image.Append({Put("a", "1")}, 1);
  const uint64_t second = image.Append({Put("b", "2")}, 2, /*synced=*/first);
  const uint64_t third = image.Append({Put("c", "3")}, 3, /*synced=*/first);
  std::fill(image.bytes().begin() + static_cast<ptrdiff_t>(second),
            image.bytes().begin() + static_cast<ptrdiff_t>(third), '\0');
  const SegmentScan scan = Scan(image.bytes());
  EXPECT_EQ(Tail::kTorn, scan.tail);
  EXPECT_EQ(1u, scan.entries);
  EXPECT_EQ(1u, scan.entries_after_bad);
  EXPECT_EQ(3u, scan.resume_sequence);
}

TEST(JournalScanTest, SequenceNumbersMustGrow) {
  SegmentImage image;
  image.Append({Put("a", "1")}, 5);
  const uint64_t stale = image.Append({Put("b", "2")}, 5);
  SegmentScan scan = Scan(image.bytes());
  EXPECT_EQ(1u, scan.entries);
  EXPECT_EQ(Tail::kDamaged, scan.tail);  // whole, so not torn
  EXPECT_EQ(stale, scan.bad_offset);
  EXPECT_NE(std::string::npos, scan.what.find("not above")) << scan.what;
  // The segment before this one ended at 5: its first entry is not a later one.
  scan = Scan(image.bytes(), nullptr, /*after_sequence=*/5);
  EXPECT_EQ(0u, scan.entries);
  EXPECT_EQ(Tail::kDamaged, scan.tail);
  EXPECT_EQ(kSegmentHeaderBytes, scan.bad_offset);
}

TEST(JournalScanTest, AnEntryImageInsideAValueDoesNotPassForAnEntry) {
  // A client stores, as a value, the image of an entry that claims a high sequence and says the
  // segment was synced far ahead: were it taken for one, a torn tail before it would read as
  // damage, and the journal would refuse to open after an ordinary crash.
  EntryBuilder forged;
  ASSERT_OK(forged.Add(Put("x", "y")));
  const std::string image_without_salt = forged.Finish(EntryStamp{1'000'000, 1 << 20, 0});
  SegmentImage image(8192);
  image.Append({Put("a", "1")}, 1);
  // Three bytes put the image at an aligned offset, where a scan looks for entries: the value
  // starts 24 + 20 + 1 bytes into the (aligned) entry.
  const uint64_t second =
      image.Append({Put("b", std::string(3, '\0') + image_without_salt)}, 2, image.end());
  image.Append({Put("c", "3")}, 3, /*synced=*/second);  // vouches for the first entry only
  // The crash tore the second entry's header: it and everything after it were unsynced.
  image.bytes()[second + 2] ^= 0x40;
  SegmentScan scan = Scan(image.bytes());
  EXPECT_EQ(Tail::kTorn, scan.tail);
  EXPECT_EQ(1u, scan.entries);
  EXPECT_EQ(1u, scan.entries_after_bad);  // the third entry; not the image
  EXPECT_EQ(3u, scan.resume_sequence);
}

TEST(JournalScanTest, RandomDamageNeverYieldsAnOperationThatWasNotWritten) {
  SegmentImage image(16 * 1024);
  std::mt19937_64 rng(7);
  for (uint64_t seq = 1; seq <= 40; ++seq) {
    std::vector<std::string> keys, values;
    const int ops = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < ops; ++i) {
      keys.push_back("key-" + std::to_string(rng() % 1000));
      values.push_back(std::string(rng() % 80, static_cast<char>('a' + rng() % 26)));
    }
    std::vector<OpView> views;
    for (int i = 0; i < ops; ++i)
      views.push_back(Put(keys[i], values[i], static_cast<int64_t>(seq)));
    image.Append(views, seq);
  }
  std::vector<Seen> original;
  ASSERT_EQ(Tail::kClean, Scan(image.bytes(), &original).tail);
  const std::set<Seen> written(original.begin(), original.end());
  for (int round = 0; round < 300; ++round) {
    std::string bytes = image.bytes();
    const int flips = round % 2 == 0 ? 1 : 1 + static_cast<int>(rng() % 8);
    for (int i = 0; i < flips; ++i) {
      const size_t at = kSegmentHeaderBytes + rng() % (image.end() - kSegmentHeaderBytes);
      bytes[at] = static_cast<char>(rng());
    }
    std::vector<Seen> seen;
    const SegmentScan scan = Scan(bytes, &seen);
    for (const Seen& s : seen) EXPECT_TRUE(written.count(s)) << "round " << round;
    EXPECT_EQ(seen.size(), scan.ops);
    // Every entry says the one before it was synced: one damaged byte before the last entry is
    // damage, in the last one a torn tail. (More may also destroy every entry that vouches.)
    if (flips > 1) continue;
    const size_t first_change = static_cast<size_t>(
        std::mismatch(bytes.begin(), bytes.end(), image.bytes().begin()).first - bytes.begin());
    if (first_change == bytes.size()) {
      EXPECT_EQ(Tail::kClean, scan.tail) << "round " << round;
    } else if (first_change < image.start(39)) {
      EXPECT_EQ(Tail::kDamaged, scan.tail) << "round " << round << " byte " << first_change;
    } else {
      EXPECT_EQ(Tail::kTorn, scan.tail) << "round " << round << " byte " << first_change;
    }
  }
}

TEST(JournalSegmentHeaderTest, ADictionaryFollowsTheHeaderOfFormatsTwoAndThree) {
  const std::string dictionary(1001, 'd');
  const SegmentHeader header{9, 5, 77, 0xabc, dictionary};
  EXPECT_EQ(kSegmentHeaderBytes + 8 + 1008, header.entries_offset());
  const std::string encoded = EncodeSegmentHeader(header);
  ASSERT_EQ(header.entries_offset(), encoded.size());
  EXPECT_EQ(static_cast<char>(kDictionaryFormatVersion), encoded[8]);
  Result<SegmentHeader> decoded = DecodeSegmentHeader(encoded);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(dictionary, decoded->dictionary);
  EXPECT_EQ(77u, decoded->after_sequence);
  // Without one: format 1, as before.
  EXPECT_EQ(static_cast<char>(kFormatVersion),
            EncodeSegmentHeader(SegmentHeader{9, 5, 77, 1, {}})[8]);
  // Format 2 (values compressed alone), no longer written, reads the same.
  std::string format_two = encoded;
  format_two[8] = static_cast<char>(kValueDictionaryFormatVersion);
  const uint32_t crc_of_header = MaskCrc(Crc32c(std::string_view(format_two).substr(16, 32)));
  for (int i = 0; i < 4; ++i) format_two[12 + i] = static_cast<char>(crc_of_header >> (8 * i));
  Result<SegmentHeader> two = DecodeSegmentHeader(format_two);
  ASSERT_TRUE(two.ok()) << two.status().ToString();
  EXPECT_EQ(dictionary, two->dictionary);

  auto why = [](const std::string& bytes) { return DecodeSegmentHeader(bytes).status().message(); };
  std::string bad = encoded;
  bad[kSegmentHeaderBytes + 8 + 500] ^= 1;
  EXPECT_NE(std::string::npos, why(bad).find("dictionary checksum")) << why(bad);
  EXPECT_NE(std::string::npos,
            why(encoded.substr(0, encoded.size() - 10)).find("inside its dictionary"));
  EXPECT_NE(std::string::npos,
            why(encoded.substr(0, kSegmentHeaderBytes + 4)).find("before its dictionary"));
  for (uint32_t size : {0u, static_cast<uint32_t>(kMaxDictionaryBytes + 1), 0xffffffffu}) {
    bad = encoded;
    for (int i = 0; i < 4; ++i) bad[kSegmentHeaderBytes + i] = static_cast<char>(size >> (8 * i));
    EXPECT_NE(std::string::npos, why(bad).find("dictionary of")) << size << ": " << why(bad);
  }
}

// Finish stores each put's key and value as the compressor returns them, flagged, where that is
// shorter; the offsets and sizes are the stored entry's, and a scan reads the stored bytes back.
TEST(JournalEntryTest, FinishStoresThePutsItsCompressorShortens) {
  EntryBuilder builder;
  const std::string long_value(300, 'a');
  ASSERT_TRUE(builder.Add(Put("k1", long_value, 10)).ok());
  ASSERT_TRUE(builder.Add(Delete("k2", 20)).ok());
  ASSERT_TRUE(builder.Add(Put("k3", "short", 30)).ok());
  const size_t as_added = builder.bytes();
  std::vector<std::string> offered;
  const std::string entry =
      builder.Finish(EntryStamp{1, 0, 0}, [&](std::string_view value, std::string* out) {
        offered.emplace_back(value);
        if (value.size() < 100) {
          *out = std::string(value) + "longer";
          return true;  // not kept: not shorter
        }
        *out = "A300";
        return true;
      });
  std::string plain_long, plain_short;  // puts only, each with its key
  AppendKeyAndValue("k1", long_value, &plain_long);
  AppendKeyAndValue("k3", "short", &plain_short);
  EXPECT_EQ((std::vector<std::string>{plain_long, plain_short}), offered);
  EXPECT_EQ(kEntryHeaderBytes + OpBytes(0, 4) + OpBytes(2, 0) + OpBytes(2, 5), entry.size());
  EXPECT_LT(entry.size(), as_added);
  EXPECT_EQ(entry.size(), builder.finished_bytes());
  EXPECT_EQ(0u, builder.ops());
  const std::vector<uint32_t> offsets = builder.offsets();
  ASSERT_EQ(3u, offsets.size());
  struct Stored {
    std::string key, value;
    bool compressed;
  };
  const std::vector<Stored> stored = {
      {"", "A300", true}, {"k2", "", false}, {"k3", "short", false}};
  for (size_t i = 0; i < 3; ++i) {
    Result<OpView> op = DecodeOp(std::string_view(entry).substr(offsets[i], builder.op_bytes(i)));
    ASSERT_TRUE(op.ok()) << op.status().ToString();
    EXPECT_EQ(stored[i].key, op->key);
    EXPECT_EQ(stored[i].value, op->value);
    EXPECT_EQ(stored[i].compressed, op->compressed);
    EXPECT_EQ(stored[i].compressed, op->key_in_value);
  }
  // A builder takes a compressed value only for a put, never empty; a key in the value only with
  // the value compressed and no key besides.
  EXPECT_TRUE(builder.Add(OpView{OpType::kDelete, 1, "k", {}, true}).IsInvalidArgument());
  EXPECT_TRUE(builder.Add(OpView{OpType::kPut, 1, "k", {}, true}).IsInvalidArgument());
  EXPECT_TRUE(builder.Add(OpView{OpType::kPut, 1, {}, "z", false, true}).IsInvalidArgument());
  EXPECT_TRUE(builder.Add(OpView{OpType::kPut, 1, "k", "z", true, true}).IsInvalidArgument());
  EXPECT_TRUE(builder.Add(OpView{OpType::kPut, 1, "k", "z", true}).ok());
  EXPECT_TRUE(builder.Add(OpView{OpType::kPut, 1, {}, "z", true, true}).ok());
}

// The plain form of a put compressed with its key splits back into both; what does not hold a
// key is Corruption, and an operation that says its key is in its value has no key besides.
TEST(JournalEntryTest, AKeyStoredInItsValueSplitsBackOut) {
  std::string plain;
  AppendKeyAndValue("the-key", "the value", &plain);
  OpView op;
  ASSERT_TRUE(SplitKeyAndValue(plain, &op).ok());
  EXPECT_EQ("the-key", op.key);
  EXPECT_EQ("the value", op.value);
  plain.clear();
  AppendKeyAndValue("k", "", &plain);
  ASSERT_TRUE(SplitKeyAndValue(plain, &op).ok());
  EXPECT_EQ("k", op.key);
  EXPECT_EQ("", op.value);
  for (std::string bad : {std::string(), std::string(1, '\x05'), std::string("\x00\x00v", 3),
                          std::string("\x09\x00shorter", 9)}) {
    EXPECT_TRUE(SplitKeyAndValue(bad, &op).IsCorruption()) << bad.size();
  }

  // Flags 3 with a stored key, or flags 1 without one, do not decode.
  EntryBuilder builder;
  ASSERT_TRUE(builder.Add(OpView{OpType::kPut, 1, {}, "zz", true, true}).ok());
  std::string entry = builder.Finish(EntryStamp{1, 0, 0});
  const std::string_view op_bytes = std::string_view(entry).substr(kEntryHeaderBytes);
  Result<OpView> decoded = DecodeOp(op_bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_TRUE(decoded->key_in_value);
  EXPECT_TRUE(decoded->key.empty());
  auto with_flags = [](std::string bytes, char flags, size_t checked) {
    bytes[5] = flags;
    const uint32_t crc = MaskCrc(Crc32c(std::string_view(bytes).substr(4, checked)));
    for (int i = 0; i < 4; ++i) bytes[i] = static_cast<char>(crc >> (8 * i));
    return bytes;
  };
  EXPECT_NE(std::string::npos,
            DecodeOp(with_flags(std::string(op_bytes), 1, kOpHeaderBytes - 4 + 2))
                .status()
                .message()
                .find("empty key"));
  ASSERT_TRUE(builder.Add(OpView{OpType::kPut, 1, "k", "zz", true}).ok());
  entry = builder.Finish(EntryStamp{2, 0, 0});
  const std::string keyed(std::string_view(entry).substr(kEntryHeaderBytes));
  EXPECT_NE(std::string::npos, DecodeOp(with_flags(keyed, 3, kOpHeaderBytes - 4 + 3))
                                   .status()
                                   .message()
                                   .find("key besides"));
}

// A compressed value needs its segment's dictionary: in a segment of format 1 it does not check.
TEST(JournalScanTest, ACompressedValueInASegmentWithoutADictionaryDoesNotCheck) {
  SegmentImage image;
  image.Append({Put("a", "1")}, 1);
  image.Append({OpView{OpType::kPut, 100, "b", "zz", true}}, 2);
  image.Append({Put("c", "3")}, 3);
  std::vector<Seen> seen;
  const SegmentScan scan = Scan(image.bytes(), &seen);
  EXPECT_EQ(Tail::kDamaged, scan.tail);
  EXPECT_NE(std::string::npos, scan.what.find("without a dictionary")) << scan.what;
  EXPECT_EQ(1u, seen.size());

  // With one, the same entries scan whole.
  std::string with = EncodeSegmentHeader(SegmentHeader{7, 1, 0, SegmentImage::kSalt, "dict"});
  EntryBuilder builder;
  ASSERT_TRUE(builder.Add(OpView{OpType::kPut, 100, "b", "zz", true}).ok());
  with += builder.Finish(EntryStamp{2, 0, SegmentImage::kSalt});
  with.resize(4096, '\0');
  seen.clear();
  const SegmentScan whole = Scan(with, &seen);
  EXPECT_EQ(Tail::kClean, whole.tail) << whole.what;
  ASSERT_EQ(1u, seen.size());
  EXPECT_EQ("zz", seen[0].value);
}

}  // namespace
}  // namespace idem::journal
