// libFuzzer target over everything that reads bytes a peer or the disk controls, without a
// socket or a database: the frame parser, VerifyFrame, the request and response decoders, op
// validation and the stored-record decoder. Build and run: `./dev fuzz [SECONDS]` (README).
//
// Each input is used three ways: as a byte stream for FrameParser (fed in pieces whose sizes
// come from the input), as one frame body for VerifyFrame and the decoders, and as a stored
// record value for DecodeRecord. Besides crashes and sanitizer reports, it checks the contracts
// the server relies on: decoding work and memory stay proportional to the frame, and a record
// that decodes re-encodes to the same bytes.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "frame_parser.h"
#include "idem/options.h"
#include "protocol_codec.h"
#include "record_codec.h"
#include "validation.h"

namespace idem {
namespace {

// What libFuzzer reports as a crash: a broken contract, not only a broken process.
void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "contract broken: %s\n", what);
    std::abort();
  }
}

void FuzzParser(const uint8_t* data, size_t size) {
  FrameParser parser(/*max_frame_bytes=*/64 * 1024);
  size_t offset = 0;
  size_t step = size > 0 ? 1 + data[0] % 17 : 1;  // varied piece sizes, as a socket delivers
  while (offset < size) {
    size_t piece = std::min(step, size - offset), consumed = 0;
    FrameParser::State state = parser.Feed(data + offset, piece, &consumed);
    Check(consumed <= piece, "parser consumed more than it was given");
    offset += consumed;
    if (state == FrameParser::State::kBad) {
      Check(parser.bad_length() == 0 || parser.bad_length() > 64 * 1024, "kBad for a good length");
      return;
    }
    if (state == FrameParser::State::kComplete) {
      std::vector<uint8_t> frame = parser.TakeFrame();
      Check(!frame.empty() && frame.size() <= 64 * 1024, "frame outside 1..max");
      VerifyFrame(frame.data(), frame.size());
    } else {
      Check(consumed == piece, "kNeedMore without consuming everything");
    }
    step = step * 5 % 23 + 1;
  }
}

void FuzzRequest(const wire::ApplyRequest& request, size_t frame_bytes) {
  const Limits limits;
  if (!CheckPayloadsFitFrame(request, frame_bytes).ok() || request.ops() == nullptr) return;
  uint64_t decoded_bytes = 0;
  for (const wire::Op* wire_op : *request.ops()) {
    Result<Op> op = DecodeOp(*wire_op, limits);
    if (!op.ok()) continue;
    Check(op->condition.status_in.size() <= limits.max_status_set, "status_in above the limit");
    decoded_bytes += op->payload.size() + (op->update.payload ? op->update.payload->size() : 0);
    (void)ValidateOp(*op, limits);
  }
  Check(decoded_bytes <= frame_bytes, "decoded payloads larger than the frame");
}

void FuzzFrame(const uint8_t* data, size_t size) {
  const wire::Frame* frame = VerifyFrame(data, size);
  if (frame == nullptr) return;
  (void)DecodeError(frame->error());
  if (!CheckBodyPresent(*frame).ok()) return;  // what the server answers such a frame with
  Check(frame->body_type() == wire::Body::NONE || frame->body() != nullptr, "body checked");
  switch (frame->body_type()) {
    case wire::Body::ApplyRequest:
      if (const wire::ApplyRequest* request = frame->body_as_ApplyRequest()) {
        FuzzRequest(*request, size);
      }
      break;
    case wire::Body::ApplyResponse: {
      const wire::ApplyResponse* response = frame->body_as_ApplyResponse();
      const size_t expected = response && response->results() ? response->results()->size() : 0;
      std::vector<Result<OpResult>> results;
      if (DecodeApplyResponse(*frame, size, expected, &results).ok()) {
        uint64_t bytes = 0;
        for (const Result<OpResult>& r : results) {
          if (r.ok() && r->record) bytes += r->record->payload.size() + r->record->status.size();
        }
        Check(bytes <= size, "decoded results larger than the frame");
        // What a server would check before sending them.
        Check(ApplyResponseBytesBound(results) >= EncodeApplyResponse(frame->id(), results).size(),
              "response size bound below the encoded size");
      }
      break;
    }
    case wire::Body::HelloReply:
      if (frame->body_as_HelloReply()) (void)DecodeHelloReply(*frame->body_as_HelloReply());
      break;
    case wire::Body::StatsResponse:
      if (frame->body_as_StatsResponse()) (void)DecodeStats(*frame->body_as_StatsResponse());
      break;
    case wire::Body::BackupResponse:
      if (frame->body_as_BackupResponse()) {
        (void)DecodeBackupResponse(*frame->body_as_BackupResponse());
      }
      break;
    case wire::Body::Hello:
      if (const wire::Hello* hello = frame->body_as_Hello(); hello && hello->client_name()) {
        (void)hello->client_name()->str();
      }
      break;
    default:
      break;
  }
}

void FuzzRecord(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  Record record;
  if (!DecodeRecord(in, &record).ok()) return;
  std::string again;
  EncodeRecord(record, &again);
  Record twice;
  Check(DecodeRecord(again, &twice).ok(), "a re-encoded record does not decode");
  Check(twice.payload == record.payload && twice.status == record.status &&
            twice.version == record.version && twice.expires_at_ms == record.expires_at_ms,
        "a re-encoded record decodes differently");
}

}  // namespace
}  // namespace idem

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  idem::FuzzParser(data, size);
  idem::FuzzFrame(data, size);
  idem::FuzzRecord(data, size);
  return 0;
}
