// RocksDB key layout.
//
//   record key:  [ns length: 1 byte, 1..255] [namespace bytes] [key bytes]
//   meta key:    [0x00] [name]          (a zero length byte never starts a record key)
//
// The length prefix keeps namespaces from bleeding into each other ("a" + "bc" vs "ab" + "c")
// and keeps each namespace's records contiguous for scans. Meta keys are never expired.
#pragma once

#include <string>
#include <string_view>

namespace idem {

inline constexpr char kMetaKeyPrefix = '\0';

// Appends the record key for (ns, key) to `dst`. ns must be 1..255 bytes (validated earlier).
void AppendRecordKey(std::string_view ns, std::string_view key, std::string* dst);
std::string RecordKey(std::string_view ns, std::string_view key);
std::string MetaKey(std::string_view name);
inline bool IsMetaKey(std::string_view rocks_key) {
  return !rocks_key.empty() && rocks_key[0] == kMetaKeyPrefix;
}
// Splits a record key; false if it is not one.
bool ParseRecordKey(std::string_view rocks_key, std::string_view* ns, std::string_view* key);

}  // namespace idem
