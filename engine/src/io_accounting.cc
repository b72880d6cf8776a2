#include "io_accounting.h"

#include <filesystem>
#include <system_error>

namespace idem {

void IoAccounting::OnTableFileCreated(const rocksdb::TableFileCreationInfo& info) {
  if (!info.status.ok()) return;
  if (info.reason == rocksdb::TableFileCreationReason::kFlush) {
    flush_bytes_written.fetch_add(info.file_size, std::memory_order_relaxed);
  } else if (info.reason == rocksdb::TableFileCreationReason::kCompaction) {
    compaction_bytes_written.fetch_add(info.file_size, std::memory_order_relaxed);
  }
}

void IoAccounting::OnBlobFileCreated(const rocksdb::BlobFileCreationInfo& info) {
  if (!info.status.ok()) return;
  // The file's size (its records carry their keys and headers besides the values); the values'
  // total if the file cannot be looked at.
  std::error_code ec;
  uint64_t bytes = std::filesystem::file_size(info.file_path, ec);
  if (ec) bytes = info.total_blob_bytes;
  if (info.reason == rocksdb::BlobFileCreationReason::kFlush) {
    flush_bytes_written.fetch_add(bytes, std::memory_order_relaxed);
  } else if (info.reason == rocksdb::BlobFileCreationReason::kCompaction) {
    compaction_bytes_written.fetch_add(bytes, std::memory_order_relaxed);
  }
}

void IoAccounting::OnCompactionCompleted(rocksdb::DB* /*db*/,
                                         const rocksdb::CompactionJobInfo& info) {
  if (!info.status.ok()) return;
  compactions.fetch_add(1, std::memory_order_relaxed);
  compaction_bytes_read.fetch_add(info.stats.total_input_bytes, std::memory_order_relaxed);
  if (info.stats.num_input_records > info.stats.num_output_records) {
    records_dropped.fetch_add(info.stats.num_input_records - info.stats.num_output_records,
                              std::memory_order_relaxed);
  }
}

void IoAccounting::OnStallConditionsChanged(const rocksdb::WriteStallInfo& info) {
  if (info.condition.prev == rocksdb::WriteStallCondition::kNormal &&
      info.condition.cur != rocksdb::WriteStallCondition::kNormal) {
    write_stalls.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace idem
