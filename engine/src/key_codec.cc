#include "key_codec.h"

namespace idem {

void AppendRecordKey(std::string_view ns, std::string_view key, std::string* dst) {
  dst->push_back(static_cast<char>(static_cast<uint8_t>(ns.size())));
  dst->append(ns);
  dst->append(key);
}

std::string RecordKey(std::string_view ns, std::string_view key) {
  std::string k;
  k.reserve(1 + ns.size() + key.size());
  AppendRecordKey(ns, key, &k);
  return k;
}

std::string MetaKey(std::string_view name) {
  std::string k(1, kMetaKeyPrefix);
  k.append(name);
  return k;
}

bool ParseRecordKey(std::string_view rocks_key, std::string_view* ns, std::string_view* key) {
  if (rocks_key.empty() || IsMetaKey(rocks_key)) return false;
  size_t ns_len = static_cast<uint8_t>(rocks_key[0]);
  if (rocks_key.size() < 1 + ns_len) return false;
  *ns = rocks_key.substr(1, ns_len);
  *key = rocks_key.substr(1 + ns_len);
  return true;
}

}  // namespace idem
