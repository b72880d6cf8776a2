// A backup a remote client asks for (binary BackupRequest, HTTP POST /v1/admin/backup): the one
// place both transports check the directory and hand the work to a thread of its own.
//
// The directory is named by the client and written by the SERVER, on the server's file system,
// with the server's permissions: a client that may ask for a backup may make the server create
// a directory (and fill it with a copy of every record) wherever the server may write. So the
// request must be unambiguous: an absolute path (the server's working directory is not the
// client's), at most kMaxBackupPathBytes, whose parent already exists and which itself does
// not (Engine::Backup checks those two). Who may ask is the server's access control's business.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "commit_queue.h"
#include "idem/backup.h"
#include "idem/engine.h"
#include "idem/result.h"

namespace idem {

inline constexpr size_t kMaxBackupPathBytes = 4096;  // PATH_MAX

// Ok, or InvalidArgument saying what is wrong with `to` as a remote backup's directory (empty,
// too long, relative). Does not touch the file system.
Status CheckRemoteBackupPath(const std::string& to);

// Checks `to`, then runs engine->Backup(to) on a thread of its own (CommitQueue::RunBlocking:
// never the event loop nor an engine thread, whose group commits would wait seconds behind a
// checkpoint's flush and copies) and calls `done` with its result, on that thread or, if `to`
// is refused, the queue has stopped (Shutdown) or max_admin_requests are running (Busy), on
// the caller's.
void RunRemoteBackup(CommitQueue* queue, Engine* engine, std::string to,
                     std::function<void(Result<BackupManifest>)> done);

}  // namespace idem
