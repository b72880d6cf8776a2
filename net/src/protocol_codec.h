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

#include "idem/operation.h"
#include "idem/options.h"
#include "idem/result.h"
#include "idem/server_info.h"
#include "idem/store.h"
#include "protocol_generated.h"

namespace idem {

inline constexpr uint32_t kProtocolVersion = 1;

// A whole frame, length prefix included, ready for the socket.
using FrameBytes = flatbuffers::DetachedBuffer;

// Runs the FlatBuffers Verifier over a frame body (no length prefix) and returns its root, or
// nullptr when the bytes are not a well-formed Frame. Nothing may be read from a frame before.
const wire::Frame* VerifyFrame(const uint8_t* data, size_t size);

// --- decoding -----------------------------------------------------------------------------
// NotSupported for an op type this build does not know.
Result<Op> DecodeOp(const wire::Op& op);
// Status::Ok() for null; code 0 inside an Error is Corruption (an error must say what failed).
Status DecodeError(const wire::Error* error);
Result<OpResult> DecodeOpResult(const wire::OpResult& result);
StoreStats DecodeStats(const wire::StatsResponse& stats);
ServerInfo DecodeHelloReply(const wire::HelloReply& reply);

// --- encoding: whole frames ----------------------------------------------------------------
// Finishes `b` with `root` and puts the 4-byte little-endian length in front.
FrameBytes FinishFrame(flatbuffers::FlatBufferBuilder& b, flatbuffers::Offset<wire::Frame> root);
FrameBytes EncodeHello(uint64_t id, std::string_view client_name);
FrameBytes EncodeHelloReply(uint64_t id, const ServerInfo& info);
FrameBytes EncodeApplyRequest(uint64_t id, std::span<const Op> ops);
// The same frame, built in `b` (cleared first; a sender reuses one builder for every request)
// and appended to `out`.
void AppendApplyRequest(flatbuffers::FlatBufferBuilder& b, uint64_t id, std::span<const Op> ops,
                        std::string* out);
FrameBytes EncodeApplyResponse(uint64_t id, std::span<const Result<OpResult>> results);
FrameBytes EncodeStatsRequest(uint64_t id);
FrameBytes EncodeStatsResponse(uint64_t id, const StoreStats& stats);
// A whole-request error (id >= 1) or a connection-level one (id 0, the connection then closes).
FrameBytes EncodeError(uint64_t id, const Status& status);

}  // namespace idem
