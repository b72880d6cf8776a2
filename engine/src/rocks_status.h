// The one place where rocksdb::Status becomes idem::Status.
#pragma once

#include <rocksdb/status.h>

#include "idem/status.h"

namespace idem {

Status FromRocks(const rocksdb::Status& s);

}  // namespace idem
