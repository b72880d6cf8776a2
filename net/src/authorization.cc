#include "authorization.h"

#include <string>

namespace idem {
namespace {

std::string_view PermissionName(Permission permission) {
  switch (permission) {
    case Permission::kRead:
      return "read";
    case Permission::kWrite:
      return "write";
    case Permission::kAdmin:
      return "admin";
  }
  return "unknown";
}

}  // namespace

Permission PermissionFor(OpType type) {
  return type == OpType::kGet ? Permission::kRead : Permission::kWrite;
}

Status CheckPermission(const Principal& principal, std::string_view ns, Permission permission) {
  if (principal.Allows(ns, permission)) return Status::Ok();
  return Status::PermissionDenied("principal '" + principal.name + "' has no " +
                                  std::string(PermissionName(permission)) +
                                  " permission on namespace '" + std::string(ns) + "'");
}

Status CheckAdminEverywhere(const Principal& principal, std::string_view what) {
  if (principal.AllowsEverywhere(Permission::kAdmin)) return Status::Ok();
  return Status::PermissionDenied("principal '" + principal.name + "' may not " +
                                  std::string(what) +
                                  ": that needs admin permission on every namespace (\"*\")");
}

std::optional<std::vector<Result<OpResult>>> DeniedResults(const Principal& principal,
                                                           const DecodedOps& request) {
  std::vector<std::optional<Status>> denied(request.count);
  std::optional<size_t> first;
  for (size_t i = 0, next = 0; i < request.count; ++i) {
    if (request.errors && i < request.errors->size() && (*request.errors)[i]) {
      continue;  // not decoded: no op to check
    }
    const Op& op = request.ops[next++];
    Status s = CheckPermission(principal, op.ns, PermissionFor(op.type));
    if (s.ok()) continue;
    denied[i] = std::move(s);
    if (!first) first = i;
  }
  if (!first) return std::nullopt;
  const Status refused = Status::PermissionDenied(
      "request refused because of op #" + std::to_string(*first) +
      " (counting from 0): " + denied[*first]->message() + "; nothing of the request was applied");
  std::vector<Result<OpResult>> results;
  results.reserve(request.count);
  for (size_t i = 0; i < request.count; ++i) results.push_back(denied[i] ? *denied[i] : refused);
  return results;
}

}  // namespace idem
