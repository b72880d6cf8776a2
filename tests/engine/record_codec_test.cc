#include "record_codec.h"

#include <gtest/gtest.h>

#include "coding.h"

namespace idem {
namespace {

Record Sample() {
  Record r;
  r.status = "PAID";
  r.version = 7;
  r.fence = 123456789012ULL;
  r.fingerprint = std::string("\x00\x01\xff", 3);
  r.payload = std::string(1000, 'p');
  r.created_ms = 1'700'000'000'000;
  r.updated_ms = 1'700'000'000'500;
  r.expires_at_ms = 1'700'086'400'000;
  r.owner = "worker-3";
  r.lease_until_ms = 1'700'000'030'000;
  r.kind = RecordKind::kAttempt;
  return r;
}

TEST(RecordCodec, RoundTripsEveryField) {
  std::string bytes;
  EncodeRecord(Sample(), &bytes);
  Record decoded;
  ASSERT_TRUE(DecodeRecord(bytes, &decoded).ok());
  EXPECT_EQ(Sample(), decoded);
}

TEST(RecordCodec, RoundTripsEmptyOptionalFieldsAndNegativeTimes) {
  Record r;
  r.status = "S";
  r.created_ms = -5;
  std::string bytes;
  EncodeRecord(r, &bytes);
  Record decoded;
  ASSERT_TRUE(DecodeRecord(bytes, &decoded).ok());
  EXPECT_EQ(r, decoded);
}

TEST(RecordCodec, KindIsTheByteAfterTheFormatVersion) {
  Record r = Sample();
  r.kind = RecordKind::kLock;
  std::string bytes;
  EncodeRecord(r, &bytes);
  EXPECT_EQ(static_cast<char>(RecordKind::kLock), bytes[1]);
}

// Before kinds the byte was a reserved flags byte, always 0: such records still decode, with
// every field, as untyped.
TEST(RecordCodec, RecordsWrittenBeforeKindsDecodeAsUntyped) {
  std::string bytes;
  EncodeRecord(Sample(), &bytes);
  bytes[1] = 0;
  Record decoded;
  ASSERT_TRUE(DecodeRecord(bytes, &decoded).ok());
  Record expected = Sample();
  expected.kind = RecordKind::kUntyped;
  EXPECT_EQ(expected, decoded);
}

TEST(RecordCodec, AKindThisBuildDoesNotKnowIsCorruption) {
  std::string bytes;
  EncodeRecord(Sample(), &bytes);
  bytes[1] = static_cast<char>(static_cast<uint8_t>(kLastRecordKind) + 1);
  Record decoded;
  Status st = DecodeRecord(bytes, &decoded);
  EXPECT_TRUE(st.IsCorruption()) << st.ToString();
  EXPECT_NE(std::string::npos, st.message().find("record kind")) << st.ToString();
}

TEST(RecordCodec, ExpiryIsAtAFixedOffset) {
  std::string bytes;
  EncodeRecord(Sample(), &bytes);
  EXPECT_EQ(Sample().expires_at_ms, PeekExpiry(bytes));
  EXPECT_EQ(Sample().expires_at_ms, static_cast<int64_t>(coding::DecodeFixed64(bytes.data() + 2)));
}

TEST(RecordCodec, EveryTruncationIsCorruption) {
  std::string bytes;
  EncodeRecord(Sample(), &bytes);
  for (size_t len = 0; len < bytes.size(); ++len) {
    Record r;
    Status s = DecodeRecord(std::string_view(bytes).substr(0, len), &r);
    EXPECT_TRUE(s.IsCorruption()) << "length " << len;
  }
}

TEST(RecordCodec, TrailingBytesAreCorruption) {
  std::string bytes;
  EncodeRecord(Sample(), &bytes);
  bytes.push_back('x');
  Record r;
  EXPECT_TRUE(DecodeRecord(bytes, &r).IsCorruption());
}

TEST(RecordCodec, UnknownFormatVersionIsCorruption) {
  std::string bytes;
  EncodeRecord(Sample(), &bytes);
  bytes[0] = 9;
  Record r;
  Status s = DecodeRecord(bytes, &r);
  EXPECT_TRUE(s.IsCorruption());
  EXPECT_NE(std::string::npos, s.message().find("version 9"));
  EXPECT_FALSE(PeekExpiry(bytes).has_value());
}

Marker SampleMarker() {
  Marker m;
  m.kind = RecordKind::kAttempt;
  m.expires_at_ms = 1'700'122'400'000;
  m.record_expired_ms = 1'700'086'400'000;
  m.completed_ms = 1'700'000'000'500;
  m.fingerprint = std::string("\x00\x01\xff", 3);
  return m;
}

TEST(RecordCodec, MarkerRoundTripsAndKeepsTheExpiryWhereRecordsHaveIt) {
  std::string bytes;
  EncodeMarker(SampleMarker(), &bytes);
  ASSERT_TRUE(IsMarker(bytes));
  Marker decoded;
  ASSERT_TRUE(DecodeMarker(bytes, &decoded).ok());
  EXPECT_EQ(SampleMarker().kind, decoded.kind);
  EXPECT_EQ(SampleMarker().expires_at_ms, decoded.expires_at_ms);
  EXPECT_EQ(SampleMarker().record_expired_ms, decoded.record_expired_ms);
  EXPECT_EQ(SampleMarker().completed_ms, decoded.completed_ms);
  EXPECT_EQ(SampleMarker().fingerprint, decoded.fingerprint);
  EXPECT_EQ(SampleMarker().expires_at_ms, PeekExpiry(bytes));
  // A marker is not a record, and a record not a marker.
  Record r;
  EXPECT_TRUE(DecodeRecord(bytes, &r).IsCorruption());
  std::string record;
  EncodeRecord(Sample(), &record);
  EXPECT_FALSE(IsMarker(record));
  EXPECT_TRUE(DecodeMarker(record, &decoded).IsCorruption());
}

TEST(RecordCodec, TruncatedOrExtendedMarkerIsCorruption) {
  std::string bytes;
  EncodeMarker(SampleMarker(), &bytes);
  for (size_t len = 0; len < bytes.size(); ++len) {
    Marker m;
    EXPECT_TRUE(DecodeMarker(std::string_view(bytes).substr(0, len), &m).IsCorruption()) << len;
  }
  bytes.push_back('x');
  Marker m;
  EXPECT_TRUE(DecodeMarker(bytes, &m).IsCorruption());
}

TEST(RecordCodec, LengthPointingPastTheEndIsCorruption) {
  std::string bytes;
  EncodeRecord(Sample(), &bytes);
  // The status length varint follows four varints after the 18-byte header; overwrite the
  // payload's length instead by building a record whose payload length lies.
  Record r;
  r.status = "S";
  std::string small;
  EncodeRecord(r, &small);
  small.back() = 0x7f;  // payload length 127, but no bytes follow
  EXPECT_TRUE(DecodeRecord(small, &r).IsCorruption());
}

}  // namespace
}  // namespace idem
