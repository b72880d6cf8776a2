#include "journal_store.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "key_hash.h"

namespace idem::journal {
namespace {

// What does not read back at `at`: Corruption naming where it is.
Status Corrupt(Journal::Location at, const Status& why) {
  return Status::Corruption("journal segment " + std::to_string(at.segment) + " offset " +
                            std::to_string(at.offset) + ": " + why.message());
}

}  // namespace

Result<std::unique_ptr<JournalStore>> JournalStore::Open(rocksdb::FileSystem* fs,
                                                         const std::string& dir,
                                                         const JournalOptions& options,
                                                         const Clock* clock,
                                                         int64_t removal_bound_ms) {
  std::unique_ptr<JournalStore> store(new JournalStore(options, removal_bound_ms));
  Journal::Resume resume;
  store->LoadSaved(fs, dir, &resume);
  Status replayed;
  Result<std::unique_ptr<Journal>> journal =
      Journal::Open(fs, dir, options, clock, store->ReplayInto(&replayed),
                    store->opened_.loaded_saved_index ? &resume : nullptr);
  if (!journal.ok()) return journal.status();
  if (!replayed.ok()) return replayed;
  store->journal_ = std::move(*journal);
  store->fs_ = fs;
  store->dir_ = dir;
  if (Status s = DeleteUnfinishedSave(fs, dir); !s.ok()) return s;
  if (!store->opened_.saved_index_unused.empty()) {
    // Of no use to any later open either.
    if (Status s = DeleteSavedIndex(fs, dir); !s.ok()) return s;
  }
  return store;
}

void JournalStore::LoadSaved(rocksdb::FileSystem* fs, const std::string& dir,
                             Journal::Resume* resume) {
  OpenReport& report = opened_;
  Result<std::optional<SavedJournal>> saved = ReadSavedIndex(fs, dir, &index_);
  if (!saved.ok()) {
    report.saved_index_unused = saved.status().message();
    return;
  }
  if (!*saved) return;
  resume->segments = std::move((*saved)->segments);
  resume->last_sequence = (*saved)->last_sequence;
  needs_ = std::move((*saved)->needs);
  delete_needs_ = std::move((*saved)->delete_needs);
  report.loaded_saved_index = true;
  resume->gone = [this](const std::vector<uint32_t>& ids) {
    index_.EraseSegments(ids);
    for (uint32_t id : ids) ForgetNeeds(id);
  };
  resume->rejected = [this](const std::string& why) {
    index_.Clear();
    needs_.clear();
    delete_needs_.clear();
    opened_.loaded_saved_index = false;
    opened_.saved_index_unused = "the journal could not have followed the save: " + why;
  };
}

Journal::Replay JournalStore::ReplayInto(Status* replayed) {
  return [this, replayed](const Journal& journal, const OpView& op, Journal::Location at,
                          uint64_t /*sequence*/) {
    if (replayed->ok()) *replayed = Replay(journal, op, at);
  };
}

Result<JournalStore::SavedIndexCheck> JournalStore::CheckSavedIndex(rocksdb::FileSystem* fs,
                                                                    const std::string& dir,
                                                                    int64_t removal_bound_ms) {
  SavedIndexCheck out;
  // The index an open would load: the save, less the segments gone since, and a replay of what
  // came after it.
  JournalStore loaded(JournalOptions{}, removal_bound_ms);
  Journal::Resume resume;
  loaded.LoadSaved(fs, dir, &resume);
  if (!loaded.opened_.loaded_saved_index) {
    out.unusable = loaded.opened_.saved_index_unused;
    out.saved = !out.unusable.empty();
    return out;
  }
  Status replayed;
  Result<Journal::CheckReport> as_loaded =
      Journal::Check(fs, dir, loaded.ReplayInto(&replayed), &resume);
  if (!as_loaded.ok()) return as_loaded.status();
  if (!replayed.ok()) return replayed;
  out.saved = true;
  if (!loaded.opened_.loaded_saved_index) {
    out.unusable = loaded.opened_.saved_index_unused;
    return out;
  }
  out.records = loaded.index_.size();
  // The whole journal replayed: the records a load must find (those needed past the bound),
  // and those it may still hold (a running store keeps a dead record's entry until its segment
  // goes, and saves it).
  JournalStore must(JournalOptions{}, removal_bound_ms);
  JournalStore may(JournalOptions{}, std::numeric_limits<int64_t>::min());
  const Journal::Replay into_must = must.ReplayInto(&replayed);
  const Journal::Replay into_may = may.ReplayInto(&replayed);
  Result<Journal::CheckReport> whole = Journal::Check(
      fs, dir, [&](const Journal& journal, const OpView& op, Journal::Location at, uint64_t seq) {
        into_must(journal, op, at, seq);
        into_may(journal, op, at, seq);
      });
  if (!whole.ok()) return whole.status();
  if (!replayed.ok()) return replayed;

  // Entries compared by key hash and segment number: the two checks number segment ids apart.
  using Entry = std::tuple<uint64_t, uint64_t, uint32_t>;  // hash bits, segment number, offset
  auto entries = [](const JournalIndex& index, const std::vector<Journal::SegmentInfo>& kept) {
    std::unordered_map<uint32_t, uint64_t> number_of;
    for (const Journal::SegmentInfo& segment : kept) number_of[segment.id] = segment.number;
    std::vector<Entry> out;
    for (const JournalIndex::Entry& e : index.Entries()) {
      auto number = number_of.find(e.at.segment);
      out.emplace_back(e.hash_bits, number == number_of.end() ? 0 : number->second, e.at.offset);
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  const std::vector<Entry> load = entries(loaded.index_, as_loaded->kept);
  std::vector<Entry> missing, extra;
  std::ranges::set_difference(entries(must.index_, whole->kept), load, std::back_inserter(missing));
  std::ranges::set_difference(load, entries(may.index_, whole->kept), std::back_inserter(extra));
  if (missing.empty() && extra.empty()) return out;
  auto first = [](const std::vector<Entry>& of) {
    return " (the first: segment " + std::to_string(std::get<1>(of.front())) + " offset " +
           std::to_string(std::get<2>(of.front())) + ")";
  };
  std::string why;
  if (!missing.empty()) {
    why = std::to_string(missing.size()) + " records of the journal are not in it" + first(missing);
  }
  if (!extra.empty()) {
    why += (why.empty() ? "" : ", and ") + std::to_string(extra.size()) +
           " of its entries point at no key's last operation" + first(extra);
  }
  return Status::Corruption(dir + "/" + kSavedIndexName + " does not agree with the journal: " +
                            why + "; delete it, and the next open replays the journal instead");
}

Status JournalStore::SaveIndex() {
  std::lock_guard<std::mutex> moving(drop_mu_);  // no drop or move meanwhile
  // Sized (and so allocated and touched) before writers wait: the copy is then a memcpy per
  // shard. A shard that grows meanwhile is resized during the copy.
  std::vector<std::vector<uint64_t>> tables(JournalIndex::kShards);
  for (size_t shard = 0; shard < tables.size(); ++shard) {
    tables[shard].resize(index_.TableSlots(shard));
  }
  SavedJournal saved;
  {
    // The index as of one point in the journal: writers wait while it is copied.
    std::lock_guard<std::mutex> appending(apply_mu_);
    if (!failed_.ok()) return failed_;
    saved.segments = journal_->Segments();
    saved.last_sequence = journal_->last_sequence();
    {
      std::lock_guard<std::mutex> lock(need_mu_);
      saved.needs = needs_;
      saved.delete_needs = delete_needs_;
    }
    for (size_t shard = 0; shard < tables.size(); ++shard) {
      index_.CopyTable(shard, &tables[shard]);
    }
  }
  // What the copy points at is durable before the copy is.
  if (Status s = journal_->Sync(); !s.ok()) return s;
  return WriteSavedIndex(fs_, dir_, saved, tables);
}

Status JournalStore::Replay(const Journal& journal, const OpView& stored, Journal::Location at) {
  OpView op = stored;
  if (stored.key_in_value) {
    Result<OpView> plain =
        Journal::Plain(stored, journal.DictionaryOf(at.segment), &replay_scratch_);
    if (!plain.ok()) return Corrupt(at, plain.status());
    op = *plain;
  }
  const uint64_t hash = KeyHash(op.key);
  Result<std::optional<Version>> current = Find(journal, hash, op.key);
  if (!current.ok()) return current.status();
  const bool needed = op.keep_until_ms > removal_bound_ms_;
  const bool present = op.type == OpType::kPut && needed;
  if (*current) {
    if (present) {
      index_.Replace(hash, (*current)->at, at);
    } else {
      index_.Erase(hash, (*current)->at);
    }
    RemoveNeed((*current)->at.segment, (*current)->keep_until_ms, (*current)->op_bytes);
  } else if (present && !index_.Insert(hash, at)) {
    return Status::Busy("the journal's index is full");
  }
  if (needed) {
    AddNeed(at.segment, op.keep_until_ms, OpBytes(stored.key.size(), stored.value.size()), op.type);
  }
  return Status::Ok();
}

Result<std::optional<JournalStore::Version>> JournalStore::Find(const Journal& journal,
                                                                uint64_t hash,
                                                                std::string_view key) const {
  std::vector<Journal::Location> candidates;
  std::string bytes;
  Journal::Dictionary dictionary;
  for (int attempt = 0;; ++attempt) {
    candidates.clear();
    index_.Find(hash, &candidates);
    // A candidate whose segment went (dropped, or moved: MoveSurvivors points the index at the
    // new copy before it deletes the old) while this looked: asking the index again finds
    // where the version is now, if it is still anywhere.
    bool stale = false;
    for (const Journal::Location& at : candidates) {
      Status read = journal.Read(at, kReadAhead, &bytes, &dictionary);
      std::optional<size_t> size = read.ok() ? PeekOpBytes(bytes) : std::nullopt;
      // The size is not checked yet: bounded by the segment before anything is allocated for it.
      if (size && *size > bytes.size() && *size <= kMaxSegmentBytes - at.offset) {
        // The segment may have gone since the first.
        read = journal.Read(at, *size, &bytes, &dictionary);
      }
      if (read.IsNotFound()) {
        stale = true;
        continue;
      }
      if (!read.ok()) return read;
      Result<OpView> op = DecodeOp(bytes);
      std::string scratch;
      // A stored key that differs needs no decompressing; one stored in its value does.
      Result<OpView> plain = op;
      if (op.ok() && (op->key_in_value || op->key == key)) {
        plain = Journal::Plain(*op, dictionary, &scratch);
      }
      if (!plain.ok()) {
        // A segment gone since the index was asked, whose id a new segment took: not damage.
        if (!index_.Holds(hash, at)) {
          stale = true;
          continue;
        }
        return Corrupt(at, plain.status());
      }
      if (plain->key == key) {
        // A decompressed value is moved out of `scratch` (it ends there), a stored one copied
        // out of `bytes`.
        std::string value;
        if (op->compressed) {
          scratch.erase(0, scratch.size() - plain->value.size());
          value = std::move(scratch);
        } else {
          value = std::string(plain->value);
        }
        return std::optional<Version>(Version{std::move(value), op->keep_until_ms, at,
                                              OpBytes(op->key.size(), op->value.size())});
      }
      if (!index_.Holds(hash, at)) stale = true;
    }
    if (!stale) return std::optional<Version>();
    if (attempt == kMaxLookupAttempts) {
      return Status::Busy("journal lookup: segments kept going while it looked, " +
                          std::to_string(attempt + 1) + " times");
    }
  }
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
    std::optional<Version> current;  // without its value
    std::optional<size_t> earlier;
    int64_t keep_until_ms = 0;  // as written: raised to what it replaces
  };
  std::vector<Pending> pending(writes.size());
  // The batch's own last write of each key: looked for among the earlier writes in a small
  // batch, kept in a map in a large one (a client's batch may hold thousands).
  constexpr size_t kScannedBatch = 16;
  std::unordered_map<std::string_view, size_t> last_write;
  if (writes.size() > kScannedBatch) last_write.reserve(writes.size());
  EntryBuilder entry;
  for (size_t i = 0; i < writes.size(); ++i) {
    const Write& w = writes[i];
    Pending& p = pending[i];
    p.hash = KeyHash(w.key);
    int64_t keep_until_ms = w.keep_until_ms;
    if (writes.size() > kScannedBatch) {
      auto [it, first] = last_write.try_emplace(w.key, i);
      if (!first) p.earlier = std::exchange(it->second, i);
    } else {
      for (size_t j = i; j-- > 0;) {
        if (pending[j].hash == p.hash && writes[j].key == w.key) {
          p.earlier = j;
          break;
        }
      }
    }
    if (p.earlier) {
      keep_until_ms = std::max(keep_until_ms, pending[*p.earlier].keep_until_ms);
    } else if (w.found != nullptr && index_.Holds(p.hash, w.found->at)) {
      p.current = Version{{}, w.found->keep_until_ms, w.found->at, w.found->op_bytes};
      keep_until_ms = std::max(keep_until_ms, p.current->keep_until_ms);
    } else {
      Result<std::optional<Version>> current = Find(*journal_, p.hash, w.key);
      if (!current.ok()) return current.status();
      if (*current) {
        (*current)->value.clear();
        p.current = std::move(*current);
        keep_until_ms = std::max(keep_until_ms, p.current->keep_until_ms);
      }
    }
    p.keep_until_ms = keep_until_ms;
    if (Status s = entry.Add(OpView{w.type, keep_until_ms, w.key, w.value}); !s.ok()) return s;
  }
  Result<Journal::Location> at = journal_->Append(&entry);
  if (!at.ok()) return at.status();
  const std::vector<uint32_t>& offsets = entry.offsets();  // as stored (compressed or not)
  for (size_t i = 0; i < writes.size(); ++i) {
    const Write& w = writes[i];
    Pending& p = pending[i];
    const Journal::Location here{at->segment, at->offset + offsets[i]};
    AddNeed(here.segment, p.keep_until_ms, entry.op_bytes(i), w.type);
    std::optional<Version> current = p.current;
    if (p.earlier) {
      const size_t j = *p.earlier;
      current.reset();
      if (writes[j].type == OpType::kPut) {
        current = Version{{},
                          pending[j].keep_until_ms,
                          Journal::Location{at->segment, at->offset + offsets[j]},
                          entry.op_bytes(j)};
      }
    }
    // A drop or a move may have taken the current entry since it was read: then it is new again
    // (and its bytes were counted out there).
    bool replaced = false;
    if (w.type == OpType::kPut) {
      replaced = current && index_.Replace(p.hash, current->at, here);
      if (!replaced && !index_.Insert(p.hash, here)) {
        failed_ = Status::Busy("the journal's index is full (" + std::to_string(index_.size()) +
                               " records): the store takes no more writes");
        index_full_.store(true, std::memory_order_release);
        return failed_;
      }
    } else if (current) {
      replaced = index_.Erase(p.hash, current->at);
    }
    if (replaced) RemoveNeed(current->at.segment, current->keep_until_ms, current->op_bytes);
  }
  return Status::Ok();
}

Status JournalStore::failure() const {
  if (index_full_.load(std::memory_order_acquire)) {
    return Status::Busy("the journal's index is full: the store takes no more writes");
  }
  return journal_->failure();
}

Status JournalStore::Sync() { return journal_->Sync(); }

Result<size_t> JournalStore::DropEndedBy(int64_t until_ms) {
  std::lock_guard<std::mutex> lock(drop_mu_);
  {
    // A seal that fails (no new segment could be prepared: a full disk, say) is retried by the
    // next call; the sealed segments are dropped meanwhile, which is what frees space.
    std::lock_guard<std::mutex> appending(apply_mu_);
    (void)journal_->SealActiveIfEndedBy(until_ms);
  }
  std::vector<uint32_t> doomed;
  for (const Journal::SegmentInfo& segment : journal_->Segments()) {
    if (!segment.active && segment.max_keep_until_ms <= until_ms) doomed.push_back(segment.id);
  }
  if (doomed.empty()) return size_t{0};
  // Entries first: a lookup that still finds one reads the file (open until it is done) or
  // learns it is gone, and either way the version was dead.
  index_.EraseSegments(doomed);
  for (size_t i = 0; i < doomed.size(); ++i) {
    ForgetNeeds(doomed[i]);  // before the id is free for a new segment
    if (Status s = journal_->DeleteSegment(doomed[i]); !s.ok()) return s;
  }
  return doomed.size();
}

Result<JournalStore::MoveReport> JournalStore::MoveSurvivors(int64_t removal_bound_ms,
                                                             const MovePolicy& policy) {
  std::lock_guard<std::mutex> lock(drop_mu_);
  MoveReport report;
  const int64_t stays_past = removal_bound_ms > std::numeric_limits<int64_t>::max() -
                                                    std::max<int64_t>(policy.min_stay_ms, 0)
                                 ? std::numeric_limits<int64_t>::max()
                                 : removal_bound_ms + std::max<int64_t>(policy.min_stay_ms, 0);
  std::vector<Journal::SegmentInfo> segments = journal_->Segments();
  ++move_calls_;
  auto named = [](const Journal::SegmentInfo& segment) {
    return [&segment](const auto& name) {
      return name.id == segment.id && name.number == segment.number;
    };
  };
  // Segments moved out of before whose file could not be deleted: only the delete is left.
  for (auto it = undeleted_.begin(); it != undeleted_.end();) {
    auto same = std::find_if(segments.begin(), segments.end(),
                             [&](const auto& segment) { return named(segment)(*it); });
    if (same != segments.end()) {
      if (Status s = journal_->DeleteSegment(same->id); !s.ok()) return s;
      ++report.segments;
      report.bytes_freed += same->end_offset;
      segments.erase(same);
    }
    it = undeleted_.erase(it);  // deleted now, or dropped since
  }
  std::erase_if(unmovable_, [&](const Unmovable& name) {  // due to be tried again, or gone
    return name.retry_at <= move_calls_ ||
           std::none_of(segments.begin(), segments.end(),
                        [&](const auto& segment) { return named(segment)(name); });
  });
  for (const Journal::SegmentInfo& segment : segments) {
    if (segment.active || segment.max_keep_until_ms <= stays_past) continue;
    if (std::any_of(unmovable_.begin(), unmovable_.end(), named(segment))) continue;
    // Every earlier version of a key is in a segment numbered at most that of its delete
    // (versions are appended in order, and a move appends again only a key's current version),
    // so the deletes of the oldest segment have nothing left to hide once it goes. The segments
    // deleted so far in this call are gone from the journal's list; one whose delete failed is
    // still in it.
    const std::vector<Journal::SegmentInfo> present = journal_->Segments();
    const bool oldest = std::none_of(present.begin(), present.end(), [&](const auto& other) {
      return other.number < segment.number;
    });
    const uint64_t bytes = segment.end_offset - segment.entries_offset;
    uint64_t needed = NeededAfter(segment.id, removal_bound_ms);
    if (oldest) needed -= std::min(needed, DeletesNeededAfter(segment.id, removal_bound_ms));
    if (static_cast<double>(needed) > policy.max_needed_fraction * static_cast<double>(bytes)) {
      continue;
    }
    if (Status s = MoveSegment(segment, removal_bound_ms, oldest, &report); !s.ok()) return s;
  }
  return report;
}

Status JournalStore::MoveSegment(const Journal::SegmentInfo& segment, int64_t removal_bound_ms,
                                 bool oldest, MoveReport* report) {
  const std::string name = "journal segment " + std::to_string(segment.number);
  std::string bytes;
  Journal::Dictionary dictionary;  // what its compressed values need: appended decompressed
  if (Status read =
          journal_->Read(Journal::Location{segment.id, 0}, segment.end_offset, &bytes, &dictionary);
      !read.ok()) {
    return read;
  }
  struct Survivor {
    OpView op;  // borrows from `bytes`
    uint32_t offset = 0;
  };
  std::vector<Survivor> survivors;
  Result<SegmentScan> scan =
      ScanSegment(bytes, 0, [&](const OpView& op, uint64_t offset, uint64_t /*sequence*/) {
        if (op.keep_until_ms > removal_bound_ms) {
          survivors.push_back({op, static_cast<uint32_t>(offset)});
        }
      });
  // A segment that cannot be moved is kept, and the others are still moved.
  auto skip = [&](Status why) {
    if (report->skipped++ == 0) report->first_skipped = std::move(why);
    unmovable_.push_back({segment.id, segment.number, move_calls_ + kMoveRetryCalls});
    return Status::Ok();
  };
  if (!scan.ok()) return skip(Status::Corruption(name + ": " + scan.status().message()));
  if (scan->header.number != segment.number || scan->tail != SegmentScan::Tail::kClean ||
      scan->end_offset != segment.end_offset) {
    return skip(Status::Corruption(name + " no longer reads as it did at " +
                                   std::to_string(segment.end_offset) + " bytes: " + scan->what));
  }

  const uint64_t segment_room = journal_->max_entry_bytes();
  const size_t entry_limit = std::min<size_t>(kMoveEntryBytes, segment_room);
  struct Moved {
    uint64_t hash = 0;
    std::optional<Version> from;  // the version whose index entry follows it (no value)
    int64_t keep_until_ms = 0;
    OpType type = OpType::kPut;
  };
  std::vector<Moved> moved;
  EntryBuilder entry;
  std::string plain;
  // The locations of versions already taken on: a put of this segment is queued once, whether
  // as itself or in the place of a delete before it (whose entry the index follows only once
  // the append is done).
  std::unordered_set<uint64_t> taken;
  auto take = [&](Journal::Location at) {
    return taken.insert(uint64_t{at.segment} << 32 | at.offset).second;
  };
  for (size_t i = 0; i < survivors.size();) {
    std::lock_guard<std::mutex> lock(apply_mu_);  // the index stands still while this appends
    if (!failed_.ok()) return failed_;
    for (; i < survivors.size(); ++i) {
      const OpView& op = survivors[i].op;  // as stored
      const Journal::Location at{segment.id, survivors[i].offset};
      // Appended as it would be written now: decompressed, for the dictionary of the segment it
      // goes to.
      Result<OpView> add = Journal::Plain(op, dictionary, &plain);
      if (!add.ok()) {
        return skip(Status::Corruption(name + " offset " + std::to_string(survivors[i].offset) +
                                       ": " + add.status().message()));
      }
      const uint64_t hash = KeyHash(add->key);
      // What goes again: the operation itself, and for a delete the version written since,
      // when it ends first (it follows the delete, so the delete cannot hide it).
      std::optional<Version> later;
      if (op.type == OpType::kPut) {
        if (!index_.Holds(hash, at) || !take(at)) continue;  // replaced since, or queued
      } else if (oldest) {
        ++report->deletes_dropped;  // the versions it hides go with this segment
        continue;
      } else {
        Result<std::optional<Version>> found = Find(*journal_, hash, add->key);
        if (!found.ok()) return found.status();
        if (*found && (*found)->keep_until_ms > removal_bound_ms) {
          // Outlasting what this delete guards, it guards that itself; already queued, it
          // follows a copy of this delete or of an earlier one of the same key.
          if ((*found)->keep_until_ms >= op.keep_until_ms || !take((*found)->at)) continue;
          later = std::move(*found);
        }
      }
      const uint64_t op_bytes = OpBytes(add->key.size(), add->value.size());
      const uint64_t later_bytes = later ? OpBytes(add->key.size(), later->value.size()) : 0;
      if (kEntryHeaderBytes + op_bytes + later_bytes > segment_room) {
        // Nothing of this segment was appended yet if this is its first such pair; what was is
        // in the journal twice, which a reopen resolves.
        return skip(Status::InvalidArgument(name + ": a delete of a key of " +
                                            std::to_string(add->key.size()) +
                                            " bytes and the version after it do not fit in one "
                                            "entry of a segment"));
      }
      if (entry.ops() > 0 && entry.bytes() + op_bytes + later_bytes > entry_limit) {
        if (later) taken.erase(uint64_t{later->at.segment} << 32 | later->at.offset);
        if (op.type == OpType::kPut) taken.erase(uint64_t{at.segment} << 32 | at.offset);
        break;
      }
      if (Status s = entry.Add(*add); !s.ok()) return s;
      const uint64_t stored_bytes = OpBytes(op.key.size(), op.value.size());
      moved.push_back({hash,
                       op.type == OpType::kPut
                           ? std::optional<Version>(Version{{}, op.keep_until_ms, at, stored_bytes})
                           : std::nullopt,
                       op.keep_until_ms, op.type});
      if (later) {
        if (Status s =
                entry.Add(OpView{OpType::kPut, later->keep_until_ms, add->key, later->value});
            !s.ok()) {
          return s;
        }
        const int64_t keep_until_ms = later->keep_until_ms;
        later->value.clear();
        moved.push_back({hash, std::move(later), keep_until_ms, OpType::kPut});
      }
    }
    if (entry.ops() == 0) break;
    Result<Journal::Location> appended = journal_->Append(&entry);
    if (!appended.ok()) return appended.status();
    const std::vector<uint32_t>& offsets = entry.offsets();  // as stored
    for (size_t j = 0; j < moved.size(); ++j) {
      const Journal::Location here{appended->segment, appended->offset + offsets[j]};
      const std::optional<Version>& from = moved[j].from;
      if (from && index_.Replace(moved[j].hash, from->at, here)) {
        RemoveNeed(from->at.segment, from->keep_until_ms, from->op_bytes);
      }
      AddNeed(here.segment, moved[j].keep_until_ms, entry.op_bytes(j), moved[j].type);
    }
    report->ops_moved += moved.size();
    report->bytes_moved += entry.finished_bytes();
    moved.clear();
  }
  // The copies must be durable before the segment that holds the other copy goes.
  if (Status s = journal_->Sync(); !s.ok()) return s;
  index_.EraseSegments({segment.id});  // versions ended by the bound
  ForgetNeeds(segment.id);             // while the id is still this segment's
  if (Status s = journal_->DeleteSegment(segment.id); !s.ok()) {
    undeleted_.push_back({segment.id, segment.number});  // the next call deletes it
    return s;
  }
  ++report->segments;
  report->bytes_freed += segment.end_offset;
  return Status::Ok();
}

Result<std::optional<WalkPosition>> JournalStore::Walk(const WalkPosition& from,
                                                       const WalkVisitor& visit) const {
  // Read this much of a segment at a time (an entry larger than that, whole).
  constexpr uint64_t kChunkBytes = uint64_t{1} << 20;
  std::string bytes, scratch;
  Journal::Dictionary dictionary;
  for (const Journal::SegmentInfo& segment : journal_->Segments()) {
    if (segment.number < from.segment) continue;
    const bool resumed = segment.number == from.segment && from.offset != 0;
    uint64_t at = resumed ? from.offset : segment.entries_offset;
    uint32_t skip = segment.number == from.segment ? from.op : 0;
    uint64_t bytes_at = 0;  // `bytes` holds the segment's bytes from here
    bytes.clear();
    // Reads `n` bytes at `at` unless `bytes` holds them. False: the segment is gone.
    auto fetch = [&](uint64_t n) -> Result<bool> {
      if (at >= bytes_at && at + n <= bytes_at + bytes.size()) return true;
      Status read = journal_->Read(Journal::Location{segment.id, static_cast<uint32_t>(at)},
                                   std::max(n, std::min(kChunkBytes, segment.end_offset - at)),
                                   &bytes, &dictionary);
      bytes_at = at;
      if (read.IsNotFound()) return false;
      if (!read.ok()) return read;
      return bytes.size() >= n;
    };
    // What does not read back: a segment deleted meanwhile (its id perhaps taken by another)
    // ends the segment's walk; otherwise the position was not an entry's (a cursor changed) or
    // the file is damaged.
    auto bad = [&](uint64_t where, const std::string& why) -> Result<bool> {
      for (const Journal::SegmentInfo& now : journal_->Segments()) {
        if (now.id != segment.id || now.number != segment.number) continue;
        const std::string what =
            journal_->SegmentPath(segment.number) + " offset " + std::to_string(where) + ": " + why;
        if (where == from.offset && segment.number == from.segment) {
          return Status::InvalidArgument("a walk resumed where no entry is (" + what + ")");
        }
        return Status::Corruption(what);
      }
      return false;
    };
    while (at < segment.end_offset) {
      Result<bool> there = fetch(kEntryHeaderBytes);
      std::optional<EntryExtent> entry;
      if (there.ok() && *there)
        entry = PeekEntry(std::string_view(bytes).substr(at - bytes_at), segment.salt);
      if (entry && (entry->count == 0 || entry->count <= skip ||
                    entry->payload > segment.end_offset - at - kEntryHeaderBytes)) {
        entry.reset();
      }
      if (there.ok() && *there && !entry) there = bad(at, "not an entry header");
      if (!there.ok()) return there.status();
      if (!*there) break;
      const uint64_t entry_bytes = kEntryHeaderBytes + entry->payload;
      there = fetch(entry_bytes);
      if (there.ok() && *there) {
        const std::string_view payload =
            std::string_view(bytes).substr(at - bytes_at + kEntryHeaderBytes, entry->payload);
        size_t op_at = 0;
        for (uint32_t i = 0; i < entry->count; ++i) {
          const uint64_t where = at + kEntryHeaderBytes + op_at;
          std::optional<size_t> size = PeekOpBytes(payload.substr(op_at));
          Result<OpView> op = size && *size <= payload.size() - op_at
                                  ? DecodeOp(payload.substr(op_at, *size))
                                  : Result<OpView>(Status::Corruption("not an operation"));
          if (op.ok() && i >= skip) op = Journal::Plain(*op, dictionary, &scratch);
          if (!op.ok()) {
            there = bad(where, op.status().message());
            break;
          }
          if (i >= skip) {
            const Journal::Location location{segment.id, static_cast<uint32_t>(where)};
            const bool current =
                op->type == OpType::kPut && index_.Holds(KeyHash(op->key), location);
            if (!visit(*op, current)) {
              return std::optional<WalkPosition>(WalkPosition{segment.number, at, i});
            }
          }
          op_at += *size;
        }
      }
      if (!there.ok()) return there.status();
      if (!*there) break;
      skip = 0;
      at += entry_bytes;
    }
  }
  return std::optional<WalkPosition>();
}

namespace {
// Rounded down: an operation within a bucket of its end counts as no longer needed.
int64_t NeedBucket(int64_t keep_until_ms, int64_t bucket_ms) {
  const int64_t rem = keep_until_ms % bucket_ms;
  return rem >= 0 ? keep_until_ms - rem : keep_until_ms - rem - bucket_ms;
}
}  // namespace

void JournalStore::AddNeed(uint32_t segment, int64_t keep_until_ms, uint64_t bytes, OpType type) {
  std::lock_guard<std::mutex> lock(need_mu_);
  const int64_t bucket = NeedBucket(keep_until_ms, kNeedBucketMs);
  needs_[segment][bucket] += bytes;
  if (type == OpType::kDelete) delete_needs_[segment][bucket] += bytes;
}

void JournalStore::RemoveNeed(uint32_t segment, int64_t keep_until_ms, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(need_mu_);
  auto it = needs_.find(segment);
  if (it == needs_.end()) return;  // forgotten: dropped or moved
  auto bucket = it->second.find(NeedBucket(keep_until_ms, kNeedBucketMs));
  if (bucket == it->second.end()) return;
  bucket->second -= std::min(bucket->second, bytes);
  if (bucket->second == 0) it->second.erase(bucket);
}

void JournalStore::ForgetNeeds(uint32_t segment) {
  std::lock_guard<std::mutex> lock(need_mu_);
  needs_.erase(segment);
  delete_needs_.erase(segment);
}

namespace {
uint64_t BytesAfter(const NeedsBySegment& needs, uint32_t segment, int64_t removal_bound_ms) {
  auto it = needs.find(segment);
  if (it == needs.end()) return 0;
  uint64_t bytes = 0;
  for (auto b = it->second.upper_bound(removal_bound_ms); b != it->second.end(); ++b) {
    bytes += b->second;
  }
  return bytes;
}
}  // namespace

uint64_t JournalStore::NeededAfter(uint32_t segment, int64_t removal_bound_ms) const {
  std::lock_guard<std::mutex> lock(need_mu_);
  return BytesAfter(needs_, segment, removal_bound_ms);
}

uint64_t JournalStore::DeletesNeededAfter(uint32_t segment, int64_t removal_bound_ms) const {
  std::lock_guard<std::mutex> lock(need_mu_);
  return BytesAfter(delete_needs_, segment, removal_bound_ms);
}

}  // namespace idem::journal
