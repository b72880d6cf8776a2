// The on-disk format of the journal: append-only segment files that hold expiring records as they
// were written, so that a record is never rewritten after the write that made it durable and
// leaves the disk when its segment is deleted (docs/design.md, "Alternatives considered": the
// window stored as its own log). This header is the format and its pure encoders and decoders;
// no file access, no locks.
//
// A segment is one file of at most kMaxSegmentBytes:
//
//   segment header (48 bytes):
//     magic "IDEMJNL1" (8) | format version (4: 1, or 3 with a dictionary; 2 is read) |
//     masked crc32c of the next 32 bytes (4) |
//     segment number (8) | created, ms since the epoch (8, signed) |
//     after sequence (8): the last sequence number written before this segment was created
//       (for a segment created ahead of its first entry, at most the last before that entry) |
//     salt (8): random, mixed into every entry header's checksum
//   formats 2 and 3 only, the value dictionary (value_dictionary.h) the segment's compressed
//   operations need: its length (4, 1..kMaxDictionaryBytes) | its masked crc32c (4) | its bytes |
//   zeros to a multiple of 8
//   entries, each starting at a multiple of 8 (kAlignment), back to back
//   zeros to the end of the file (a segment is written over zeros laid down ahead of it)
//
//   entry = one atomic batch of operations:
//     masked crc32c of the segment's salt and the header's next 20 bytes (4) |
//     payload bytes (4, a multiple of 8) |
//     sequence number (8) | operation count (4) | synced to (4) |
//     payload: `count` operations, each padded with zeros to a multiple of 8
//   "synced to", in units of 8 bytes: the offset in this segment up to which every byte was
//   known durable (fdatasynced) when the entry was written
//
//   operation:
//     masked crc32c of the operation's next 16 + key + value bytes (4) | type (1: put, 2: delete) |
//     flags (1): 0 = key and value stored as given; 3 = the key and the value compressed together
//       with the segment's dictionary (a put in a segment with one only): the key is stored
//       empty, and the stored value decompresses to the key's length (2) | key | value;
//       1 = the value alone compressed, the key as given (written by format 2, read still) |
//     key bytes (2, as stored) | value bytes (4, as stored) |
//     keep until, ms since the epoch (8, signed) | key | value (empty for a delete)
//   Format 3 differs from 2 only in flags 3, which a build that reads format 2 would not read
//   (it refuses the segment for its version instead).
//
// All integers are little-endian. Sequence numbers grow by at least one from each entry to the
// next, across the segments present too (a segment's header carries a bound on where they
// stood), so an entry is never taken for a later one. The salt keeps a client's value that holds an
// image of an entry from passing for one: without the segment's salt its header does not check.
// "Keep until" is the time after which the segment no longer needs the operation: a record's death,
// or, for an operation that replaces or deletes a version that lives longer, that version's
// keep-until (otherwise deleting this segment first would bring the older version back at the next
// open).
//
// Each operation carries its own checksum so that a read of one record (an index hit) verifies
// what it read without reading its whole batch; the entry header's checksum, with every
// operation's, is what recovery checks before it applies a batch, all of it or none.
//
// What a scan tells apart (ScanSegment):
// - the clean end: zeros (or the end of the file) where the next entry would start;
// - a torn tail: an entry that does not check, with nothing readable after it: the write a crash
//   interrupted. It was never acknowledged as durable (an acknowledgement waits for the fdatasync
//   that covers it), so dropping it loses nothing;
// - damage: an entry that does not check, followed by an entry that does and says the bad spot
//   was synced before it was written. So the bad entry was once whole and durable: something
//   damaged the file, and what follows must not be dropped silently. Intact entries after a bad
//   spot that none of them says was synced are a torn tail too: a power cut can persist a later
//   page of unsynced writes without an earlier one. An entry that checks but is numbered out of
//   order is damage as well: a torn write does not produce a whole entry.
// The limit: damage to the last entries of a segment, which no later entry vouches for, cannot
// be told from a torn write, and reads as a torn tail (as in RocksDB's WAL).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "idem/result.h"

namespace idem::journal {

inline constexpr std::string_view kSegmentMagic = "IDEMJNL1";
inline constexpr uint32_t kFormatVersion = 1;
inline constexpr uint32_t kDictionaryFormatVersion = 3;
inline constexpr uint32_t kValueDictionaryFormatVersion = 2;  // read, no longer written
inline constexpr size_t kSegmentHeaderBytes = 48;
inline constexpr size_t kEntryHeaderBytes = 24;
inline constexpr size_t kOpHeaderBytes = 20;
inline constexpr size_t kAlignment = 8;
// Offsets within a segment fit the index's 23 bits of 8-byte units (journal_index.h).
inline constexpr uint64_t kMaxSegmentBytes = uint64_t{64} << 20;
inline constexpr size_t kMaxKeyBytes = 0xFFFF;
inline constexpr size_t kMaxDictionaryBytes = size_t{64} << 10;

enum class OpType : uint8_t { kPut = 1, kDelete = 2 };

// One operation, its bytes borrowed from whatever it was decoded from or will be encoded into.
struct OpView {
  OpType type = OpType::kPut;
  int64_t keep_until_ms = 0;
  std::string_view key;    // as stored: empty if key_in_value
  std::string_view value;  // as stored
  bool compressed = false;
  // Compressed only: the value holds the key before the value (flags 3), `key` is empty.
  bool key_in_value = false;

  bool operator==(const OpView&) const = default;
};

struct SegmentHeader {
  uint64_t number = 0;
  int64_t created_ms = 0;
  uint64_t after_sequence = 0;
  uint64_t salt = 0;
  std::string dictionary;  // empty: format 1, no compressed operation

  // Where the segment's first entry starts.
  uint64_t entries_offset() const;
};

// A place in a journal between two operations, in the order they were written: the operation
// `op` (from 0) of the entry at `offset` of the segment numbered `segment` (its number, not
// its id: ids are reused). Offset 0 stands for the segment's first entry.
struct WalkPosition {
  uint64_t segment = 0;
  uint64_t offset = 0;
  uint32_t op = 0;

  bool operator==(const WalkPosition&) const = default;
};

// What Finish stamps on an entry.
struct EntryStamp {
  uint64_t sequence = 0;
  uint64_t synced_offset = 0;  // a multiple of kAlignment: the segment is durable up to here
  uint64_t salt = 0;           // the segment's
};

// The header, and the dictionary after it if there is one: entries_offset() bytes.
std::string EncodeSegmentHeader(const SegmentHeader& header);
// Corruption if `bytes` does not start with a segment header of either format (a short file, a
// wrong magic, version or checksum; a dictionary whose length is out of bounds, cut off, or
// whose checksum does not match).
Result<SegmentHeader> DecodeSegmentHeader(std::string_view bytes);
// Whether a segment whose header does not decode may hold an entry: anything but zeros after
// the header's place. (Its entries cannot be checked without the header's salt.)
bool MayHoldAnEntry(std::string_view segment_bytes);
// The format version of a segment whose header DecodeSegmentHeader decoded from `bytes`.
// EncodeSegmentHeader writes kFormatVersion, or with a dictionary kDictionaryFormatVersion.
uint32_t SegmentFormatVersion(std::string_view bytes);
// Where a segment's first entry starts after a dictionary of `dictionary_bytes` (0: none).
uint64_t EntriesOffset(size_t dictionary_bytes);
// The most a segment's header and dictionary take.
inline constexpr size_t kMaxSegmentHeaderBytes = kSegmentHeaderBytes + 8 + kMaxDictionaryBytes;

// The bytes an operation takes in an entry, padding included.
size_t OpBytes(size_t key_bytes, size_t value_bytes);

// Compresses the plain form of a put's key and value (below) for Finish: true with the stored
// form in `out`, false to store them as given.
using CompressValue = std::function<bool(std::string_view plain, std::string* out)>;

// What a put compressed with its key decompresses to: the key's length (2) | key | value.
void AppendKeyAndValue(std::string_view key, std::string_view value, std::string* out);
// Splits `plain` (AppendKeyAndValue's) into `op`'s key and value, views into `plain`. Corruption
// if it is shorter than its key's length says, or the key is empty.
Status SplitKeyAndValue(std::string_view plain, OpView* op);

// Builds one entry. Add the operations, then Finish; offsets() tells where each operation starts
// within the entry (an index records the entry's offset in the segment plus these).
class EntryBuilder {
 public:
  EntryBuilder();
  // InvalidArgument if the key is empty (but for a key in the value) or longer than
  // kMaxKeyBytes, the value is over 4 GiB, a delete carries a value, a compressed value is empty
  // or not a put's, or an uncompressed one says it holds the key. Nothing is added then. The
  // first Add after a Finish starts the next entry.
  Status Add(const OpView& op);
  size_t ops() const { return finished_bytes_ == 0 ? offsets_.size() : 0; }
  // The size the entry will have, header and operations, padding included, with every value
  // stored as added: Finish never makes it larger.
  size_t bytes() const { return entry_.size(); }
  // Where each operation starts in the entry; after Finish, in the entry Finish returned.
  const std::vector<uint32_t>& offsets() const { return offsets_; }
  // After Finish: the bytes operation i takes in the entry, padding included, and the entry's.
  uint32_t op_bytes(size_t i) const;
  size_t finished_bytes() const { return finished_bytes_; }
  int64_t max_keep_until_ms() const { return max_keep_until_ms_; }  // over the operations added
  // The entry, stamped, each put stored as `compress` returns its key and value (flagged: key
  // in value) where that is shorter, or as added. The builder is empty again afterwards, but
  // for offsets() and op_bytes().
  std::string Finish(const EntryStamp& stamp, const CompressValue& compress = nullptr);

 private:
  void Clear();
  std::string entry_;  // the header's place, then the operations
  std::vector<uint32_t> offsets_;
  int64_t max_keep_until_ms_ = 0;
  size_t finished_bytes_ = 0;  // nonzero: Finish was called, offsets_ is the finished entry's
};

// The payload length and operation count of the entry whose header starts `bytes`, in a
// segment with `salt`: for walking entries one by one, each operation's own checksum vouching
// for what is read. Nullopt if `bytes` is shorter than a header or the header does not check.
struct EntryExtent {
  uint32_t payload = 0;
  uint32_t count = 0;
};
std::optional<EntryExtent> PeekEntry(std::string_view bytes, uint64_t salt);

// How many bytes the operation that starts `bytes` takes, padding included, read from its fixed
// header; nullopt if `bytes` is shorter than the header or the header is not an operation's (a
// bad type or flags). A reader that fetched a prefix fetches this much before DecodeOp.
std::optional<size_t> PeekOpBytes(std::string_view bytes);

// Decodes the operation that starts `bytes` and checks its checksum: Corruption if it does not
// check or does not fit in `bytes`. The view borrows from `bytes`.
Result<OpView> DecodeOp(std::string_view bytes);

struct SegmentScan {
  SegmentHeader header;
  uint64_t entries = 0;
  uint64_t ops = 0;
  // Where the intact entries end: where the next entry goes if the segment is written on.
  uint64_t end_offset = kSegmentHeaderBytes;
  uint64_t first_sequence = 0;  // 0: no entry
  uint64_t last_sequence = 0;
  int64_t max_keep_until_ms = 0;  // over every operation read; 0 if none
  // The highest "synced to" of any intact entry, before or after a bad spot.
  uint64_t max_synced_offset = 0;

  enum class Tail {
    kClean,    // zeros or the end of the file after the last intact entry
    kTorn,     // bytes that are neither, with no intact entry after them
    kDamaged,  // an entry that does not check, with synced entries after it; or one out of order
  };
  Tail tail = Tail::kClean;
  // kTorn, kDamaged: where the first entry that does not check starts, and why.
  uint64_t bad_offset = 0;
  std::string what;
  // kTorn, kDamaged: intact entries found after the bad spot (never visited), and the first
  // one's sequence number (0: none).
  uint64_t entries_after_bad = 0;
  uint64_t resume_sequence = 0;
};

// Called for each operation of each intact entry, in order, once the whole entry has checked:
// `offset` is where the operation starts in the segment, `sequence` its entry's number.
using OpVisitor = std::function<void(const OpView& op, uint64_t offset, uint64_t sequence)>;

// What a scan visits past a bad spot: nothing (kStop: what an open replays ends there), or every
// intact entry it finds after it, each numbered above the one before (kVisit: what a salvage
// keeps). With kVisit, an entry out of order is a bad spot to look past, not the end of the scan,
// and makes the tail kDamaged (a whole entry is never a torn write).
enum class AfterDamage { kStop, kVisit };

// Scans a whole segment file's bytes. Entries must be numbered above `after_sequence` and the
// header's own after sequence (the last sequence before the segment), each above the one before;
// a compressed value in a segment without a dictionary does not check. Corruption if the segment
// header does not decode; otherwise the scan, whatever its tail.
Result<SegmentScan> ScanSegment(std::string_view bytes, uint64_t after_sequence,
                                const OpVisitor& visit,
                                AfterDamage after_damage = AfterDamage::kStop);

}  // namespace idem::journal
