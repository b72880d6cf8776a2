// The 64-bit hash of a record key that the engine's in-memory structures share (window key
// filters, the journal's index): computed once per key, used by each. Not stable across builds
// of the standard library: never stored on disk.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

namespace idem {

inline uint64_t KeyHash(std::string_view key) {
  // libstdc++'s is MurmurHash2-64A, mixed well enough in both halves; a finalizer (from
  // SplitMix64) makes it so whatever the standard library.
  uint64_t h = std::hash<std::string_view>{}(key);
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9u;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebu;
  h ^= h >> 31;
  return h;
}

}  // namespace idem
