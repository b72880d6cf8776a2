// The journal's files: numbered segments in one directory (format: journal_format.h), appended to
// by one writer, synced by another thread, read by any.
//
// Files are `<number>.jnl`, the number 16 decimal digits, growing by one per segment and never
// reused. A segment is written until the next entry would not fit, then left for good (sealed);
// the next one is created, its header synced and the directory synced, before anything is
// written into it: ahead of time (PrepareNextSegment), or by the roll itself. The sealed segment
// is synced by the next Sync, which syncs segments oldest first, not on the writer's path. So a
// sealed segment that ends torn proves that nothing after it was synced: Open then keeps the
// journal up to the torn entry and deletes the segments after it, after checking that no entry
// in them says it was written after a sync that covered it.
//
// Durability: Append writes into the page cache; Sync makes everything appended before it durable
// (fdatasync). With `zeros_ahead_bytes`, Append keeps that many zeros written ahead of the data,
// so that most syncs overwrite blocks the file already has and fdatasync commits no metadata
// (prezeroed_wal.h has the measurement; PostgreSQL's wal_init_zero does the same).
//
// Failures: a write or sync that fails, or a new segment that cannot be created, leaves the
// journal failed: every later Append and Sync returns the first failure, until it is reopened.
// After a failed fdatasync the kernel may have dropped the pages it could not write, so no later
// sync could vouch for them: what was appended since the last good sync may be gone after a
// restart, and the owner must stop acknowledging writes (write_health.h). An Append that failed
// may equally be found whole at the next open: its outcome is unknown, never half applied.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "idem/clock.h"
#include "idem/result.h"
#include "journal_format.h"
#include "journal_index.h"

namespace rocksdb {
class FileSystem;
class IOStatus;
class FSRandomRWFile;
}  // namespace rocksdb

namespace idem {
class MappedFile;
class ValueDictionary;
class ValueSampler;
}  // namespace idem

namespace idem::journal {

// Makes the entries of `dir` (files created, renamed or deleted in it) durable.
rocksdb::IOStatus SyncDirectory(rocksdb::FileSystem* fs, const std::string& dir);
// Deletes `dir` and the files in it (a journal's directory holds no other directory): a staging
// journal given up. OK if `dir` does not exist.
rocksdb::IOStatus RemoveDirectory(rocksdb::FileSystem* fs, const std::string& dir);
// The numbers of the segment files in `dir`, ascending; IOError if `dir` cannot be listed.
Result<std::vector<uint64_t>> ListSegments(rocksdb::FileSystem* fs, const std::string& dir);
// The path of segment `number`'s file in `dir`.
std::string SegmentFilePath(const std::string& dir, uint64_t number);

struct JournalOptions {
  // A segment's size limit; at most kMaxSegmentBytes. An entry must fit in one segment.
  uint64_t segment_bytes = kMaxSegmentBytes;
  // Zeros kept written ahead of the data; 0: none (the file grows with each append).
  uint64_t zeros_ahead_bytes = uint64_t{1} << 20;
  // Creates the next segment on a thread of the journal's own once the active one is half full,
  // so that a roll does not wait for a file creation and its syncs (2-8 ms measured here).
  // Off: PrepareNextSegment is the owner's to call; a roll without a prepared segment creates
  // one itself.
  bool prepare_in_background = true;
  // Sealed segments whose files stay open between reads, the most recently read ones; a read of
  // another opens its file again and closes the least recently read. Besides these the journal
  // holds open the active segment's file, the prepared one's, and those of the segments sealed
  // since the last Sync (a writeback error is reported to a file open when it happened) or
  // deleted before a Sync covered them (until one does), plus one per read, copy or sync in
  // flight and the one an open is scanning. At least 1.
  size_t max_open_sealed_files = 256;
  // Reads copy out of the segment files mapped into memory (mapped_file.h) instead of reading
  // them with a system call each: for files the operating system's own, not those of a
  // FileSystem that stands for something else (a test's, which must see every read). A segment
  // is mapped on its first read and stays mapped while its file would stay open (above): a
  // mapping holds no descriptor. A file that cannot be mapped is read as without this.
  bool mapped_reads = false;
  // Puts compressed, key and value together, with a dictionary of at most this many bytes
  // (value_dictionary.h), 0: none, at most kMaxDictionaryBytes. Each segment is created with a
  // dictionary trained on puts appended before (one in four of those long enough to compress, the
  // latest 4,096), which its header holds; a put is stored compressed where that makes it
  // shorter (the key then is read by decompressing it with its value). A journal's first
  // segment, created with nothing to train on, is sealed once 256 samples were seen, so that
  // the next has a dictionary; that one once there are 1,024, and that one once there are 4,096
  // (with prepare_in_background, once the preparer has made the next segment: a writer does
  // not wait for the training). An entry must then fit in a segment with the largest
  // dictionary: `segment_bytes` less the header and these bytes.
  size_t dictionary_bytes = 0;
};

class Journal {
 public:
  using Location = JournalIndex::Location;
  // Called by Open for each operation of each intact entry, oldest first, with where it is. The
  // journal may be read meanwhile (Read): every segment scanned so far, and the one being
  // scanned, is there.
  using Replay =
      std::function<void(const Journal& journal, const OpView& op, Location at, uint64_t sequence)>;

  struct SegmentInfo {
    uint32_t id = 0;  // the segment part of its Locations; after a delete, reused last
    uint64_t number = 0;
    uint64_t end_offset = 0;                        // where its entries end
    int64_t max_keep_until_ms = 0;                  // over its operations
    bool active = false;                            // being written: cannot be deleted
    uint64_t entries_offset = kSegmentHeaderBytes;  // where its entries begin
    uint64_t salt = 0;                              // what its entry headers' checksums mix in
  };
  using Dictionary = std::shared_ptr<const ValueDictionary>;

  // Opens (or creates) the journal in `dir`: scans every segment, oldest first, calling `replay`
  // for each operation of each intact entry (holding the segment being scanned and the one
  // before it in memory: up to twice segment_bytes), and readies the last segment for appends
  // (synced first; the segments before it are left to the first Sync, and until it no entry says
  // they were synced). A last segment whose header does not decode and that holds nothing but zeros
  // after it (a crash while creating it) is deleted. A torn tail is overwritten with zeros and
  // synced, so the next entry goes where it began; after a sealed segment's, the segments after
  // it are deleted (above) and a new one is started. Corruption if a segment is damaged
  // (journal_format.h), a sealed segment ends torn before an entry written after a sync, a
  // header's number is not its file's, or sequence numbers do not grow across segments; then
  // the replay calls made so far are void. IOError if a file cannot be read.
  // `fs` and `clock` outlive the journal.
  //
  // With `resume` (what the owner saved of the journal at some point: its segments then, and
  // its last sequence number), the saved segments still there are taken as they were then:
  // their headers read, their entries neither read, checked nor replayed (damage in them is
  // found by the read that meets it, or by Check). Segment files are only ever appended to (the
  // active one) or deleted, so what was written since the save is replayed: the last saved
  // segment's entries after its saved end, if any, and the segments after it, scanned and
  // replayed as usual. Before any replay call, `resume->gone` is given the ids of the saved
  // segments deleted since (dropped, or moved out of), whose index entries the caller removes.
  // The resume is taken only if the journal is one that could have followed the save: no
  // segment file among the saved ones that was not saved, each saved header with its saved
  // salt and entries offset, each file reaching its saved end, and the last saved segment
  // holding entries up to its saved end numbered up to the saved sequence and only higher
  // ones after it. Otherwise `resume->rejected` is called with why, before any replay call,
  // and Open goes on as without `resume`.
  struct Resume {
    std::vector<SegmentInfo> segments;  // oldest first
    uint64_t last_sequence = 0;
    std::function<void(const std::vector<uint32_t>& ids)> gone;
    std::function<void(const std::string& why)> rejected;
  };
  static Result<std::unique_ptr<Journal>> Open(rocksdb::FileSystem* fs, const std::string& dir,
                                               const JournalOptions& options, const Clock* clock,
                                               const Replay& replay,
                                               const Resume* resume = nullptr);
  // What Open would find in `dir`, changing nothing (to verify a journal no process has open):
  // the same checks, the same errors, `replay` and `resume`'s calls made the same way, but no
  // tail zeroed, no segment deleted or created, nothing synced. IOError if `dir` cannot be
  // listed.
  struct CheckReport {
    std::vector<SegmentInfo> kept;  // the segments Open would keep, oldest first
    uint64_t entry_bytes = 0;       // up to where their entries end, summed
    uint64_t last_sequence = 0;
    // What Open would zero (TailRepair below), and the segments after it that it would delete.
    std::optional<std::string> tail_to_repair;
    size_t segments_to_delete = 0;
  };
  static Result<CheckReport> Check(rocksdb::FileSystem* fs, const std::string& dir,
                                   const Replay& replay, const Resume* resume = nullptr);
  // Whether `dir` holds a segment file: false if it does not exist; IOError if it cannot be
  // listed.
  static Result<bool> HasSegments(rocksdb::FileSystem* fs, const std::string& dir);
  ~Journal();  // closes the files without syncing them (a prepared segment stays, empty)

  // Appends `entry` as the next entry (numbered here; the builder is empty afterwards) and
  // returns where it starts: its operation i is at offset + the builder's offsets()[i], taken
  // before the call. Starts a new segment first if it does not fit in the active one.
  // InvalidArgument if it would not fit in an empty segment; Busy if it needs a new segment and
  // all kMaxSegments ids are taken (nothing written: dropping segments frees ids); the failure
  // if the journal failed.
  // One caller at a time (the owner serializes appends); concurrent with Sync and Read.
  Result<Location> Append(EntryBuilder* entry);
  // Seals the active segment, starting the next one, if it holds an entry and every one of its
  // operations reached its keep-until by `until_ms`: otherwise a journal that stopped taking
  // writes would keep its last segment for ever, dead or not. The next segment is prepared
  // first (PrepareNextSegment): its failure is returned and fails nothing. An appender (one
  // caller at a time, with Append).
  Status SealActiveIfEndedBy(int64_t until_ms);
  // Makes every entry appended before the call durable, syncing the sealed segments not synced
  // yet, oldest first, then the active one. The journal's failure once it has failed, even if
  // this sync's own files were durable; an IOError, the journal not failed, if the file of a
  // segment replayed by Open cannot be opened again to sync it (no page was lost: the next Sync
  // tries again). One Sync at a time (a second waits); concurrent with Append and Read.
  Status Sync();
  // Creates the segment after the active one, for the next roll to take: the file, its header
  // and zeros ahead, synced, and the directory synced. Ok at once if one is prepared or being
  // created (by another preparation, or by a roll for itself: then none is left prepared). Its
  // error otherwise (the journal does not fail: the roll tries again itself); Busy if every id is
  // taken. A prepared segment is not listed by Segments() until a roll takes it. Concurrent with
  // Append, Sync and Read.
  Status PrepareNextSegment();
  // Reads up to `bytes` bytes at `at` into `out` (fewer past where the segment's entries end),
  // opening (or mapping) the segment's file again if it was closed (max_open_sealed_files).
  // NotFound if the segment is gone (deleted), IOError if the open or the read fails (a mapped
  // read: a page the file no longer has). An id reused
  // since the Location was taken reads the new segment's bytes: the operation's checksum and key
  // tell the caller. `dictionary`, if given, is set to the dictionary of the segment read (null
  // if it has none): what its compressed values need.
  Status Read(Location at, size_t bytes, std::string* out, Dictionary* dictionary = nullptr) const;
  // An operation read at `at` with its key and value as written: decompressed with the dictionary
  // of the segment it was read from (Read's) into `scratch` if it is compressed (the result
  // borrows from `scratch`), the operation itself otherwise. Corruption if it does not
  // decompress, would be longer than a segment, or does not hold its key.
  static Result<OpView> Plain(const OpView& op, const Dictionary& dictionary, std::string* scratch);
  // The dictionary of segment `id` (null if it has none or there is no such segment): for a
  // Replay, whose operations come from the segment being scanned.
  Dictionary DictionaryOf(uint32_t id) const;
  // Deletes a sealed segment's file and syncs the directory. InvalidArgument for the active
  // segment, NotFound for an id that has none, Busy while a CopyTo runs (the copy reads every
  // segment it began with: try again after it). An IOError from opening the file (a segment
  // still to be synced keeps it open until durably gone) or from the unlink leaves the segment
  // in place; one from the directory sync after the unlink leaves it deleted, perhaps not
  // durably (the next Sync still syncs it). The id is free for a new segment once this returns
  // (reused last: ids go round); a reader of the segment in flight meanwhile still reads it if
  // its file was open.
  Status DeleteSegment(uint32_t id);

  // The largest entry Append takes: one that fits in a new segment with the largest dictionary.
  uint64_t max_entry_bytes() const;
  std::vector<SegmentInfo> Segments() const;
  uint64_t last_sequence() const;
  // The failure that stopped the journal (above); OK while it takes writes.
  Status failure() const;
  // Segments sealed since the last Sync (each keeps its file open until one covers it).
  size_t sealed_unsynced() const;

  // Copies the journal as it stands at the call into `dir` (created if missing; InvalidArgument
  // if it already holds a segment file): each segment's entries up to the last one appended
  // before the call, each file synced, then the directory. The copy opens as a journal whose
  // last segment ends clean. It is one consistent cut: it begins once the deletes in progress
  // are done, and segments are not deleted until it ends (DeleteSegment: Busy). Appends go on
  // meanwhile. The copy is not synced from the journal's own durability: an
  // entry appended before the call is in it, synced or not. IOError naming the file.
  Status CopyTo(const std::string& dir) const;

  // What Open zeroed at the end of the last segment, for the owner to log: the bytes a crash
  // left of a write that was never acknowledged (or, undetectably, damage to the last entries:
  // journal_format.h).
  struct TailRepair {
    uint64_t segment_number = 0;
    uint64_t offset = 0;
    uint64_t bytes = 0;
    uint64_t entries_after = 0;  // intact entries found after it that no sync had covered
    std::string what;
  };
  const std::optional<TailRepair>& repaired_tail() const { return repaired_tail_; }
  // Tests: the path of the segment file numbered `number`.
  std::string SegmentPath(uint64_t number) const;

 private:
  struct Segment;
  Journal(rocksdb::FileSystem* fs, std::string dir, const JournalOptions& options,
          const Clock* clock);
  // Open, or with `check` (non-null) Check: the scan alone, the journal returned null.
  static Result<std::unique_ptr<Journal>> OpenOrCheck(rocksdb::FileSystem* fs,
                                                      const std::string& dir,
                                                      const JournalOptions& options,
                                                      const Clock* clock, const Replay& replay,
                                                      const Resume* resume, CheckReport* check);
  // Creates segment `number`, synced, its id held until Activate takes it. Busy if every id is
  // taken.
  Result<std::shared_ptr<Segment>> CreateSegment(uint64_t number);
  void Activate(std::shared_ptr<Segment> segment);  // mu_ held
  // Open with a Resume: sets up a segment (its file open) as `info` says, from its header alone,
  // as the active one with `active`, and returns true. With `last_sequence` (the journal's, for
  // the last segment saved), false, nothing set up but the header's fields, if anything but
  // zeros follows its saved end: written on since, it is to be scanned. Corruption saying why
  // if the file does not agree with `info`.
  Result<bool> TakeAsSaved(const std::shared_ptr<Segment>& segment, uint64_t size,
                           const SegmentInfo& info, bool active,
                           std::optional<uint64_t> last_sequence);
  bool TakesSavedId(uint32_t id) const;  // while Open sets up segments: no segment has `id`
  // Makes the next segment (prepared, or with `create` created now: a failed creation fails the
  // journal, but for Busy when every id is taken) the active one after `full`. Without `create`
  // and no segment prepared: IOError, nothing changed.
  Status RollFrom(const Segment& full, bool create);
  // The segment's file, opened again if it was closed; kept open (among the recent ones) only
  // with `keep`: a copy or a sync reading every segment once would otherwise push out the
  // files reads use. NotFound if the segment was deleted meanwhile, IOError if the file cannot
  // be opened.
  using File = std::shared_ptr<rocksdb::FSRandomRWFile>;
  using Mapping = std::shared_ptr<const MappedFile>;
  enum class Keep : bool { kNo, kYes };
  Result<File> FileOf(const std::shared_ptr<Segment>& segment, Keep keep) const;
  File OpenFileOf(Segment* segment) const;    // mu_ held: its file if open (now the most recent)
  Mapping MappingOf(Segment* segment) const;  // mu_ held: its mapping if any (now the most recent)
  // Maps the segment's file and keeps the mapping among the recent ones; null if it cannot be
  // mapped (or was deleted meanwhile): the caller reads the file.
  Mapping Map(const std::shared_ptr<Segment>& segment) const;
  // What KeepOpenWhileRecent let go, for the caller to close and unmap with mu_ released.
  struct Closing {
    std::vector<File> files;
    std::vector<Mapping> mappings;
  };
  // Lists the segment's open file or mapping among those that may be closed (mu_ held), most
  // recently used first, moving what it closes to `closing`.
  void KeepOpenWhileRecent(Segment* segment, Closing* closing) const;
  void ForgetRecent(Segment* segment) const;  // mu_ held
  void PrepareLoop();
  Status Fail(Status s);  // records the first failure; returns it
  // An id no segment has, for the caller to take (mu_ held). Nullopt: all are taken.
  std::optional<uint32_t> FreeId();
  // A dictionary trained on the values sampled so far (or the last one, if they are not new
  // yet), and how many samples it was trained on; null without dictionary_bytes, with too few
  // samples, or if zstd's trainer refuses them.
  Dictionary TrainDictionary(size_t* trained_on);
  // Whether to seal `segment` (active, written to) for one with a better dictionary: it has
  // none (or one of format 2, which takes nothing compressed) and one could now be trained, or
  // it has one trained on a quarter of the samples there are now (a journal's first segments:
  // at most two such seals).
  bool WantsDictionary(const Segment& segment) const;
  // Whether an append rolls from `segment` first for the dictionary it wants: at once without a
  // preparer; with one, once it has prepared the next segment (asked here), so that no writer
  // waits while a dictionary is trained (20-50 ms) and a file created. Until then appends go on
  // into `segment`, compressed as before.
  bool RollsForDictionary(const Segment& segment);
  // mu_ held: asks the preparing thread, if there is one, for the segment after `active`, unless
  // it is there, being made or asked for already, or its creation failed last time.
  void AskPreparerAfter(const Segment& active);

  rocksdb::FileSystem* const fs_;
  const std::string dir_;
  const JournalOptions options_;
  const Clock* const clock_;
  const std::shared_ptr<Segment> reserved_;  // holds an id while its segment is being created

  std::mutex sync_mu_;     // one Sync at a time; taken before mu_
  mutable std::mutex mu_;  // guards the members below; never held across file I/O
  std::vector<std::shared_ptr<Segment>> by_id_;  // null: a free id
  uint32_t next_id_ = 0;                         // where FreeId looks first
  std::shared_ptr<Segment> active_;
  // Sealed since the last Sync that covered them, oldest first (Sync's work list).
  std::vector<std::shared_ptr<Segment>> sealed_unsynced_;
  size_t deletes_in_progress_ = 0;         // DeleteSegment calls past their check, not returned
  mutable size_t copies_in_progress_ = 0;  // CopyTo calls past their cut
  mutable std::condition_variable deletes_cv_;  // deletes_in_progress_ went down
  // Sealed segments whose files may be closed (not written since a Sync covered them, or
  // replayed by Open), open or mapped ones only, most recently used first.
  mutable std::list<Segment*> recent_;
  uint64_t last_sequence_ = 0;
  std::shared_ptr<Segment> spare_;  // prepared for the next roll, if any
  bool preparing_ = false;          // the next segment is being created (prepared or rolled to)
  // The background preparation: asked for once the active segment is half full (and not
  // again for a number whose preparation failed).
  bool prepare_asked_ = false;
  uint64_t prepare_failed_for_ = 0;
  bool stopping_ = false;
  std::condition_variable prepare_cv_;  // any change of the four above
  std::thread preparer_;
  Status failed_;                            // the first failure, if any
  std::atomic<bool> has_failed_{false};      // failed_ is set (read without mu_)
  std::optional<TailRepair> repaired_tail_;  // set by Open only
  // Puts appended (key and value), for the next segment's dictionary (dictionary_bytes > 0).
  mutable std::mutex sample_mu_;
  std::unique_ptr<ValueSampler> sampler_;  // guarded by sample_mu_
  bool training_failed_ = false;           // guarded by sample_mu_: the last training did
  Dictionary last_dictionary_;             // guarded by sample_mu_: the last one trained
  size_t last_trained_on_ = 0;             // guarded by sample_mu_: its samples
  uint64_t offered_at_training_ = 0;       // guarded by sample_mu_: sampler_->offered() then
  // While Open scans (its thread alone, empty once it returns): the bytes of the segment being
  // scanned and of the one before it, which Read serves from memory. A replayed update finds
  // the version it replaces there nearly always (a completion follows its begin within
  // seconds) instead of reading it back from the file: a pread per update, ~2 µs from the page
  // cache and a disk read after a reboot.
  struct ScannedSegment {
    uint32_t id = 0;
    std::string_view data;
    Dictionary dictionary;
  };
  std::array<std::optional<ScannedSegment>, 2> scanned_;
};

}  // namespace idem::journal
