// Counts what RocksDB writes and compacts in the background (flush bytes, compaction bytes,
// records dropped, write stalls), from RocksDB's event callbacks: nothing on the hot path.
// Bytes written are table files plus, when rocksdb_options turns BlobDB on, blob files: there the
// values leave the table files, and counting only those would make write amplification look
// smaller than what reaches the disk.
#pragma once

#include <atomic>
#include <cstdint>

#include <rocksdb/listener.h>

namespace idem {

class IoAccounting final : public rocksdb::EventListener {
 public:
  void OnTableFileCreated(const rocksdb::TableFileCreationInfo& info) override;
  void OnBlobFileCreated(const rocksdb::BlobFileCreationInfo& info) override;
  void OnCompactionCompleted(rocksdb::DB* db, const rocksdb::CompactionJobInfo& info) override;
  void OnStallConditionsChanged(const rocksdb::WriteStallInfo& info) override;
  const char* Name() const override { return "idem.IoAccounting"; }

  std::atomic<uint64_t> flush_bytes_written{0};
  std::atomic<uint64_t> compaction_bytes_read{0};
  std::atomic<uint64_t> compaction_bytes_written{0};
  std::atomic<uint64_t> compactions{0};
  std::atomic<uint64_t> records_dropped{0};
  std::atomic<uint64_t> write_stalls{0};  // changes from normal to delayed or stopped
};

}  // namespace idem
