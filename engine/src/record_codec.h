// The stored value of a record (RocksDB value), format version 1:
//
//   offset  size  field
//   0       1     format version (1). A reader rejects versions it does not know (Corruption).
//   1       1     kind (idem::RecordKind). 0 (untyped) in records written before kinds existed,
//                 when this byte was a reserved flags byte always written 0; a kind this build
//                 does not know is Corruption (its rules are unknown here). Builds older than
//                 kinds ignore this byte, so they still read every record.
//   2       8     expires_at_ms, fixed64 little-endian, 0 = never. At a FIXED offset so the
//                 compaction filter and the table statistics read it without decoding the rest.
//   10      8     fence, fixed64 little-endian
//   18      var   version         varint64
//           var   created_ms      varint64 (int64 bits)
//           var   updated_ms      varint64 (int64 bits)
//           var   lease_until_ms  varint64 (int64 bits), 0 = no lease
//           var   status          varint64 length + bytes
//           var   fingerprint     varint64 length + bytes
//           var   owner           varint64 length + bytes
//           var   payload         varint64 length + bytes
//   Nothing may follow the payload (trailing bytes are Corruption).
//
// A remembered key's marker (engine/src/remembered_key.h), format 2: what stays of a finished
// record once it expired, in a namespace that remembers keys. No fence, owner, status or payload.
//
//   offset  size  field
//   0       1     format (2)
//   1       1     kind of the record it stands for (idem::RecordKind)
//   2       8     expires_at_ms, fixed64 little-endian: the end of the remember period when the
//                 marker was written (for the table statistics; reads and the compaction filter
//                 count the namespace's remember period now from record_expired_ms)
//   10      var   record_expired_ms  varint64 (int64 bits): the expiry of the record it replaced
//           var   completed_ms       varint64 (int64 bits): the record's last change
//           var   fingerprint        varint64 length + bytes
//   Nothing may follow the fingerprint.
//
// To evolve the record format: add a new format number, keep decoding the old ones, write the
// new one. Bytes 0..9 (format, kind, expiry) must keep their meaning in every format because
// the compaction filter and the table statistics read them without decoding the rest.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "idem/record.h"
#include "idem/status.h"

namespace idem {

inline constexpr uint8_t kRecordFormatVersion = 1;
inline constexpr uint8_t kMarkerFormat = 2;
inline constexpr size_t kRecordHeaderBytes = 18;
inline constexpr size_t kMarkerHeaderBytes = 10;

// A remembered key's marker, decoded.
struct Marker {
  RecordKind kind = RecordKind::kUntyped;
  int64_t expires_at_ms = 0;      // as written; see the layout above
  int64_t record_expired_ms = 0;  // the remember period counts from here
  int64_t completed_ms = 0;
  std::string fingerprint;
};

// Appends the encoding of `record` to `dst`.
void EncodeRecord(const Record& record, std::string* dst);

// Decodes a whole record; Corruption on any malformation.
Status DecodeRecord(std::string_view in, Record* record);

// Whether a stored value is a marker (format 2) rather than a record. Looks at byte 0 only.
inline bool IsMarker(std::string_view in) {
  return !in.empty() && static_cast<uint8_t>(in[0]) == kMarkerFormat;
}

void EncodeMarker(const Marker& marker, std::string* dst);

// Decodes a whole marker; Corruption on any malformation.
Status DecodeMarker(std::string_view in, Marker* marker);

// Reads only the expiry from the fixed header of a record or a marker; nullopt when the header
// is malformed.
std::optional<int64_t> PeekExpiry(std::string_view in);

}  // namespace idem
