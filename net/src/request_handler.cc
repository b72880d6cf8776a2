#include "request_handler.h"

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>

namespace idem {

RequestHandler::RequestHandler(Store* store, CommitQueue* queue, OpWaiter* waiter,
                               ServerInfo info, ServerMetrics* metrics)
    : store_(store), queue_(queue), waiter_(waiter), info_(std::move(info)), metrics_(metrics) {}

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
    session->greeted = true;
    if (hello->client_name()) session->client_name = hello->client_name()->str();
    reply(EncodeHelloReply(id, info_));
    return Status::Ok();
  }

  switch (root->body_type()) {
    case wire::Body::ApplyRequest:
      HandleApply(id, *root->body_as_ApplyRequest(),
                  std::make_shared<std::vector<uint8_t>>(std::move(frame)), std::move(reply));
      return Status::Ok();
    case wire::Body::StatsRequest:
      HandleStats(id, std::move(reply));
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

void RequestHandler::HandleApply(uint64_t id, const wire::ApplyRequest& request,
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
  // Ops left out of the engine batch get a stand-in result here; their places are filled back
  // in below: ops this server cannot decode (unknown types) their error, and waiting Locks that
  // queued behind others (their stand-in is replaced by their wait's answer). Both side tables
  // are allocated only when needed: the common request has neither, and this runs once per
  // request.
  std::shared_ptr<std::vector<std::optional<Status>>> left_out;
  std::vector<Op> ops;
  ops.reserve(n);
  // Ops that wait for their key's holder: see op_waiter.h.
  struct Waits {
    size_t index;
    std::chrono::milliseconds wait;
    OpWaiter::Ticket ticket;
  };
  std::shared_ptr<std::vector<Waits>> waits;
  const auto received = std::chrono::steady_clock::now();
  for (size_t i = 0; i < n; ++i) {
    Result<Op> op = DecodeOp(*wire_ops->Get(static_cast<flatbuffers::uoffset_t>(i)), info_.limits);
    if (!op.ok()) {
      if (!left_out) left_out = std::make_shared<std::vector<std::optional<Status>>>(n);
      (*left_out)[i] = op.status();
      continue;
    }
    if (waiter_ && WaitsForHolder(*op)) {
      if (!waits) waits = std::make_shared<std::vector<Waits>>();
      waits->push_back({i, *op->wait, waiter_->Arrive(*op)});
      if (!waits->back().ticket.apply_now()) {
        if (!left_out) left_out = std::make_shared<std::vector<std::optional<Status>>>(n);
        (*left_out)[i] = Status::Busy("waiting its turn");
        continue;
      }
    }
    ops.push_back(std::move(*op));
  }
  // `frame` rides along in the callbacks: the ops' string_views point into it.
  // `request` points into `frame`'s buffer, which the callbacks keep alive.
  queue_->Submit(std::move(ops), [this, id, n, frame, request = &request, left_out, waits,
                                  received, reply = std::move(reply)](
                                     Status status, std::vector<Result<OpResult>> results) {
    if (!status.ok()) {
      if (waits) {
        for (const Waits& w : *waits) waiter_->Leave(w.ticket);
      }
      AnswerError(id, status, reply);
      return;
    }
    if (left_out && results.size() != n) {  // ops were left out: merge their stand-ins in
      std::vector<Result<OpResult>> merged;
      merged.reserve(n);
      size_t next = 0;
      for (size_t i = 0; i < n; ++i) {
        if ((*left_out)[i]) {
          merged.push_back(*(*left_out)[i]);
        } else {
          merged.push_back(std::move(results[next++]));
        }
      }
      results = std::move(merged);
    }
    if (!waits) {
      Answer(id, *request, results, received, reply);
      return;
    }
    // Reply once every waiting op has its final result (at once for those whose first answer
    // is final).
    struct Pending {
      std::mutex mu;
      std::vector<Result<OpResult>> results;  // guarded by mu
      size_t remaining;                       // guarded by mu
    };
    auto pending = std::make_shared<Pending>();
    pending->results = std::move(results);
    pending->remaining = waits->size();
    for (const Waits& w : *waits) {
      std::optional<Result<OpResult>> first;
      if (w.ticket.apply_now()) {
        std::lock_guard<std::mutex> lock(pending->mu);
        first = pending->results[w.index];
      }
      waiter_->Wait(w.ticket, received + w.wait, std::move(first),
                    [this, id, i = w.index, frame, request, received, pending,
                     reply](Result<OpResult> final_result) {
                      std::unique_lock<std::mutex> lock(pending->mu);
                      pending->results[i] = std::move(final_result);
                      if (--pending->remaining > 0) return;
                      std::vector<Result<OpResult>> all = std::move(pending->results);
                      lock.unlock();
                      Answer(id, *request, all, received, reply);
                    });
    }
  });
}

void RequestHandler::Answer(uint64_t id, const wire::ApplyRequest& request,
                            std::span<const Result<OpResult>> results,
                            std::chrono::steady_clock::time_point received,
                            const Reply& reply) const {
  if (metrics_) {
    // The op types come from the request itself: its ops were decoded into the batch, and one
    // that did not decode counts under its wire number (an unknown one as "unknown").
    const auto latency = std::chrono::steady_clock::now() - received;
    const auto* wire_ops = request.ops();
    for (size_t i = 0; i < results.size(); ++i) {
      const auto type = wire_ops->Get(static_cast<flatbuffers::uoffset_t>(i))->type();
      metrics_->CountOp(Transport::kBinary, static_cast<OpType>(type), results[i], latency);
    }
  }
  // Checked from the results' sizes, before a byte of the response is built: 1,000 Gets of one
  // 1 MiB record would otherwise make a 1 GiB frame out of a 36 KB request.
  const size_t bound = ApplyResponseBytesBound(results);
  if (info_.max_reply_bytes != 0 && bound > info_.max_reply_bytes) {
    AnswerError(id,
                Status::InvalidArgument(
                    "response of about " + std::to_string(bound) +
                    " bytes exceeds max_reply_bytes " + std::to_string(info_.max_reply_bytes) +
                    "; the operations were applied, their results are not returned (read fewer or "
                    "smaller records per request)"),
                reply);
    return;
  }
  reply(EncodeApplyResponse(id, results));
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

}  // namespace idem
