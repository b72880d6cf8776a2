// The embedder's program of install_consumer_test: opens an Engine in the directory given,
// inserts a record and reads it back, and makes one network Client call (to a port nobody
// listens on), so that both installed libraries are compiled against and linked.
// Prints "consumer: ok" and exits 0, or names what failed and exits 1.
#include <cstdio>
#include <memory>
#include <string>

#include "idem/client.h"
#include "idem/engine.h"

namespace {

int Fail(const std::string& what) {
  std::fprintf(stderr, "consumer: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return Fail("usage: consumer DATA_DIR");
  idem::Result<std::unique_ptr<idem::Engine>> engine = idem::Engine::Open(argv[1], {});
  if (!engine.ok()) return Fail("Open: " + engine.status().ToString());
  idem::Store& store = **engine;

  idem::Result<idem::OpResult> inserted =
      store.Insert({.ns = "pay", .key = "k1", .status = "done", .payload = "receipt-1"});
  if (!inserted.ok()) return Fail("Insert: " + inserted.status().ToString());
  if (inserted->outcome != idem::Outcome::kInserted) return Fail("Insert: not inserted");

  idem::Result<idem::OpResult> got = store.Get({.ns = "pay", .key = "k1"});
  if (!got.ok()) return Fail("Get: " + got.status().ToString());
  if (got->outcome != idem::Outcome::kFound || !got->record ||
      got->record->payload != "receipt-1") {
    return Fail("Get: the inserted record was not read back");
  }

  // Port 1 on loopback: refused at once. The call must fail, not crash or hang.
  auto client = idem::Client::Connect({.address = "127.0.0.1:1", .connect_timeout_ms = 2'000});
  if (client.ok()) return Fail("Client::Connect to 127.0.0.1:1 succeeded");

  std::printf("consumer: ok\n");
  return 0;
}
