#include "journal_salvage.h"

#include <fcntl.h>
#include <stdio.h>  // renameat2

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <memory>
#include <utility>

#include <rocksdb/file_system.h>

#include "journal.h"
#include "journal_format.h"
#include "journal_layout.h"
#include "journal_store.h"
#include "record_codec.h"
#include "rocks_status.h"
#include "value_dictionary.h"

namespace idem {
namespace {

std::string StagingDir(const std::string& journal_dir) { return journal_dir + ".repairing"; }

Status RemoveDirectory(rocksdb::FileSystem* fs, const std::string& dir) {
  const rocksdb::IOStatus s = journal::RemoveDirectory(fs, dir);
  return s.ok() ? Status::Ok() : Status::IOError("cannot delete " + dir + ": " + s.ToString());
}

// The whole file: segments are read whole by an open too (at most kMaxSegmentBytes).
Result<std::string> ReadSegment(rocksdb::FileSystem* fs, const std::string& path, uint64_t size) {
  std::unique_ptr<rocksdb::FSRandomAccessFile> file;
  const rocksdb::IOOptions io;
  if (rocksdb::IOStatus s = fs->NewRandomAccessFile(path, rocksdb::FileOptions(), &file, nullptr);
      !s.ok()) {
    return FromRocks(s);
  }
  std::string bytes(size, '\0');
  rocksdb::Slice read;
  if (rocksdb::IOStatus s = file->Read(0, size, io, &read, bytes.data(), nullptr); !s.ok()) {
    return FromRocks(s);
  }
  if (read.size() != size) {
    return Status::IOError(path + ": read " + std::to_string(read.size()) + " of " +
                           std::to_string(size) + " bytes");
  }
  if (read.data() != bytes.data()) std::memcpy(bytes.data(), read.data(), size);
  return bytes;
}

// Copies intact entries into the new journal, one entry at a time (whole, as written), and
// counts from their sequence numbers what is missing between them.
class Salvager {
 public:
  Salvager(journal::JournalStore* store, JournalSalvage* salvage)
      : store_(store), salvage_(salvage) {}

  // Segment `number` (at `position` in the list of segment files) is being read.
  void BeginSegment(uint64_t number, size_t position) {
    number_ = number;
    position_ = position;
  }
  // Something was lost here that only a later intact entry can count.
  void LoseUnbounded() { unbounded_loss_ = true; }
  // The current segment ends in a write that does not check, with nothing intact after it
  // (`line` says where): the journal's torn end, which an open cuts, unless an intact entry
  // follows in a later segment (after the segment an open would have prepared, empty, say).
  void EndTorn(std::string line) { torn_end_ = std::move(line); }
  // Whether a torn end turned out to be damage (an entry followed it).
  bool damage_found() const { return damage_found_; }

  // One operation of the entry `sequence` of the current segment, plain (journal::Journal::Plain).
  Status Add(const journal::OpView& op, uint64_t sequence) {
    if (Status st = Enter(sequence); !st.ok()) return st;
    if (discarded_ == sequence) return Status::Ok();
    if (Record record; op.type == journal::OpType::kPut && !IsMarker(op.value) &&
                       DecodeRecord(op.value, &record).ok()) {
      salvage_->max_fence = std::max(salvage_->max_fence, record.fence);
    }
    keys_.emplace_back(op.key);
    values_.emplace_back(op.value);
    writes_.push_back({op.type, keys_.back(), values_.back(), op.keep_until_ms});
    return Status::Ok();
  }

  // Leaves out the entry `sequence`, one of whose operations cannot be read: an entry is kept
  // whole or not at all.
  Status Discard(uint64_t sequence) {
    if (Status st = Enter(sequence); !st.ok()) return st;
    if (discarded_ == sequence) return Status::Ok();
    discarded_ = sequence;
    writes_.clear();
    keys_.clear();
    values_.clear();
    --salvage_->entries;
    ++salvage_->lost_entries;
    return Status::Ok();
  }

  // Appends the entry gathered so far.
  Status Flush() {
    if (writes_.empty()) return Status::Ok();
    Status st = store_->Apply(writes_);
    writes_.clear();
    keys_.clear();
    values_.clear();
    if (st.IsInvalidArgument()) {
      return Status::InvalidArgument(
          "entry " + std::to_string(sequence_) +
          " does not fit the journal's segments as configured: " + st.message() +
          " (repair with the options it was written with)");
    }
    return st;
  }

  // The number of the last entry kept (or left out); 0 before the first. Entries after it must
  // be numbered above it: one that is not was not written in this journal's order.
  uint64_t last_sequence() const { return last_ ? last_->sequence : 0; }

  // What Follow found missing since the last call, for the report (after the damage found).
  std::vector<std::string> TakeGaps() { return std::exchange(gaps_, {}); }

  // The end of the journal: a loss no later entry bounded cannot be counted.
  void Finish() {
    if (unbounded_loss_) salvage_->loss_uncounted = true;
    if (torn_end_) {
      salvage_->lines.push_back(*torn_end_ +
                                ": the last write, torn by a crash (under sync durability it "
                                "was never acknowledged); an open cuts it too");
    }
  }

 private:
  // The entry `sequence` is read from here on: the one before it is appended.
  Status Enter(uint64_t sequence) {
    if (sequence == sequence_) return Status::Ok();
    if (Status st = Flush(); !st.ok()) return st;
    Follow(sequence);
    return Status::Ok();
  }
  // The next entry is `sequence`: counts the entries missing since the last one, if every
  // segment between them is there.
  void Follow(uint64_t sequence) {
    const bool continuous =
        last_.has_value() && number_ - last_->number == position_ - last_->position;
    if (continuous && sequence > last_->sequence + 1) {
      const uint64_t lost = sequence - last_->sequence - 1;
      salvage_->lost_entries += lost;
      gaps_.push_back((lost == 1 ? "entry " + std::to_string(sequence - 1) + " is"
                                 : "entries " + std::to_string(last_->sequence + 1) + " to " +
                                       std::to_string(sequence - 1) + " are") +
                      " missing before entry " + std::to_string(sequence) + " (segment " +
                      std::to_string(number_) + "): " + std::to_string(lost) +
                      (lost == 1 ? " entry" : " entries") + " lost");
    }
    if (torn_end_) {
      damage_found_ = true;
      salvage_->lines.push_back(*torn_end_ + "; intact entries follow it in a later segment");
      torn_end_.reset();
      unbounded_loss_ = true;
    }
    if (unbounded_loss_ && !continuous) salvage_->loss_uncounted = true;
    unbounded_loss_ = false;
    last_ = Last{sequence, number_, position_};
    sequence_ = sequence;
    ++salvage_->entries;
  }

  struct Last {
    uint64_t sequence = 0;
    uint64_t number = 0;
    size_t position = 0;
  };
  journal::JournalStore* const store_;
  JournalSalvage* const salvage_;
  uint64_t number_ = 0;
  size_t position_ = 0;
  uint64_t sequence_ = 0;   // of the entry being gathered
  uint64_t discarded_ = 0;  // an entry left out
  std::optional<Last> last_;
  bool unbounded_loss_ = false;
  std::optional<std::string> torn_end_;
  bool damage_found_ = false;
  std::vector<std::string> gaps_;
  std::deque<std::string> keys_, values_;  // what writes_ points into
  std::vector<journal::JournalStore::Write> writes_;
};

// Reads segment `number` of `journal_dir` into `salvager`. Returns whether it found damage (a
// loss); the lines say what.
Result<bool> ReadSegmentInto(rocksdb::FileSystem* fs, const std::string& journal_dir,
                             uint64_t number, bool last, Salvager* salvager,
                             JournalSalvage* salvage) {
  const std::string path = journal::SegmentFilePath(journal_dir, number);
  uint64_t size = 0;
  if (rocksdb::IOStatus s = fs->GetFileSize(path, rocksdb::IOOptions(), &size, nullptr); !s.ok()) {
    return FromRocks(s);
  }
  auto unreadable = [&](const std::string& why) {
    salvager->LoseUnbounded();
    salvage->lines.push_back(path + ": " + why + "; none of its entries can be read");
    return true;
  };
  if (size > journal::kMaxSegmentBytes) {
    return unreadable("it is " + std::to_string(size) + " bytes, more than a segment can be");
  }
  Result<std::string> bytes = ReadSegment(fs, path, size);
  if (!bytes.ok()) return bytes.status();
  Result<journal::SegmentHeader> header = journal::DecodeSegmentHeader(*bytes);
  if (!header.ok()) {
    if (last && !journal::MayHoldAnEntry(*bytes)) {
      salvage->lines.push_back(path +
                               ": created, and never written: a crash came before its "
                               "header was synced");
      return false;
    }
    return unreadable("its header does not decode (" + header.status().message() + ")");
  }
  if (header->number != number) {
    return unreadable("its header says segment " + std::to_string(header->number));
  }
  journal::Journal::Dictionary dictionary;
  if (!header->dictionary.empty()) {
    Result<journal::Journal::Dictionary> loaded = ValueDictionary::Load(header->dictionary);
    if (!loaded.ok()) {
      return unreadable("its dictionary does not load (" + loaded.status().message() + ")");
    }
    dictionary = std::move(*loaded);
  }
  Status failed;
  uint64_t undecodable = 0;  // entries
  uint64_t last_undecodable = 0;
  std::string scratch;
  Result<journal::SegmentScan> scan = journal::ScanSegment(
      *bytes, salvager->last_sequence(),
      [&](const journal::OpView& op, uint64_t, uint64_t sequence) {
        if (!failed.ok()) return;
        Result<journal::OpView> plain = journal::Journal::Plain(op, dictionary, &scratch);
        if (plain.ok()) {
          failed = salvager->Add(*plain, sequence);
        } else {
          if (last_undecodable != sequence) ++undecodable;
          last_undecodable = sequence;
          failed = salvager->Discard(sequence);
        }
      },
      journal::AfterDamage::kVisit);
  if (!failed.ok()) return failed;
  if (!scan.ok()) return unreadable(scan.status().message());
  if (Status st = salvager->Flush(); !st.ok()) return st;
  bool damaged = false;
  if (undecodable > 0) {
    damaged = true;
    salvage->lines.push_back(path + ": " + std::to_string(undecodable) +
                             " intact entries hold an operation that does not decompress: "
                             "left out (lost)");
  }
  if (scan->tail == journal::SegmentScan::Tail::kClean) return damaged;
  std::string line =
      path + ": damaged at offset " + std::to_string(scan->bad_offset) + " (" + scan->what + ")";
  if (scan->entries_after_bad > 0) {
    salvage->lines.push_back(line + "; " + std::to_string(scan->entries_after_bad) +
                             " intact entries after it were kept");
    return true;  // the numbers around the damage count what it destroyed
  }
  if (scan->tail == journal::SegmentScan::Tail::kTorn) {
    salvager->EndTorn(std::move(line));
    return damaged;
  }
  salvager->LoseUnbounded();
  salvage->lines.push_back(line + "; nothing intact after it in this segment");
  return true;
}

// ReadSegmentInto, then what the entries' numbers say was lost.
Result<bool> SalvageSegment(rocksdb::FileSystem* fs, const std::string& journal_dir,
                            uint64_t number, bool last, Salvager* salvager,
                            JournalSalvage* salvage) {
  Result<bool> damaged = ReadSegmentInto(fs, journal_dir, number, last, salvager, salvage);
  for (std::string& gap : salvager->TakeGaps()) salvage->lines.push_back(std::move(gap));
  return damaged;
}

// Makes `staging` the journal and the journal `staging`, in one step.
Status Exchange(const std::string& staging, const std::string& journal_dir) {
  if (::renameat2(AT_FDCWD, staging.c_str(), AT_FDCWD, journal_dir.c_str(), RENAME_EXCHANGE) == 0) {
    return Status::Ok();
  }
  const int error = errno;
  return Status::IOError("cannot exchange " + staging + " and " + journal_dir + " (" +
                         std::strerror(error) + "); the salvaged journal is " + staging +
                         ": with no server running, move " + journal_dir + " aside and rename " +
                         staging + " to " + journal_dir);
}

}  // namespace

Result<std::optional<JournalSalvage>> SalvageJournal(const std::string& db_dir,
                                                     const EngineOptions& options) {
  return SalvageJournal(db_dir, options, rocksdb::FileSystem::Default().get());
}

Result<std::optional<JournalSalvage>> SalvageJournal(const std::string& db_dir,
                                                     const EngineOptions& options,
                                                     rocksdb::FileSystem* fs) {
  const std::string journal_dir = JournalDir(db_dir);
  Result<bool> has = journal::Journal::HasSegments(fs, journal_dir);
  if (!has.ok()) return has.status();
  if (!*has) return std::optional<JournalSalvage>();
  const std::string staging = StagingDir(journal_dir);
  // Left by a salvage a crash interrupted: a partial new journal, or the old one exchanged out.
  if (Status st = RemoveDirectory(fs, staging); !st.ok()) return st;
  Result<std::vector<uint64_t>> numbers = journal::ListSegments(fs, journal_dir);
  if (!numbers.ok()) return numbers.status();

  JournalSalvage salvage;
  salvage.segments = numbers->size();
  journal::JournalOptions journal_options =
      JournalOptionsFor(options, /*os_files=*/fs == rocksdb::FileSystem::Default().get());
  journal_options.prepare_in_background = false;
  const std::shared_ptr<const Clock> clock = options.clock ? options.clock : SystemClock::Default();
  Result<std::unique_ptr<journal::JournalStore>> opened = journal::JournalStore::Open(
      fs, staging, journal_options, clock.get(), /*removal_bound_ms=*/0);
  if (!opened.ok()) return opened.status();
  std::unique_ptr<journal::JournalStore> store = std::move(*opened);
  auto abandon = [&](Status st) {
    store.reset();
    (void)RemoveDirectory(fs, staging);  // its disk back; the journal is as it was
    return st;
  };
  Salvager salvager(store.get(), &salvage);
  bool damaged = false;
  for (size_t i = 0; i < numbers->size(); ++i) {
    salvager.BeginSegment((*numbers)[i], i);
    Result<bool> found = SalvageSegment(fs, journal_dir, (*numbers)[i], i + 1 == numbers->size(),
                                        &salvager, &salvage);
    if (!found.ok()) return abandon(found.status());
    damaged |= *found;
  }
  salvager.Finish();
  damaged |= salvager.damage_found();
  salvage.records = store->records();
  if (!damaged) {
    salvage.lines.push_back("journal: " + std::to_string(salvage.segments) + " segments, " +
                            std::to_string(salvage.entries) +
                            " entries, no damage: left as it was");
    (void)abandon(Status::Ok());
    return std::optional<JournalSalvage>(std::move(salvage));
  }
  if (Status st = store->Sync(); !st.ok()) return abandon(st);
  store.reset();
  if (rocksdb::IOStatus s = journal::SyncDirectory(fs, staging); !s.ok()) {
    return abandon(FromRocks(s));
  }
  if (Status st = Exchange(staging, journal_dir); !st.ok()) return st;
  salvage.rewritten = true;
  if (rocksdb::IOStatus s = journal::SyncDirectory(fs, db_dir); !s.ok()) return FromRocks(s);
  if (Status st = RemoveDirectory(fs, staging); !st.ok()) return st;
  salvage.lines.push_back("rewrote the journal from the " + std::to_string(salvage.entries) +
                          " intact entries of its " + std::to_string(salvage.segments) +
                          " segments, in their order");
  return std::optional<JournalSalvage>(std::move(salvage));
}

}  // namespace idem
