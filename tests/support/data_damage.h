// Test support: damage a database directory the way a bad disk, a careless copy or an operator
// would, and tell whether anything in it changed afterwards.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "idem/engine.h"

namespace idem::testing {

inline std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Every file under `dir` (relative path -> size and a hash of its bytes): two equal snapshots
// mean no file was created, deleted, resized or rewritten in between.
struct DirSnapshot {
  std::map<std::string, std::pair<uint64_t, size_t>> files;
  bool operator==(const DirSnapshot&) const = default;
};

inline DirSnapshot Snapshot(const std::string& dir) {
  DirSnapshot s;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::string bytes = ReadWholeFile(e.path().string());
    s.files[std::filesystem::relative(e.path(), dir).string()] = {bytes.size(),
                                                                  std::hash<std::string>()(bytes)};
  }
  return s;
}

// The snapshot without RocksDB's info logs (LOG, LOG.old.*), which every DB::Open rotates, also
// one that fails: for refusals that only RocksDB makes.
inline DirSnapshot WithoutInfoLogs(DirSnapshot s) {
  std::erase_if(s.files, [](const auto& f) { return f.first.starts_with("LOG"); });
  return s;
}

inline std::string Describe(const DirSnapshot& s) {
  std::string out;
  for (const auto& [name, size_hash] : s.files) {
    out += name + " (" + std::to_string(size_hash.first) + " bytes) ";
  }
  return out;
}

// RocksDB's WAL files in `dir`, oldest first.
inline std::vector<std::string> WalFiles(const std::string& dir) {
  std::vector<std::string> wals;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    std::string name = e.path().filename().string();
    if (name.size() > 4 && name.ends_with(".log") &&
        std::all_of(name.begin(), name.end() - 4, [](char c) { return c >= '0' && c <= '9'; })) {
      wals.push_back(e.path().string());
    }
  }
  std::sort(wals.begin(), wals.end());
  return wals;
}

// Where the data of a WAL ends: a live sync-mode WAL is followed by zeros written ahead of it.
inline uint64_t WalDataEnd(const std::string& wal) {
  std::string bytes = ReadWholeFile(wal);
  size_t last = bytes.find_last_not_of('\0');
  return last == std::string::npos ? 0 : last + 1;
}

// Flips the 16 bytes of `file` at offset `at` (XOR, so each byte really changes).
inline void Garble16BytesAt(const std::string& file, uint64_t at) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  std::string bytes(16, '\0');
  f.seekg(static_cast<std::streamoff>(at));
  f.read(bytes.data(), 16);
  for (char& c : bytes) c = static_cast<char>(c ^ 0x5a);
  f.seekp(static_cast<std::streamoff>(at));
  f.write(bytes.data(), 16);
}

// Flips 16 bytes in the middle of the WAL's data.
inline void Garble16BytesMidWal(const std::string& wal) {
  Garble16BytesAt(wal, WalDataEnd(wal) / 2);
}

// RocksDB's table files in `dir`.
inline std::vector<std::string> TableFiles(const std::string& dir) {
  std::vector<std::string> tables;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".sst") tables.push_back(e.path().string());
  }
  std::sort(tables.begin(), tables.end());
  return tables;
}

// Flips 16 bytes inside the first data block of a table file (its records; not the footer).
inline void GarbleTableFile(const std::string& sst) { Garble16BytesAt(sst, 100); }

// Cuts the WAL to half of its data, as an interrupted copy or a truncating tool would.
inline void CutWalInHalf(const std::string& wal) {
  std::filesystem::resize_file(wal, WalDataEnd(wal) / 2);
}

// Cuts the WAL right after its first `n` logical records: at a record boundary, where the WAL
// itself shows no damage. (RocksDB's log format: 32 KiB blocks of records with a 7-byte header,
// length at bytes 4-5, type at 6: 1 full, 2 first, 3 middle, 4 last.)
inline void CutWalAfterRecords(const std::string& wal, int n) {
  const std::string bytes = ReadWholeFile(wal);
  constexpr size_t kBlock = 32 * 1024;
  size_t pos = 0;
  for (int records = 0; records < n && pos < bytes.size();) {
    if (kBlock - pos % kBlock < 7) {
      pos += kBlock - pos % kBlock;  // the block's zero trailer
      continue;
    }
    const size_t length = static_cast<uint8_t>(bytes[pos + 4]) |
                          (static_cast<size_t>(static_cast<uint8_t>(bytes[pos + 5])) << 8);
    const int type = bytes[pos + 6];
    pos += 7 + length;
    if (type == 1 || type == 4) records++;
  }
  std::filesystem::resize_file(wal, pos);
}

// Copies a database while `engine` is open and idle: what a power cut or SIGKILL leaves, since
// every acknowledged write reached the WAL (and in sync mode the disk).
inline void CopyCrashImage(const std::string& from, const std::string& to) {
  std::filesystem::copy(from, to, std::filesystem::copy_options::recursive);
  std::filesystem::remove(to + "/LOCK");
}

inline std::string DamageKey(int i) { return "order-" + std::to_string(i); }

// Inserts records 0..n-1 ("dmg", DamageKey(i)) in batches of `batch`, each acknowledged.
// Inserts records [from, from + count) as one Apply; every one must be new.
inline void InsertBatch(Engine& engine, int from, int count) {
  std::vector<Op> ops;
  std::vector<std::string> keys, payloads;  // the ops borrow them
  for (int j = from; j < from + count; ++j) {
    keys.push_back(DamageKey(j));
    payloads.push_back("payload of " + keys.back() + std::string(80, 'x'));
  }
  for (size_t j = 0; j < keys.size(); ++j) {
    ops.push_back(
        Op::Insert({.ns = "dmg", .key = keys[j], .status = "DONE", .payload = payloads[j]}));
  }
  std::vector<Result<OpResult>> results;
  Status s = engine.Apply(ops, &results);
  if (!s.ok()) throw std::runtime_error("apply: " + s.ToString());
  for (const auto& r : results) {
    if (!r.ok() || r->outcome != Outcome::kInserted) throw std::runtime_error("not inserted");
  }
}

inline void InsertRecords(Engine& engine, int n, int batch = 50) {
  for (int i = 0; i < n; i += batch) InsertBatch(engine, i, std::min(n - i, batch));
}

// Inserts batches of 50 records from 0 on until RocksDB has retired one WAL (the memtable
// switched once: two WAL files) and returns how many it inserted. With flushes waiting for two
// immutable memtables (min_write_buffer_number_to_merge=2), the retired WAL stays unflushed.
inline int InsertUntilOneWalRetired(Engine& engine, const std::string& dir, int max = 20'000) {
  int n = 0;
  for (; WalFiles(dir).size() < 2; n += 50) {
    if (n >= max) throw std::runtime_error("no WAL retired after " + std::to_string(n));
    InsertBatch(engine, n, 50);
  }
  return n;
}

// How many of records 0..n-1 the store holds.
inline int CountRecords(Store& store, int n) {
  int found = 0;
  for (int i = 0; i < n; ++i) {
    auto r = store.Get({.ns = "dmg", .key = DamageKey(i)});
    if (r.ok() && r->outcome == Outcome::kFound) ++found;
  }
  return found;
}

}  // namespace idem::testing
