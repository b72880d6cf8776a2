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
// To evolve the format: add version 2, keep decoding 1, write 2. The fixed header (bytes 0..17)
// must keep its meaning in every version because the compaction filter relies on it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "idem/record.h"
#include "idem/status.h"

namespace idem {

inline constexpr uint8_t kRecordFormatVersion = 1;
inline constexpr size_t kRecordHeaderBytes = 18;

// Appends the encoding of `record` to `dst`.
void EncodeRecord(const Record& record, std::string* dst);

// Decodes a whole record; Corruption on any malformation.
Status DecodeRecord(std::string_view in, Record* record);

// Reads only the expiry from the fixed header; nullopt when the header is malformed.
std::optional<int64_t> PeekExpiry(std::string_view in);

}  // namespace idem
