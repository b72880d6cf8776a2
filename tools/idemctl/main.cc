// idemctl: a thin main over invocation (parsing), the Store API (embedded Engine or network
// Client, chosen by --data / --server) and output (printing).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "idem/client.h"
#include "idem/engine.h"
#include "invocation.h"
#include "output.h"

namespace {

idem::Result<std::unique_ptr<idem::Store>> OpenStore(const idem::ctl::Invocation& inv) {
  if (!inv.server.empty()) {
    idem::ClientOptions options;
    options.address = inv.server;
    options.request_timeout_ms = inv.timeout_ms;
    options.connect_timeout_ms = inv.timeout_ms;
    auto client = idem::Client::Connect(options);
    if (!client.ok()) return client.status();
    return std::unique_ptr<idem::Store>(std::move(*client));
  }
  idem::EngineOptions options;
  options.create_if_missing = false;  // a typo in --data must not create an empty store
  options.reclaim_interval_ms = 0;
  auto engine = idem::Engine::Open(inv.data_dir, options);
  if (!engine.ok()) {
    std::string hint = engine.status().message().find("lock") != std::string::npos
                           ? " (is idemstored running on this directory? use --server)"
                           : "";
    return idem::Status::FromCode(static_cast<uint32_t>(engine.status().code()),
                                  engine.status().message() + hint);
  }
  return std::unique_ptr<idem::Store>(std::move(*engine));
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
  auto store = OpenStore(*inv);
  if (!store.ok()) {
    if (inv->json) std::puts(idem::ctl::FormatErrorJson(store.status()).c_str());
    else std::fprintf(stderr, "idemctl: %s\n", store.status().ToString().c_str());
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
  if (inv->json) std::puts(idem::ctl::FormatJson(result).c_str());
  else std::puts(idem::ctl::FormatHuman(result, idem::SystemClock().NowMillis()).c_str());
  return idem::ctl::ExitCodeFor(result);
}
