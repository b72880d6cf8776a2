// How idemctl prints results: a human-readable line by default, one JSON object per result with
// --json. Also the exit status each result maps to (documented in Usage()).
#pragma once

#include <string>

#include "idem/operation.h"
#include "idem/result.h"
#include "idem/store.h"

namespace idem::ctl {

std::string FormatHuman(const Result<OpResult>& result, int64_t now_ms);
std::string FormatJson(const Result<OpResult>& result);
std::string FormatStatsHuman(const StoreStats& stats);
std::string FormatStatsJson(const StoreStats& stats);
std::string FormatErrorJson(const Status& status);

// 0 success outcomes, 1 refusals, 3.. errors by code (2 is reserved for usage errors).
int ExitCodeFor(const Result<OpResult>& result);
int ExitCodeFor(const Status& status);

}  // namespace idem::ctl
