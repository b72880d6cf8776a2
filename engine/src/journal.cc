#include "journal.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <tuple>

#include <rocksdb/file_system.h>

#include "mapped_file.h"
#include "rocks_status.h"
#include "value_dictionary.h"

namespace idem::journal {
namespace {

constexpr size_t kNumberDigits = 16;
constexpr std::string_view kSuffix = ".jnl";

// The number in a segment file's name, or nothing for any other name.
std::optional<uint64_t> SegmentNumber(const std::string& name) {
  if (name.size() != kNumberDigits + kSuffix.size() ||
      std::string_view(name).substr(kNumberDigits) != kSuffix) {
    return std::nullopt;
  }
  uint64_t number = 0;
  const char* end = name.data() + kNumberDigits;
  auto [ptr, ec] = std::from_chars(name.data(), end, number);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return number;
}

size_t LastNonZero(std::string_view bytes) {  // one past it; 0 if all zero
  size_t n = bytes.size();
  while (n > 0 && bytes[n - 1] == 0) --n;
  return n;
}

// Segment files close once their last user lets go, wherever that is.
std::shared_ptr<rocksdb::FSRandomRWFile> Shared(std::unique_ptr<rocksdb::FSRandomRWFile> file) {
  if (!file) return nullptr;
  return std::shared_ptr<rocksdb::FSRandomRWFile>(file.release(), [](rocksdb::FSRandomRWFile* f) {
    (void)f->Close(rocksdb::IOOptions(), nullptr);
    delete f;
  });
}

static_assert(ValueDictionary::kMaxBytes == kMaxDictionaryBytes);

// Recent values kept to train the next dictionary on.
constexpr size_t kDictionarySamples = 4096;

uint64_t RandomSalt() {
  std::random_device device;
  return (uint64_t{device()} << 32) ^ device();
}

}  // namespace

rocksdb::IOStatus SyncDirectory(rocksdb::FileSystem* fs, const std::string& dir) {
  std::unique_ptr<rocksdb::FSDirectory> directory;
  rocksdb::IOStatus s = fs->NewDirectory(dir, rocksdb::IOOptions(), &directory, nullptr);
  if (s.ok()) s = directory->Fsync(rocksdb::IOOptions(), nullptr);
  return s;
}

struct Journal::Segment {
  uint32_t id = 0;
  uint64_t number = 0;
  std::string path;
  // Guarded by Journal::mu_. Null while closed (max_open_sealed_files): opened again to read or
  // sync. A user takes a copy, so closing it here never closes it under a read. Read without
  // the lock by the appender, and by Open and CreateSegment before others can see the segment:
  // a file that must stay open (below) is never closed or replaced.
  Journal::File file;
  // Guarded by Journal::mu_, as `file` (with mapped_reads): null until a read maps the file, and
  // again once it is closed. Mapped at segment_bytes (at least), so that an active segment's
  // appends show in it.
  Journal::Mapping mapped;
  // Guarded by Journal::mu_: whether the file must stay open. While a segment is active, or
  // sealed with writes of this process that no Sync has covered yet: a writeback error is
  // reported to the files open when it happens, so this file's Sync is the one to see it.
  bool keep_open = true;
  // Guarded by Journal::mu_: its place in recent_, if there.
  std::optional<std::list<Segment*>::iterator> recent;
  // Guarded by Journal::mu_; changed only by the appender (and Sync, for `synced`).
  uint64_t end = kSegmentHeaderBytes;  // where the next entry goes
  uint64_t synced = 0;                 // durable up to here
  int64_t max_keep_until_ms = 0;
  // The appender's own: zeros are written up to here.
  uint64_t zeros_end = 0;
  uint64_t salt = 0;
  // Set before the segment is visible, never changed.
  uint64_t entries_offset = kSegmentHeaderBytes;
  Journal::Dictionary dictionary;  // null: none (format 1)
  // Whether appends may store keys compressed in values: false for a segment of format 2 (values
  // compressed alone), which a build that reads format 2 must still read.
  bool keys_in_values = true;
  // How many samples it was trained on; a segment opened from disk counts as trained on all.
  size_t dictionary_samples = kDictionarySamples;

  // Takes what the header decoded from `bytes` (its file's first bytes) says: where entries
  // begin, the dictionary. Corruption naming the file if the dictionary does not load.
  Status TakeHeader(const SegmentHeader& header, std::string_view bytes) {
    entries_offset = header.entries_offset();
    if (header.dictionary.empty()) return Status::Ok();
    Result<Journal::Dictionary> loaded = ValueDictionary::Load(header.dictionary);
    if (!loaded.ok()) return Status::Corruption(path + ": " + loaded.status().message());
    dictionary = std::move(*loaded);
    keys_in_values = SegmentFormatVersion(bytes) != kValueDictionaryFormatVersion;
    return Status::Ok();
  }
};

Journal::Journal(rocksdb::FileSystem* fs, std::string dir, const JournalOptions& options,
                 const Clock* clock)
    : fs_(fs),
      dir_(std::move(dir)),
      options_(options),
      clock_(clock),
      reserved_(std::make_shared<Segment>()) {
  if (options.dictionary_bytes > 0) sampler_ = std::make_unique<ValueSampler>(kDictionarySamples);
}

Journal::~Journal() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  prepare_cv_.notify_all();
  if (preparer_.joinable()) preparer_.join();
}

rocksdb::IOStatus RemoveDirectory(rocksdb::FileSystem* fs, const std::string& dir) {
  const rocksdb::IOOptions io;
  if (fs->FileExists(dir, io, nullptr).IsNotFound()) return rocksdb::IOStatus::OK();
  std::vector<std::string> children;
  rocksdb::IOStatus s = fs->GetChildren(dir, io, &children, nullptr);
  for (const std::string& child : children) {
    if (!s.ok()) break;
    if (child != "." && child != "..") s = fs->DeleteFile(dir + "/" + child, io, nullptr);
  }
  return s.ok() ? fs->DeleteDir(dir, io, nullptr) : s;
}

Result<std::vector<uint64_t>> ListSegments(rocksdb::FileSystem* fs, const std::string& dir) {
  const rocksdb::IOOptions io;
  std::vector<std::string> children;
  if (rocksdb::IOStatus s = fs->GetChildren(dir, io, &children, nullptr); !s.ok()) {
    return FromRocks(s);
  }
  std::vector<uint64_t> numbers;
  for (const std::string& name : children) {
    if (std::optional<uint64_t> n = SegmentNumber(name)) numbers.push_back(*n);
  }
  std::sort(numbers.begin(), numbers.end());
  return numbers;
}

std::string SegmentFilePath(const std::string& dir, uint64_t number) {
  char name[kNumberDigits + 1];
  std::snprintf(name, sizeof(name), "%016llu", static_cast<unsigned long long>(number));
  return dir + "/" + name + std::string(kSuffix);
}

Result<bool> Journal::HasSegments(rocksdb::FileSystem* fs, const std::string& dir) {
  if (fs->FileExists(dir, rocksdb::IOOptions(), nullptr).IsNotFound()) return false;
  Result<std::vector<uint64_t>> numbers = ListSegments(fs, dir);
  if (!numbers.ok()) return numbers.status();
  return !numbers->empty();
}

std::string Journal::SegmentPath(uint64_t number) const { return SegmentFilePath(dir_, number); }

Status Journal::failure() const {
  if (!has_failed_.load(std::memory_order_acquire)) return Status::Ok();
  std::lock_guard<std::mutex> lock(mu_);
  return failed_;
}

size_t Journal::sealed_unsynced() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sealed_unsynced_.size();
}

Status Journal::Fail(Status s) {
  std::lock_guard<std::mutex> lock(mu_);
  if (failed_.ok()) failed_ = s;
  has_failed_.store(true, std::memory_order_release);
  return failed_;
}

std::optional<uint32_t> Journal::FreeId() {
  // Round robin, not lowest first: a reader holding a location in a deleted segment would need
  // to stall while all the other ids are used before its id means another segment.
  for (uint32_t tried = 0; tried < JournalIndex::kMaxSegments; ++tried) {
    const uint32_t id = next_id_;
    next_id_ = (next_id_ + 1) % JournalIndex::kMaxSegments;
    if (id >= by_id_.size()) by_id_.resize(id + 1);
    if (!by_id_[id]) return id;
  }
  return std::nullopt;
}

Result<std::unique_ptr<Journal>> Journal::Open(rocksdb::FileSystem* fs, const std::string& dir,
                                               const JournalOptions& options, const Clock* clock,
                                               const Replay& replay, const Resume* resume) {
  return OpenOrCheck(fs, dir, options, clock, replay, resume, nullptr);
}

Result<Journal::CheckReport> Journal::Check(rocksdb::FileSystem* fs, const std::string& dir,
                                            const Replay& replay, const Resume* resume) {
  CheckReport report;
  Result<std::unique_ptr<Journal>> checked = OpenOrCheck(
      fs, dir, JournalOptions{.prepare_in_background = false}, nullptr, replay, resume, &report);
  if (!checked.ok()) return checked.status();
  return report;
}

Result<std::unique_ptr<Journal>> Journal::OpenOrCheck(rocksdb::FileSystem* fs,
                                                      const std::string& dir,
                                                      const JournalOptions& options,
                                                      const Clock* clock, const Replay& replay,
                                                      const Resume* resume, CheckReport* check) {
  if (options.max_open_sealed_files == 0) {
    return Status::InvalidArgument("journal max_open_sealed_files must be at least 1");
  }
  if (options.dictionary_bytes > kMaxDictionaryBytes) {
    return Status::InvalidArgument("journal dictionary_bytes " +
                                   std::to_string(options.dictionary_bytes) + " is over " +
                                   std::to_string(kMaxDictionaryBytes));
  }
  const uint64_t min_segment_bytes =
      EntriesOffset(options.dictionary_bytes) + kEntryHeaderBytes + kOpHeaderBytes + 8;
  if (options.segment_bytes > kMaxSegmentBytes || options.segment_bytes < min_segment_bytes) {
    return Status::InvalidArgument(
        "journal segment_bytes " + std::to_string(options.segment_bytes) + " is outside " +
        std::to_string(min_segment_bytes) + ".." + std::to_string(kMaxSegmentBytes) +
        " (with dictionary_bytes " + std::to_string(options.dictionary_bytes) + ")");
  }
  const rocksdb::IOOptions io;
  if (check == nullptr) {
    if (rocksdb::IOStatus s = fs->CreateDirIfMissing(dir, io, nullptr); !s.ok()) {
      return FromRocks(s);
    }
  }
  Result<std::vector<uint64_t>> listed = ListSegments(fs, dir);
  if (!listed.ok()) return listed.status();
  const std::vector<uint64_t>& numbers = *listed;

  std::unique_ptr<Journal> journal(new Journal(fs, dir, options, clock));
  // Open's contract with a Resume. Segment files were only appended to (the active one) or
  // deleted since the save: the saved ones still there come first, and were sealed then but
  // for the last. Nothing is replayed or changed on disk before that one is checked, and
  // its replayed operations (those after its saved end) are checked before each is replayed,
  // so a rejection starts over.
  const Resume* const as_saved = resume != nullptr && !resume->segments.empty() ? resume : nullptr;
  auto reject = [&](const std::string& why) -> Result<std::unique_ptr<Journal>> {
    journal.reset();
    if (resume->rejected) resume->rejected(why);
    return OpenOrCheck(fs, dir, options, clock, replay, nullptr, check);
  };
  // Each file's saved segment, if it is one.
  std::vector<const SegmentInfo*> saved_as(numbers.size(), nullptr);
  if (as_saved != nullptr) {
    const std::vector<SegmentInfo>& saved = as_saved->segments;
    std::vector<uint32_t> gone;
    size_t f = 0;
    for (const SegmentInfo& info : saved) {
      if (f < numbers.size() && numbers[f] < info.number) {
        return reject("segment " + std::to_string(numbers[f]) + " was not there when saved");
      }
      if (f < numbers.size() && numbers[f] == info.number) {
        saved_as[f++] = &info;
      } else {
        gone.push_back(info.id);
      }
    }
    if (!gone.empty() && as_saved->gone) as_saved->gone(gone);
  }
  // The segment being scanned and the one before it, in turns: Read serves them from here.
  // Not zero-filled first: the read overwrites what the scan looks at.
  struct Buffer {
    std::unique_ptr<char[]> bytes;
    size_t capacity = 0;
  };
  std::array<Buffer, 2> buffers;
  // Past a sealed segment that ends torn, nothing was ever synced (Sync syncs segments in
  // order), so nothing there was acknowledged as durable: those segments are checked for that
  // and deleted, keeping the journal a prefix of what was written.
  std::optional<std::string> cut;  // where the torn sealed segment ends, for messages
  std::vector<std::string> past_cut;
  struct TornTail {
    std::shared_ptr<Segment> segment;
    uint64_t offset = 0;
    uint64_t bytes = 0;
  };
  std::optional<TornTail> repair;  // zeroed once the segments past it are deleted
  for (size_t i = 0; i < numbers.size(); ++i) {
    const bool last = i + 1 == numbers.size();
    auto segment = std::make_shared<Segment>();
    segment->number = numbers[i];
    segment->path = journal->SegmentPath(numbers[i]);
    uint64_t size = 0;
    if (rocksdb::IOStatus s = fs->GetFileSize(segment->path, io, &size, nullptr); !s.ok()) {
      return FromRocks(s);
    }
    if (size > kMaxSegmentBytes) {
      return Status::Corruption(segment->path + " is " + std::to_string(size) +
                                " bytes, more than a segment can be");
    }
    std::unique_ptr<rocksdb::FSRandomRWFile> file;
    if (rocksdb::IOStatus s =
            fs->NewRandomRWFile(segment->path, rocksdb::FileOptions(), &file, nullptr);
        !s.ok()) {
      return FromRocks(s);
    }
    segment->file = Shared(std::move(file));
    // The last saved segment, if written on since the save, is scanned below: its operations
    // after its saved end are replayed.
    const SegmentInfo* const grown = saved_as[i];
    uint64_t replay_from = 0;
    if (saved_as[i] != nullptr) {
      const bool saved_last = saved_as[i] == &as_saved->segments.back();
      Result<bool> taken =
          journal->TakeAsSaved(segment, size, *saved_as[i], last,
                               saved_last ? std::optional(as_saved->last_sequence) : std::nullopt);
      if (!taken.ok()) return reject(taken.status().message());
      if (*taken) continue;
      replay_from = saved_as[i]->end_offset;
    } else if (as_saved != nullptr) {
      // Written after the save: its entries come after the saved ones.
      journal->last_sequence_ = std::max(journal->last_sequence_, as_saved->last_sequence);
    }
    journal->scanned_[i % 2].reset();  // its buffer is about to take this segment's bytes
    Buffer& buffer = buffers[i % 2];
    if (buffer.capacity < size) {
      buffer.bytes.reset();  // freed before the larger one is taken
      buffer.bytes.reset(new char[size]);
      buffer.capacity = size;
    }
    rocksdb::Slice read;
    if (rocksdb::IOStatus s = segment->file->Read(0, size, io, &read, buffer.bytes.get(), nullptr);
        !s.ok()) {
      return FromRocks(s);
    }
    if (read.size() != size) {
      return Status::IOError(segment->path + ": read " + std::to_string(read.size()) + " of " +
                             std::to_string(size) + " bytes");
    }
    if (read.data() != buffer.bytes.get()) std::memcpy(buffer.bytes.get(), read.data(), size);
    const std::string_view data(buffer.bytes.get(), size);
    Result<SegmentHeader> header = DecodeSegmentHeader(data);
    if (!header.ok()) {
      // Created, and the crash came before its header was synced: it never held an entry, since
      // entries are written only once the header is durable.
      if ((last || cut) && !MayHoldAnEntry(data)) {
        past_cut.push_back(segment->path);
        continue;
      }
      return Status::Corruption(segment->path + ": " + header.status().message());
    }
    if (header->number != segment->number) {
      return Status::Corruption(segment->path + ": its header says segment " +
                                std::to_string(header->number));
    }
    if (Status s = segment->TakeHeader(*header, data); !s.ok()) return s;
    if (cut) {
      Result<SegmentScan> scan = ScanSegment(data, 0, nullptr);
      if (!scan.ok()) return Status::Corruption(segment->path + ": " + scan.status().message());
      if (scan->max_synced_offset > segment->entries_offset) {
        return Status::Corruption(*cut + ", yet " + segment->path +
                                  " holds entries written after a sync that covered it");
      }
      past_cut.push_back(segment->path);
      continue;
    }
    if (grown != nullptr) {
      segment->id = grown->id;  // TakeAsSaved checked that it is free
      if (journal->by_id_.size() <= grown->id) journal->by_id_.resize(grown->id + 1);
      journal->next_id_ = (grown->id + 1) % JournalIndex::kMaxSegments;
    } else {
      std::optional<uint32_t> free_id = journal->FreeId();
      if (!free_id) return Status::Busy(dir + " holds more journal segments than an index can");
      segment->id = *free_id;
    }
    segment->salt = header->salt;
    const uint32_t id = segment->id;
    journal->by_id_[id] = segment;  // readable by the replay
    journal->scanned_[i % 2] = ScannedSegment{id, data, segment->dictionary};
    // A grown segment's entries up to its saved end are the saved ones, those after it later.
    bool not_as_saved = false;
    Result<SegmentScan> scan = ScanSegment(
        data, journal->last_sequence_, [&](const OpView& op, uint64_t offset, uint64_t seq) {
          if (grown != nullptr && !not_as_saved) {
            not_as_saved = (offset < replay_from) != (seq <= as_saved->last_sequence);
          }
          if (not_as_saved || offset < replay_from) return;
          if (replay) replay(*journal, op, Location{id, static_cast<uint32_t>(offset)}, seq);
        });
    if (grown != nullptr && (not_as_saved || !scan.ok() || scan->end_offset < replay_from)) {
      return reject(segment->path + " does not hold what was saved, up to offset " +
                    std::to_string(replay_from));
    }
    if (!scan.ok()) return Status::Corruption(segment->path + ": " + scan.status().message());
    const std::string where = segment->path + " at offset " + std::to_string(scan->bad_offset);
    if (scan->tail == SegmentScan::Tail::kDamaged) {
      return Status::Corruption(where + ": " + scan->what + ", with " +
                                std::to_string(scan->entries_after_bad) +
                                " intact entries after it that were synced after it");
    }
    if (scan->tail == SegmentScan::Tail::kTorn) {
      if (!last) cut = where + ": " + scan->what + ", in a sealed segment";
      // The write a crash interrupted: zeros over it, so the next entry starts clean there.
      // After a sealed segment, only once the segments after it are gone: a crash in between
      // must find the cut again, not a clean segment followed by what came after the tear.
      const size_t junk_end = LastNonZero(data);
      journal->repaired_tail_ =
          TailRepair{segment->number, scan->end_offset, junk_end - scan->end_offset,
                     scan->entries_after_bad, scan->what};
      repair = TornTail{segment, scan->end_offset, junk_end - scan->end_offset};
    }
    segment->end = scan->end_offset;
    segment->synced = scan->end_offset;
    segment->zeros_end = size;
    segment->max_keep_until_ms = scan->max_keep_until_ms;
    journal->last_sequence_ =
        std::max({journal->last_sequence_, header->after_sequence, scan->last_sequence});
    if (last) {
      journal->active_ = segment;
    } else {
      // What a crash of the process left in the page cache, replayed but perhaps not durable:
      // the first Sync covers it before anything written from now on, as if just sealed. Its
      // file may close meanwhile: this process wrote nothing in it.
      journal->sealed_unsynced_.push_back(segment);
      segment->keep_open = false;
      Closing closing;
      std::lock_guard<std::mutex> lock(journal->mu_);
      journal->KeepOpenWhileRecent(segment.get(), &closing);
    }
  }
  journal->scanned_ = {};
  if (as_saved != nullptr) {
    journal->last_sequence_ = std::max(journal->last_sequence_, as_saved->last_sequence);
  }
  if (check != nullptr) {
    check->kept = journal->Segments();
    for (const SegmentInfo& segment : check->kept) check->entry_bytes += segment.end_offset;
    check->last_sequence = journal->last_sequence_;
    if (journal->repaired_tail_) {
      const TailRepair& tail = *journal->repaired_tail_;
      check->tail_to_repair = "segment " + std::to_string(tail.segment_number) + " offset " +
                              std::to_string(tail.offset) + ": " + std::to_string(tail.bytes) +
                              " bytes of " + tail.what;
    }
    check->segments_to_delete = past_cut.size();
    return std::unique_ptr<Journal>();
  }
  if (!past_cut.empty()) {
    for (const std::string& path : past_cut) {
      if (rocksdb::IOStatus s = fs->DeleteFile(path, io, nullptr); !s.ok()) return FromRocks(s);
    }
    if (rocksdb::IOStatus s = SyncDirectory(fs, dir); !s.ok()) return FromRocks(s);
  }
  if (repair) {
    Result<File> file = journal->FileOf(repair->segment, Keep::kYes);
    if (!file.ok()) return file.status();
    const std::string zeros(repair->bytes, '\0');
    rocksdb::IOStatus s = (*file)->Write(repair->offset, zeros, io, nullptr);
    if (s.ok()) s = (*file)->Sync(io, nullptr);
    if (!s.ok()) return FromRocks(s);
  }
  if (!journal->active_) {
    const uint64_t next = numbers.empty() ? 1 : numbers.back() + 1;
    Result<std::shared_ptr<Segment>> created = journal->CreateSegment(next);
    if (!created.ok()) return created.status();
    std::lock_guard<std::mutex> lock(journal->mu_);
    journal->Activate(std::move(*created));
  } else if (rocksdb::IOStatus s = journal->active_->file->Sync(io, nullptr); !s.ok()) {
    return FromRocks(s);  // what a crash left of the last segment is durable from here on
  } else if (!journal->sealed_unsynced_.empty()) {
    // Not its entries' end: an entry saying so would vouch for the segments before it, which
    // the first Sync has still to cover.
    journal->active_->synced = kSegmentHeaderBytes;
  }
  if (options.prepare_in_background) {
    Journal* j = journal.get();
    journal->preparer_ = std::thread([j] { j->PrepareLoop(); });
  }
  return journal;
}

bool Journal::TakesSavedId(uint32_t id) const {
  return id < JournalIndex::kMaxSegments && (id >= by_id_.size() || !by_id_[id]);
}

Result<bool> Journal::TakeAsSaved(const std::shared_ptr<Segment>& segment, uint64_t size,
                                  const SegmentInfo& info, bool active,
                                  std::optional<uint64_t> last_sequence) {
  // The header, and for the last segment saved what follows its entries: nothing but zeros
  // (zeros ahead) if nothing was appended since.
  const uint64_t header_bytes = std::min<uint64_t>(size, kMaxSegmentHeaderBytes);
  const uint64_t tail_bytes =
      last_sequence.has_value() && size > info.end_offset ? size - info.end_offset : 0;
  if (tail_bytes > kMaxSegmentBytes) return Status::Corruption(segment->path + " is too long");
  std::string bytes(header_bytes + tail_bytes, '\0');
  for (const auto& [offset, length, to] :
       {std::tuple{uint64_t{0}, header_bytes, bytes.data()},
        std::tuple{info.end_offset, tail_bytes, bytes.data() + header_bytes}}) {
    if (length == 0) continue;
    rocksdb::Slice read;
    if (rocksdb::IOStatus s =
            segment->file->Read(offset, length, rocksdb::IOOptions(), &read, to, nullptr);
        !s.ok()) {
      return FromRocks(s);
    }
    if (read.size() != length) return Status::IOError(segment->path + ": a read came back short");
    if (read.data() != to) std::memcpy(to, read.data(), length);
  }
  const std::string_view data(bytes.data(), header_bytes);
  Result<SegmentHeader> header = DecodeSegmentHeader(data);
  if (!header.ok()) return Status::Corruption(segment->path + ": " + header.status().message());
  if (header->number != segment->number || header->salt != info.salt ||
      header->entries_offset() != info.entries_offset || size < info.end_offset ||
      info.end_offset < info.entries_offset || !TakesSavedId(info.id) ||
      (last_sequence && header->after_sequence > *last_sequence)) {
    return Status::Corruption(segment->path + " is not the segment saved");
  }
  if (Status s = segment->TakeHeader(*header, data); !s.ok()) return s;
  if (LastNonZero(std::string_view(bytes).substr(header_bytes)) > 0) return false;  // grown
  segment->id = info.id;
  segment->salt = info.salt;
  segment->end = info.end_offset;
  segment->synced = info.end_offset;  // saved only once durable
  segment->zeros_end = size;
  segment->max_keep_until_ms = info.max_keep_until_ms;
  last_sequence_ = std::max({last_sequence_, header->after_sequence, last_sequence.value_or(0)});
  if (by_id_.size() <= info.id) by_id_.resize(info.id + 1);
  by_id_[info.id] = segment;
  next_id_ = (info.id + 1) % JournalIndex::kMaxSegments;
  if (active) {
    active_ = segment;
    return true;
  }
  segment->keep_open = false;
  Closing closing;
  std::lock_guard<std::mutex> lock(mu_);
  KeepOpenWhileRecent(segment.get(), &closing);
  return true;
}

void Journal::Activate(std::shared_ptr<Segment> segment) {
  by_id_[segment->id] = segment;
  if (active_) sealed_unsynced_.push_back(active_);  // oldest first: Sync's order
  active_ = std::move(segment);
}

Status Journal::PrepareNextSegment() {
  uint64_t number = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!failed_.ok()) return failed_;
    if (spare_ || preparing_) return Status::Ok();
    preparing_ = true;
    // The appender rolls only once this is done (Append waits for it), so the active segment
    // is still the one before this number when the roll takes it.
    number = active_->number + 1;
  }
  Result<std::shared_ptr<Segment>> created = CreateSegment(number);
  std::lock_guard<std::mutex> lock(mu_);
  preparing_ = false;
  if (created.ok()) {
    spare_ = std::move(*created);
  } else {
    prepare_failed_for_ = number;
  }
  prepare_cv_.notify_all();
  return created.status();
}

void Journal::PrepareLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    prepare_cv_.wait(lock, [this] { return stopping_ || prepare_asked_; });
    if (stopping_) return;
    prepare_asked_ = false;
    lock.unlock();
    (void)PrepareNextSegment();  // a failure is the roll's to report, should it recur there
    lock.lock();
  }
}

Result<std::shared_ptr<Journal::Segment>> Journal::CreateSegment(uint64_t number) {
  const rocksdb::IOOptions io;
  auto segment = std::make_shared<Segment>();
  segment->number = number;
  segment->path = SegmentPath(number);
  segment->salt = RandomSalt();
  uint64_t after_sequence = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::optional<uint32_t> id = FreeId();
    if (!id) {
      return Status::Busy("the journal has " + std::to_string(JournalIndex::kMaxSegments) +
                          " segments, all it can index; drop some first");
    }
    segment->id = *id;
    by_id_[segment->id] = reserved_;  // the segment takes its place once it is active
    // A prepared segment is created before the last entry ahead of it: a lower bound then.
    after_sequence = last_sequence_;
  }
  segment->dictionary = TrainDictionary(&segment->dictionary_samples);
  // Created through a writable file (which creates it), then reopened for positioned writes.
  std::unique_ptr<rocksdb::FSWritableFile> created;
  rocksdb::IOStatus s =
      fs_->NewWritableFile(segment->path, rocksdb::FileOptions(), &created, nullptr);
  if (s.ok()) s = created->Close(io, nullptr);
  if (s.ok()) {
    std::unique_ptr<rocksdb::FSRandomRWFile> file;
    s = fs_->NewRandomRWFile(segment->path, rocksdb::FileOptions(), &file, nullptr);
    segment->file = Shared(std::move(file));
  }
  const SegmentHeader header{
      number, clock_->NowMillis(), after_sequence, segment->salt,
      segment->dictionary ? std::string(segment->dictionary->bytes()) : std::string()};
  segment->entries_offset = header.entries_offset();
  if (s.ok()) s = segment->file->Write(0, EncodeSegmentHeader(header), io, nullptr);
  segment->zeros_end = segment->entries_offset;
  if (s.ok() && options_.zeros_ahead_bytes > 0) {
    const uint64_t zeros_end =
        std::min(options_.segment_bytes, segment->entries_offset + options_.zeros_ahead_bytes);
    s = segment->file->Write(segment->entries_offset,
                             std::string(zeros_end - segment->entries_offset, '\0'), io, nullptr);
    segment->zeros_end = zeros_end;
  }
  if (s.ok()) s = segment->file->Sync(io, nullptr);
  if (s.ok()) {
    s = SyncDirectory(fs_, dir_);  // the new file's name is durable before what it holds
  }
  segment->end = segment->entries_offset;
  segment->synced = segment->entries_offset;
  if (!s.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    by_id_[segment->id].reset();  // the id is free again; the file, if any, holds no entry
    return FromRocks(s);
  }
  return segment;
}

Journal::Dictionary Journal::TrainDictionary(size_t* trained_on) {
  if (!sampler_) return nullptr;
  std::deque<std::string> samples;
  uint64_t offered = 0;
  {
    std::lock_guard<std::mutex> lock(sample_mu_);
    if (!sampler_->ready()) return nullptr;
    offered = sampler_->offered();
    // Small segments (or a quiet store) reuse the last dictionary until the samples are new.
    if (last_dictionary_ && offered - offered_at_training_ < sampler_->renewal() &&
        !sampler_->Outgrew(last_trained_on_)) {
      *trained_on = last_trained_on_;
      return last_dictionary_;
    }
    samples = sampler_->samples();
  }
  Result<Dictionary> trained = ValueDictionary::Train(samples, options_.dictionary_bytes);
  std::lock_guard<std::mutex> lock(sample_mu_);
  training_failed_ = !trained.ok();
  if (!trained.ok()) return nullptr;
  last_dictionary_ = std::move(*trained);
  last_trained_on_ = *trained_on = samples.size();
  offered_at_training_ = offered;
  return last_dictionary_;
}

Status Journal::RollFrom(const Segment& full, bool create) {
  // The full segment is left to the next Sync, which syncs it before the new one. The new
  // one becomes active in the same critical section that ends its creation: a preparation
  // starting in between would create the same file again.
  {
    std::unique_lock<std::mutex> lock(mu_);
    prepare_cv_.wait(lock, [this] { return !preparing_; });  // it would be this one's file
    if (spare_) {
      Activate(std::move(spare_));
      spare_.reset();
      return Status::Ok();
    }
    if (!create) return Status::IOError("the next journal segment could not be prepared");
    preparing_ = true;
  }
  Result<std::shared_ptr<Segment>> created = CreateSegment(full.number + 1);
  std::lock_guard<std::mutex> lock(mu_);
  preparing_ = false;
  prepare_cv_.notify_all();
  if (!created.ok()) {
    // Out of ids: nothing was written; a drop frees some.
    if (created.status().IsBusy()) return created.status();
    if (failed_.ok()) failed_ = created.status();
    has_failed_.store(true, std::memory_order_release);
    return failed_;
  }
  Activate(std::move(*created));
  return Status::Ok();
}

Status Journal::SealActiveIfEndedBy(int64_t until_ms) {
  std::shared_ptr<Segment> segment;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!failed_.ok()) return failed_;
    segment = active_;
    if (segment->end == segment->entries_offset || segment->max_keep_until_ms > until_ms) {
      return Status::Ok();
    }
  }
  // The next segment is prepared first, which fails without failing the journal (a full disk
  // here must not stop writes), and the roll only takes a prepared one: a preparation already
  // in flight that failed leaves none, and the seal waits for the next call.
  if (Status s = PrepareNextSegment(); !s.ok()) return s;
  return RollFrom(*segment, /*create=*/false);
}

Result<Journal::Location> Journal::Append(EntryBuilder* entry) {
  // As added: compressing never makes it longer.
  const uint64_t size = entry->bytes();
  if (size > max_entry_bytes()) {
    return Status::InvalidArgument("journal entry of " + std::to_string(size) +
                                   " bytes does not fit in a segment of " +
                                   std::to_string(options_.segment_bytes));
  }
  if (entry->ops() == 0) return Status::InvalidArgument("journal entry without operations");
  std::shared_ptr<Segment> segment;
  uint64_t sequence = 0;
  uint64_t at = 0;
  uint64_t synced = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!failed_.ok()) return failed_;
    segment = active_;
    at = segment->end;
  }
  const rocksdb::IOOptions io;
  if (at + size > options_.segment_bytes || RollsForDictionary(*segment)) {
    if (Status s = RollFrom(*segment, /*create=*/true); !s.ok()) return s;
    std::lock_guard<std::mutex> lock(mu_);
    segment = active_;
    at = segment->end;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    sequence = last_sequence_ + 1;
    synced = segment->synced;
  }
  const int64_t max_keep_until_ms = entry->max_keep_until_ms();
  std::string bytes;
  if (sampler_) {
    std::lock_guard<std::mutex> lock(sample_mu_);
    // Nothing compressed into a segment of format 2 (it is rolled from once a dictionary can be
    // trained: WantsDictionary).
    const ValueDictionary* dictionary =
        segment->keys_in_values ? segment->dictionary.get() : nullptr;
    bytes = entry->Finish(EntryStamp{sequence, synced, segment->salt},
                          [&](std::string_view plain, std::string* out) {
                            sampler_->Offer(plain);
                            return dictionary != nullptr && dictionary->Compress(plain, out);
                          });
  } else {
    bytes = entry->Finish(EntryStamp{sequence, synced, segment->salt});
  }
  const uint64_t end = at + bytes.size();
  rocksdb::IOStatus s;
  // Zeros first (they lie past the entry, so the order does not matter to the file): if they
  // cannot be written, neither is the entry, and a failed Append left nothing behind.
  if (options_.zeros_ahead_bytes > 0 && segment->zeros_end < end + options_.zeros_ahead_bytes / 2 &&
      segment->zeros_end < options_.segment_bytes) {
    const uint64_t from = std::max(segment->zeros_end, end);
    const uint64_t to = std::min(options_.segment_bytes, end + options_.zeros_ahead_bytes);
    if (from < to) s = segment->file->Write(from, std::string(to - from, '\0'), io, nullptr);
    if (s.ok()) segment->zeros_end = to;
  }
  if (s.ok()) s = segment->file->Write(at, bytes, io, nullptr);
  if (!s.ok()) return Fail(FromRocks(s));
  std::lock_guard<std::mutex> lock(mu_);
  segment->end = end;
  segment->max_keep_until_ms = std::max(segment->max_keep_until_ms, max_keep_until_ms);
  last_sequence_ = sequence;
  if (end > options_.segment_bytes / 2) AskPreparerAfter(*segment);
  return Location{segment->id, static_cast<uint32_t>(at)};
}

bool Journal::WantsDictionary(const Segment& segment) const {
  if (!sampler_ || segment.end == segment.entries_offset) return false;
  std::lock_guard<std::mutex> lock(sample_mu_);
  if (training_failed_ || !sampler_->ready()) return false;
  return !segment.dictionary || !segment.keys_in_values ||
         sampler_->Outgrew(segment.dictionary_samples);
}

bool Journal::RollsForDictionary(const Segment& segment) {
  if (!WantsDictionary(segment)) return false;
  std::lock_guard<std::mutex> lock(mu_);
  if (!preparer_.joinable() || spare_) return true;
  AskPreparerAfter(segment);
  return false;
}

void Journal::AskPreparerAfter(const Segment& active) {
  if (preparer_.joinable() && !spare_ && !preparing_ && !prepare_asked_ &&
      prepare_failed_for_ != active.number + 1) {
    prepare_asked_ = true;
    prepare_cv_.notify_all();
  }
}

Status Journal::Sync() {
  // One at a time: a writeback error is reported to one fdatasync of a file only, so a second
  // Sync of the same file in between could find nothing to report and vouch for lost pages.
  std::lock_guard<std::mutex> one_sync(sync_mu_);
  // Oldest first: a segment holds entries durable only once every segment before it is, so
  // that a torn sealed segment proves nothing after it was acknowledged (Open).
  std::vector<std::pair<std::shared_ptr<Segment>, uint64_t>> unsynced;  // and its end
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!failed_.ok()) return failed_;
    for (const auto& segment : sealed_unsynced_) unsynced.emplace_back(segment, segment->end);
    unsynced.emplace_back(active_, active_->end);
  }
  for (const auto& [segment, end] : unsynced) {
    // Closed only if replayed by Open: then opening it again and syncing it is how its pages
    // (left by the process that wrote them) are made durable, as PostgreSQL does at startup.
    // (DeleteSegment keeps a file open for a segment on the list until it is durably gone.)
    Result<File> file = FileOf(segment, Keep::kNo);
    if (!file.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      // Durably deleted since this Sync took its list: nothing of it is left to vouch for.
      if (segment != active_ && std::find(sealed_unsynced_.begin(), sealed_unsynced_.end(),
                                          segment) == sealed_unsynced_.end()) {
        continue;
      }
      return Status::IOError("syncing " + segment->path + ": " + file.status().message());
    }
    if (rocksdb::IOStatus s = (*file)->Sync(rocksdb::IOOptions(), nullptr); !s.ok()) {
      return Fail(FromRocks(s));
    }
    Closing closing;  // closed after the lock is released
    std::lock_guard<std::mutex> lock(mu_);
    if (!failed_.ok()) return failed_;  // failed meanwhile (an append, a roll): it stays failed
    segment->synced = std::max(segment->synced, end);
    // Sealed since this began, a segment may have received more than this sync covered: it
    // stays on the list for the next Sync then.
    if (segment != active_ && end >= segment->end) {
      std::erase(sealed_unsynced_, segment);
      segment->keep_open = false;
      // Being deleted, it joins them if the delete fails.
      if (by_id_[segment->id] == segment) KeepOpenWhileRecent(segment.get(), &closing);
    }
  }
  return Status::Ok();
}

Status Journal::Read(Location at, size_t bytes, std::string* out, Dictionary* dictionary) const {
  for (const std::optional<ScannedSegment>& scanned : scanned_) {
    if (scanned && scanned->id == at.segment) {
      out->assign(scanned->data.substr(std::min<size_t>(at.offset, scanned->data.size()), bytes));
      if (dictionary != nullptr) *dictionary = scanned->dictionary;
      return Status::Ok();
    }
  }
  std::shared_ptr<Segment> segment;
  Mapping mapped;
  Result<File> file = File();
  uint64_t end = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (at.segment < by_id_.size() && by_id_[at.segment] != reserved_) {
      segment = by_id_[at.segment];
    }
    if (segment) {
      end = segment->end;
      if (dictionary != nullptr) *dictionary = segment->dictionary;
      mapped = MappingOf(segment.get());
      if (!mapped && !options_.mapped_reads) file = OpenFileOf(segment.get());
    }
  }
  if (!segment) return Status::NotFound("no journal segment " + std::to_string(at.segment));
  bytes = at.offset < end ? std::min<uint64_t>(bytes, end - at.offset) : 0;
  if (!mapped && options_.mapped_reads) mapped = Map(segment);
  if (mapped) return mapped->CopyOut(at.offset, bytes, out);
  if (*file == nullptr) file = FileOf(segment, Keep::kYes);
  if (!file.ok()) return file.status();
  out->resize(bytes);
  rocksdb::Slice read;
  rocksdb::IOStatus s =
      (*file)->Read(at.offset, bytes, rocksdb::IOOptions(), &read, out->data(), nullptr);
  if (!s.ok()) return FromRocks(s);
  if (read.data() != out->data()) out->assign(read.data(), read.size());
  out->resize(read.size());
  return Status::Ok();
}

Result<OpView> Journal::Plain(const OpView& op, const Dictionary& dictionary,
                              std::string* scratch) {
  if (!op.compressed) return op;
  if (!dictionary)
    return Status::Corruption("a compressed value in a segment without a dictionary");
  if (Status s = dictionary->Decompress(op.value, kMaxSegmentBytes, scratch); !s.ok()) return s;
  OpView plain = op;
  plain.compressed = plain.key_in_value = false;
  plain.value = *scratch;
  if (op.key_in_value) {
    if (Status s = SplitKeyAndValue(*scratch, &plain); !s.ok()) return s;
  }
  return plain;
}

Journal::Dictionary Journal::DictionaryOf(uint32_t id) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (id >= by_id_.size() || !by_id_[id]) return nullptr;
  return by_id_[id]->dictionary;
}

Journal::Mapping Journal::Map(const std::shared_ptr<Segment>& segment) const {
  Result<Mapping> mapped = MappedFile::Map(segment->path, options_.segment_bytes);
  if (!mapped.ok()) return nullptr;
  Closing closing;  // released after the lock is
  std::lock_guard<std::mutex> lock(mu_);
  if (Mapping other = MappingOf(segment.get())) {  // mapped meanwhile by another reader
    closing.mappings.push_back(std::move(*mapped));
    return other;
  }
  if (segment->id < by_id_.size() && by_id_[segment->id] == segment) {
    segment->mapped = *mapped;
    if (!segment->keep_open) KeepOpenWhileRecent(segment.get(), &closing);
  }
  return std::move(*mapped);
}

Status Journal::DeleteSegment(uint32_t id) {
  std::shared_ptr<Segment> segment;
  bool needs_file = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (id >= by_id_.size() || !by_id_[id] || by_id_[id] == reserved_) {
      return Status::NotFound("no journal segment " + std::to_string(id));
    }
    if (by_id_[id] == active_) {
      return Status::InvalidArgument("journal segment " + std::to_string(id) + " is being written");
    }
    if (copies_in_progress_ > 0) {
      return Status::Busy("journal segment " + std::to_string(id) +
                          " is being copied (a backup in progress); delete it after the copy");
    }
    segment = std::move(by_id_[id]);
    by_id_[id] = reserved_;  // not readable, and not free for a new segment until this is done
    ++deletes_in_progress_;
    ForgetRecent(segment.get());
    needs_file = !segment->file && std::find(sealed_unsynced_.begin(), sealed_unsynced_.end(),
                                             segment) != sealed_unsynced_.end();
  }
  // A segment Sync has still to cover keeps an open file until it is durably gone, so that a
  // Sync meanwhile (or after a failed directory sync) can still sync what the name no longer
  // reaches. A reader in flight holds its own copy of the file.
  if (needs_file) {
    Result<File> file = FileOf(segment, Keep::kNo);
    std::lock_guard<std::mutex> lock(mu_);
    if (!file.ok()) {
      --deletes_in_progress_;
      if (deletes_in_progress_ == 0) deletes_cv_.notify_all();
      by_id_[id] = segment;
      return Status::IOError(file.status().message());  // the segment is there: not NotFound
    }
    if (!segment->file) segment->file = std::move(*file);
  }
  rocksdb::IOStatus s = fs_->DeleteFile(segment->path, rocksdb::IOOptions(), nullptr);
  const bool deleted = s.ok();
  if (deleted) {
    // Gone for good before the caller relies on it (a deleted segment that came back after a
    // crash would only hold ended operations, but its numbers would have to be explained).
    s = SyncDirectory(fs_, dir_);
  }
  Closing closing;  // closed after the lock is released
  std::lock_guard<std::mutex> lock(mu_);
  --deletes_in_progress_;
  if (deletes_in_progress_ == 0) deletes_cv_.notify_all();
  if (deleted) {
    by_id_[id].reset();
    if (s.ok()) {  // durably gone, it needs no sync: Open will not find it
      std::erase(sealed_unsynced_, segment);
      closing.files.push_back(std::move(segment->file));
      closing.mappings.push_back(std::move(segment->mapped));
    }  // else still on Sync's list, with its file open, until a Sync covers it
  } else {
    by_id_[id] = segment;  // still there: deleted by a later attempt
    if (!segment->keep_open) KeepOpenWhileRecent(segment.get(), &closing);
  }
  return s.ok() ? Status::Ok() : FromRocks(s);
}

Journal::File Journal::OpenFileOf(Segment* segment) const {
  if (segment->file && segment->recent) {
    recent_.splice(recent_.begin(), recent_, *segment->recent);
  }
  return segment->file;
}

Journal::Mapping Journal::MappingOf(Segment* segment) const {
  if (segment->mapped && segment->recent) {
    recent_.splice(recent_.begin(), recent_, *segment->recent);
  }
  return segment->mapped;
}

Result<Journal::File> Journal::FileOf(const std::shared_ptr<Segment>& segment, Keep keep) const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (File file = OpenFileOf(segment.get())) return file;
  }
  std::unique_ptr<rocksdb::FSRandomRWFile> opened;
  const rocksdb::IOStatus s =
      fs_->NewRandomRWFile(segment->path, rocksdb::FileOptions(), &opened, nullptr);
  File file = Shared(std::move(opened));
  Closing closing;  // closed after the lock is released
  std::lock_guard<std::mutex> lock(mu_);
  if (File other = OpenFileOf(segment.get())) {  // opened meanwhile (by a delete, a reader)
    closing.files.push_back(std::move(file));
    return other;
  }
  const bool listed = segment->id < by_id_.size() && by_id_[segment->id] == segment;
  if (!s.ok()) {
    if (!listed && (s.IsPathNotFound() || s.IsNotFound())) {
      return Status::NotFound(segment->path + " was deleted");
    }
    return Status::IOError("opening " + segment->path + ": " + s.ToString());
  }
  // Not kept while being deleted: used by this caller only.
  if (listed && keep == Keep::kYes) {
    segment->file = file;
    if (!segment->keep_open) KeepOpenWhileRecent(segment.get(), &closing);
  }
  return file;
}

void Journal::KeepOpenWhileRecent(Segment* segment, Closing* closing) const {
  if (!segment->file && !segment->mapped) return;
  if (segment->recent) {
    recent_.splice(recent_.begin(), recent_, *segment->recent);
  } else {
    recent_.push_front(segment);
    segment->recent = recent_.begin();
  }
  while (recent_.size() > options_.max_open_sealed_files) {
    Segment* oldest = recent_.back();
    recent_.pop_back();
    oldest->recent.reset();
    closing->files.push_back(std::move(oldest->file));
    closing->mappings.push_back(std::move(oldest->mapped));
  }
}

void Journal::ForgetRecent(Segment* segment) const {
  if (!segment->recent) return;
  recent_.erase(*segment->recent);
  segment->recent.reset();
}

uint64_t Journal::max_entry_bytes() const {
  // Past the header and the largest dictionary a new segment may hold.
  return options_.segment_bytes - EntriesOffset(options_.dictionary_bytes);
}

std::vector<Journal::SegmentInfo> Journal::Segments() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<SegmentInfo> out;
  for (const auto& segment : by_id_) {
    if (!segment || segment == reserved_) continue;
    out.push_back(SegmentInfo{segment->id, segment->number, segment->end,
                              segment->max_keep_until_ms, segment == active_,
                              segment->entries_offset, segment->salt});
  }
  std::sort(out.begin(), out.end(),
            [](const SegmentInfo& a, const SegmentInfo& b) { return a.number < b.number; });
  return out;
}

Status Journal::CopyTo(const std::string& dir) const {
  const rocksdb::IOOptions io;
  // The cut: every segment with entries, and where its entries end, at one instant. None of
  // them is deleted until the copy is done; a delete in progress finishes before the cut (or
  // fails, and its segment is in it).
  std::vector<std::pair<std::shared_ptr<Segment>, uint64_t>> cut;
  {
    std::unique_lock<std::mutex> lock(mu_);
    deletes_cv_.wait(lock, [this] { return deletes_in_progress_ == 0; });
    for (const auto& segment : by_id_) {
      if (segment && segment != reserved_) cut.emplace_back(segment, segment->end);
    }
    ++copies_in_progress_;
  }
  struct CopyDone {
    const Journal* journal;
    ~CopyDone() {
      std::lock_guard<std::mutex> lock(journal->mu_);
      --journal->copies_in_progress_;
    }
  } copy_done{this};
  std::sort(cut.begin(), cut.end(),
            [](const auto& a, const auto& b) { return a.first->number < b.first->number; });
  if (rocksdb::IOStatus s = fs_->CreateDirIfMissing(dir, io, nullptr); !s.ok()) {
    return FromRocks(s);
  }
  std::vector<std::string> children;
  if (rocksdb::IOStatus s = fs_->GetChildren(dir, io, &children, nullptr); !s.ok()) {
    return FromRocks(s);
  }
  for (const std::string& name : children) {
    if (SegmentNumber(name)) {
      return Status::InvalidArgument(dir + " already holds journal segment " + name);
    }
  }
  constexpr uint64_t kChunk = uint64_t{1} << 20;
  std::string buffer(kChunk, '\0');
  for (const auto& [segment, end] : cut) {
    const std::string path = dir + "/" + std::filesystem::path(segment->path).filename().string();
    Result<File> file = FileOf(segment, Keep::kNo);
    if (!file.ok()) return file.status();
    std::unique_ptr<rocksdb::FSWritableFile> out;
    rocksdb::IOStatus s = fs_->NewWritableFile(path, rocksdb::FileOptions(), &out, nullptr);
    for (uint64_t offset = 0; s.ok() && offset < end;) {
      rocksdb::Slice read;
      s = (*file)->Read(offset, std::min(kChunk, end - offset), io, &read, buffer.data(), nullptr);
      if (s.ok() && read.empty()) {
        s = rocksdb::IOStatus::IOError(segment->path + " ends at " + std::to_string(offset) +
                                       ", before its entries' end " + std::to_string(end));
      }
      if (s.ok()) s = out->Append(read, io, nullptr);
      offset += read.size();
    }
    if (s.ok()) s = out->Sync(io, nullptr);
    if (s.ok()) s = out->Close(io, nullptr);
    if (!s.ok()) {
      return Status::IOError("copying " + segment->path + " to " + path + ": " + s.ToString());
    }
  }
  const rocksdb::IOStatus s = SyncDirectory(fs_, dir);
  return s.ok() ? Status::Ok() : FromRocks(s);
}

uint64_t Journal::last_sequence() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_sequence_;
}

}  // namespace idem::journal
