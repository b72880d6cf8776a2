#include "column_families.h"

#include <algorithm>
#include <charconv>
#include <utility>

#include "rocks_status.h"

namespace idem {

std::optional<int64_t> WindowFamilyEnd(std::string_view name) {
  if (!name.starts_with(kWindowFamilyPrefix)) return std::nullopt;
  const std::string_view digits = name.substr(kWindowFamilyPrefix.size());
  // One spelling per start: "expires-07" would be a second family for window 7.
  if (digits.empty() || (digits.size() > 1 && digits[0] == '0')) return std::nullopt;
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  int64_t start = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), start);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return start;
}

std::string WindowFamilyName(int64_t end_ms) {
  return std::string(kWindowFamilyPrefix) + std::to_string(end_ms);
}

Status CheckFamilyNames(const std::vector<std::string>& names, const std::string& dir) {
  for (const std::string& name : names) {
    if (name == rocksdb::kDefaultColumnFamilyName || IsWindowFamily(name)) continue;
    return Status::Corruption(dir + " holds a column family named '" + name +
                              "', which is neither 'default' nor an expiry window ('" +
                              std::string(kWindowFamilyPrefix) +
                              "<end ms>'): this build does not know what it holds");
  }
  return Status::Ok();
}

Result<std::vector<std::string>> ListFamilies(const rocksdb::DBOptions& options,
                                              const std::string& dir) {
  std::vector<std::string> names;
  if (rocksdb::Status s = rocksdb::DB::ListColumnFamilies(options, dir, &names); !s.ok()) {
    return FromRocks(s);
  }
  if (Status st = CheckFamilyNames(names, dir); !st.ok()) return st;
  std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
    const std::optional<int64_t> sa = WindowFamilyEnd(a), sb = WindowFamilyEnd(b);
    if (!sa || !sb) return !sa && sb;  // default (the one name that is not a window) first
    return *sa < *sb;
  });
  return names;
}

AllFamilies::AllFamilies(std::unique_ptr<rocksdb::DB> db, std::vector<std::string> names,
                         std::vector<rocksdb::ColumnFamilyHandle*> handles)
    : db_(std::move(db)), names_(std::move(names)), handles_(std::move(handles)) {}

AllFamilies::~AllFamilies() { DestroyHandles(); }

void AllFamilies::DestroyHandles() {
  for (rocksdb::ColumnFamilyHandle* handle : handles_) {
    (void)db_->DestroyColumnFamilyHandle(handle);
  }
  handles_.clear();
}

Status AllFamilies::Close() {
  DestroyHandles();
  return FromRocks(db_->Close());
}

Result<std::unique_ptr<AllFamilies>> OpenAllFamilies(
    const rocksdb::Options& options, const rocksdb::ColumnFamilyOptions& window_options,
    const std::string& dir, OpenMode mode) {
  Result<std::vector<std::string>> names = ListFamilies(options, dir);
  if (!names.ok()) return names.status();
  std::vector<rocksdb::ColumnFamilyDescriptor> families;
  for (const std::string& name : *names) {
    families.emplace_back(
        name, IsWindowFamily(name) ? window_options : rocksdb::ColumnFamilyOptions(options));
  }
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  const rocksdb::DBOptions db_options(options);
  rocksdb::Status s = mode == OpenMode::kReadOnly
                          ? rocksdb::DB::OpenForReadOnly(db_options, dir, families, &handles, &raw)
                          : rocksdb::DB::Open(db_options, dir, families, &handles, &raw);
  if (!s.ok()) return FromRocks(s);
  return std::make_unique<AllFamilies>(std::unique_ptr<rocksdb::DB>(raw), std::move(*names),
                                       std::move(handles));
}

}  // namespace idem
