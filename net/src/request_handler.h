// RequestHandler: one decoded frame in, one encoded response out. No I/O: the connection feeds
// it frame bodies and writes what it replies; tests drive it directly.
//
// Apply requests go through the ApplyPath (the CommitQueue's group commit, the OpWaiter's
// waits), as HTTP requests do; Stats on an engine thread, a backup and the admin queries (scan,
// purge, compact) on threads of their own (CommitQueue::RunBlocking); everything else is answered
// on the calling thread. Every frame gets exactly one reply, which may come before Handle returns
// or later from an engine thread.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "apply_path.h"
#include "authenticator.h"
#include "commit_queue.h"
#include "idem/engine.h"
#include "idem/status.h"
#include "idem/store.h"
#include "op_waiter.h"
#include "protocol_codec.h"
#include "server_metrics.h"

namespace idem {

// What the handler remembers about one connection between frames (owned by the connection).
struct Session {
  // Hello received and accepted: with authentication on, only once its token was.
  bool greeted = false;
  std::string client_name;
  std::string peer_address;  // the peer's IP address: failed authentications count against it
  // Whom the Hello authenticated (empty with authentication off), re-checked before each request
  // after a reload (Authenticator::Recheck).
  Identity identity;
};

class RequestHandler {
 public:
  using Reply = std::function<void(FrameBytes frame)>;

  // `store` answers Stats and the admin queries; `queue` applies ops; `waiter` (may be null:
  // waiting Begins and Locks then answer IN_PROGRESS or HELD at once) waits for ops with wait_ms;
  // `metrics` (may be null) counts every answer and is sent with Stats; `backups` (may be null: a
  // BackupRequest is then NotSupported) takes backups; `auth` (may be null: authentication off)
  // authenticates each connection's Hello. All must outlive the handler.
  RequestHandler(Store* store, CommitQueue* queue, OpWaiter* waiter, ServerInfo info,
                 ServerMetrics* metrics = nullptr, Engine* backups = nullptr,
                 Authenticator* auth = nullptr);

  // Handles one frame body (length prefix removed). Calls `reply` exactly once.
  // Returns ok when the connection stays usable. A non-ok Status (malformed frame, no Hello
  // first, wrong protocol version, id 0, a Hello whose token is not accepted, a principal revoked
  // by a reload) says why the connection must be closed once the reply, an error frame, has been
  // written.
  //
  // With authentication on, every request is authorized before anything of it runs
  // (authorization.h): a denied ApplyRequest answers PERMISSION_DENIED for each op and applies
  // nothing; a denied admin or Stats request is answered with a PERMISSION_DENIED error frame.
  Status Handle(std::vector<uint8_t> frame, Session* session, Reply reply);

  const ServerInfo& info() const { return info_; }

 private:
  void HandleApply(uint64_t id, const wire::ApplyRequest& request,
                   std::shared_ptr<const Principal> principal,
                   std::shared_ptr<std::vector<uint8_t>> frame, Reply reply);
  // The ApplyResponse, or an error frame when it would exceed info_.max_reply_bytes.
  FrameBytes EncodeResponse(uint64_t id, std::span<const Result<OpResult>> results) const;
  // A whole-request error, counted.
  void AnswerError(uint64_t id, const Status& error, const Reply& reply) const;
  // Ok when `session`'s principal may make the request (always, authentication off); else the
  // PERMISSION_DENIED to answer.
  Status Authorize(const wire::Frame& root, const Session& session) const;
  void HandleStats(uint64_t id, Reply reply);
  void HandleBackup(uint64_t id, const wire::BackupRequest& request, Reply reply);
  void HandleScan(uint64_t id, const wire::ScanRequest& request, Reply reply);
  void HandlePurge(uint64_t id, const wire::PurgeRequest& request, Reply reply);
  void HandleCompact(uint64_t id, const wire::CompactRequest& request, Reply reply);
  // Runs an admin query's `work` on a thread of its own (CommitQueue::RunBlocking) and replies
  // with its response, or its error (counted).
  void RunAdmin(uint64_t id, Reply reply, std::function<Result<FrameBytes>()> work);

  Store* const store_;
  CommitQueue* const queue_;
  ApplyPath apply_;
  const ServerInfo info_;
  ServerMetrics* const metrics_;
  Engine* const backups_;
  Authenticator* const auth_;
};

}  // namespace idem
