// CRC-32C (Castagnoli), as RocksDB's util/crc32c, for the engine's own readers and writers of
// checksummed files: the WAL scan and the journal.
#pragma once

#include <cstdint>
#include <string_view>

namespace idem {

// The CRC-32C of `bytes`: with SSE4.2's crc32 instruction where the CPU has it, else, or if
// `portable`, with a table (an order of magnitude slower). Exposed so tests check that both
// agree.
uint32_t Crc32c(std::string_view bytes, bool portable = false);

// A CRC stored next to data that may itself hold CRCs is stored masked, as RocksDB and LevelDB
// do: the CRC of a string that contains its own CRC is otherwise prone to collide.
inline uint32_t MaskCrc(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }
inline uint32_t UnmaskCrc(uint32_t masked) {
  const uint32_t rot = masked - 0xa282ead8u;
  return (rot >> 17) | (rot << 15);
}

}  // namespace idem
