// Shared by the example programs: where the store is (--data DIR or --server HOST:PORT), a
// run id that keeps keys unique across runs against the same server, and a check that counts
// violated invariants so each example doubles as a test (exit status 1 if any failed).
#pragma once

#include <cstdio>
#include <memory>
#include <string>

#include "idem/store.h"
#include "open_store.h"

namespace idem::examples {

struct Example {
  std::unique_ptr<Store> store;
  std::string run_id;  // prefix for this run's keys
  int failures = 0;

  void Check(bool ok, const std::string& what) {
    std::printf("  [%s] %s\n", ok ? "ok" : "FAILED", what.c_str());
    if (!ok) ++failures;
  }
  int Finish(const char* name) {
    std::printf("%s: %s\n", name, failures == 0 ? "all invariants held" : "INVARIANTS VIOLATED");
    return failures == 0 ? 0 : 1;
  }
};

// Parses --data DIR / --server HOST:PORT (exactly one) and opens the store. `engine` is used in
// embedded mode (a server has its own options). Exits with status 2 on a usage error.
Example Start(int argc, char** argv, const char* usage, EngineOptions engine = {});

// A stable 64-bit FNV-1a hash in hex: a stand-in for the request hash a real service would use.
std::string Fingerprint(std::string_view body);

}  // namespace idem::examples
