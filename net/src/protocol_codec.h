// The one place that converts between the engine's types (Op, OpResult, Status, StoreStats) and
// the wire tables of net/protocol.fbs. Used by the server's request handler and by the client.
//
// Decoding never trusts its input beyond what VerifyFrame checked: a missing field decodes as
// empty/zero and the engine's own validation rejects what is not allowed. Decoded Ops BORROW
// the frame's bytes (string_views into it): keep the frame alive while they are used.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <flatbuffers/flatbuffers.h>

#include "idem/admin.h"
#include "idem/backup.h"
#include "idem/metrics.h"
#include "idem/operation.h"
#include "idem/options.h"
#include "idem/result.h"
#include "idem/server_info.h"
#include "idem/store.h"
#include "protocol_generated.h"

namespace idem {

// Version 2: Op.ttl_ms, lease_ms and wait_ms are optional scalars, absent distinct from 0 (in
// version 1, 0 meant "the namespace's default"; now it is out of range), so a version 1 request
// could change meaning: the server speaks exactly this version.
inline constexpr uint32_t kProtocolVersion = 2;

// A whole frame, length prefix included, ready for the socket.
using FrameBytes = flatbuffers::DetachedBuffer;

// Runs the FlatBuffers Verifier over a frame body (no length prefix) and returns its root, or
// nullptr when the bytes are not a well-formed Frame. Nothing may be read from a frame before.
//
// Its work is proportional to `size`. FlatBuffers lets any number of references point at one
// object and its Verifier checks an object once per reference, so a frame that shares objects
// could cost far more than its size: one op listing 1,000,000 statuses, referenced 10,000
// times, is 4 MB and 10^10 string checks. An encoder never shares tables or vectors of tables
// or strings, so a frame without sharing holds at most one table and one status per 4 bytes;
// a frame counting more (per reference) fails verification once it has.
//
// A frame that passes may still name a body type and carry no body (a union's value is
// optional): callers check the body for null.
const wire::Frame* VerifyFrame(const uint8_t* data, size_t size);

// --- decoding -----------------------------------------------------------------------------
// InvalidArgument when `frame` names a body type but carries no body (see VerifyFrame).
Status CheckBodyPresent(const wire::Frame& frame);
// NotSupported for an op type this build does not know. InvalidArgument, with ValidateOp's
// message, when its condition lists more than limits.max_status_set statuses: the count is
// checked before anything is sized from it.
Result<Op> DecodeOp(const wire::Op& op, const Limits& limits);
// InvalidArgument when the payloads of `request`'s ops (payload and update.payload) add up to
// more than `frame_bytes`: only ops sharing one payload vector can do that, and they would make
// a small frame write (and a response carry) many times its size.
Status CheckPayloadsFitFrame(const wire::ApplyRequest& request, size_t frame_bytes);
// Status::Ok() for null; code 0 inside an Error is Corruption (an error must say what failed).
Status DecodeError(const wire::Error* error);
Record DecodeRecord(const wire::Record& record);
Result<OpResult> DecodeOpResult(const wire::OpResult& result);
// The response to an ApplyRequest of `expected` ops, from a verified frame of `frame_bytes`
// bytes: the whole-request error if it carries one; Corruption when it has no ApplyResponse
// body, not exactly `expected` results, or results whose bytes add up to more than the frame
// (results sharing one record, which would decode into many copies of it).
Status DecodeApplyResponse(const wire::Frame& frame, size_t frame_bytes, size_t expected,
                           std::vector<Result<OpResult>>* results);
// Corruption if the durability is neither "sync" nor "async".
Result<StoreStats> DecodeStats(const wire::StatsResponse& stats);
// The server's metric families (empty from a server that sends none); Corruption for an unknown
// metric type.
Result<std::vector<MetricFamily>> DecodeMetrics(const wire::StatsResponse& stats);
ServerInfo DecodeHelloReply(const wire::HelloReply& reply);
BackupManifest DecodeBackupResponse(const wire::BackupResponse& response);
// InvalidArgument when the filter lists more than limits.max_status_set statuses (counted
// before any is copied). The engine validates the rest.
Result<ScanRequest> DecodeScanRequest(const wire::ScanRequest& request, const Limits& limits);
// Corruption for an entry without a record, or entries whose bytes add up to more than the
// frame of `frame_bytes` (shared records, which would decode into many copies).
Result<ScanPage> DecodeScanResponse(const wire::ScanResponse& response, size_t frame_bytes);
PurgeRequest DecodePurgeRequest(const wire::PurgeRequest& request);
PurgeStep DecodePurgeResponse(const wire::PurgeResponse& response);

// --- encoding: whole frames ----------------------------------------------------------------
// Finishes `b` with `root` and puts the 4-byte little-endian length in front.
FrameBytes FinishFrame(flatbuffers::FlatBufferBuilder& b, flatbuffers::Offset<wire::Frame> root);
// `token` empty: the Hello carries none (the field is absent).
FrameBytes EncodeHello(uint64_t id, std::string_view client_name, std::string_view token = {});
FrameBytes EncodeHelloReply(uint64_t id, const ServerInfo& info);
FrameBytes EncodeApplyRequest(uint64_t id, std::span<const Op> ops);
// The same frame, built in `b` (cleared first; a sender reuses one builder for every request)
// and appended to `out`.
void AppendApplyRequest(flatbuffers::FlatBufferBuilder& b, uint64_t id, std::span<const Op> ops,
                        std::string* out);
FrameBytes EncodeApplyResponse(uint64_t id, std::span<const Result<OpResult>> results);
// At least the size, length prefix included, of EncodeApplyResponse's frame for `results`, and
// at most about 2 KB plus 100 bytes per result more: computed from the results' field sizes, so
// a server checks a response against its limit before building it.
size_t ApplyResponseBytesBound(std::span<const Result<OpResult>> results);
FrameBytes EncodeStatsRequest(uint64_t id);
FrameBytes EncodeStatsResponse(uint64_t id, const StoreStats& stats,
                               std::span<const MetricFamily> metrics = {});
FrameBytes EncodeBackupRequest(uint64_t id, std::string_view to);
FrameBytes EncodeBackupResponse(uint64_t id, const BackupManifest& manifest);
FrameBytes EncodeScanRequest(uint64_t id, const ScanRequest& request);
FrameBytes EncodeScanResponse(uint64_t id, const ScanPage& page);
// At least the size, length prefix included, of a ScanResponse frame whose `records` entries
// add up to `records_bytes` of ScanEntryBytes (engine/src/admin_query.h counts them): what
// a server subtracts from its max_reply_bytes to bound a page (ScanRequest::max_bytes).
size_t ScanResponseBytesBound(size_t records_bytes);
FrameBytes EncodePurgeRequest(uint64_t id, const PurgeRequest& request);
FrameBytes EncodePurgeResponse(uint64_t id, const PurgeStep& step);
FrameBytes EncodeCompactRequest(uint64_t id, std::string_view ns);  // "": the whole database
FrameBytes EncodeCompactResponse(uint64_t id);
// A whole-request error (id >= 1) or a connection-level one (id 0, the connection then closes).
FrameBytes EncodeError(uint64_t id, const Status& status);

}  // namespace idem
