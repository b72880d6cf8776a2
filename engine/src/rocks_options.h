// The RocksDB options the engine runs with, in one place so benchmarks can build a raw-RocksDB
// baseline on exactly the same configuration.
#pragma once

#include <memory>

#include <rocksdb/options.h>

#include "clock_mark.h"
#include "idem/options.h"
#include "idem/result.h"

namespace idem {

// `opts.clock` must be set: the compaction filter reads it, and `clock_mark` (null: none) when
// the clock is the engine's own (expiry_compaction_filter.h).
rocksdb::Options MakeRocksOptions(const EngineOptions& opts,
                                  std::shared_ptr<const ClockMark> clock_mark = nullptr);

// MakeRocksOptions with `opts.rocksdb_options` applied over it, except the compaction filter and
// the table-properties collectors, which stay the engine's; InvalidArgument names what RocksDB
// could not parse.
Result<rocksdb::Options> MakeTunedRocksOptions(
    const EngineOptions& opts, std::shared_ptr<const ClockMark> clock_mark = nullptr);

}  // namespace idem
