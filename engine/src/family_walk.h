// Walks several column families as one key space, in key order, stopping once at each key that
// any of them holds (the expiry-window layout keeps one key's versions in different families;
// expiry_windows.h). The caller chooses among the families' values at a key.
#pragma once

#include <memory>
#include <vector>

#include <rocksdb/db.h>
#include <rocksdb/iterator.h>

namespace idem {

class FamilyWalk {
 public:
  // `read` (its iterate_upper_bound included) must outlive the walk, as must the handles.
  FamilyWalk(rocksdb::DB* db, const rocksdb::ReadOptions& read,
             const std::vector<rocksdb::ColumnFamilyHandle*>& families);

  void Seek(const rocksdb::Slice& target);
  bool Valid() const { return !at_.empty(); }
  void Next();
  rocksdb::Slice key() const { return iterators_[at_.front()]->key(); }
  // The values at key(), one per family that holds it, in the order the families were given.
  std::vector<rocksdb::Slice> values() const;
  // Not ok: an iterator failed; the walk stopped there.
  rocksdb::Status status() const;

 private:
  void Settle();  // finds the smallest key among the iterators

  std::vector<std::unique_ptr<rocksdb::Iterator>> iterators_;
  std::vector<size_t> at_;  // the iterators positioned at key()
};

}  // namespace idem
