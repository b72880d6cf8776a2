// idemctl: a thin main over invocation (parsing), OpenStore (embedded Engine or network Client,
// chosen by --data / --server) and output (printing). Answers go to stdout, errors to stderr
// (output.h says why).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "auth_secret.h"
#include "cli_app.h"
#include "credentials.h"
#include "idem/engine.h"
#include "idem/repair.h"
#include "idem/verify.h"
#include "invocation.h"
#include "open_store.h"
#include "output.h"

namespace {

idem::StoreLocation Where(const idem::ctl::Invocation& inv) {
  idem::StoreLocation where;
  where.server = inv.server;
  where.data_dir = inv.data_dir;
  where.timeout_ms = inv.timeout_ms;
  where.tls = inv.tls;
  where.token = inv.token;
  where.engine.create_if_missing = false;  // a typo in --data must not create an empty store
  where.engine.reclaim_interval_ms = 0;
  return where;
}

idem::Result<std::unique_ptr<idem::Store>> OpenStore(const idem::ctl::Invocation& inv) {
  return idem::OpenStore(Where(inv));
}

// Prints `error` to stderr in the form the caller asked for; returns its exit status.
int Fail(const idem::ctl::CliError& error, bool json) {
  const std::string text =
      json ? idem::ctl::FormatErrorJson(error) : idem::ctl::FormatErrorHuman(error);
  std::fprintf(stderr, "%s\n", text.c_str());
  return error.exit_code;
}

// Salvages --data after copying it aside; prints what was found, kept and lost.
int Repair(const idem::ctl::Invocation& inv) {
  idem::RepairOptions options;
  if (auto it = inv.flags.find("backup"); it != inv.flags.end()) options.backup_dir = it->second;
  options.engine.reclaim_interval_ms = 0;
  auto report = idem::RepairDatabase(inv.data_dir, options);
  if (!report.ok()) return Fail(idem::ctl::StoreError(report.status()), inv.json);
  for (const std::string& line : report->lines) std::printf("repair: %s\n", line.c_str());
  return idem::ctl::kExitSuccess;
}

// Checks --data read-only; prints the counts.
int Verify(const idem::ctl::Invocation& inv) {
  idem::EngineOptions options;
  options.reclaim_interval_ms = 0;
  auto report = idem::VerifyDatabase(inv.data_dir, options);
  if (!report.ok()) return Fail(idem::ctl::StoreError(report.status()), inv.json);
  std::puts(inv.json ? idem::ctl::FormatVerifyJson(*report).c_str()
                     : idem::ctl::FormatVerifyHuman(*report).c_str());
  return idem::ctl::kExitSuccess;
}

// An online backup to --to: in process on --data, or by the server on --server (on the
// server's file system).
int Backup(const idem::ctl::Invocation& inv) {
  const std::string& to = inv.flags.at("to");
  auto take = [&]() -> idem::Result<idem::BackupManifest> {
    if (!inv.server.empty()) {
      auto client = idem::ConnectClient(Where(inv));
      if (!client.ok()) return client.status();
      return (*client)->Backup(to);
    }
    auto engine = idem::Engine::Open(inv.data_dir, Where(inv).engine);
    if (!engine.ok()) {
      const idem::Status& s = engine.status();
      if (s.IsBusy() || (s.IsIOError() && s.message().find("lock") != std::string::npos)) {
        // A server holds the directory: only it can take a consistent backup while it serves.
        return idem::Status::FromCode(
            static_cast<uint32_t>(s.code()),
            s.message() +
                " (a running server holds it: back it up through the server, "
                "idemctl --server HOST:PORT backup --to DIR)");
      }
      return s;
    }
    return (*engine)->Backup(to);
  };
  idem::Result<idem::BackupManifest> manifest = take();
  if (!manifest.ok()) return Fail(idem::ctl::StoreError(manifest.status()), inv.json);
  std::puts(inv.json ? idem::ctl::FormatBackupJson(to, *manifest).c_str()
                     : idem::ctl::FormatBackupHuman(to, *manifest).c_str());
  return idem::ctl::kExitSuccess;
}

// scan: pages through to --limit records (or all), printing each page as it arrives.
int Scan(const idem::ctl::Invocation& inv) {
  uint64_t total = 0;  // 0: all
  auto request = idem::ctl::BuildScan(inv, &total);
  if (!request.ok()) return Fail(idem::ctl::UsageError(request.status().message()), inv.json);
  auto store = OpenStore(inv);
  if (!store.ok()) return Fail(idem::ctl::StoreError(store.status()), inv.json);
  const int64_t now_ms = idem::SystemClock().NowMillis();
  uint64_t printed = 0;
  while (true) {
    request->limit = total == 0 ? idem::kMaxScanPageRecords
                                : std::min<uint64_t>(idem::kMaxScanPageRecords, total - printed);
    auto page = (*store)->Scan(*request);
    if (!page.ok()) return Fail(idem::ctl::StoreError(page.status()), inv.json);
    for (const idem::ScanEntry& entry : page->records) {
      std::puts(inv.json ? idem::ctl::FormatScanEntryJson(entry).c_str()
                         : idem::ctl::FormatScanEntryHuman(entry, now_ms).c_str());
    }
    std::fflush(stdout);
    printed += page->records.size();
    if (page->cursor.empty() || (total != 0 && printed >= total)) break;
    request->cursor = std::move(page->cursor);
  }
  return idem::ctl::kExitSuccess;
}

// purge (--yes was checked by the parser): steps through the namespace, then prints the counts.
int Purge(const idem::ctl::Invocation& inv) {
  idem::PurgeRequest request = idem::ctl::BuildPurge(inv);
  auto store = OpenStore(inv);
  if (!store.ok()) return Fail(idem::ctl::StoreError(store.status()), inv.json);
  idem::PurgeStep total;
  while (true) {
    auto step = (*store)->Purge(request);
    if (!step.ok()) {
      // What earlier steps deleted stays deleted: say how much before the error.
      if (total.deleted + total.forgotten > 0) {
        std::fprintf(stderr, "idemctl: purged %llu records before the error\n",
                     static_cast<unsigned long long>(total.deleted));
      }
      return Fail(idem::ctl::StoreError(step.status()), inv.json);
    }
    total.deleted += step->deleted;
    total.forgotten += step->forgotten;
    if (step->cursor.empty()) break;
    request.cursor = std::move(step->cursor);
  }
  std::puts(inv.json ? idem::ctl::FormatPurgeJson(request, total).c_str()
                     : idem::ctl::FormatPurgeHuman(request, total).c_str());
  return idem::ctl::kExitSuccess;
}

int Compact(const idem::ctl::Invocation& inv) {
  const std::string ns = inv.positional.empty() ? std::string() : inv.positional[0];
  auto store = OpenStore(inv);
  if (!store.ok()) return Fail(idem::ctl::StoreError(store.status()), inv.json);
  if (idem::Status s = (*store)->Compact(ns); !s.ok()) {
    return Fail(idem::ctl::StoreError(s), inv.json);
  }
  std::puts(inv.json ? idem::ctl::FormatCompactJson(ns).c_str()
                     : idem::ctl::FormatCompactHuman(ns).c_str());
  return idem::ctl::kExitSuccess;
}

// stats from a server: the store's figures and the server's counters.
int ServerStats(const idem::ctl::Invocation& inv) {
  auto client = idem::ConnectClient(Where(inv));
  if (!client.ok()) return Fail(idem::ctl::StoreError(client.status()), inv.json);
  auto stats = (*client)->GetServerStats();
  if (!stats.ok()) return Fail(idem::ctl::StoreError(stats.status()), inv.json);
  std::puts(inv.json ? idem::ctl::FormatStatsJson(stats->store, stats->metrics).c_str()
                     : idem::ctl::FormatStatsHuman(stats->store, stats->metrics).c_str());
  return idem::ctl::kExitSuccess;
}

// auth hash: the hash of the secret on stdin, for the --auth-file.
int AuthHash(const idem::ctl::Invocation& inv) {
  // A refused secret is input given wrong, like a command line: USAGE, exit 2.
  auto refused = [&](const idem::Status& s) {
    return Fail(
        s.IsInvalidArgument() ? idem::ctl::UsageError(s.message()) : idem::ctl::StoreError(s),
        inv.json);
  };
  auto secret = idem::ctl::ReadSecret(STDIN_FILENO);
  if (!secret.ok()) return refused(secret.status());
  auto hash = idem::HashSecret(*secret);
  if (!hash.ok()) return refused(hash.status());
  std::puts(inv.json ? idem::ctl::FormatSecretHashJson(*hash).c_str()
                     : idem::ctl::FormatSecretHashHuman(*hash).c_str());
  return idem::ctl::kExitSuccess;
}

// auth token: a new secret and its hash. The secret exists only in this output.
int AuthToken(const idem::ctl::Invocation& inv) {
  const std::string secret = idem::NewSecret();
  if (secret.empty()) {
    return Fail(idem::ctl::StoreError(idem::Status::IOError(
                    "no random bytes for a secret (OpenSSL RAND_bytes failed)")),
                inv.json);
  }
  auto hash = idem::HashSecret(secret);
  if (!hash.ok()) return Fail(idem::ctl::StoreError(hash.status()), inv.json);
  std::puts(inv.json ? idem::ctl::FormatNewTokenJson(secret, *hash).c_str()
                     : idem::ctl::FormatNewTokenHuman(secret, *hash).c_str());
  if (!inv.json) {
    std::fputs(
        "idemctl: the secret is shown only this once and not stored anywhere: give it to the "
        "client (--token or IDEM_TOKEN); put the hash on the principal's line of the "
        "--auth-file\n",
        stderr);
  }
  return idem::ctl::kExitSuccess;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string_view> args(argv + 1, argv + argc);
  auto inv = idem::ctl::ParseInvocation(args);
  if (!inv.ok()) {
    // The command line did not parse, but an error about it still comes in the form asked for.
    const bool json = std::find(args.begin(), args.end(), "--json") != args.end();
    return Fail(idem::ctl::UsageError(inv.status().message()), json);
  }
  if (inv->command == "help") {
    const std::string help =
        inv->help_command.empty() ? idem::ctl::Usage() : idem::ctl::CommandUsage(inv->help_command);
    std::fputs(help.c_str(), stdout);
    return idem::ctl::kExitSuccess;
  }
  if (inv->command == "version") {
    std::printf("%s\n", idem::VersionLine("idemctl").c_str());
    return idem::ctl::kExitSuccess;
  }
  if (inv->command == "auth hash") return AuthHash(*inv);
  if (inv->command == "auth token") return AuthToken(*inv);
  if (inv->command == "repair") return Repair(*inv);
  if (inv->command == "verify") return Verify(*inv);
  if (inv->command == "backup") return Backup(*inv);
  if (inv->command == "scan") return Scan(*inv);
  if (inv->command == "purge") return Purge(*inv);
  if (inv->command == "compact") return Compact(*inv);
  // The operation is built before the store is opened: a wrong flag is a usage error whether or
  // not the store can be reached.
  std::optional<idem::Op> op;  // every command but stats
  if (inv->command != "stats") {
    auto built = idem::ctl::BuildOp(*inv);
    if (!built.ok()) return Fail(idem::ctl::UsageError(built.status().message()), inv->json);
    op = std::move(*built);
  }
  if (inv->command == "stats" && !inv->server.empty()) return ServerStats(*inv);
  auto store = OpenStore(*inv);
  if (!store.ok()) return Fail(idem::ctl::StoreError(store.status()), inv->json);
  if (inv->command == "stats") {
    auto stats = (*store)->Stats();
    if (!stats.ok()) return Fail(idem::ctl::StoreError(stats.status()), inv->json);
    std::puts(inv->json ? idem::ctl::FormatStatsJson(*stats).c_str()
                        : idem::ctl::FormatStatsHuman(*stats).c_str());
    return idem::ctl::kExitSuccess;
  }
  auto result = (*store)->Execute(*op);
  if (!result.ok()) return Fail(idem::ctl::StoreError(result.status()), inv->json);
  if (inv->json)
    std::puts(idem::ctl::FormatJson(*result).c_str());
  else
    std::puts(idem::ctl::FormatHuman(*result, idem::SystemClock().NowMillis()).c_str());
  return idem::ctl::ExitCodeFor(result);
}
