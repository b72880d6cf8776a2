#include "remote_backup.h"

#include <utility>

namespace idem {

Status CheckRemoteBackupPath(const std::string& to) {
  if (to.empty() || to.size() > kMaxBackupPathBytes) {
    return Status::InvalidArgument("a backup needs a directory of 1 to " +
                                   std::to_string(kMaxBackupPathBytes) + " bytes, not " +
                                   std::to_string(to.size()));
  }
  if (to.front() != '/') {
    return Status::InvalidArgument(
        "the backup directory '" + to +
        "' is relative: give an absolute path on the server's file system (the server writes "
        "it, and its working directory is not the client's)");
  }
  return Status::Ok();
}

void RunRemoteBackup(CommitQueue* queue, Engine* engine, std::string to,
                     std::function<void(Result<BackupManifest>)> done) {
  if (Status st = CheckRemoteBackupPath(to); !st.ok()) {
    done(st);
    return;
  }
  Status started = queue->RunBlocking([engine, to = std::move(to),
                                       done](bool stopped) -> CommitQueue::BlockingAnswer {
    Result<BackupManifest> taken =
        stopped
            ? Result<BackupManifest>(Status::Shutdown("the server is stopping: no backup taken"))
            : engine->Backup(to);
    return [done, taken = std::move(taken)] { done(taken); };
  });
  if (!started.ok()) done(started);
}

}  // namespace idem
