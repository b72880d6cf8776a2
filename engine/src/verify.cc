#include "idem/verify.h"

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <rocksdb/db.h>
#include <rocksdb/file_system.h>

#include "clock_mark.h"
#include "column_families.h"
#include "data_dir_check.h"
#include "journal.h"
#include "journal_layout.h"
#include "journal_store.h"
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

// Decodes a stored value; Corruption says why it does not. Sets *never_expires for a record
// that never expires.
Status CheckValue(std::string_view value, VerifyReport* report, bool* never_expires) {
  if (IsMarker(value)) {
    Marker marker;
    if (Status st = DecodeMarker(value, &marker); !st.ok()) return st;
    report->markers++;
    return Status::Ok();
  }
  Record record;
  if (Status st = DecodeRecord(value, &record); !st.ok()) return st;
  *never_expires = record.expires_at_ms == kNeverExpires;
  report->records++;
  return Status::Ok();
}

// Values of one kind of fault: how many, and the first, described.
struct Findings {
  uint64_t count = 0;
  std::string first;

  void Add(const std::string& what) {
    if (count++ == 0) first = what;
  }
  std::string Describe(std::string_view one, std::string_view many) const {
    return std::to_string(count) + std::string(count == 1 ? one : many) + "; the first: " + first;
  }
};

// The journal layout's segments, if the database has any: checked as an open would check them,
// changing nothing, and every value in them decoded; then the saved index, if any, against
// them. `removal_bound_ms`: what the next open's bound is at least.
Status VerifyJournal(const std::string& dir, int64_t removal_bound_ms, VerifyReport* report,
                     Findings* undecodable) {
  rocksdb::FileSystem* fs = rocksdb::FileSystem::Default().get();
  const std::string journal_dir = JournalDir(dir);
  Result<bool> has = journal::Journal::HasSegments(fs, journal_dir);
  if (!has.ok()) return has.status();
  if (!*has) return Status::Ok();
  Result<journal::Journal::CheckReport> checked = journal::Journal::Check(
      fs, journal_dir,
      [&](const journal::Journal& journal, const journal::OpView& op, journal::Journal::Location at,
          uint64_t) {
        if (op.type != journal::OpType::kPut) return;
        bool never_expires = false;
        std::string scratch;
        Result<journal::OpView> plain =
            journal::Journal::Plain(op, journal.DictionaryOf(at.segment), &scratch);
        if (Status st =
                plain.ok() ? CheckValue(plain->value, report, &never_expires) : plain.status();
            !st.ok()) {
          std::string file;
          for (const journal::Journal::SegmentInfo& segment : journal.Segments()) {
            if (segment.id == at.segment) file = journal.SegmentPath(segment.number);
          }
          const std::string_view key = plain.ok() ? plain->key : op.key;
          undecodable->Add((key.empty() ? "a record compressed with its key" : DescribeKey(key)) +
                           " in " + file + " at offset " + std::to_string(at.offset) + ": " +
                           st.message());
        }
      });
  if (!checked.ok()) return WithSalvageAdvice(checked.status(), dir);
  report->journal_segments = checked->kept.size();
  report->journal_bytes = checked->entry_bytes;
  if (checked->tail_to_repair) report->journal_torn_tail = *checked->tail_to_repair;
  Result<journal::JournalStore::SavedIndexCheck> index =
      journal::JournalStore::CheckSavedIndex(fs, journal_dir, removal_bound_ms);
  if (!index.ok()) return index.status();
  report->journal_index_saved = index->saved;
  report->journal_index_records = index->records;
  report->journal_index_unusable = index->unusable;
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
  // Every column family: a read-only open of `default` alone would not see the windows' records.
  // The windows are read with the default family's options: reading needs only the comparator.
  Result<std::unique_ptr<AllFamilies>> opened =
      OpenAllFamilies(rocks, rocks, dir, OpenMode::kReadOnly);
  if (!opened.ok()) return opened.status();
  rocksdb::DB* const db = (*opened)->db();
  report.expiry_windows = (*opened)->windows();

  std::vector<rocksdb::LiveFileMetaData> files;
  db->GetLiveFilesMetaData(&files);  // of every family
  for (const auto& f : files) {
    report.table_files++;
    report.table_bytes += f.size;
  }
  // Every block of every table file of every family, whether or not a read would touch it.
  if (rocksdb::Status s = db->VerifyChecksum(); !s.ok()) {
    if (!s.IsCorruption()) return FromRocks(s);
    return Status::Corruption("a table file in " + dir + " fails its checksum: " + s.ToString());
  }
  Findings undecodable;
  // The layout keeps meta keys and records that never expire in `default` (column_families.h):
  // in a window, its placement rule was broken.
  Findings misplaced;
  rocksdb::ReadOptions read;
  read.verify_checksums = true;
  read.fill_cache = false;
  for (size_t i = 0; i < (*opened)->handles().size(); ++i) {
    const bool window = IsWindowFamily((*opened)->names()[i]);
    const std::string where = window ? " in column family " + (*opened)->names()[i] : "";
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(read, (*opened)->handles()[i]));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      const std::string_view key(it->key().data(), it->key().size());
      if (IsMetaKey(key)) {
        if (window) {
          misplaced.Add(DescribeKey(key) + where + ": a meta key (those belong in default)");
        } else {
          report.meta_keys++;
        }
        continue;
      }
      bool never_expires = false;
      Status st = CheckValue(std::string_view(it->value().data(), it->value().size()), &report,
                             &never_expires);
      if (!st.ok()) {
        undecodable.Add(DescribeKey(key) + where + ": " + st.message());
      } else if (window && never_expires) {
        misplaced.Add(DescribeKey(key) + where +
                      ": a record that never expires (those belong in default)");
      }
    }
    if (!it->status().ok()) return FromRocks(it->status());
  }
  // Every bound a drop used, and the next open's, is at most the persisted clock mark less the
  // grace: at the mark, the check of the saved index asks for no record an open may have left
  // out. A database without a mark was written under a caller's clock: now, by this one.
  ClockMark mark;
  Result<std::optional<int64_t>> marked = mark.Load(db);
  if (!marked.ok()) return marked.status();
  const int64_t removal_bound_ms = marked->value_or(engine.clock->NowMillis());
  if (Status st = VerifyJournal(dir, removal_bound_ms, &report, &undecodable); !st.ok()) {
    return st;
  }
  if (undecodable.count > 0 || misplaced.count > 0) {
    std::string message;
    if (undecodable.count > 0) {
      message = undecodable.Describe(" stored value does not decode in " + dir,
                                     " stored values do not decode in " + dir);
    }
    if (misplaced.count > 0) {
      message += (message.empty() ? "" : "; and ") +
                 misplaced.Describe(" stored value is in the wrong column family in " + dir,
                                    " stored values are in the wrong column family in " + dir);
    }
    return Status::Corruption(message);
  }
  return report;
}

}  // namespace idem
