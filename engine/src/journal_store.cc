#include "journal_store.h"

#include <algorithm>
#include <vector>

#include "key_hash.h"

namespace idem::journal {

Result<std::unique_ptr<JournalStore>> JournalStore::Open(rocksdb::FileSystem* fs,
                                                         const std::string& dir,
                                                         const JournalOptions& options,
                                                         const Clock* clock,
                                                         int64_t removal_bound_ms) {
  std::unique_ptr<JournalStore> store(new JournalStore(removal_bound_ms));
  Status replayed;
  Result<std::unique_ptr<Journal>> journal = Journal::Open(
      fs, dir, options, clock,
      [&](const Journal& j, const OpView& op, Journal::Location at, uint64_t /*sequence*/) {
        if (replayed.ok()) replayed = store->Replay(j, op, at);
      });
  if (!journal.ok()) return journal.status();
  if (!replayed.ok()) return replayed;
  store->journal_ = std::move(*journal);
  return store;
}

Status JournalStore::Replay(const Journal& journal, const OpView& op, Journal::Location at) {
  const uint64_t hash = KeyHash(op.key);
  Result<std::optional<Version>> current = Find(journal, hash, op.key);
  if (!current.ok()) return current.status();
  const bool present = op.type == OpType::kPut && op.keep_until_ms > removal_bound_ms_;
  if (*current) {
    if (present) {
      index_.Replace(hash, (*current)->at, at);
    } else {
      index_.Erase(hash, (*current)->at);
    }
  } else if (present && !index_.Insert(hash, at)) {
    return Status::Busy("the journal's index is full");
  }
  return Status::Ok();
}

Result<std::optional<JournalStore::Version>> JournalStore::Find(const Journal& journal,
                                                                uint64_t hash,
                                                                std::string_view key) const {
  std::vector<Journal::Location> candidates;
  index_.Find(hash, &candidates);
  std::string bytes;
  for (const Journal::Location& at : candidates) {
    Status read = journal.Read(at, kReadAhead, &bytes);
    if (read.IsNotFound()) continue;  // its segment was dropped: only dead versions were there
    if (!read.ok()) return read;
    std::optional<size_t> size = PeekOpBytes(bytes);
    // The size is not checked yet: bounded by the segment before anything is allocated for it.
    if (size && *size > bytes.size() && *size <= kMaxSegmentBytes - at.offset) {
      if (read = journal.Read(at, *size, &bytes); !read.ok()) return read;
    }
    Result<OpView> op = DecodeOp(bytes);
    if (!op.ok()) {
      // A segment dropped since the index was asked, whose id a new segment took: not damage.
      if (!index_.Holds(hash, at)) continue;
      return Status::Corruption("journal segment " + std::to_string(at.segment) + " offset " +
                                std::to_string(at.offset) + ": " + op.status().message());
    }
    if (op->key == key) {
      return std::optional<Version>(Version{std::string(op->value), op->keep_until_ms, at});
    }
  }
  return std::optional<Version>();
}

Result<std::optional<JournalStore::Version>> JournalStore::Get(std::string_view key) const {
  return Find(*journal_, KeyHash(key), key);
}

Status JournalStore::Apply(std::span<const Write> writes) {
  std::lock_guard<std::mutex> lock(apply_mu_);
  if (!failed_.ok()) return failed_;
  struct Pending {
    uint64_t hash = 0;
    // Where the key is before this write: in the index, or put by an earlier write of the batch
    // (`earlier`, its index in `writes`).
    std::optional<Journal::Location> current;
    std::optional<size_t> earlier;
    int64_t keep_until_ms = 0;  // as written: raised to what it replaces
  };
  std::vector<Pending> pending(writes.size());
  EntryBuilder entry;
  for (size_t i = 0; i < writes.size(); ++i) {
    const Write& w = writes[i];
    Pending& p = pending[i];
    p.hash = KeyHash(w.key);
    int64_t keep_until_ms = w.keep_until_ms;
    for (size_t j = i; j-- > 0;) {  // the batch's own last write of the key, if any
      if (pending[j].hash == p.hash && writes[j].key == w.key) {
        p.earlier = j;
        break;
      }
    }
    if (p.earlier) {
      keep_until_ms = std::max(keep_until_ms, pending[*p.earlier].keep_until_ms);
    } else {
      Result<std::optional<Version>> current = Find(*journal_, p.hash, w.key);
      if (!current.ok()) return current.status();
      if (*current) {
        p.current = (*current)->at;
        keep_until_ms = std::max(keep_until_ms, (*current)->keep_until_ms);
      }
    }
    p.keep_until_ms = keep_until_ms;
    if (Status s = entry.Add(OpView{w.type, keep_until_ms, w.key, w.value}); !s.ok()) return s;
  }
  const std::vector<uint32_t> offsets = entry.offsets();
  Result<Journal::Location> at = journal_->Append(&entry);
  if (!at.ok()) return at.status();
  for (size_t i = 0; i < writes.size(); ++i) {
    Pending& p = pending[i];
    const Journal::Location here{at->segment, at->offset + offsets[i]};
    std::optional<Journal::Location> current = p.current;
    if (p.earlier) {
      const size_t j = *p.earlier;
      current = writes[j].type == OpType::kPut ? std::optional<Journal::Location>(Journal::Location{
                                                     at->segment, at->offset + offsets[j]})
                                               : std::nullopt;
    }
    if (writes[i].type == OpType::kPut) {
      // A drop may have removed the current entry since it was read: then it is new again.
      if (!(current && index_.Replace(p.hash, *current, here)) && !index_.Insert(p.hash, here)) {
        failed_ = Status::Busy("the journal's index is full (" + std::to_string(index_.size()) +
                               " records): the store takes no more writes");
        return failed_;
      }
    } else if (current) {
      index_.Erase(p.hash, *current);
    }
  }
  return Status::Ok();
}

Status JournalStore::Sync() { return journal_->Sync(); }

Result<size_t> JournalStore::DropEndedBy(int64_t until_ms) {
  std::lock_guard<std::mutex> lock(drop_mu_);
  std::vector<uint32_t> doomed;
  for (const Journal::SegmentInfo& segment : journal_->Segments()) {
    if (!segment.active && segment.max_keep_until_ms <= until_ms) doomed.push_back(segment.id);
  }
  if (doomed.empty()) return size_t{0};
  // Entries first: a lookup that still finds one reads the file (open until it is done) or
  // learns it is gone, and either way the version was dead.
  index_.EraseSegments(doomed);
  for (size_t i = 0; i < doomed.size(); ++i) {
    if (Status s = journal_->DeleteSegment(doomed[i]); !s.ok()) return s;
  }
  return doomed.size();
}

}  // namespace idem::journal
