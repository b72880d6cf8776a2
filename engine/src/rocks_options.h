// The RocksDB options the engine runs with, in one place so benchmarks can build a raw-RocksDB
// baseline on exactly the same configuration.
#pragma once

#include <rocksdb/options.h>

#include "idem/options.h"

namespace idem {

// `opts.clock` must be set: the compaction filter reads it.
rocksdb::Options MakeRocksOptions(const EngineOptions& opts);

}  // namespace idem
