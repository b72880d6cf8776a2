#include "idem/operation.h"

namespace idem {

std::string_view OutcomeName(Outcome outcome) {
  switch (outcome) {
    case Outcome::kInserted: return "INSERTED";
    case Outcome::kExists: return "EXISTS";
    case Outcome::kApplied: return "APPLIED";
    case Outcome::kConditionFailed: return "CONDITION_FAILED";
    case Outcome::kNotFound: return "NOT_FOUND";
    case Outcome::kDeleted: return "DELETED";
    case Outcome::kFound: return "FOUND";
  }
  return "UNKNOWN";
}

std::string_view OpTypeName(OpType type) {
  switch (type) {
    case OpType::kInsert: return "insert";
    case OpType::kCompareAndSet: return "cas";
    case OpType::kGet: return "get";
    case OpType::kDelete: return "delete";
  }
  return "unknown";
}

Op Op::Insert(std::string_view ns, std::string_view key, std::string_view status,
              std::string_view payload, std::string_view fingerprint, int64_t ttl_ms) {
  Op op;
  op.type = OpType::kInsert;
  op.ns = ns;
  op.key = key;
  op.status = status;
  op.payload = payload;
  op.fingerprint = fingerprint;
  op.ttl_ms = ttl_ms;
  return op;
}

Op Op::CompareAndSet(std::string_view ns, std::string_view key, Condition condition,
                     Update update) {
  Op op;
  op.type = OpType::kCompareAndSet;
  op.ns = ns;
  op.key = key;
  op.condition = std::move(condition);
  op.update = update;
  return op;
}

Op Op::Get(std::string_view ns, std::string_view key) {
  Op op;
  op.type = OpType::kGet;
  op.ns = ns;
  op.key = key;
  return op;
}

Op Op::Delete(std::string_view ns, std::string_view key, Condition condition) {
  Op op;
  op.type = OpType::kDelete;
  op.ns = ns;
  op.key = key;
  op.condition = std::move(condition);
  return op;
}

}  // namespace idem
