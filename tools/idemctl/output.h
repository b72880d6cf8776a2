// How idemctl prints results: a human-readable line by default, one JSON object per result with
// --json. Also the exit status each result maps to (listed in --help).
//
// Answers and errors never share a channel or a key. An answer (an Outcome, even a refusal such
// as NOT_FOUND) goes to stdout, under "outcome" in JSON. An error (no answer could be had: the
// command line was wrong, the store was unreachable or refused the arguments) goes to stderr, as
// "idemctl: error (CODE): message", or with --json as {"error":{"code":"CODE","message":"..."}},
// with no "outcome" key, so a script that reads "outcome" never takes an error for an answer.
#pragma once

#include <span>
#include <string>

#include "idem/admin.h"
#include "idem/backup.h"
#include "idem/metrics.h"
#include "idem/operation.h"
#include "idem/result.h"
#include "idem/store.h"
#include "idem/verify.h"

namespace idem::ctl {

// idemctl's exit status, one per class: scripts branch on it. Stable: never renumber.
enum ExitCode : int {
  kExitSuccess = 0,          // a success outcome (or stats, help, a repair)
  kExitRefused = 1,          // the store answered with a refusal outcome (NOT_FOUND, HELD, ...)
  kExitUsage = 2,            // the command line is wrong; no store was contacted
  kExitInvalidArgument = 3,  // the store refused the request's arguments (INVALID_ARGUMENT)
  kExitUnavailable = 4,      // no store to ask (NOT_FOUND: no database) or IO_ERROR
  kExitTimedOut = 5,         // TIMED_OUT
  kExitCorruption = 6,       // CORRUPTION
  kExitOtherError = 7,       // BUSY, NOT_SUPPORTED, SHUTDOWN
  kExitNotAllowed = 8,       // UNAUTHENTICATED, PERMISSION_DENIED (--token)
};

// An error in place of an answer. `code` is a Status code name (CodeName) or "USAGE".
struct CliError {
  std::string code;
  std::string message;
  int exit_code = kExitOtherError;
};
CliError UsageError(std::string message);   // code USAGE, kExitUsage
CliError StoreError(const Status& status);  // code CodeName(status), ExitCodeFor(status)

std::string FormatHuman(const OpResult& result, int64_t now_ms);
std::string FormatJson(const OpResult& result);
// The store's figures, then (from a server) its counters: in the human form one line per series
// as GET /metrics names it, histograms as count, mean and approximate quantiles; in JSON a
// "metrics" array of {name, type, help, samples}.
std::string FormatStatsHuman(const StoreStats& stats, std::span<const MetricFamily> metrics = {});
std::string FormatStatsJson(const StoreStats& stats, std::span<const MetricFamily> metrics = {});
// verify: what the directory holds, one "name value" line each (JSON: under "verify"), then the
// backup's manifest when it carries one (JSON: "verify"."backup").
std::string FormatVerifyHuman(const VerifyReport& report);
std::string FormatVerifyJson(const VerifyReport& report);
// backup: the directory written and its manifest (JSON: under "backup").
std::string FormatBackupHuman(const std::string& dir, const BackupManifest& manifest);
std::string FormatBackupJson(const std::string& dir, const BackupManifest& manifest);
// scan: one line per record. Human: the key (quoted as JSON text, or key_b64=...), status,
// kind, version, fence, owner and lease, expiry. JSON: {"key":..,"record":{..}} (record_json.h;
// a key that is not UTF-8 as "key_b64").
std::string FormatScanEntryHuman(const ScanEntry& entry, int64_t now_ms);
std::string FormatScanEntryJson(const ScanEntry& entry);
// purge: the totals (JSON: under "purge").
std::string FormatPurgeHuman(const PurgeRequest& request, const PurgeStep& total);
std::string FormatPurgeJson(const PurgeRequest& request, const PurgeStep& total);
// compact: what was compacted ("" ns: the whole database).
std::string FormatCompactHuman(const std::string& ns);
std::string FormatCompactJson(const std::string& ns);
std::string FormatErrorHuman(const CliError& error);  // "idemctl: error (CODE): message"
std::string FormatErrorJson(const CliError& error);   // {"error":{"code":..,"message":..}}

int ExitCodeFor(const Result<OpResult>& result);
int ExitCodeFor(const Status& status);

}  // namespace idem::ctl
