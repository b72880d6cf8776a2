#include "request_handler.h"

#include <memory>

#include "authorization.h"
#include "remote_backup.h"

namespace idem {

RequestHandler::RequestHandler(Store* store, CommitQueue* queue, OpWaiter* waiter, ServerInfo info,
                               ServerMetrics* metrics, Engine* backups, Authenticator* auth)
    : store_(store),
      queue_(queue),
      apply_(queue, waiter, metrics),
      info_(std::move(info)),
      metrics_(metrics),
      backups_(backups),
      auth_(auth) {}

Status RequestHandler::Handle(std::vector<uint8_t> frame, Session* session, Reply reply) {
  const wire::Frame* root = VerifyFrame(frame.data(), frame.size());
  if (root == nullptr) {
    Status s = Status::Corruption(
        "frame of " + std::to_string(frame.size()) +
        " bytes failed verification (malformed, or objects shared between references: more "
        "tables or condition statuses than a frame of its size holds)");
    reply(EncodeError(0, s));
    return s;
  }
  const uint64_t id = root->id();
  if (id == 0) {
    Status s = Status::InvalidArgument("request id 0 is reserved for connection errors");
    reply(EncodeError(0, s));
    return s;
  }

  // A union's value is optional in FlatBuffers: a frame can name a body type, pass the Verifier
  // and carry no body. Before the Hello that ends the connection like any other first frame.
  if (Status s = CheckBodyPresent(*root); !s.ok()) {
    reply(EncodeError(id, s));
    return session->greeted ? Status::Ok() : s;
  }

  if (!session->greeted) {
    const wire::Hello* hello = root->body_as_Hello();
    if (hello == nullptr) {
      Status s = Status::InvalidArgument("the first frame must be Hello");
      reply(EncodeError(id, s));
      return s;
    }
    if (hello->protocol_version() != kProtocolVersion) {
      Status s = Status::NotSupported(
          "protocol version " + std::to_string(hello->protocol_version()) +
          " not supported; this server speaks " + std::to_string(kProtocolVersion));
      reply(EncodeError(id, s));
      return s;
    }
    if (auth_ != nullptr) {
      std::optional<std::string_view> token;
      if (hello->token()) token = hello->token()->string_view();
      Result<Identity> identity = auth_->Authenticate(session->peer_address, token);
      if (!identity.ok()) {
        reply(EncodeError(id, identity.status()));
        return identity.status();
      }
      session->identity = std::move(*identity);
    }
    session->greeted = true;
    if (hello->client_name()) session->client_name = hello->client_name()->str();
    reply(EncodeHelloReply(id, info_));
    return Status::Ok();
  }

  if (auth_ != nullptr) {
    // After a reload: the principal is still there (its grants refreshed), or this connection
    // ends with this answer.
    if (Status s = auth_->Recheck(&session->identity, session->peer_address); !s.ok()) {
      AnswerError(id, s, reply);
      return s;
    }
    if (Status s = Authorize(*root, *session); !s.ok()) {
      if (metrics_) metrics_->PermissionDenied();
      AnswerError(id, s, reply);
      return Status::Ok();
    }
  }

  switch (root->body_type()) {
    case wire::Body::ApplyRequest:
      HandleApply(id, *root->body_as_ApplyRequest(), session->identity.principal,
                  std::make_shared<std::vector<uint8_t>>(std::move(frame)), std::move(reply));
      return Status::Ok();
    case wire::Body::StatsRequest:
      HandleStats(id, std::move(reply));
      return Status::Ok();
    case wire::Body::BackupRequest:
      HandleBackup(id, *root->body_as_BackupRequest(), std::move(reply));
      return Status::Ok();
    case wire::Body::ScanRequest:
      HandleScan(id, *root->body_as_ScanRequest(), std::move(reply));
      return Status::Ok();
    case wire::Body::PurgeRequest:
      HandlePurge(id, *root->body_as_PurgeRequest(), std::move(reply));
      return Status::Ok();
    case wire::Body::CompactRequest:
      HandleCompact(id, *root->body_as_CompactRequest(), std::move(reply));
      return Status::Ok();
    case wire::Body::Hello:
      reply(EncodeHelloReply(id, info_));  // harmless repeat
      return Status::Ok();
    case wire::Body::NONE:
      reply(EncodeError(id, Status::InvalidArgument("frame has no body")));
      return Status::Ok();
    default:
      // A response type sent by a client, or a request type from a newer protocol revision.
      reply(
          EncodeError(id, Status::NotSupported("request type " +
                                               std::to_string(static_cast<int>(root->body_type())) +
                                               " not supported")));
      return Status::Ok();
  }
}

Status RequestHandler::Authorize(const wire::Frame& root, const Session& session) const {
  if (!session.identity.principal) return Status::Ok();
  const Principal& principal = *session.identity.principal;
  auto ns_of = [](const flatbuffers::String* ns) {
    return ns ? ns->string_view() : std::string_view();
  };
  switch (root.body_type()) {
    case wire::Body::StatsRequest:
      return CheckAdminEverywhere(principal, "read the stats");
    case wire::Body::BackupRequest:
      return CheckAdminEverywhere(principal, "take a backup");
    case wire::Body::ScanRequest:
      return CheckPermission(principal, ns_of(root.body_as_ScanRequest()->ns()),
                             Permission::kAdmin);
    case wire::Body::PurgeRequest:
      return CheckPermission(principal, ns_of(root.body_as_PurgeRequest()->ns()),
                             Permission::kAdmin);
    case wire::Body::CompactRequest: {
      const std::string_view ns = ns_of(root.body_as_CompactRequest()->ns());
      return ns.empty() ? CheckAdminEverywhere(principal, "compact the whole store")
                        : CheckPermission(principal, ns, Permission::kAdmin);
    }
    default:  // ApplyRequest: op by op, in the ApplyPath; the rest need no permission
      return Status::Ok();
  }
}

void RequestHandler::HandleApply(uint64_t id, const wire::ApplyRequest& request,
                                 std::shared_ptr<const Principal> principal,
                                 std::shared_ptr<std::vector<uint8_t>> frame, Reply reply) {
  const auto* wire_ops = request.ops();
  const size_t n = wire_ops ? wire_ops->size() : 0;
  // Checked before decoding anything: the op count alone decides.
  if (n > info_.limits.max_batch_ops) {
    AnswerError(id,
                Status::InvalidArgument("request has " + std::to_string(n) +
                                        " operations; max_batch_ops is " +
                                        std::to_string(info_.limits.max_batch_ops)),
                reply);
    return;
  }
  if (Status s = CheckPayloadsFitFrame(request, frame->size()); !s.ok()) {
    AnswerError(id, s, reply);
    return;
  }
  // The ops borrow the frame's bytes: it rides along as their owner.
  DecodedOps decoded;
  decoded.ops.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    decoded.Add(DecodeOp(*wire_ops->Get(static_cast<flatbuffers::uoffset_t>(i)), info_.limits));
  }
  decoded.owner = std::move(frame);
  decoded.principal = std::move(principal);
  apply_.Apply(
      Transport::kBinary, std::move(decoded),
      [this, id, reply = std::move(reply)](Status status, std::vector<Result<OpResult>> results) {
        reply(status.ok() ? EncodeResponse(id, results) : EncodeError(id, status));
      });
}

FrameBytes RequestHandler::EncodeResponse(uint64_t id,
                                          std::span<const Result<OpResult>> results) const {
  // Checked from the results' sizes, before a byte of the response is built: 1,000 Gets of one
  // 1 MiB record would otherwise make a 1 GiB frame out of a 36 KB request.
  const size_t bound = ApplyResponseBytesBound(results);
  if (info_.max_reply_bytes != 0 && bound > info_.max_reply_bytes) {
    if (metrics_) metrics_->CountRequestError(Transport::kBinary, Status::Code::kInvalidArgument);
    return EncodeError(
        id, Status::InvalidArgument(
                "response of about " + std::to_string(bound) + " bytes exceeds max_reply_bytes " +
                std::to_string(info_.max_reply_bytes) +
                "; the operations were applied, their results are not returned (read fewer or "
                "smaller records per request)"));
  }
  return EncodeApplyResponse(id, results);
}

void RequestHandler::AnswerError(uint64_t id, const Status& error, const Reply& reply) const {
  if (metrics_) metrics_->CountRequestError(Transport::kBinary, error.code());
  reply(EncodeError(id, error));
}

void RequestHandler::HandleStats(uint64_t id, Reply reply) {
  // Stats reads RocksDB properties and lists WAL files: engine-thread work (or the loop's).
  queue_->Run([this, id, reply = std::move(reply)](bool stopped) {
    if (stopped) {
      reply(EncodeError(id, Status::Shutdown("server is stopping")));
      return;
    }
    Result<StoreStats> stats = store_->Stats();
    if (!stats.ok()) {
      reply(EncodeError(id, stats.status()));
      return;
    }
    reply(metrics_ ? EncodeStatsResponse(id, *stats, metrics_->Families())
                   : EncodeStatsResponse(id, *stats));
  });
}

void RequestHandler::HandleBackup(uint64_t id, const wire::BackupRequest& request, Reply reply) {
  if (backups_ == nullptr) {
    AnswerError(id, Status::NotSupported("this server takes no backups"), reply);
    return;
  }
  RunRemoteBackup(queue_, backups_, request.to() ? request.to()->str() : std::string(),
                  [this, id, reply = std::move(reply)](Result<BackupManifest> manifest) {
                    if (!manifest.ok()) {
                      AnswerError(id, manifest.status(), reply);
                      return;
                    }
                    reply(EncodeBackupResponse(id, *manifest));
                  });
}

// Admin queries run on threads of their own (CommitQueue::RunBlocking), never on the loop or an
// engine thread: a scan page or a purge step is bounded in keys (idem/admin.h), but each sorts
// the live memtable once to iterate it, and a compaction takes minutes. Their requests were
// decoded here; the task owns copies.
void RequestHandler::HandleScan(uint64_t id, const wire::ScanRequest& request, Reply reply) {
  Result<ScanRequest> scan = DecodeScanRequest(request, info_.limits);
  if (!scan.ok()) {
    AnswerError(id, scan.status(), reply);
    return;
  }
  // A page stops before the records that would not fit a response (its first one always comes:
  // a record larger than a response is refused below, as an ApplyResponse would be).
  const size_t overhead = ScanResponseBytesBound(0);
  if (info_.max_reply_bytes != 0) {
    scan->max_bytes = info_.max_reply_bytes > overhead ? info_.max_reply_bytes - overhead : 1;
  }
  RunAdmin(id, std::move(reply), [this, id, scan = std::move(*scan)]() -> Result<FrameBytes> {
    Result<ScanPage> page = store_->Scan(scan);
    if (!page.ok()) return page.status();
    size_t bytes = 0;
    for (const ScanEntry& e : page->records) bytes += ScanEntryBytes(e.key, e.record);
    const size_t bound = ScanResponseBytesBound(bytes);
    if (info_.max_reply_bytes != 0 && bound > info_.max_reply_bytes) {
      return Status::InvalidArgument("the record at key '" + page->records.front().key +
                                     "' makes a page of about " + std::to_string(bound) +
                                     " bytes, over max_reply_bytes " +
                                     std::to_string(info_.max_reply_bytes));
    }
    return EncodeScanResponse(id, *page);
  });
}

void RequestHandler::HandlePurge(uint64_t id, const wire::PurgeRequest& request, Reply reply) {
  RunAdmin(id, std::move(reply),
           [this, id, purge = DecodePurgeRequest(request)]() -> Result<FrameBytes> {
             Result<PurgeStep> step = store_->Purge(purge);
             if (!step.ok()) return step.status();
             return EncodePurgeResponse(id, *step);
           });
}

void RequestHandler::HandleCompact(uint64_t id, const wire::CompactRequest& request, Reply reply) {
  std::string ns = request.ns() ? request.ns()->str() : std::string();
  RunAdmin(id, std::move(reply), [this, id, ns = std::move(ns)]() -> Result<FrameBytes> {
    if (Status s = store_->Compact(ns); !s.ok()) return s;
    return EncodeCompactResponse(id);
  });
}

void RequestHandler::RunAdmin(uint64_t id, Reply reply, std::function<Result<FrameBytes>()> work) {
  Status started = queue_->RunBlocking(
      [this, id, reply, work = std::move(work)](bool stopped) -> CommitQueue::BlockingAnswer {
        // Shared: a frame moves only, and an answer is a std::function, which copies.
        auto response = std::make_shared<Result<FrameBytes>>(
            stopped ? Result<FrameBytes>(Status::Shutdown("server is stopping")) : work());
        return [this, id, reply, response] {
          if (!response->ok()) {
            AnswerError(id, response->status(), reply);
          } else {
            reply(std::move(**response));
          }
        };
      });
  if (!started.ok()) AnswerError(id, started, reply);
}

}  // namespace idem
