#include "idem/store.h"

namespace idem {

Result<OpResult> Store::Execute(const Op& op) {
  std::vector<Result<OpResult>> results;
  results.reserve(1);
  if (Status s = Apply(std::span<const Op>(&op, 1), &results); !s.ok()) return s;
  if (results.size() != 1) return Status::Corruption("store returned no result for the operation");
  return std::move(results[0]);
}

Result<OpResult> Store::Insert(const InsertArgs& args) { return Execute(Op::Insert(args)); }

Result<OpResult> Store::CompareAndSet(const CompareAndSetArgs& args) {
  return Execute(Op::CompareAndSet(args));
}

Result<OpResult> Store::Get(const GetArgs& args) { return Execute(Op::Get(args)); }

Result<OpResult> Store::Delete(const DeleteArgs& args) { return Execute(Op::Delete(args)); }

Result<ScanPage> Store::Scan(const ScanRequest&) {
  return Status::NotSupported("this store does not answer admin queries (scan)");
}

Result<PurgeStep> Store::Purge(const PurgeRequest&) {
  return Status::NotSupported("this store does not answer admin queries (purge)");
}

Status Store::Compact(std::string_view) {
  return Status::NotSupported("this store does not answer admin queries (compact)");
}

}  // namespace idem
