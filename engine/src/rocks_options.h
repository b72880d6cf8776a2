// The RocksDB options the engine runs with, in one place so benchmarks can build a raw-RocksDB
// baseline on exactly the same configuration.
#pragma once

#include <rocksdb/options.h>

#include "idem/options.h"
#include "idem/result.h"

namespace idem {

// `opts.clock` must be set: the compaction filter reads it.
rocksdb::Options MakeRocksOptions(const EngineOptions& opts);

// MakeRocksOptions with `opts.rocksdb_options` applied over it, except the compaction filter and
// the table-properties collectors, which stay the engine's; InvalidArgument names what RocksDB
// could not parse.
Result<rocksdb::Options> MakeTunedRocksOptions(const EngineOptions& opts);

}  // namespace idem
