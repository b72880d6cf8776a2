// OpBatch: operations that own their strings, for batches built now and applied later.
//
// An Op borrows its strings (idem/operation.h). Add() copies an op's strings (ns, key, status,
// payload, fingerprint, owner, condition.status_in, update.status, update.payload) into storage
// the batch owns and keeps a copy of the op that views that storage instead, so the batch stays
// valid after the strings it was given are gone. Its ops' strings stay valid until the batch is
// cleared or destroyed; moving a batch keeps them valid, copying one copies the bytes.
//
//   OpBatch batch;
//   for (const Order& o : orders) batch.Add(Op::Insert({.ns = "orders", .key = o.Id()}));
//   store->Apply(batch, &results);   // an OpBatch is a std::span<const Op>
//
// Not thread-safe: one thread at a time, like a std::vector.
#pragma once

#include <cstddef>
#include <deque>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "idem/operation.h"

namespace idem {

class OpBatch {
 public:
  OpBatch() = default;
  OpBatch(const OpBatch& other);
  OpBatch& operator=(const OpBatch& other);
  OpBatch(OpBatch&&) noexcept = default;
  OpBatch& operator=(OpBatch&&) noexcept = default;

  // Appends a copy of `op` whose strings the batch owns; `op`'s own strings need to stay alive
  // only for this call.
  void Add(const Op& op);
  void Clear();

  std::span<const Op> ops() const { return ops_; }
  operator std::span<const Op>() const { return ops_; }  // NOLINT: an OpBatch is its ops
  size_t size() const { return ops_.size(); }
  bool empty() const { return ops_.empty(); }
  const Op& operator[](size_t i) const { return ops_[i]; }

 private:
  std::string_view Keep(std::string_view bytes);

  std::vector<Op> ops_;
  // The bytes ops_ view. A deque never moves its elements, not even when it grows or is moved,
  // so the views stay valid (a std::string's short-string buffer would move with it).
  std::deque<std::string> bytes_;
};

}  // namespace idem
