// The column families of an idemstore database, and opening all of them.
//
// A database holds the `default` column family and, under the expiry-window layout
// (EngineOptions::Layout, docs/design.md), window families named
//
//   expires-<end>     <end>: the instant (ms since the Unix epoch) by which every record in the
//                     family is dead, in decimal, digits only: no sign, no padding, no leading
//                     zero ("expires-0", "expires-3600000"); engine/src/expiry_windows.h
//
// Meta keys (fence reservation, clock mark) live in `default` only. Everything that opens the
// database itself (the engine, verify, repair, backup checks) must open every family: RocksDB
// refuses a read-write open that leaves one out, and a read-only open that leaves one out
// silently misses its records. A family with any other name is Corruption: this build cannot tell
// what it holds, so it neither serves nor rewrites it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <rocksdb/db.h>
#include <rocksdb/options.h>

#include "idem/result.h"

namespace idem {

inline constexpr std::string_view kWindowFamilyPrefix = "expires-";

// The end of the window family `name`; nullopt if `name` is not exactly one (an end that does
// not fit an int64 is not one).
std::optional<int64_t> WindowFamilyEnd(std::string_view name);
inline bool IsWindowFamily(std::string_view name) { return WindowFamilyEnd(name).has_value(); }

// "expires-<end_ms>"; end_ms >= 0.
std::string WindowFamilyName(int64_t end_ms);

// Ok if every name is "default" or a window family; else Corruption naming the first other one
// and `dir`.
Status CheckFamilyNames(const std::vector<std::string>& names, const std::string& dir);

// The column families of the database in `dir` (rocksdb::DB::ListColumnFamilies, through
// options.env): "default" first, then the window families by end. Corruption (CheckFamilyNames)
// for a name this build does not know; RocksDB's error, converted, when the list cannot be read
// (no database, a damaged MANIFEST).
Result<std::vector<std::string>> ListFamilies(const rocksdb::DBOptions& options,
                                              const std::string& dir);

// A database opened with all its column families. RocksDB requires every handle to be destroyed
// before the database is: the destructor and Close() do that.
class AllFamilies {
 public:
  AllFamilies(std::unique_ptr<rocksdb::DB> db, std::vector<std::string> names,
              std::vector<rocksdb::ColumnFamilyHandle*> handles);
  ~AllFamilies();
  AllFamilies(const AllFamilies&) = delete;
  AllFamilies& operator=(const AllFamilies&) = delete;

  rocksdb::DB* db() const { return db_.get(); }
  // In ListFamilies order: [0] is default, the window families follow.
  const std::vector<std::string>& names() const { return names_; }
  const std::vector<rocksdb::ColumnFamilyHandle*>& handles() const { return handles_; }
  size_t windows() const { return handles_.size() - 1; }

  // Destroys the handles, then closes the database: its status (a failed final sync, say).
  Status Close();

 private:
  void DestroyHandles();

  std::unique_ptr<rocksdb::DB> db_;
  std::vector<std::string> names_;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;  // owned
};

enum class OpenMode : uint8_t { kReadOnly, kReadWrite };

// Lists the families of `dir` (ListFamilies: its errors) and opens the database with every one:
// `default` with `options`, each window family with `window_options`. RocksDB's open error,
// converted, otherwise.
Result<std::unique_ptr<AllFamilies>> OpenAllFamilies(
    const rocksdb::Options& options, const rocksdb::ColumnFamilyOptions& window_options,
    const std::string& dir, OpenMode mode);

}  // namespace idem
