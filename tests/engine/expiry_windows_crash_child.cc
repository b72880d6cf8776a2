// The process expiry_windows_test kills during a drop (expiry_windows_crash.h has the plan).
// A fresh process rather than a fork of the test: RocksDB's thread pools do not survive fork().
//
//   expiry_windows_crash_child DIR REPORT_FD
//
// Opens the database DIR the test wrote, writes each clock value it is about to reclaim at to
// REPORT_FD (int64, native order), then waits to be killed. Exits 1..4 on an error, so the test
// can tell a failure from a kill.
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <thread>

#include "engine/expiry_windows_crash.h"
#include "idem/engine.h"

namespace {

using namespace idem;
using namespace idem::testing;

void Report(int fd, int64_t now_ms) {
  if (write(fd, &now_ms, sizeof now_ms) != sizeof now_ms) _exit(3);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) return 1;
  const int fd = std::atoi(argv[2]);
  auto clock = std::make_shared<ManualClock>(kCrashStartMs);
  EngineOptions options = CrashEngineOptions(clock);
  options.create_if_missing = false;
  auto engine = Engine::Open(argv[1], options);
  if (!engine.ok()) return 2;
  Report(fd, clock->NowMillis());
  for (int step = 1; step <= kCrashSteps; ++step) {
    clock->Advance(kCrashStepMs);
    Report(fd, clock->NowMillis());
    if (!(*engine)->ReclaimExpired().ok()) _exit(4);
  }
  // Killed here at the latest: no destructor runs, as in a crash.
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}
