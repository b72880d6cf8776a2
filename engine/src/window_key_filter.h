// The keys of one expiry window, kept in memory so that a lookup skips a window that certainly
// does not hold its key (docs/design.md §2, "Expiry windows").
//
// A lookup that misses would otherwise read every live window from RocksDB, and a new key (the
// common insert) misses in all of them. A blocked bloom filter answers instead: each key sets
// kProbes bits in one 64-byte block chosen by its hash, about 10 bits per key, about 1 % false
// positives. How many keys a window will take is not known when it is created, so the filter
// grows: when its newest segment has taken as many keys as it was sized for, a segment twice as
// large (and with more bits per key, so that the false positives of all segments together stay
// near those of one) takes the next keys. A lookup checks the segments newest first (the newest
// holds about half the keys, and usually the ones just written), all of them for a miss.
//
// Contract:
//  - No false negatives: once Add(h) has returned, MayContain(h) is true in every thread that
//    the Add happens-before (a lock, or a RocksDB write and a read that sees it, orders them).
//  - Bits are never cleared: a key deleted or moved elsewhere stays a false positive.
//  - Until MarkReady, MayContain is true for every hash: a filter that does not hold every key
//    of its window yet (one opened with the database, still being filled) excludes nothing.
//  - Add, MayContain, MarkReady and the accessors are thread-safe and lock-free but for the rare
//    growth, which takes a mutex.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>

namespace idem {

class WindowKeyFilter {
 public:
  // The smallest first segment: 16 Ki keys, 20 KiB.
  static constexpr uint64_t kMinKeys = 16 * 1024;

  // The first segment is sized, when the first key is added, for the most of `expected_keys`,
  // kMinKeys and, if it still exists then, the keys `sized_like` has taken (a window created
  // ahead learns from its predecessor once that one has stopped filling). No memory is taken
  // before the first Add. `ready`: whether MayContain may answer "no" from the start (true for an
  // empty window; see MarkReady).
  WindowKeyFilter(uint64_t expected_keys, std::weak_ptr<const WindowKeyFilter> sized_like,
                  bool ready);
  ~WindowKeyFilter();
  WindowKeyFilter(const WindowKeyFilter&) = delete;
  WindowKeyFilter& operator=(const WindowKeyFilter&) = delete;

  // The hash Add and MayContain take: compute it once per key.
  static uint64_t Hash(std::string_view key);

  void Add(uint64_t hash);
  // False only if the filter is ready and no key with this hash was added.
  bool MayContain(uint64_t hash) const;

  // From now on MayContain answers from the bits: the caller has added every key of the window
  // (release; MayContain's check of it acquires).
  void MarkReady();
  bool ready() const { return ready_.load(std::memory_order_acquire); }

  // About how many keys were added (a key added twice counts twice).
  uint64_t keys() const;
  // Bytes of the segments.
  size_t bytes() const { return bytes_.load(std::memory_order_relaxed); }

 private:
  class Segment;
  static constexpr size_t kMaxSegments = 32;  // 16 Ki keys doubled 31 times: beyond any window

  // The segment that takes the next key, after `full` (null: none yet) has filled.
  Segment* Grow(Segment* full);

  const uint64_t expected_keys_;
  const std::weak_ptr<const WindowKeyFilter> sized_like_;
  std::atomic<bool> ready_;
  std::atomic<Segment*> current_{nullptr};  // the newest segment, which takes the adds
  std::atomic<size_t> segment_count_{0};
  std::array<std::atomic<Segment*>, kMaxSegments> segments_{};  // [0, segment_count_): owned
  std::atomic<size_t> bytes_{0};
  std::mutex grow_mu_;  // one growth at a time
};

}  // namespace idem
