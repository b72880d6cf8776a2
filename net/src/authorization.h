// Authorization: what an authenticated principal may ask for (docs/security.md), as pure
// functions of its grants. No I/O, no locks: both transports call them on the request at hand.
//
//   Get                                         read on the op's namespace
//   every other op                              write on the op's namespace
//   Scan, Purge, Compact of a namespace         admin on that namespace
//   Stats (GET /metrics), Backup, Compact of    admin on "*" (Principal::AllowsEverywhere)
//   the whole store
//
// A request of several ops is checked whole before any of it is applied: one denied op refuses
// the request, because a batch is atomic and must not commit without the op that was denied.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "apply_path.h"
#include "credentials.h"
#include "idem/operation.h"
#include "idem/result.h"
#include "idem/status.h"

namespace idem {

// Get: read; every other op (and an unknown one): write.
Permission PermissionFor(OpType type);

// Ok, or PermissionDenied "principal 'P' has no PERM permission on namespace 'NS'".
Status CheckPermission(const Principal& principal, std::string_view ns, Permission permission);
// Ok, or PermissionDenied naming `what` ("stats") and the "*" admin grant it needs.
Status CheckAdminEverywhere(const Principal& principal, std::string_view what);

// Every op of `request` that decoded (one that did not fails alone with its own error whatever
// the principal). nullopt when all are allowed; else one result per op of the request, all
// PERMISSION_DENIED: a denied op's names its permission and namespace, every other's the first
// denied op's number (counting from 0) and that nothing of the request was applied.
std::optional<std::vector<Result<OpResult>>> DeniedResults(const Principal& principal,
                                                           const DecodedOps& request);

}  // namespace idem
