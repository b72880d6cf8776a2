// Compression of stored values with a dictionary trained on recent values (zstd).
//
// Why a dictionary: an idempotency record is small (a status, timestamps, a response of a few
// hundred bytes) and repeats little within itself, but much across records: the same field
// names, status strings, JSON skeleton. Compressed alone, a 146-byte record of idem-bench's
// shrinks to ~120 bytes; with a dictionary trained on a few thousand earlier records, to ~40.
// Block compression (RocksDB's tables) gets that from neighbouring records instead, but needs
// the block read and decompressed whole; a dictionary keeps each value readable by itself.
//
// Stored form: a zstd frame without its 4-byte magic number (always the same), with the
// content size in its header (what a reader allocates, checked against its limit first), no
// checksum (the journal's operation checksum covers the stored bytes) and no dictionary id (the
// segment that holds the value names its dictionary).
//
// Thread safety: a ValueDictionary is immutable; Compress and Decompress may run on any thread
// (each thread keeps its own zstd context).
#pragma once

#include <cstddef>
#include <deque>
#include <memory>
#include <string>
#include <string_view>

#include "idem/result.h"

namespace idem {

class ValueDictionary {
 public:
  // Values shorter than this are stored as given: too small to gain a padded 8 bytes.
  static constexpr size_t kMinValueBytes = 32;
  // A dictionary stored in a journal segment is at most this big.
  static constexpr size_t kMaxBytes = size_t{64} << 10;

  // Trains a dictionary of at most `max_bytes` (at most kMaxBytes) on `samples`. InvalidArgument
  // when they are too few or too alike for one (zstd's trainer refuses them).
  static Result<std::shared_ptr<const ValueDictionary>> Train(
      const std::deque<std::string>& samples, size_t max_bytes);
  // A dictionary as stored (bytes()). Corruption if zstd cannot load it.
  static Result<std::shared_ptr<const ValueDictionary>> Load(std::string_view bytes);
  ~ValueDictionary();
  ValueDictionary(const ValueDictionary&) = delete;
  ValueDictionary& operator=(const ValueDictionary&) = delete;

  std::string_view bytes() const { return bytes_; }

  // Compresses `value` into `out` when that makes it shorter; false otherwise (then `out` holds
  // nothing of use), and for values under kMinValueBytes.
  bool Compress(std::string_view value, std::string* out) const;
  // Decompresses what Compress stored into `out`. Corruption if it does not decompress with
  // this dictionary, or its header says it is longer than `max_bytes` (checked before
  // anything is allocated for it).
  Status Decompress(std::string_view stored, size_t max_bytes, std::string* out) const;

 private:
  struct Compiled;  // zstd's digested forms of the bytes, for compressing and decompressing
  ValueDictionary(std::string bytes, std::unique_ptr<Compiled> compiled);
  const std::string bytes_;
  const std::unique_ptr<Compiled> compiled_;
  const uint64_t serial_;  // unique in the process: what a thread's zstd context is set up for
};

// Recent values to train the next dictionary on: up to `max_samples`, the oldest going first,
// each cut to kMaxSampleBytes (a dictionary holds what records share, mostly near their
// start). Not thread-safe.
class ValueSampler {
 public:
  static constexpr size_t kMaxSampleBytes = 1024;
  explicit ValueSampler(size_t max_samples) : max_samples_(max_samples) {}
  // Keeps one value in kEvery (values too short to compress are not counted).
  void Offer(std::string_view value);
  // Enough to train on: a dictionary from fewer is mostly noise.
  bool ready() const { return samples_.size() >= max_samples_ / 16; }
  // Whether a dictionary trained on `trained_on` samples is worth training again: there are
  // four times as many now (a journal's first dictionaries are trained on what it has seen).
  bool Outgrew(size_t trained_on) const { return samples_.size() >= 4 * trained_on; }
  const std::deque<std::string>& samples() const { return samples_; }
  // Values offered so far that were long enough to keep.
  uint64_t offered() const { return offered_; }
  // How many more of those replace every sample.
  uint64_t renewal() const { return max_samples_ * kEvery; }

 private:
  static constexpr uint64_t kEvery = 4;
  const size_t max_samples_;
  uint64_t offered_ = 0;
  std::deque<std::string> samples_;
};

}  // namespace idem
