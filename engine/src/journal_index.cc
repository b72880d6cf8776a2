#include "journal_index.h"

#include <algorithm>
#include <mutex>
#include <utility>

namespace idem::journal {
namespace {

constexpr int kTagShift = 39;
constexpr int kSegmentShift = 23;
constexpr uint64_t kOffsetMask = (uint64_t{1} << kSegmentShift) - 1;
constexpr uint64_t kSegmentMask = (uint64_t{1} << 16) - 1;
constexpr size_t kInitialSlots = 64;
constexpr size_t kMaxSlots = size_t{1} << 25;  // a home is the tag's low bits

size_t ShardOf(uint64_t hash) { return hash >> 56; }
// Bits 31..55 of the hash: the shard's are apart.
uint64_t TagOf(uint64_t hash) { return (hash >> 31) & ((uint64_t{1} << 25) - 1); }

uint64_t Pack(uint64_t hash, JournalIndex::Location at) {
  return (TagOf(hash) << kTagShift) | (uint64_t{at.segment + 1} << kSegmentShift) | (at.offset / 8);
}
uint64_t SlotTag(uint64_t slot) { return slot >> kTagShift; }
JournalIndex::Location Unpack(uint64_t slot) {
  return {static_cast<uint32_t>(((slot >> kSegmentShift) & kSegmentMask) - 1),
          static_cast<uint32_t>((slot & kOffsetMask) * 8)};
}

}  // namespace

// One open-addressing table. An entry's home slot is its tag's low bits, so that growing the
// table or shifting an entry back can re-derive it from the slot alone.
struct JournalIndex::Shard {
  mutable std::shared_mutex mu;
  std::vector<uint64_t> slots;  // guarded by mu; 0: empty
  size_t used = 0;              // guarded by mu

  size_t Mask() const { return slots.size() - 1; }
  size_t Home(uint64_t slot) const { return SlotTag(slot) & Mask(); }

  void Grow() {
    std::vector<uint64_t> old(slots.size() * 2, 0);
    old.swap(slots);
    for (uint64_t slot : old) {
      if (slot != 0) Place(slot);
    }
  }
  void Place(uint64_t slot) {
    size_t i = Home(slot);
    while (slots[i] != 0) i = (i + 1) & Mask();
    slots[i] = slot;
  }
  // Empties slot i, shifting later entries of its probe run back into the gap.
  void RemoveAt(size_t i) {
    size_t gap = i;
    for (size_t j = (i + 1) & Mask(); slots[j] != 0; j = (j + 1) & Mask()) {
      const size_t home = Home(slots[j]);
      // The entry at j may move to the gap if its home is not in (gap, j] (cyclically).
      const bool home_after_gap = gap <= j ? (gap < home && home <= j) : (gap < home || home <= j);
      if (!home_after_gap) {
        slots[gap] = slots[j];
        gap = j;
      }
    }
    slots[gap] = 0;
    --used;
  }
  // The slot holding `packed` in its probe run, or slots.size().
  size_t Locate(uint64_t packed) const {
    for (size_t i = Home(packed); slots[i] != 0; i = (i + 1) & Mask()) {
      if (slots[i] == packed) return i;
    }
    return slots.size();
  }
};

JournalIndex::JournalIndex() {
  for (auto& shard : shards_) {
    shard = std::make_unique<Shard>();
    shard->slots.assign(kInitialSlots, 0);
  }
}

JournalIndex::~JournalIndex() = default;

void JournalIndex::Find(uint64_t hash, std::vector<Location>* out) const {
  const Shard& shard = *shards_[ShardOf(hash)];
  std::shared_lock<std::shared_mutex> lock(shard.mu);
  const uint64_t tag = TagOf(hash);
  for (size_t i = tag & shard.Mask(); shard.slots[i] != 0; i = (i + 1) & shard.Mask()) {
    if (SlotTag(shard.slots[i]) == tag) out->push_back(Unpack(shard.slots[i]));
  }
}

bool JournalIndex::Holds(uint64_t hash, Location at) const {
  if (!Holds(at)) return false;
  const Shard& shard = *shards_[ShardOf(hash)];
  std::shared_lock<std::shared_mutex> lock(shard.mu);
  return shard.Locate(Pack(hash, at)) != shard.slots.size();
}

bool JournalIndex::Insert(uint64_t hash, Location at) {
  if (!Holds(at)) return false;
  Shard& shard = *shards_[ShardOf(hash)];
  std::unique_lock<std::shared_mutex> lock(shard.mu);
  // Growing at 80 % keeps a miss's probe run to a few cache lines.
  if ((shard.used + 1) * 5 > shard.slots.size() * 4) {
    if (shard.slots.size() == kMaxSlots) return false;
    shard.Grow();
  }
  shard.Place(Pack(hash, at));
  ++shard.used;
  return true;
}

bool JournalIndex::Replace(uint64_t hash, Location from, Location to) {
  if (!Holds(from) || !Holds(to)) return false;
  Shard& shard = *shards_[ShardOf(hash)];
  std::unique_lock<std::shared_mutex> lock(shard.mu);
  const size_t i = shard.Locate(Pack(hash, from));
  if (i == shard.slots.size()) return false;
  shard.slots[i] = Pack(hash, to);  // same hash: same home, same probe run
  return true;
}

bool JournalIndex::Erase(uint64_t hash, Location at) {
  if (!Holds(at)) return false;
  Shard& shard = *shards_[ShardOf(hash)];
  std::unique_lock<std::shared_mutex> lock(shard.mu);
  const size_t i = shard.Locate(Pack(hash, at));
  if (i == shard.slots.size()) return false;
  shard.RemoveAt(i);
  return true;
}

size_t JournalIndex::EraseSegments(const std::vector<uint32_t>& segments) {
  std::vector<bool> doomed(kSegmentMask + 1, false);  // by segment + 1, as slots hold it
  for (uint32_t segment : segments) {
    if (segment < kMaxSegments) doomed[segment + 1] = true;
  }
  size_t erased = 0;
  for (auto& shard_ptr : shards_) {
    Shard& shard = *shard_ptr;
    std::unique_lock<std::shared_mutex> lock(shard.mu);
    // A removal shifts later entries back, possibly into slot i (then looked at again) and, from
    // the start of a run that wraps around, into the last slots (looked at later). An entry that
    // wraps from the end into slots already passed is never a doomed one: those were removed
    // when passed.
    for (size_t i = 0; i < shard.slots.size();) {
      if (shard.slots[i] != 0 && doomed[(shard.slots[i] >> kSegmentShift) & kSegmentMask]) {
        shard.RemoveAt(i);
        ++erased;
      } else {
        ++i;
      }
    }
  }
  return erased;
}

size_t JournalIndex::TableSlots(size_t shard_number) const {
  const Shard& shard = *shards_[shard_number];
  std::shared_lock<std::shared_mutex> lock(shard.mu);
  return shard.slots.size();
}

void JournalIndex::CopyTable(size_t shard_number, std::vector<uint64_t>* table) const {
  const Shard& shard = *shards_[shard_number];
  std::shared_lock<std::shared_mutex> lock(shard.mu);
  table->resize(shard.slots.size());
  std::copy(shard.slots.begin(), shard.slots.end(), table->begin());
}

JournalIndex::ShardImage JournalIndex::Export(size_t shard_number) const {
  std::vector<uint64_t> table;
  CopyTable(shard_number, &table);
  ShardImage image;
  image.slots = static_cast<uint32_t>(table.size());
  for (uint64_t slot : table) {
    if (slot != 0) image.entries.push_back(slot);
  }
  return image;
}

bool JournalIndex::Import(size_t shard_number, const ShardImage& image) {
  const size_t slots = image.slots;
  if (slots < kInitialSlots || slots > kMaxSlots || (slots & (slots - 1)) != 0 ||
      image.entries.size() * 5 > slots * 4) {
    return false;
  }
  for (uint64_t slot : image.entries) {
    if (((slot >> kSegmentShift) & kSegmentMask) == 0 || !Holds(Unpack(slot))) return false;
  }
  Shard& shard = *shards_[shard_number];
  std::unique_lock<std::shared_mutex> lock(shard.mu);
  if (shard.used != 0) return false;
  shard.slots.assign(slots, 0);
  for (uint64_t slot : image.entries) shard.Place(slot);
  shard.used = image.entries.size();
  return true;
}

std::vector<JournalIndex::Entry> JournalIndex::Entries() const {
  std::vector<Entry> out;
  std::vector<uint64_t> table;
  for (size_t shard = 0; shard < kShards; ++shard) {
    CopyTable(shard, &table);
    for (uint64_t slot : table) {
      if (slot == 0) continue;
      out.push_back({uint64_t{shard} << 25 | SlotTag(slot), Unpack(slot)});
    }
  }
  return out;
}

void JournalIndex::Clear() {
  for (auto& shard : shards_) {
    std::unique_lock<std::shared_mutex> lock(shard->mu);
    shard->slots.assign(kInitialSlots, 0);
    shard->slots.shrink_to_fit();
    shard->used = 0;
  }
}

size_t JournalIndex::size() const {
  size_t n = 0;
  for (const auto& shard : shards_) {
    std::shared_lock<std::shared_mutex> lock(shard->mu);
    n += shard->used;
  }
  return n;
}

size_t JournalIndex::MemoryBytes() const {
  size_t n = 0;
  for (const auto& shard : shards_) {
    std::shared_lock<std::shared_mutex> lock(shard->mu);
    n += shard->slots.capacity() * sizeof(uint64_t);
  }
  return n;
}

}  // namespace idem::journal
