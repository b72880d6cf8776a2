#include "protocol_codec.h"

#include <algorithm>
#include <chrono>
#include <optional>

namespace idem {
namespace {

namespace fb = flatbuffers;

// The wire numbers are the engine's numbers (net/protocol.fbs): keep them in lockstep. Adding
// an engine op type or outcome fails here until the schema has it too.
#define IDEM_SAME_NUMBER(wire_enum, engine_enum) \
  static_assert(uint8_t(wire_enum) == uint8_t(engine_enum), #wire_enum)
IDEM_SAME_NUMBER(wire::OpType::Insert, OpType::kInsert);
IDEM_SAME_NUMBER(wire::OpType::CompareAndSet, OpType::kCompareAndSet);
IDEM_SAME_NUMBER(wire::OpType::Get, OpType::kGet);
IDEM_SAME_NUMBER(wire::OpType::Delete, OpType::kDelete);
IDEM_SAME_NUMBER(wire::OpType::Begin, OpType::kBegin);
IDEM_SAME_NUMBER(wire::OpType::Complete, OpType::kComplete);
IDEM_SAME_NUMBER(wire::OpType::Abort, OpType::kAbort);
IDEM_SAME_NUMBER(wire::OpType::Heartbeat, OpType::kHeartbeat);
IDEM_SAME_NUMBER(wire::OpType::IssueToken, OpType::kIssueToken);
IDEM_SAME_NUMBER(wire::OpType::ConsumeToken, OpType::kConsumeToken);
IDEM_SAME_NUMBER(wire::OpType::Lock, OpType::kLock);
IDEM_SAME_NUMBER(wire::OpType::Renew, OpType::kRenew);
IDEM_SAME_NUMBER(wire::OpType::Unlock, OpType::kUnlock);
IDEM_SAME_NUMBER(wire::OpType::Transition, OpType::kTransition);
IDEM_SAME_NUMBER(wire::OpType::Checkpoint, OpType::kCheckpoint);
IDEM_SAME_NUMBER(wire::OpType::MAX, OpType::kCheckpoint);
IDEM_SAME_NUMBER(wire::Outcome::Inserted, Outcome::kInserted);
IDEM_SAME_NUMBER(wire::Outcome::Exists, Outcome::kExists);
IDEM_SAME_NUMBER(wire::Outcome::Applied, Outcome::kApplied);
IDEM_SAME_NUMBER(wire::Outcome::ConditionFailed, Outcome::kConditionFailed);
IDEM_SAME_NUMBER(wire::Outcome::NotFound, Outcome::kNotFound);
IDEM_SAME_NUMBER(wire::Outcome::Deleted, Outcome::kDeleted);
IDEM_SAME_NUMBER(wire::Outcome::Found, Outcome::kFound);
IDEM_SAME_NUMBER(wire::Outcome::Started, Outcome::kStarted);
IDEM_SAME_NUMBER(wire::Outcome::InProgress, Outcome::kInProgress);
IDEM_SAME_NUMBER(wire::Outcome::Completed, Outcome::kCompleted);
IDEM_SAME_NUMBER(wire::Outcome::Mismatch, Outcome::kMismatch);
IDEM_SAME_NUMBER(wire::Outcome::FenceMismatch, Outcome::kFenceMismatch);
IDEM_SAME_NUMBER(wire::Outcome::Released, Outcome::kReleased);
IDEM_SAME_NUMBER(wire::Outcome::Issued, Outcome::kIssued);
IDEM_SAME_NUMBER(wire::Outcome::Consumed, Outcome::kConsumed);
IDEM_SAME_NUMBER(wire::Outcome::AlreadyConsumed, Outcome::kAlreadyConsumed);
IDEM_SAME_NUMBER(wire::Outcome::Acquired, Outcome::kAcquired);
IDEM_SAME_NUMBER(wire::Outcome::Held, Outcome::kHeld);
IDEM_SAME_NUMBER(wire::Outcome::Already, Outcome::kAlready);
IDEM_SAME_NUMBER(wire::Outcome::Illegal, Outcome::kIllegal);
IDEM_SAME_NUMBER(wire::Outcome::WrongKind, Outcome::kWrongKind);
IDEM_SAME_NUMBER(wire::Outcome::Expired, Outcome::kExpired);
IDEM_SAME_NUMBER(wire::Outcome::MAX, Outcome::kExpired);
IDEM_SAME_NUMBER(wire::RecordKind::Untyped, RecordKind::kUntyped);
IDEM_SAME_NUMBER(wire::RecordKind::Plain, RecordKind::kPlain);
IDEM_SAME_NUMBER(wire::RecordKind::Attempt, RecordKind::kAttempt);
IDEM_SAME_NUMBER(wire::RecordKind::Token, RecordKind::kToken);
IDEM_SAME_NUMBER(wire::RecordKind::Lock, RecordKind::kLock);
IDEM_SAME_NUMBER(wire::RecordKind::StateMachine, RecordKind::kStateMachine);
IDEM_SAME_NUMBER(wire::RecordKind::MAX, kLastRecordKind);
#undef IDEM_SAME_NUMBER

constexpr uint8_t kLastOpType = uint8_t(wire::OpType::MAX);
constexpr uint8_t kLastOutcome = uint8_t(wire::Outcome::MAX);

std::string_view View(const fb::String* s) {
  return s ? std::string_view(s->data(), s->size()) : std::string_view();
}
std::string_view View(const fb::Vector<uint8_t>* v) {
  return v ? std::string_view(reinterpret_cast<const char*>(v->data()), v->size())
           : std::string_view();
}
fb::Offset<fb::Vector<uint8_t>> Bytes(fb::FlatBufferBuilder& b, std::string_view s) {
  return b.CreateVector(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

fb::Offset<wire::Frame> MakeFrame(fb::FlatBufferBuilder& b, uint64_t id, wire::Body type,
                                  fb::Offset<void> body, fb::Offset<wire::Error> error = 0) {
  wire::FrameBuilder frame(b);
  frame.add_id(id);
  if (!body.IsNull()) {
    frame.add_body_type(type);
    frame.add_body(body);
  }
  if (!error.IsNull()) frame.add_error(error);
  return frame.Finish();
}

FrameBytes Finish(fb::FlatBufferBuilder& b, uint64_t id, wire::Body type, fb::Offset<void> body,
                  fb::Offset<wire::Error> error = 0) {
  return FinishFrame(b, MakeFrame(b, id, type, body, error));
}

// Finish, then the 4-byte length in front. The length goes in front only after Finish: the body
// thus stays a plain FlatBuffer, aligned relative to its own first byte, which is what a
// receiver verifies once it has copied the body into a buffer of its own. (FinishSizePrefixed
// would align the prefix instead, leaving 8-byte fields misaligned relative to the body.)
void FinishWithLength(fb::FlatBufferBuilder& b, fb::Offset<wire::Frame> root) {
  b.Finish(root);
  b.PushElement(static_cast<uint32_t>(b.GetSize()));
}

fb::Offset<wire::Error> MakeError(fb::FlatBufferBuilder& b, const Status& status) {
  return wire::CreateError(b, static_cast<uint32_t>(status.code()),
                           b.CreateString(status.message()));
}

// The wire encodes durations in milliseconds as optional scalars: absent is "not given", any
// value present (0 included) is passed on for the engine to check. A TTL's Forever() is -1, which
// is how Ttl holds it.
fb::Optional<int64_t> WireMillis(const std::optional<std::chrono::milliseconds>& d) {
  if (!d) return fb::nullopt;
  return d->count();
}
fb::Optional<int64_t> WireTtl(const std::optional<Ttl>& ttl) {
  if (!ttl) return fb::nullopt;
  return ttl->duration().count();
}
std::optional<std::chrono::milliseconds> MillisFromWire(fb::Optional<int64_t> ms) {
  if (!ms) return std::nullopt;
  return std::chrono::milliseconds(*ms);
}
std::optional<Ttl> TtlFromWire(fb::Optional<int64_t> ms) {
  if (!ms) return std::nullopt;
  return Ttl(std::chrono::milliseconds(*ms));
}

// Every field is written when set, whatever the op type: which fields a type reads is the
// engine's business (operation.h), so a new op type needs no change here.
fb::Offset<wire::Op> MakeOp(fb::FlatBufferBuilder& b, const Op& op) {
  fb::Offset<wire::Condition> condition = 0;
  if (!op.condition.Empty()) {
    std::vector<fb::Offset<fb::String>> statuses;
    statuses.reserve(op.condition.status_in.size());
    for (std::string_view s : op.condition.status_in) statuses.push_back(b.CreateString(s));
    auto status_in = statuses.empty() ? 0 : b.CreateVector(statuses);
    wire::OptionalUint64 version(op.condition.version.value_or(0));
    wire::OptionalUint64 fence(op.condition.fence.value_or(0));
    condition = wire::CreateCondition(b, status_in, op.condition.version ? &version : nullptr,
                                      op.condition.fence ? &fence : nullptr);
  }
  fb::Offset<wire::Update> update = 0;
  if (op.update.status || op.update.payload || op.update.ttl) {
    auto status = op.update.status ? b.CreateString(*op.update.status) : 0;
    auto payload = op.update.payload ? Bytes(b, *op.update.payload) : 0;
    wire::OptionalInt64 ttl(op.update.ttl ? op.update.ttl->duration().count() : 0);
    update = wire::CreateUpdate(b, status, payload, op.update.ttl ? &ttl : nullptr);
  }
  auto ns = b.CreateString(op.ns);
  auto key = Bytes(b, op.key);
  auto status = op.status.empty() ? 0 : b.CreateString(op.status);
  auto payload = op.payload.empty() ? 0 : Bytes(b, op.payload);
  auto fingerprint = op.fingerprint.empty() ? 0 : Bytes(b, op.fingerprint);
  auto owner = op.owner.empty() ? 0 : b.CreateString(op.owner);
  return wire::CreateOp(b, static_cast<wire::OpType>(op.type), ns, key, status, payload,
                        fingerprint, WireTtl(op.ttl), condition, update, owner,
                        WireMillis(op.lease), WireMillis(op.wait));
}

fb::Offset<wire::Record> MakeRecord(fb::FlatBufferBuilder& b, const Record& r) {
  return wire::CreateRecord(b, b.CreateString(r.status), r.version, r.fence,
                            Bytes(b, r.fingerprint), Bytes(b, r.payload), r.created_ms,
                            r.updated_ms, r.expires_at_ms, b.CreateString(r.owner),
                            r.lease_until_ms, static_cast<wire::RecordKind>(r.kind));
}

fb::Offset<wire::OpResult> MakeOpResult(fb::FlatBufferBuilder& b, const Result<OpResult>& r) {
  if (!r.ok()) {
    return wire::CreateOpResult(b, MakeError(b, r.status()), wire::Outcome::Unknown, 0, true);
  }
  auto record = r->record ? MakeRecord(b, *r->record) : 0;
  auto token = r->token.empty() ? 0 : b.CreateString(r->token);
  return wire::CreateOpResult(b, 0, static_cast<wire::Outcome>(r->outcome), record,
                              r->fingerprint_matches, token);
}

}  // namespace

FrameBytes FinishFrame(flatbuffers::FlatBufferBuilder& b, flatbuffers::Offset<wire::Frame> root) {
  FinishWithLength(b, root);
  return b.Release();
}

namespace {

// The generated Verify functions, with the one amplification they allow bounded (see
// VerifyFrame in the header). The Verifier counts tables (max_tables), once per reference; what
// it does not count is the strings of a vector of strings, and the only such vector a request
// holds is Condition::status_in. So the ops of an ApplyRequest are verified one by one here,
// counting their status_in entries against `statuses` (the frame's 4-byte slots), and every
// other table by its generated Verify.
const fb::Table* AsTable(const void* table) { return static_cast<const fb::Table*>(table); }

// Flattened: the generated Verify functions and the Verifier's helpers inline into this loop as
// they do into the generated whole-buffer verifier (out of line, a request verified ~30 % slower).
[[gnu::flatten]] bool VerifyApplyRequest(fb::Verifier& v, const wire::ApplyRequest* request,
                                         size_t statuses) {
  if (request == nullptr) return true;
  // ApplyRequest::Verify, with VerifyVectorOfTables(ops()) unrolled below.
  if (!AsTable(request)->VerifyTableStart(v) ||
      !AsTable(request)->VerifyOffset(v, wire::ApplyRequest::VT_OPS) ||
      !v.VerifyVector(request->ops())) {
    return false;
  }
  if (const auto* ops = request->ops()) {
    for (fb::uoffset_t i = 0; i < ops->size(); ++i) {
      const wire::Op* op = ops->Get(i);
      if (!op->Verify(v)) return false;
      const wire::Condition* condition = op->condition();
      const size_t n = condition && condition->status_in() ? condition->status_in()->size() : 0;
      if (n > statuses) return false;  // checked n strings too many, at most once
      statuses -= n;
    }
  }
  return v.EndTable();
}

// Frame::Verify, with an ApplyRequest body verified by VerifyApplyRequest. Keep it in step with
// the schema: a field appended to Frame must be verified here too. Flattened for the reason
// above.
[[gnu::flatten]] bool VerifyFrameTable(fb::Verifier& v, const wire::Frame* frame, size_t statuses) {
  const fb::Table* t = AsTable(frame);
  if (!t->VerifyTableStart(v) || !t->VerifyField<uint64_t>(v, wire::Frame::VT_ID, 8) ||
      !t->VerifyField<uint8_t>(v, wire::Frame::VT_BODY_TYPE, 1) ||
      !t->VerifyOffset(v, wire::Frame::VT_BODY)) {
    return false;
  }
  const bool body_ok = frame->body_type() == wire::Body::ApplyRequest
                           ? VerifyApplyRequest(v, frame->body_as_ApplyRequest(), statuses)
                           : wire::VerifyBody(v, frame->body(), frame->body_type());
  return body_ok && t->VerifyOffset(v, wire::Frame::VT_ERROR) && v.VerifyTable(frame->error()) &&
         v.EndTable();
}

}  // namespace

const wire::Frame* VerifyFrame(const uint8_t* data, size_t size) {
  // Depth: Frame > ApplyRequest > Op > Condition > vector > string is 6; 16 leaves room for
  // growth while bounding the verifier's recursion on hostile input. Every table starts with a
  // 4-byte offset to its vtable: a frame that shares none holds at most size / 4 of them.
  const size_t slots = size / sizeof(fb::uoffset_t);
  fb::Verifier::Options options;
  options.max_depth = 16;
  options.max_tables = static_cast<fb::uoffset_t>(std::min<size_t>(slots, 1u << 30));
  fb::Verifier v(data, size, options);
  // Verifier::VerifyBufferFromStart<Frame>, with Frame::Verify replaced.
  using fb::soffset_t, fb::uoffset_t;  // for the FLATBUFFERS_ macros
  if (size < FLATBUFFERS_MIN_BUFFER_SIZE || size >= FLATBUFFERS_MAX_BUFFER_SIZE) return nullptr;
  const fb::uoffset_t root = v.VerifyOffset(0);
  if (root == 0) return nullptr;
  const auto* frame = reinterpret_cast<const wire::Frame*>(data + root);
  if (!VerifyFrameTable(v, frame, slots)) return nullptr;
  return frame;
}

Status CheckBodyPresent(const wire::Frame& frame) {
  if (frame.body_type() == wire::Body::NONE || frame.body() != nullptr) return Status::Ok();
  return Status::InvalidArgument(
      std::string("frame has body type ") + wire::EnumNameBody(frame.body_type()) + " (" +
      std::to_string(static_cast<int>(frame.body_type())) + ") but no body");
}

Result<Op> DecodeOp(const wire::Op& in, const Limits& limits) {
  const uint8_t type = static_cast<uint8_t>(in.type());
  if (type == 0 || type > kLastOpType) {
    return Status::NotSupported("unknown operation type " + std::to_string(type));
  }
  Op op;
  op.type = static_cast<OpType>(type);
  op.ns = View(in.ns());
  op.key = View(in.key());
  op.status = View(in.status());
  op.payload = View(in.payload());
  op.fingerprint = View(in.fingerprint());
  op.owner = View(in.owner());
  op.ttl = TtlFromWire(in.ttl_ms());
  op.lease = MillisFromWire(in.lease_ms());
  op.wait = MillisFromWire(in.wait_ms());
  if (const wire::Condition* c = in.condition()) {
    if (c->status_in()) {
      const size_t n = c->status_in()->size();
      if (n > limits.max_status_set) {  // ValidateOp's message (engine/src/validation.cc)
        return Status::InvalidArgument("condition lists " + std::to_string(n) +
                                       " statuses; max_status_set is " +
                                       std::to_string(limits.max_status_set));
      }
      op.condition.status_in.reserve(n);
      for (const fb::String* s : *c->status_in()) op.condition.status_in.push_back(View(s));
    }
    if (c->version()) op.condition.version = c->version()->value();
    if (c->fence()) op.condition.fence = c->fence()->value();
  }
  if (const wire::Update* u = in.update()) {
    if (u->status()) op.update.status = View(u->status());
    if (u->payload()) op.update.payload = View(u->payload());
    if (u->ttl_ms()) op.update.ttl = Ttl(std::chrono::milliseconds(u->ttl_ms()->value()));
  }
  return op;
}

Status CheckPayloadsFitFrame(const wire::ApplyRequest& request, size_t frame_bytes) {
  if (request.ops() == nullptr) return Status::Ok();
  uint64_t total = 0;
  for (const wire::Op* op : *request.ops()) {
    if (op->payload()) total += op->payload()->size();
    if (op->update() && op->update()->payload()) total += op->update()->payload()->size();
  }
  if (total <= frame_bytes) return Status::Ok();
  return Status::InvalidArgument("operations carry " + std::to_string(total) +
                                 " payload bytes in a frame of " + std::to_string(frame_bytes) +
                                 " bytes: ops share a payload, which no encoder does");
}

Status DecodeError(const wire::Error* error) {
  if (error == nullptr) return Status::Ok();
  if (error->code() == 0) return Status::Corruption("error frame with code 0 (OK)");
  return Status::FromCode(error->code(), View(error->message()));
}

Record DecodeRecord(const wire::Record& r) {
  Record rec;
  rec.status = View(r.status());
  rec.version = r.version();
  rec.fence = r.fence();
  rec.fingerprint = View(r.fingerprint());
  rec.payload = View(r.payload());
  rec.created_ms = r.created_ms();
  rec.updated_ms = r.updated_ms();
  rec.expires_at_ms = r.expires_at_ms();
  rec.owner = View(r.owner());
  rec.lease_until_ms = r.lease_until_ms();
  // A kind this build does not know (a newer server's) is kept as its number: the record
  // itself is still good, RecordKindName calls it "unknown".
  rec.kind = static_cast<RecordKind>(r.kind());
  return rec;
}

Result<OpResult> DecodeOpResult(const wire::OpResult& in) {
  if (in.error()) return DecodeError(in.error());
  const uint8_t outcome = static_cast<uint8_t>(in.outcome());
  if (outcome == 0 || outcome > kLastOutcome) {
    return Status::Corruption("unknown outcome " + std::to_string(outcome));
  }
  OpResult out;
  out.outcome = static_cast<Outcome>(outcome);
  out.fingerprint_matches = in.fingerprint_matches();
  out.token = View(in.token());
  if (const wire::Record* r = in.record()) out.record = DecodeRecord(*r);
  return out;
}

namespace {
uint64_t WireSize(const auto* v) { return v ? v->size() : 0; }

// The bytes DecodeRecord copies out of `r`.
uint64_t DecodedBytes(const wire::Record& r) {
  return WireSize(r.status()) + WireSize(r.fingerprint()) + WireSize(r.payload()) +
         WireSize(r.owner());
}

// The bytes DecodeOpResult copies out of `in` (a shared object is counted once per reference).
uint64_t DecodedBytes(const wire::OpResult& in) {
  uint64_t n = WireSize(in.token());
  if (in.error()) n += WireSize(in.error()->message());
  if (const wire::Record* r = in.record()) n += DecodedBytes(*r);
  return n;
}
}  // namespace

Status DecodeApplyResponse(const wire::Frame& frame, size_t frame_bytes, size_t expected,
                           std::vector<Result<OpResult>>* results) {
  results->clear();
  if (Status error = DecodeError(frame.error()); !error.ok()) return error;
  const wire::ApplyResponse* response = frame.body_as_ApplyResponse();
  if (response == nullptr) {
    return Status::Corruption("expected an ApplyResponse, got body type " +
                              std::to_string(static_cast<int>(frame.body_type())) +
                              (frame.body() ? "" : " without a body"));
  }
  const size_t n = response->results() ? response->results()->size() : 0;
  if (response->results() == nullptr || n != expected) {
    return Status::Corruption("expected " + std::to_string(expected) + " results, got " +
                              (response->results() ? std::to_string(n) : "none"));
  }
  uint64_t bytes = 0;
  for (const wire::OpResult* r : *response->results()) bytes += DecodedBytes(*r);
  if (bytes > frame_bytes) {
    return Status::Corruption("results hold " + std::to_string(bytes) + " bytes in a frame of " +
                              std::to_string(frame_bytes) + ": they share records");
  }
  results->reserve(n);
  for (const wire::OpResult* r : *response->results()) results->push_back(DecodeOpResult(*r));
  return Status::Ok();
}

Result<StoreStats> DecodeStats(const wire::StatsResponse& in) {
  StoreStats s;
  // The wire carries the mode's name, as idemstored's flag spells it.
  const std::string_view durability = View(in.durability());
  if (durability == DurabilityName(Durability::kSync)) {
    s.durability = Durability::kSync;
  } else if (durability == DurabilityName(Durability::kAsync)) {
    s.durability = Durability::kAsync;
  } else {
    return Status::Corruption("unknown durability in StatsResponse: \"" + std::string(durability) +
                              "\"");
  }
  s.estimated_live_records = in.estimated_live_records();
  s.sst_bytes = in.sst_bytes();
  s.memtable_bytes = in.memtable_bytes();
  s.wal_bytes = in.wal_bytes();
  s.next_fence = in.next_fence();
  s.ops = in.ops();
  s.writes = in.writes();
  s.user_bytes_written = in.user_bytes_written();
  s.flush_bytes_written = in.flush_bytes_written();
  s.compaction_bytes_read = in.compaction_bytes_read();
  s.compaction_bytes_written = in.compaction_bytes_written();
  s.compactions = in.compactions();
  s.records_dropped_by_compaction = in.records_dropped_by_compaction();
  s.live_sst_bytes = in.live_sst_bytes();
  s.wal_syncs = in.wal_syncs();
  s.admin_overrides = in.admin_overrides();
  s.block_cache_bytes = in.block_cache_bytes();
  s.block_cache_capacity_bytes = in.block_cache_capacity_bytes();
  s.table_readers_bytes = in.table_readers_bytes();
  s.pending_compaction_bytes = in.pending_compaction_bytes();
  s.write_stalls = in.write_stalls();
  s.write_stalled = in.write_stalled();
  s.background_errors = in.background_errors();
  s.expired_unreclaimed_records = in.expired_unreclaimed_records();
  s.clock_steps = in.clock_steps();
  s.expiry_windows = in.expiry_windows();
  s.reclaim_failures = in.reclaim_failures();
  return s;
}

Result<std::vector<MetricFamily>> DecodeMetrics(const wire::StatsResponse& in) {
  std::vector<MetricFamily> out;
  if (in.metrics() == nullptr) return out;
  out.reserve(in.metrics()->size());
  for (const wire::MetricFamily* f : *in.metrics()) {
    MetricFamily family;
    family.name = View(f->name());
    family.help = View(f->help());
    if (f->type() > wire::MetricType::MAX) {
      return Status::Corruption("unknown metric type " +
                                std::to_string(static_cast<int>(f->type())) + " of " + family.name);
    }
    family.type = static_cast<MetricType>(f->type());
    if (f->samples()) {
      for (const wire::MetricSample* in_sample : *f->samples()) {
        MetricSample sample;
        if (in_sample->labels()) {
          for (const wire::MetricLabel* l : *in_sample->labels()) {
            sample.labels.emplace_back(View(l->name()), View(l->value()));
          }
        }
        sample.value = in_sample->value();
        if (in_sample->buckets()) {
          for (const wire::MetricBucket* b : *in_sample->buckets()) {
            sample.buckets.emplace_back(b->le(), b->count());
          }
        }
        sample.sum = in_sample->sum();
        sample.count = in_sample->count();
        family.samples.push_back(std::move(sample));
      }
    }
    out.push_back(std::move(family));
  }
  return out;
}

ServerInfo DecodeHelloReply(const wire::HelloReply& in) {
  ServerInfo info;
  info.server_version = View(in.server_version());
  info.max_frame_bytes = in.max_frame_bytes();
  info.max_inflight_requests = in.max_inflight_requests();
  info.idle_timeout_ms = in.idle_timeout_ms();
  info.limits.max_batch_ops = in.max_batch_ops();
  info.limits.max_key_bytes = in.max_key_bytes();
  info.limits.max_namespace_bytes = in.max_namespace_bytes();
  info.limits.max_status_bytes = in.max_status_bytes();
  info.limits.max_fingerprint_bytes = in.max_fingerprint_bytes();
  info.limits.max_payload_bytes = in.max_payload_bytes();
  info.limits.max_status_set = in.max_status_set();
  info.limits.max_owner_bytes = in.max_owner_bytes();
  info.limits.max_wait_ms = in.max_wait_ms();
  info.max_reply_bytes = in.max_reply_bytes();
  return info;
}

FrameBytes EncodeHello(uint64_t id, std::string_view client_name, std::string_view token) {
  fb::FlatBufferBuilder b(128 + token.size());
  const auto name = b.CreateString(client_name);
  const auto secret = token.empty() ? fb::Offset<fb::String>() : b.CreateString(token);
  auto hello = wire::CreateHello(b, kProtocolVersion, name, secret);
  return Finish(b, id, wire::Body::Hello, hello.Union());
}

FrameBytes EncodeHelloReply(uint64_t id, const ServerInfo& info) {
  fb::FlatBufferBuilder b(256);
  auto u32 = [](size_t v) { return static_cast<uint32_t>(std::min<size_t>(v, UINT32_MAX)); };
  auto reply = wire::CreateHelloReply(
      b, kProtocolVersion, b.CreateString(info.server_version), u32(info.max_frame_bytes),
      u32(info.limits.max_batch_ops), u32(info.max_inflight_requests),
      u32(info.limits.max_key_bytes), u32(info.limits.max_namespace_bytes),
      u32(info.limits.max_status_bytes), u32(info.limits.max_fingerprint_bytes),
      u32(info.limits.max_payload_bytes), u32(info.limits.max_status_set), info.idle_timeout_ms,
      u32(info.limits.max_owner_bytes), info.limits.max_wait_ms, u32(info.max_reply_bytes));
  return Finish(b, id, wire::Body::HelloReply, reply.Union());
}

namespace {
fb::Offset<wire::Frame> MakeApplyRequest(fb::FlatBufferBuilder& b, uint64_t id,
                                         std::span<const Op> ops) {
  std::vector<fb::Offset<wire::Op>> offsets;
  offsets.reserve(ops.size());
  for (const Op& op : ops) offsets.push_back(MakeOp(b, op));
  auto request = wire::CreateApplyRequest(b, b.CreateVector(offsets));
  return MakeFrame(b, id, wire::Body::ApplyRequest, request.Union());
}
}  // namespace

FrameBytes EncodeApplyRequest(uint64_t id, std::span<const Op> ops) {
  fb::FlatBufferBuilder b(256);
  return FinishFrame(b, MakeApplyRequest(b, id, ops));
}

void AppendApplyRequest(flatbuffers::FlatBufferBuilder& b, uint64_t id, std::span<const Op> ops,
                        std::string* out) {
  b.Clear();
  FinishWithLength(b, MakeApplyRequest(b, id, ops));
  out->append(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
}

FrameBytes EncodeApplyResponse(uint64_t id, std::span<const Result<OpResult>> results) {
  fb::FlatBufferBuilder b(256);
  std::vector<fb::Offset<wire::OpResult>> offsets;
  offsets.reserve(results.size());
  for (const Result<OpResult>& r : results) offsets.push_back(MakeOpResult(b, r));
  auto response = wire::CreateApplyResponse(b, b.CreateVector(offsets));
  return Finish(b, id, wire::Body::ApplyResponse, response.Union());
}

// Bounds from FlatBuffers' layout. A table is a 4-byte vtable offset, its fields (a scalar
// written only when not its default) and at most 7 bytes of alignment padding; a string or
// vector is a 4-byte length, its bytes, a string's terminating 0 and padding. Vtables are shared
// by every table of the same shape, so they are counted once per possible shape: 32 for OpResult
// of 16, 4 for Error of 8, and for Record (its seven scalars present or not: 128 shapes) of 28
// bytes once per record, up to 128.
size_t ApplyResponseBytesBound(std::span<const Result<OpResult>> results) {
  constexpr size_t kFrame = 160 + 32 * 16 + 4 * 8;  // prefix, root, Frame, vtables
  constexpr size_t kOpResult = 4 + 32;              // its slot in the vector, the table
  constexpr size_t kError = 24;                     // the table, without the message
  constexpr size_t kRecord = 80;  // the table: 4 offsets, 6 8-byte scalars, the kind byte
  constexpr size_t kRecordShapes = 128, kRecordVtable = 28;
  constexpr size_t kString = 12;  // length, terminator, padding
  size_t n = kFrame;
  size_t records = 0;
  for (const Result<OpResult>& r : results) {
    n += kOpResult;
    if (!r.ok()) {
      n += kError + kString + r.status().message().size();
      continue;
    }
    if (!r->token.empty()) n += kString + r->token.size();
    if (const std::optional<Record>& rec = r->record) {
      ++records;
      n += kRecord + 4 * kString + rec->status.size() + rec->fingerprint.size() +
           rec->payload.size() + rec->owner.size();
    }
  }
  return n + std::min(records, kRecordShapes) * kRecordVtable;
}

FrameBytes EncodeStatsRequest(uint64_t id) {
  fb::FlatBufferBuilder b(64);
  return Finish(b, id, wire::Body::StatsRequest, wire::CreateStatsRequest(b).Union());
}

FrameBytes EncodeStatsResponse(uint64_t id, const StoreStats& s,
                               std::span<const MetricFamily> metrics) {
  fb::FlatBufferBuilder b(metrics.empty() ? 128 : 4096);
  std::vector<fb::Offset<wire::MetricFamily>> families;
  families.reserve(metrics.size());
  for (const MetricFamily& f : metrics) {
    std::vector<fb::Offset<wire::MetricSample>> samples;
    samples.reserve(f.samples.size());
    for (const MetricSample& sample : f.samples) {
      std::vector<fb::Offset<wire::MetricLabel>> labels;
      labels.reserve(sample.labels.size());
      for (const auto& [name, value] : sample.labels) {
        labels.push_back(wire::CreateMetricLabel(b, b.CreateString(name), b.CreateString(value)));
      }
      std::vector<wire::MetricBucket> buckets;
      buckets.reserve(sample.buckets.size());
      for (const auto& [le, count] : sample.buckets) buckets.emplace_back(le, count);
      samples.push_back(wire::CreateMetricSample(
          b, labels.empty() ? 0 : b.CreateVector(labels), sample.value,
          buckets.empty() ? 0 : b.CreateVectorOfStructs(buckets), sample.sum, sample.count));
    }
    families.push_back(wire::CreateMetricFamily(b, b.CreateString(f.name), b.CreateString(f.help),
                                                static_cast<wire::MetricType>(f.type),
                                                b.CreateVector(samples)));
  }
  auto stats = wire::CreateStatsResponse(
      b, s.estimated_live_records, s.sst_bytes, s.memtable_bytes, s.wal_bytes, s.next_fence, s.ops,
      s.writes, b.CreateString(DurabilityName(s.durability)), s.user_bytes_written,
      s.flush_bytes_written, s.compaction_bytes_read, s.compaction_bytes_written, s.compactions,
      s.records_dropped_by_compaction, s.live_sst_bytes, s.wal_syncs, s.block_cache_bytes,
      s.block_cache_capacity_bytes, s.table_readers_bytes, s.admin_overrides,
      s.pending_compaction_bytes, s.write_stalls, s.write_stalled, s.background_errors,
      s.expired_unreclaimed_records, s.clock_steps, families.empty() ? 0 : b.CreateVector(families),
      s.expiry_windows, s.reclaim_failures);
  return Finish(b, id, wire::Body::StatsResponse, stats.Union());
}

FrameBytes EncodeBackupRequest(uint64_t id, std::string_view to) {
  fb::FlatBufferBuilder b(64 + to.size());
  auto path = b.CreateString(to.data(), to.size());
  return Finish(b, id, wire::Body::BackupRequest, wire::CreateBackupRequest(b, path).Union());
}

FrameBytes EncodeBackupResponse(uint64_t id, const BackupManifest& m) {
  fb::FlatBufferBuilder b(256);
  auto utc = b.CreateString(m.created_utc);
  auto version = b.CreateString(m.idemstore_version);
  return Finish(b, id, wire::Body::BackupResponse,
                wire::CreateBackupResponse(b, m.created_ms, utc, version, m.fence_high_water,
                                           m.fence_floor, m.estimated_records)
                    .Union());
}

BackupManifest DecodeBackupResponse(const wire::BackupResponse& r) {
  BackupManifest m;
  m.created_ms = r.created_ms();
  if (r.created_utc()) m.created_utc = r.created_utc()->str();
  if (r.idemstore_version()) m.idemstore_version = r.idemstore_version()->str();
  m.fence_high_water = r.fence_high_water();
  m.fence_floor = r.fence_floor();
  m.estimated_records = r.estimated_records();
  return m;
}

FrameBytes EncodeScanRequest(uint64_t id, const ScanRequest& r) {
  fb::FlatBufferBuilder b(128 + r.ns.size() + r.prefix.size() + r.cursor.size());
  auto ns = b.CreateString(r.ns);
  auto prefix = r.prefix.empty() ? 0 : Bytes(b, r.prefix);
  auto statuses = r.status_in.empty() ? 0 : b.CreateVectorOfStrings(r.status_in);
  auto cursor = r.cursor.empty() ? 0 : Bytes(b, r.cursor);
  const auto limit = static_cast<uint32_t>(std::min<size_t>(r.limit, UINT32_MAX));
  return Finish(
      b, id, wire::Body::ScanRequest,
      wire::CreateScanRequest(b, ns, prefix, statuses, r.lease_ended, cursor, limit).Union());
}

Result<ScanRequest> DecodeScanRequest(const wire::ScanRequest& in, const Limits& limits) {
  ScanRequest r;
  r.ns = View(in.ns());
  r.prefix = View(in.prefix());
  if (in.status_in()) {
    const size_t n = in.status_in()->size();
    if (n > limits.max_status_set) {  // counted before any is copied
      return Status::InvalidArgument("scan filter names " + std::to_string(n) +
                                     " statuses; max_status_set is " +
                                     std::to_string(limits.max_status_set));
    }
    r.status_in.reserve(n);
    for (const fb::String* s : *in.status_in()) r.status_in.emplace_back(View(s));
  }
  r.lease_ended = in.lease_ended();
  r.cursor = View(in.cursor());
  r.limit = in.limit();
  return r;
}

FrameBytes EncodeScanResponse(uint64_t id, const ScanPage& page) {
  fb::FlatBufferBuilder b(1024);
  std::vector<fb::Offset<wire::ScanEntry>> entries;
  entries.reserve(page.records.size());
  for (const ScanEntry& e : page.records) {
    auto key = Bytes(b, e.key);
    entries.push_back(wire::CreateScanEntry(b, key, MakeRecord(b, e.record)));
  }
  auto records = b.CreateVector(entries);
  auto cursor = page.cursor.empty() ? 0 : Bytes(b, page.cursor);
  return Finish(b, id, wire::Body::ScanResponse,
                wire::CreateScanResponse(b, records, cursor, page.examined).Union());
}

Result<ScanPage> DecodeScanResponse(const wire::ScanResponse& in, size_t frame_bytes) {
  ScanPage page;
  page.cursor = View(in.cursor());
  page.examined = in.examined();
  if (in.records() == nullptr) return page;
  uint64_t bytes = 0;
  for (const wire::ScanEntry* e : *in.records()) {
    bytes += WireSize(e->key()) + (e->record() ? DecodedBytes(*e->record()) : 0);
  }
  if (bytes > frame_bytes) {
    return Status::Corruption("scan entries hold " + std::to_string(bytes) +
                              " bytes in a frame of " + std::to_string(frame_bytes) +
                              ": they share records");
  }
  page.records.reserve(in.records()->size());
  for (const wire::ScanEntry* e : *in.records()) {
    if (e->record() == nullptr) return Status::Corruption("scan entry without a record");
    page.records.push_back(ScanEntry{std::string(View(e->key())), DecodeRecord(*e->record())});
  }
  return page;
}

size_t ScanResponseBytesBound(size_t records_bytes) {
  // ScanEntryBytes covers each entry's framing; per response: the frame, the body, the cursor.
  constexpr size_t kPerResponse = 2048;
  return records_bytes + kPerResponse;
}

FrameBytes EncodePurgeRequest(uint64_t id, const PurgeRequest& r) {
  fb::FlatBufferBuilder b(64 + r.ns.size() + r.prefix.size() + r.cursor.size());
  auto ns = b.CreateString(r.ns);
  auto prefix = r.prefix.empty() ? 0 : Bytes(b, r.prefix);
  auto cursor = r.cursor.empty() ? 0 : Bytes(b, r.cursor);
  return Finish(b, id, wire::Body::PurgeRequest,
                wire::CreatePurgeRequest(b, ns, prefix, cursor).Union());
}

PurgeRequest DecodePurgeRequest(const wire::PurgeRequest& in) {
  PurgeRequest r;
  r.ns = View(in.ns());
  r.prefix = View(in.prefix());
  r.cursor = View(in.cursor());
  return r;
}

FrameBytes EncodePurgeResponse(uint64_t id, const PurgeStep& step) {
  fb::FlatBufferBuilder b(64 + step.cursor.size());
  auto cursor = step.cursor.empty() ? 0 : Bytes(b, step.cursor);
  return Finish(b, id, wire::Body::PurgeResponse,
                wire::CreatePurgeResponse(b, step.deleted, step.forgotten, cursor).Union());
}

PurgeStep DecodePurgeResponse(const wire::PurgeResponse& in) {
  PurgeStep step;
  step.deleted = in.deleted();
  step.forgotten = in.forgotten();
  step.cursor = View(in.cursor());
  return step;
}

FrameBytes EncodeCompactRequest(uint64_t id, std::string_view ns) {
  fb::FlatBufferBuilder b(64 + ns.size());
  auto name = ns.empty() ? 0 : b.CreateString(ns.data(), ns.size());
  return Finish(b, id, wire::Body::CompactRequest, wire::CreateCompactRequest(b, name).Union());
}

FrameBytes EncodeCompactResponse(uint64_t id) {
  fb::FlatBufferBuilder b(64);
  return Finish(b, id, wire::Body::CompactResponse, wire::CreateCompactResponse(b).Union());
}

FrameBytes EncodeError(uint64_t id, const Status& status) {
  fb::FlatBufferBuilder b(128);
  auto error = MakeError(b, status);
  return Finish(b, id, wire::Body::NONE, 0, error);
}

}  // namespace idem
