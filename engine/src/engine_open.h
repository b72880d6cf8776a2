// Opening the engine on a chosen RocksDB FileSystem: for the engine's own tests, which inject
// disk faults (ENOSPC, EIO) underneath it. Kept out of the public headers so that no RocksDB type
// reaches them; ServingEngine::Open (and Engine::Open) is this function on the default file
// system.
#pragma once

#include <memory>
#include <string>

#include <rocksdb/file_system.h>

#include "idem/serving.h"

namespace idem {

Result<std::unique_ptr<ServingEngine>> OpenEngineOnFileSystem(
    const std::string& dir, EngineOptions options, std::shared_ptr<rocksdb::FileSystem> fs);

}  // namespace idem
