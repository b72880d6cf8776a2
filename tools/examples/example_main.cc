#include "example_main.h"

#include <chrono>
#include <cstdlib>
#include <cstring>

namespace idem::examples {

Example Start(int argc, char** argv, const char* usage, EngineOptions engine) {
  StoreLocation where;
  where.engine = std::move(engine);
  for (int i = 1; i < argc; ++i) {
    if (i + 1 < argc && std::strcmp(argv[i], "--data") == 0) {
      where.data_dir = argv[++i];
    } else if (i + 1 < argc && std::strcmp(argv[i], "--server") == 0) {
      where.server = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s (--data DIR | --server HOST:PORT)\n%s", argv[0], usage);
      std::exit(2);
    }
  }
  Result<std::unique_ptr<Store>> store = OpenStore(where);
  if (!store.ok()) {
    std::fprintf(stderr, "%s: %s\n", argv[0], store.status().ToString().c_str());
    std::exit(where.server.empty() == where.data_dir.empty() ? 2 : 4);
  }
  Example example;
  example.store = std::move(*store);
  example.run_id = std::to_string(std::chrono::system_clock::now().time_since_epoch() /
                                  std::chrono::microseconds(1));
  return example;
}

std::string Fingerprint(std::string_view body) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : body) h = (h ^ c) * 0x100000001b3ULL;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace idem::examples
