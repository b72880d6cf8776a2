#include "idem/op_batch.h"

#include <utility>

namespace idem {

OpBatch::OpBatch(const OpBatch& other) {
  ops_.reserve(other.ops_.size());
  for (const Op& op : other.ops_) Add(op);
}

OpBatch& OpBatch::operator=(const OpBatch& other) {
  if (this != &other) {
    OpBatch copy(other);
    *this = std::move(copy);
  }
  return *this;
}

void OpBatch::Add(const Op& op) {
  Op owned = op;
  owned.ns = Keep(op.ns);
  owned.key = Keep(op.key);
  owned.status = Keep(op.status);
  owned.payload = Keep(op.payload);
  owned.fingerprint = Keep(op.fingerprint);
  owned.owner = Keep(op.owner);
  for (std::string_view& s : owned.condition.status_in) s = Keep(s);
  if (owned.update.status) owned.update.status = Keep(*owned.update.status);
  if (owned.update.payload) owned.update.payload = Keep(*owned.update.payload);
  ops_.push_back(std::move(owned));
}

void OpBatch::Clear() {
  ops_.clear();
  bytes_.clear();
}

std::string_view OpBatch::Keep(std::string_view bytes) {
  if (bytes.empty()) return {};
  return bytes_.emplace_back(bytes);
}

}  // namespace idem
