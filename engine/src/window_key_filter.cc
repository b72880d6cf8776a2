#include "window_key_filter.h"

#include <algorithm>

#include "key_hash.h"

namespace idem {
namespace {

// Six probes into a 512-bit block at 10 bits per key: ~1 % false positives (RocksDB's
// FastLocalBloom makes the same choice). Later segments get more bits per key with the same
// probes, which lowers their rate.
constexpr int kProbes = 6;
constexpr uint64_t kBitsPerKey = 10;
constexpr uint64_t kExtraBitsPerKeyPerSegment = 2;
constexpr uint64_t kMaxBitsPerKey = 20;
// Keeps a segment's block count below 2^32 (BlockOf); no window comes near it.
constexpr uint64_t kMaxSegmentKeys = uint64_t{1} << 32;

}  // namespace

class WindowKeyFilter::Segment {
 public:
  Segment(uint64_t capacity, uint64_t bits_per_key)
      : capacity_(capacity),
        block_count_(std::max<uint64_t>(1, (capacity * bits_per_key + 511) / 512)),
        blocks_(std::make_unique<Block[]>(block_count_)) {}

  uint64_t capacity() const { return capacity_; }
  size_t bytes() const { return block_count_ * sizeof(Block); }
  std::atomic<uint64_t>& added() { return added_; }
  uint64_t added() const { return added_.load(std::memory_order_relaxed); }

  // The bits are published by whatever orders the adder before the reader (a lock, a RocksDB
  // write and a read that sees it, MarkReady): relaxed is enough here.
  void Set(uint64_t hash) {
    std::array<uint64_t, 8> masks{};
    ForEachBit(hash, [&](uint32_t bit) { masks[bit >> 6] |= uint64_t{1} << (bit & 63); });
    Block& block = BlockOf(hash);
    for (size_t w = 0; w < masks.size(); ++w) {
      if (masks[w] != 0) block.words[w].fetch_or(masks[w], std::memory_order_relaxed);
    }
  }

  bool MayContain(uint64_t hash) const {
    const Block& block = BlockOf(hash);
    bool all = true;
    ForEachBit(hash, [&](uint32_t bit) {
      all = all && (block.words[bit >> 6].load(std::memory_order_relaxed) >> (bit & 63) & 1) != 0;
    });
    return all;
  }

 private:
  struct alignas(64) Block {
    std::array<std::atomic<uint64_t>, 8> words{};
  };

  // The upper half of the hash picks the block (multiply-shift: no division), the lower half
  // the bits in it, 9 bits at a time from successive multiples by the golden ratio.
  Block& BlockOf(uint64_t hash) const {
    return blocks_[static_cast<uint64_t>((hash >> 32) * block_count_) >> 32];
  }
  template <typename Fn>
  static void ForEachBit(uint64_t hash, Fn fn) {
    uint32_t h = static_cast<uint32_t>(hash);
    for (int i = 0; i < kProbes; ++i) {
      fn(h >> (32 - 9));
      h *= 0x9e3779b9u;
    }
  }

  const uint64_t capacity_;
  const uint64_t block_count_;  // < 2^32: the block index is the top of a 64-bit product
  const std::unique_ptr<Block[]> blocks_;
  std::atomic<uint64_t> added_{0};
};

WindowKeyFilter::WindowKeyFilter(uint64_t expected_keys,
                                 std::weak_ptr<const WindowKeyFilter> sized_like, bool ready)
    : expected_keys_(std::max(expected_keys, kMinKeys)),
      sized_like_(std::move(sized_like)),
      ready_(ready) {}

WindowKeyFilter::~WindowKeyFilter() {
  for (size_t i = 0; i < segment_count_.load(); ++i) delete segments_[i].load();
}

uint64_t WindowKeyFilter::Hash(std::string_view key) { return KeyHash(key); }

void WindowKeyFilter::Add(uint64_t hash) {
  Segment* segment = current_.load(std::memory_order_acquire);
  if (segment == nullptr ||
      segment->added().fetch_add(1, std::memory_order_relaxed) >= segment->capacity()) {
    segment = Grow(segment);
  }
  segment->Set(hash);
}

WindowKeyFilter::Segment* WindowKeyFilter::Grow(Segment* full) {
  std::lock_guard<std::mutex> one_growth(grow_mu_);
  Segment* current = current_.load(std::memory_order_acquire);
  const size_t count = segment_count_.load(std::memory_order_relaxed);
  if (current != full || count == kMaxSegments) {  // another add grew it, or it cannot grow
    if (current == full) current->added().fetch_add(1, std::memory_order_relaxed);
    return current;
  }
  uint64_t capacity = full != nullptr ? 2 * full->capacity() : expected_keys_;
  if (full == nullptr) {
    if (std::shared_ptr<const WindowKeyFilter> like = sized_like_.lock()) {
      capacity = std::max(capacity, like->keys());
    }
  }
  capacity = std::min(capacity, kMaxSegmentKeys);
  const uint64_t bits_per_key =
      std::min(kMaxBitsPerKey, kBitsPerKey + kExtraBitsPerKeyPerSegment * count);
  auto* next = new Segment(capacity, bits_per_key);
  next->added().store(1, std::memory_order_relaxed);  // the add that grew it
  bytes_.fetch_add(next->bytes(), std::memory_order_relaxed);
  // The pointer before the count, the count before current_: a reader that sees a segment
  // through either sees it whole.
  segments_[count].store(next, std::memory_order_release);
  segment_count_.store(count + 1, std::memory_order_release);
  current_.store(next, std::memory_order_release);
  return next;
}

bool WindowKeyFilter::MayContain(uint64_t hash) const {
  if (!ready()) return true;
  // Newest first: each segment is twice the one before, so the newest holds about half the
  // keys, and the records a lookup finds are mostly the ones just written.
  for (size_t i = segment_count_.load(std::memory_order_acquire); i > 0; --i) {
    if (segments_[i - 1].load(std::memory_order_acquire)->MayContain(hash)) return true;
  }
  return false;
}

void WindowKeyFilter::MarkReady() { ready_.store(true, std::memory_order_release); }

uint64_t WindowKeyFilter::keys() const {
  const size_t count = segment_count_.load(std::memory_order_acquire);
  uint64_t keys = 0;
  for (size_t i = 0; i < count; ++i) {
    const Segment* s = segments_[i].load(std::memory_order_acquire);
    keys += std::min(s->added(), s->capacity());
  }
  return keys;
}

}  // namespace idem
