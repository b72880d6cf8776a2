// Databases with an expiry-window column family (engine/src/column_families.h), written with
// RocksDB itself: for the tools that open a database directly (verify, repair, backup, the WAL
// scan), independently of how the engine places records.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include "key_codec.h"
#include "record_codec.h"

namespace idem::testing {

inline constexpr char kWindowFamily[] = "expires-60000";

// A live record as the engine stores it, dying inside kWindowFamily's window.
inline std::string WindowRecordValue(uint64_t fence) {
  Record record;
  record.status = "PAID";
  record.version = 1;
  record.fence = fence;
  record.payload = "response";
  record.created_ms = 1'000;
  record.updated_ms = 1'000;
  record.expires_at_ms = 60'500;
  std::string value;
  EncodeRecord(record, &value);
  return value;
}

// What WriteWindowDatabase writes.
struct WindowDatabase {
  int default_records = 3;  // "d0".. in namespace "win", never expiring, in `default`
  int window_records = 2;   // "w0".. in kWindowFamily, fences 100, 101, ...
  bool flush = true;        // false: they stay in the WAL
};

inline std::string DefaultRecordValue() {
  Record record;
  record.status = "PAID";
  record.version = 1;
  record.fence = 1;
  std::string value;
  EncodeRecord(record, &value);
  return value;
}

// Creates the database `dir` with `options` (create_if_missing is set here). Each window record
// is written in one batch with a default-family record after it, as a move between families is.
inline void WriteWindowDatabase(const std::string& dir, rocksdb::Options options,
                                const WindowDatabase& what) {
  options.create_if_missing = true;
  options.create_missing_column_families = true;
  std::vector<rocksdb::ColumnFamilyDescriptor> families = {
      {rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions(options)},
      {kWindowFamily, rocksdb::ColumnFamilyOptions(options)}};
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(options, dir, families, &handles, &raw);
  ASSERT_TRUE(s.ok()) << s.ToString();
  std::unique_ptr<rocksdb::DB> db(raw);
  int d = 0;
  for (int w = 0; w < what.window_records; ++w) {
    rocksdb::WriteBatch batch;
    ASSERT_TRUE(
        batch.Put(handles[1], RecordKey("win", "w" + std::to_string(w)), WindowRecordValue(100 + w))
            .ok());
    if (d < what.default_records) {
      ASSERT_TRUE(
          batch.Put(RecordKey("win", "d" + std::to_string(d++)), DefaultRecordValue()).ok());
    }
    ASSERT_TRUE(db->Write(rocksdb::WriteOptions(), &batch).ok());
  }
  for (; d < what.default_records; ++d) {
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), RecordKey("win", "d" + std::to_string(d)),
                        DefaultRecordValue())
                    .ok());
  }
  if (what.flush) {
    ASSERT_TRUE(db->Flush(rocksdb::FlushOptions(), handles).ok());
  }
  for (rocksdb::ColumnFamilyHandle* h : handles) ASSERT_TRUE(db->DestroyColumnFamilyHandle(h).ok());
  ASSERT_TRUE(db->Close().ok());
}

}  // namespace idem::testing
