#include "idem/verify.h"

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <rocksdb/db.h>

#include "key_codec.h"
#include "record_codec.h"
#include "rocks_options.h"
#include "rocks_status.h"

namespace idem {
namespace {

// Printable bytes as they are, others as \xNN: keys are arbitrary bytes.
std::string Escaped(std::string_view bytes) {
  std::string out;
  for (unsigned char c : bytes) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

std::string DescribeKey(std::string_view rocks_key) {
  std::string_view ns, key;
  if (!ParseRecordKey(rocks_key, &ns, &key)) return "key '" + Escaped(rocks_key) + "'";
  return "namespace '" + Escaped(ns) + "' key '" + Escaped(key) + "'";
}

// Decodes a stored value; Corruption says why it does not.
Status CheckValue(std::string_view value, VerifyReport* report) {
  if (IsMarker(value)) {
    Marker marker;
    if (Status st = DecodeMarker(value, &marker); !st.ok()) return st;
    report->markers++;
    return Status::Ok();
  }
  Record record;
  if (Status st = DecodeRecord(value, &record); !st.ok()) return st;
  report->records++;
  return Status::Ok();
}

}  // namespace

Result<VerifyReport> VerifyDatabase(const std::string& dir, const EngineOptions& options) {
  std::error_code ec;
  if (!std::filesystem::exists(dir + "/CURRENT", ec)) {
    return Status::NotFound("no idemstore database in " + dir);
  }
  VerifyReport report;
  Result<BackupManifest> manifest = ReadBackupManifest(dir);
  if (manifest.ok()) {
    report.manifest = std::move(*manifest);
  } else if (manifest.status().code() != Status::Code::kNotFound) {
    return manifest.status();
  }
  EngineOptions engine = options;
  if (!engine.clock) engine.clock = SystemClock::Default();
  Result<rocksdb::Options> tuned = MakeTunedRocksOptions(engine);
  if (!tuned.ok()) return tuned.status();
  rocksdb::Options rocks = std::move(*tuned);
  rocks.create_if_missing = false;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::OpenForReadOnly(rocks, dir, &raw);
  if (!s.ok()) return FromRocks(s);
  std::unique_ptr<rocksdb::DB> db(raw);

  std::vector<rocksdb::LiveFileMetaData> files;
  db->GetLiveFilesMetaData(&files);
  for (const auto& f : files) {
    report.table_files++;
    report.table_bytes += f.size;
  }
  // Every block of every table file, whether or not a read would touch it.
  if (s = db->VerifyChecksum(); !s.ok()) {
    if (!s.IsCorruption()) return FromRocks(s);
    return Status::Corruption("a table file in " + dir + " fails its checksum: " + s.ToString());
  }
  uint64_t bad = 0;
  std::string first_bad;
  rocksdb::ReadOptions read;
  read.verify_checksums = true;
  read.fill_cache = false;
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(read));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    const std::string_view key(it->key().data(), it->key().size());
    if (IsMetaKey(key)) {
      report.meta_keys++;
      continue;
    }
    Status st = CheckValue(std::string_view(it->value().data(), it->value().size()), &report);
    if (!st.ok() && bad++ == 0) first_bad = DescribeKey(key) + ": " + st.message();
  }
  if (!it->status().ok()) return FromRocks(it->status());
  if (bad > 0) {
    return Status::Corruption(std::to_string(bad) +
                              (bad == 1 ? " stored value does" : " stored values do") +
                              " not decode in " + dir + "; the first: " + first_bad);
  }
  return report;
}

}  // namespace idem
