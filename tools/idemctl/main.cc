// idemctl: a thin main over invocation (parsing), OpenStore (embedded Engine or network Client,
// chosen by --data / --server) and output (printing).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "idem/repair.h"
#include "invocation.h"
#include "open_store.h"
#include "output.h"

namespace {

idem::Result<std::unique_ptr<idem::Store>> OpenStore(const idem::ctl::Invocation& inv) {
  idem::StoreLocation where;
  where.server = inv.server;
  where.data_dir = inv.data_dir;
  where.timeout_ms = inv.timeout_ms;
  where.engine.create_if_missing = false;  // a typo in --data must not create an empty store
  where.engine.reclaim_interval_ms = 0;
  return idem::OpenStore(where);
}

// Salvages --data after copying it aside; prints what was found, kept and lost.
int Repair(const idem::ctl::Invocation& inv) {
  idem::RepairOptions options;
  if (auto it = inv.flags.find("backup"); it != inv.flags.end()) options.backup_dir = it->second;
  options.engine.reclaim_interval_ms = 0;
  auto report = idem::RepairDatabase(inv.data_dir, options);
  if (!report.ok()) {
    std::fprintf(stderr, "idemctl: repair: %s\n", report.status().ToString().c_str());
    return idem::ctl::ExitCodeFor(report.status());
  }
  for (const std::string& line : report->lines) std::printf("repair: %s\n", line.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string_view> args(argv + 1, argv + argc);
  auto inv = idem::ctl::ParseInvocation(args);
  if (!inv.ok()) {
    std::fprintf(stderr, "idemctl: %s\n", inv.status().message().c_str());
    return 2;
  }
  if (inv->command == "help") {
    std::fputs(idem::ctl::Usage().c_str(), stdout);
    return 0;
  }
  if (inv->command == "repair") return Repair(*inv);
  auto store = OpenStore(*inv);
  if (!store.ok()) {
    if (inv->json)
      std::puts(idem::ctl::FormatErrorJson(store.status()).c_str());
    else
      std::fprintf(stderr, "idemctl: %s\n", store.status().ToString().c_str());
    return idem::ctl::ExitCodeFor(store.status());
  }
  if (inv->command == "stats") {
    auto stats = (*store)->Stats();
    if (!stats.ok()) {
      std::puts(inv->json ? idem::ctl::FormatErrorJson(stats.status()).c_str()
                          : ("error: " + stats.status().ToString()).c_str());
      return idem::ctl::ExitCodeFor(stats.status());
    }
    std::puts(inv->json ? idem::ctl::FormatStatsJson(*stats).c_str()
                        : idem::ctl::FormatStatsHuman(*stats).c_str());
    return 0;
  }
  auto op = idem::ctl::BuildOp(*inv);
  if (!op.ok()) {
    std::fprintf(stderr, "idemctl: %s\n", op.status().message().c_str());
    return 2;
  }
  auto result = (*store)->Execute(*op);
  if (inv->json)
    std::puts(idem::ctl::FormatJson(result).c_str());
  else
    std::puts(idem::ctl::FormatHuman(result, idem::SystemClock().NowMillis()).c_str());
  return idem::ctl::ExitCodeFor(result);
}
