#include "idem/store.h"

namespace idem {

Result<OpResult> Store::Execute(const Op& op) {
  std::vector<Result<OpResult>> results;
  results.reserve(1);
  if (Status s = Apply(std::span<const Op>(&op, 1), &results); !s.ok()) return s;
  if (results.size() != 1) return Status::Corruption("store returned no result for the operation");
  return std::move(results[0]);
}

Result<OpResult> Store::Insert(std::string_view ns, std::string_view key, std::string_view status,
                               std::string_view payload, std::string_view fingerprint,
                               int64_t ttl_ms) {
  return Execute(Op::Insert(ns, key, status, payload, fingerprint, ttl_ms));
}

Result<OpResult> Store::CompareAndSet(std::string_view ns, std::string_view key,
                                      const Condition& condition, const Update& update) {
  return Execute(Op::CompareAndSet(ns, key, condition, update));
}

Result<OpResult> Store::Get(std::string_view ns, std::string_view key) {
  return Execute(Op::Get(ns, key));
}

Result<OpResult> Store::Delete(std::string_view ns, std::string_view key,
                               const Condition& condition) {
  return Execute(Op::Delete(ns, key, condition));
}

}  // namespace idem
