#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "idem/backup.h"

namespace idem {
namespace {

constexpr uint64_t kManifestFormat = 1;

Result<uint64_t> ParseNumber(std::string_view name, std::string_view text) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    return Status::Corruption("backup manifest: " + std::string(name) +
                              " is not a non-negative integer: '" + std::string(text) + "'");
  }
  return v;
}

}  // namespace

std::string EncodeBackupManifest(const BackupManifest& m) {
  std::string out;
  out += "idemstore-backup " + std::to_string(kManifestFormat) + "\n";
  out += "created_utc " + m.created_utc + "\n";
  out += "created_ms " + std::to_string(m.created_ms) + "\n";
  out += "idemstore_version " + m.idemstore_version + "\n";
  out += "fence_high_water " + std::to_string(m.fence_high_water) + "\n";
  out += "fence_floor " + std::to_string(m.fence_floor) + "\n";
  out += "estimated_records " + std::to_string(m.estimated_records) + "\n";
  return out;
}

Result<BackupManifest> DecodeBackupManifest(std::string_view text) {
  BackupManifest m;
  bool format_seen = false, floor_seen = false;
  size_t line_number = 0;
  while (!text.empty()) {
    ++line_number;
    const size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    if (line.empty()) continue;
    const size_t space = line.find(' ');
    const std::string_view name = line.substr(0, space);
    const std::string_view value =
        space == std::string_view::npos ? std::string_view() : line.substr(space + 1);
    const std::string where = "backup manifest line " + std::to_string(line_number) + ": ";
    if (!format_seen) {  // the first line names the format
      if (name != "idemstore-backup") {
        return Status::Corruption(where + "expected 'idemstore-backup 1', found '" +
                                  std::string(line) + "'");
      }
      Result<uint64_t> format = ParseNumber(name, value);
      if (!format.ok()) return format.status();
      if (*format != kManifestFormat) {
        return Status::Corruption(where + "format " + std::to_string(*format) +
                                  " is not one this build reads (" +
                                  std::to_string(kManifestFormat) + ")");
      }
      format_seen = true;
      continue;
    }
    if (name == "created_utc") {
      m.created_utc = std::string(value);
    } else if (name == "idemstore_version") {
      m.idemstore_version = std::string(value);
    } else if (name == "created_ms" || name == "fence_high_water" || name == "fence_floor" ||
               name == "estimated_records") {
      Result<uint64_t> v = ParseNumber(name, value);
      if (!v.ok()) return Status::Corruption(where + v.status().message());
      if (name == "created_ms") m.created_ms = static_cast<int64_t>(*v);
      if (name == "fence_high_water") m.fence_high_water = *v;
      if (name == "fence_floor") {
        m.fence_floor = *v;
        floor_seen = true;
      }
      if (name == "estimated_records") m.estimated_records = *v;
    }  // other names: written by a later version; nothing here depends on them
  }
  if (!format_seen) return Status::Corruption("backup manifest is empty");
  if (!floor_seen) return Status::Corruption("backup manifest has no fence_floor line");
  return m;
}

Result<BackupManifest> ReadBackupManifest(const std::string& dir) {
  const std::string path = dir + "/" + kBackupManifestFile;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec) && !ec) return Status::NotFound("no " + path);
    return Status::IOError("cannot read " + path);
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Status::IOError("cannot read " + path);
  Result<BackupManifest> m = DecodeBackupManifest(text.str());
  if (!m.ok()) return Status::Corruption(path + ": " + m.status().message());
  return m;
}

}  // namespace idem
