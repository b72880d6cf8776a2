#include "hash_memtable.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string_view>
#include <unordered_set>
#include <vector>

#include <rocksdb/slice.h>

#include "coding.h"

namespace idem {
namespace {

// ---- The entry format RocksDB hands a memtable rep (frozen; see MemTableRep::KeyComparator):
//   varint32 internal_key_length | user_key | 8-byte tag (sequence << 8 | type) | varint32 | value

const char* DecodeVarint32(const char* p, uint32_t* value) {
  uint32_t result = 0;
  for (int shift = 0; shift <= 28; shift += 7) {
    uint32_t byte = static_cast<uint8_t>(*p++);
    result |= (byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) break;
  }
  *value = result;
  return p;
}

struct EntryView {
  rocksdb::Slice user_key;
  uint64_t tag;  // sequence << 8 | type: newer entries of a key have larger tags
};

EntryView ViewEntry(const char* entry) {
  uint32_t internal_length;
  const char* internal_key = DecodeVarint32(entry, &internal_length);
  return {rocksdb::Slice(internal_key, internal_length - 8),
          coding::DecodeFixed64(internal_key + internal_length - 8)};
}

// RocksDB passes Get a LookupKey, whose accessors are inline in an internal header. Its first
// three members point at the memtable-format key (varint32 length, user key, tag), at the user
// key and past the tag — so in RocksDB 7.8.3, which the engine is built against, and in upstream
// RocksDB and LevelDB before it (forks differ). The layout is checked on every use: a RocksDB
// whose LookupKey differs stops the process with this message instead of reading garbage.
const char* MemtableKeyOf(const rocksdb::LookupKey& lookup) {
  const char* members[3];  // start_, kstart_, end_
  std::memcpy(members, static_cast<const void*>(&lookup), sizeof members);
  uint32_t internal_length;
  const char* internal_key = DecodeVarint32(members[0], &internal_length);
  if (internal_key != members[1] || internal_key + internal_length != members[2]) {
    std::fprintf(stderr,
                 "idemstore: rocksdb::LookupKey's layout is not the one the hash memtable "
                 "was written for; run with --memtable skiplist\n");
    std::abort();
  }
  return members[0];
}

// A chain node: the link, then the entry RocksDB writes. Published once, never modified.
struct Node {
  std::atomic<Node*> next;
  char* entry() { return reinterpret_cast<char*>(this + 1); }
};

// ---- Sorting a snapshot into internal-key order.
//
// Comparing two entries through RocksDB's comparator dereferences both (a cache miss each) and
// decodes them; a memtable holds a few hundred thousand. So entries are first ordered by 8-byte
// big-endian chunks of their user keys, held next to the pointer (cache-friendly), going one chunk
// deeper only inside runs that tie; runs still tied after kRadixBytes, or whose keys have ended,
// are finished with the real comparator (which also orders a key's versions newest first).
// Valid for the bytewise user comparator only: a zero-padded chunk that compares lower belongs to
// a key that compares lower, and equal chunks decide nothing.
struct SortItem {
  uint64_t chunk;
  const char* entry;
};

constexpr size_t kRadixBytes = 32;

uint64_t ChunkAt(const rocksdb::Slice& key, size_t offset) {
  uint64_t chunk = 0;
  for (size_t i = 0; i < 8; ++i) {
    uint8_t byte = offset + i < key.size() ? static_cast<uint8_t>(key[offset + i]) : 0;
    chunk = (chunk << 8) | byte;
  }
  return chunk;
}

// Entries sit in the allocator in arrival order, and a memtable is far larger than the CPU's
// caches: reading them in any sorted or hashed order misses on nearly every one. Asking for the
// entry a few places ahead overlaps those misses instead of taking them one after another.
constexpr ptrdiff_t kPrefetchAhead = 16;

void PrefetchEntry(const char* entry) { __builtin_prefetch(entry); }

void SortByInternalKey(SortItem* first, SortItem* last, size_t offset,
                       const rocksdb::MemTableRep::KeyComparator& compare) {
  if (last - first < 2) return;
  bool any_key_continues = false;
  for (SortItem* it = first; it != last; ++it) {
    if (last - it > kPrefetchAhead) PrefetchEntry(it[kPrefetchAhead].entry + offset);
    rocksdb::Slice key = ViewEntry(it->entry).user_key;
    it->chunk = ChunkAt(key, offset);
    any_key_continues |= key.size() > offset + 8;
  }
  std::sort(first, last, [](const SortItem& a, const SortItem& b) { return a.chunk < b.chunk; });
  for (SortItem* run = first; run != last;) {
    SortItem* end = run + 1;
    while (end != last && end->chunk == run->chunk) ++end;
    if (end - run > 1) {
      if (any_key_continues && offset + 8 < kRadixBytes) {
        SortByInternalKey(run, end, offset + 8, compare);
      } else {
        std::sort(run, end, [&compare](const SortItem& a, const SortItem& b) {
          return compare(a.entry, b.entry) < 0;
        });
      }
    }
    run = end;
  }
}

// An iterator over a sorted snapshot of entries.
class SortedIterator final : public rocksdb::MemTableRep::Iterator {
 public:
  SortedIterator(std::vector<const char*> entries,
                 const rocksdb::MemTableRep::KeyComparator& compare)
      : entries_(std::move(entries)), compare_(compare), index_(entries_.size()) {}

  bool Valid() const override { return index_ < entries_.size(); }
  const char* key() const override { return entries_[index_]; }
  void Next() override {
    ++index_;
    if (index_ + kIteratorPrefetchAhead < entries_.size()) {
      PrefetchEntry(entries_[index_ + kIteratorPrefetchAhead]);
    }
  }
  void Prev() override { index_ = index_ == 0 ? entries_.size() : index_ - 1; }
  void Seek(const rocksdb::Slice& internal_key, const char* /*memtable_key*/) override {
    index_ = FirstNotBefore(internal_key);
  }
  void SeekForPrev(const rocksdb::Slice& internal_key, const char* /*memtable_key*/) override {
    size_t after = FirstNotBefore(internal_key);
    if (after < entries_.size() && compare_(entries_[after], internal_key) == 0) {
      index_ = after;
    } else {
      index_ = after == 0 ? entries_.size() : after - 1;
    }
  }
  void SeekToFirst() override { index_ = 0; }
  void SeekToLast() override { index_ = entries_.empty() ? 0 : entries_.size() - 1; }

 private:
  size_t FirstNotBefore(const rocksdb::Slice& internal_key) const {
    auto it = std::lower_bound(entries_.begin(), entries_.end(), internal_key,
                               [this](const char* entry, const rocksdb::Slice& target) {
                                 return compare_(entry, target) < 0;
                               });
    return static_cast<size_t>(it - entries_.begin());
  }

  // A flush does more per entry than the sort does, so fewer steps ahead suffice.
  static constexpr size_t kIteratorPrefetchAhead = 4;

  std::vector<const char*> entries_;
  const rocksdb::MemTableRep::KeyComparator& compare_;
  size_t index_;  // entries_.size() when not positioned
};

class HashMemTableRep final : public rocksdb::MemTableRep {
 public:
  HashMemTableRep(const KeyComparator& compare, rocksdb::Allocator* allocator, size_t bucket_count)
      : MemTableRep(allocator), compare_(compare), bucket_count_(bucket_count) {}

  rocksdb::KeyHandle Allocate(const size_t len, char** buf) override {
    Node* node = new (AllocateAligned(sizeof(Node) + len, alignof(Node))) Node{{nullptr}};
    *buf = node->entry();
    return node;
  }

  // Single writer (RocksDB serializes non-concurrent memtable inserts); readers may be walking
  // the same chain, which is why the node is linked before it is published.
  void Insert(rocksdb::KeyHandle handle) override {
    Node* node = static_cast<Node*>(handle);
    std::atomic<Node*>* buckets = buckets_.load(std::memory_order_relaxed);
    if (buckets == nullptr) buckets = CreateBuckets();
    std::atomic<Node*>& bucket = buckets[BucketIndex(ViewEntry(node->entry()).user_key)];
    node->next.store(bucket.load(std::memory_order_relaxed), std::memory_order_relaxed);
    bucket.store(node, std::memory_order_release);
    entry_count_.fetch_add(1, std::memory_order_relaxed);
  }

  bool Contains(const char* memtable_key) const override {
    EntryView target = ViewEntry(memtable_key);
    for (Node* n = ChainFor(target.user_key); n != nullptr;
         n = n->next.load(std::memory_order_acquire)) {
      EntryView e = ViewEntry(n->entry());
      if (e.tag == target.tag && e.user_key == target.user_key) return true;
    }
    return false;
  }

  void Get(const rocksdb::LookupKey& lookup, void* callback_args,
           bool (*callback)(void* arg, const char* entry)) override {
    EntryView target = ViewEntry(MemtableKeyOf(lookup));
    // The lookup's tag is its snapshot sequence with the largest type, so an entry is visible
    // exactly when its tag is not larger. Chains hold newest first (inserts prepend and
    // sequence numbers grow), but the order is checked rather than assumed.
    constexpr size_t kInline = 8;
    const char* inline_matches[kInline];
    std::vector<const char*> more_matches;
    size_t count = 0;
    bool newest_first = true;
    uint64_t previous_tag = UINT64_MAX;
    for (Node* n = ChainFor(target.user_key); n != nullptr;
         n = n->next.load(std::memory_order_acquire)) {
      EntryView e = ViewEntry(n->entry());
      if (e.tag > target.tag || e.user_key != target.user_key) continue;
      newest_first &= e.tag < previous_tag;
      previous_tag = e.tag;
      if (count < kInline) {
        inline_matches[count] = n->entry();
      } else {
        if (more_matches.empty()) more_matches.assign(inline_matches, inline_matches + kInline);
        more_matches.push_back(n->entry());
      }
      ++count;
    }
    const char** matches = count <= kInline ? inline_matches : more_matches.data();
    if (!newest_first) {
      std::sort(matches, matches + count,
                [](const char* a, const char* b) { return ViewEntry(a).tag > ViewEntry(b).tag; });
    }
    for (size_t i = 0; i < count && callback(callback_args, matches[i]); ++i) {
    }
  }

  Iterator* GetIterator(rocksdb::Arena* arena) override {
    std::vector<const char*> entries = SortedSnapshot();
    if (arena == nullptr) return new SortedIterator(std::move(entries), compare_);
    // The caller destroys an arena iterator in place and never frees it. Arena's interface is
    // internal to RocksDB, and this memtable's own allocator must not grow once the memtable is
    // immutable (RocksDB accounts its size when it is queued for flush), so the object's bytes
    // come from the heap, owned here and released with the memtable: one per iterator, and the
    // engine creates one per memtable, the flush's.
    std::lock_guard<std::mutex> lock(iterator_memory_mu_);
    iterator_memory_.push_back(std::make_unique<IteratorMemory>());
    return new (iterator_memory_.back().get()) SortedIterator(std::move(entries), compare_);
  }

  // RocksDB's in-memory purge (experimental_mempurge_threshold) estimates a memtable's live
  // payload from a sample. Buckets are in hash order, so every k-th entry is a fair sample.
  void UniqueRandomSample(const uint64_t num_entries, const uint64_t target_sample_size,
                          std::unordered_set<const char*>* entries) override {
    entries->clear();
    const uint64_t stride =
        std::max<uint64_t>(1, num_entries / std::max<uint64_t>(1, target_sample_size));
    std::atomic<Node*>* buckets = buckets_.load(std::memory_order_acquire);
    if (buckets == nullptr) return;
    uint64_t seen = 0;
    for (size_t b = 0; b < bucket_count_ && entries->size() < target_sample_size; ++b) {
      for (Node* n = buckets[b].load(std::memory_order_acquire); n != nullptr;
           n = n->next.load(std::memory_order_acquire)) {
        if (seen++ % stride == 0) entries->insert(n->entry());
      }
    }
  }

  // A prefix iterator may return keys outside the prefix; the whole sorted snapshot qualifies.
  Iterator* GetDynamicPrefixIterator(rocksdb::Arena* arena) override { return GetIterator(arena); }

  // The bucket array and the nodes live in the allocator, which RocksDB already counts.
  size_t ApproximateMemoryUsage() override { return 0; }

 private:
  // The same string hash as the engine's lock stripes (key_locks.h).
  size_t BucketIndex(const rocksdb::Slice& user_key) const {
    const std::string_view key(user_key.data(), user_key.size());
    return std::hash<std::string_view>{}(key) & (bucket_count_ - 1);
  }

  // The newest node of the user key's chain, or null (none, or no entry at all yet).
  Node* ChainFor(const rocksdb::Slice& user_key) const {
    std::atomic<Node*>* buckets = buckets_.load(std::memory_order_acquire);
    if (buckets == nullptr) return nullptr;
    return buckets[BucketIndex(user_key)].load(std::memory_order_acquire);
  }

  // The bucket array is made by the first insert, not with the memtable: RocksDB creates a
  // memtable for every column family as soon as the last one is switched out, and with a family
  // per expiry window most of those stay empty for a long time. Their arrays (1/16 of the write
  // buffer each) counted against the shared memtable budget and made it flush full memtables
  // early. The array is fully initialised before it is published (release), as nodes are.
  std::atomic<Node*>* CreateBuckets() {
    auto* buckets = static_cast<std::atomic<Node*>*>(
        AllocateAligned(bucket_count_ * sizeof(std::atomic<Node*>), alignof(std::atomic<Node*>)));
    for (size_t i = 0; i < bucket_count_; ++i) new (&buckets[i]) std::atomic<Node*>(nullptr);
    buckets_.store(buckets, std::memory_order_release);
    return buckets;
  }

  // RocksDB's allocator hands out unaligned bytes through the base class's Allocate (its
  // aligned variant is not public); over-allocate and align by hand.
  void* AllocateAligned(size_t bytes, size_t alignment) {
    char* raw;
    MemTableRep::Allocate(bytes + alignment - 1, &raw);
    auto address = reinterpret_cast<uintptr_t>(raw);
    return reinterpret_cast<void*>((address + alignment - 1) & ~(uintptr_t{alignment} - 1));
  }

  std::vector<const char*> SortedSnapshot() const {
    std::vector<SortItem> items;
    std::atomic<Node*>* buckets = buckets_.load(std::memory_order_acquire);
    const size_t bucket_count = buckets == nullptr ? 0 : bucket_count_;
    items.reserve(entry_count_.load(std::memory_order_relaxed));
    for (size_t b = 0; b < bucket_count; ++b) {
      if (b + kPrefetchAhead < bucket_count) {
        // A hint only: the node is read below through an acquire load, as ever.
        Node* ahead = buckets[b + kPrefetchAhead].load(std::memory_order_relaxed);
        if (ahead != nullptr) PrefetchEntry(reinterpret_cast<const char*>(ahead));
      }
      for (Node* n = buckets[b].load(std::memory_order_acquire); n != nullptr;
           n = n->next.load(std::memory_order_acquire)) {
        items.push_back({0, n->entry()});
      }
    }
    SortByInternalKey(items.data(), items.data() + items.size(), 0, compare_);
    std::vector<const char*> entries;
    entries.reserve(items.size());
    for (const SortItem& item : items) entries.push_back(item.entry);
    return entries;
  }

  struct alignas(SortedIterator) IteratorMemory {
    unsigned char bytes[sizeof(SortedIterator)];
  };

  const KeyComparator& compare_;
  const size_t bucket_count_;                          // a power of two
  std::atomic<std::atomic<Node*>*> buckets_{nullptr};  // set once, by the first Insert
  std::atomic<size_t> entry_count_{0};
  std::mutex iterator_memory_mu_;
  std::vector<std::unique_ptr<IteratorMemory>> iterator_memory_;  // guarded by iterator_memory_mu_
};

}  // namespace

HashMemTableRepFactory::HashMemTableRepFactory(size_t bucket_count)
    : bucket_count_(std::bit_ceil(std::max<size_t>(bucket_count, 2))) {}

rocksdb::MemTableRep* HashMemTableRepFactory::CreateMemTableRep(
    const rocksdb::MemTableRep::KeyComparator& compare, rocksdb::Allocator* allocator,
    const rocksdb::SliceTransform* /*prefix_extractor*/, rocksdb::Logger* /*logger*/) {
  return new HashMemTableRep(compare, allocator, bucket_count_);
}

size_t HashMemTableBucketsFor(size_t write_buffer_bytes) {
  return std::bit_ceil(std::clamp<size_t>(write_buffer_bytes / 128, 1024, size_t{1} << 24));
}

}  // namespace idem
