#include "family_walk.h"

namespace idem {

FamilyWalk::FamilyWalk(rocksdb::DB* db, const rocksdb::ReadOptions& read,
                       const std::vector<rocksdb::ColumnFamilyHandle*>& families) {
  iterators_.reserve(families.size());
  for (rocksdb::ColumnFamilyHandle* family : families) {
    iterators_.emplace_back(db->NewIterator(read, family));
  }
}

void FamilyWalk::Seek(const rocksdb::Slice& target) {
  for (auto& it : iterators_) it->Seek(target);
  Settle();
}

void FamilyWalk::Next() {
  for (size_t i : at_) iterators_[i]->Next();
  Settle();
}

void FamilyWalk::Settle() {
  at_.clear();
  if (!status().ok()) return;
  for (size_t i = 0; i < iterators_.size(); ++i) {
    if (!iterators_[i]->Valid()) continue;
    if (at_.empty()) {
      at_.push_back(i);
      continue;
    }
    const int order = iterators_[i]->key().compare(iterators_[at_.front()]->key());
    if (order < 0) at_.clear();
    if (order <= 0) at_.push_back(i);
  }
}

std::vector<rocksdb::Slice> FamilyWalk::values() const {
  std::vector<rocksdb::Slice> values;
  values.reserve(at_.size());
  for (size_t i : at_) values.push_back(iterators_[i]->value());
  return values;
}

rocksdb::Status FamilyWalk::status() const {
  for (const auto& it : iterators_) {
    if (!it->status().ok()) return it->status();
  }
  return rocksdb::Status::OK();
}

}  // namespace idem
