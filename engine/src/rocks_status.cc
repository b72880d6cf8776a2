#include "rocks_status.h"

namespace idem {

Status FromRocks(const rocksdb::Status& s) {
  if (s.ok()) return Status::Ok();
  const std::string msg = "rocksdb: " + s.ToString();
  if (s.IsNotFound()) return Status::NotFound(msg);
  if (s.IsCorruption()) return Status::Corruption(msg);
  if (s.IsInvalidArgument()) return Status::InvalidArgument(msg);
  if (s.IsNotSupported()) return Status::NotSupported(msg);
  if (s.IsBusy() || s.IsTryAgain()) return Status::Busy(msg);
  if (s.IsTimedOut()) return Status::TimedOut(msg);
  if (s.IsShutdownInProgress()) return Status::Shutdown(msg);
  return Status::IOError(msg);
}

}  // namespace idem
