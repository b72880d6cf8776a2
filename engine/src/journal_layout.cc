#include "journal_layout.h"

#include <memory>

#include "key_codec.h"
#include "rocks_status.h"

namespace idem {

std::string JournalDir(const std::string& db_dir) { return db_dir + "/journal"; }

Status ValidateJournalOptions(const EngineOptions& options) {
  if (options.journal_segment_bytes < EngineOptions::kMinJournalSegmentBytes ||
      options.journal_segment_bytes > EngineOptions::kMaxJournalSegmentBytes) {
    return Status::InvalidArgument(
        "journal_segment_bytes is " + std::to_string(options.journal_segment_bytes) +
        "; it must be in [" + std::to_string(EngineOptions::kMinJournalSegmentBytes) + ", " +
        std::to_string(EngineOptions::kMaxJournalSegmentBytes) + "]");
  }
  if (options.journal_dictionary_bytes > EngineOptions::kMaxJournalDictionaryBytes) {
    return Status::InvalidArgument("journal_dictionary_bytes is " +
                                   std::to_string(options.journal_dictionary_bytes) + "; at most " +
                                   std::to_string(EngineOptions::kMaxJournalDictionaryBytes));
  }
  // One record of the largest size the limits allow, with room for the entry's headers, in a
  // segment with the largest dictionary.
  const Limits& l = options.limits;
  const uint64_t record_bytes = l.max_payload_bytes + l.max_key_bytes + l.max_namespace_bytes +
                                l.max_status_bytes + l.max_fingerprint_bytes + l.max_owner_bytes +
                                kJournalRecordOverheadBytes + options.journal_dictionary_bytes;
  if (options.journal_segment_bytes < record_bytes) {
    return Status::InvalidArgument("journal_segment_bytes is " +
                                   std::to_string(options.journal_segment_bytes) +
                                   "; a segment must hold the largest record the limits allow (" +
                                   std::to_string(record_bytes) + " bytes with max_payload_bytes " +
                                   std::to_string(l.max_payload_bytes) + ")");
  }
  if (options.journal_index_save_interval_ms < 0) {
    return Status::InvalidArgument("journal_index_save_interval_ms must not be negative");
  }
  if (options.journal_max_open_files < 1) {
    return Status::InvalidArgument("journal_max_open_files must be at least 1");
  }
  return Status::Ok();
}

journal::JournalOptions JournalOptionsFor(const EngineOptions& options, bool os_files) {
  journal::JournalOptions j;
  j.segment_bytes = options.journal_segment_bytes;
  // Zeros ahead pay off only where each append is synced (docs/design.md §5, as for the WAL).
  j.zeros_ahead_bytes = options.durability == Durability::kSync
                            ? std::min<uint64_t>(uint64_t{1} << 20, options.journal_segment_bytes)
                            : 0;
  j.max_open_sealed_files = options.journal_max_open_files;
  j.mapped_reads = os_files;
  j.dictionary_bytes = options.journal_dictionary_bytes;
  return j;
}

Result<bool> HoldsRecords(rocksdb::DB* db) {
  // Meta keys sort first (a zero byte): the first key past them, if any, is a record's.
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
  it->Seek(rocksdb::Slice(std::string(1, static_cast<char>(kMetaKeyPrefix + 1))));
  if (!it->status().ok()) return FromRocks(it->status());
  return it->Valid();
}

}  // namespace idem
