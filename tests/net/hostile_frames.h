// Frames a hostile peer can build by hand and our encoders never produce: a union type without
// its body, and objects shared between many references (FlatBuffers lets any offset point at
// any object, and its Verifier checks a shared object once per reference). Each returns a frame
// body (no length prefix), as a FrameParser hands it over.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <flatbuffers/flatbuffers.h>

#include "protocol_generated.h"

namespace idem::testing {

inline std::vector<uint8_t> Body(const flatbuffers::FlatBufferBuilder& b) {
  return std::vector<uint8_t>(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
}

// A Frame whose body_type is `type` and whose body is absent (the Verifier accepts it).
inline std::vector<uint8_t> FrameWithoutBody(uint64_t id, wire::Body type) {
  flatbuffers::FlatBufferBuilder b;
  wire::FrameBuilder frame(b);
  frame.add_id(id);
  frame.add_body_type(type);
  b.Finish(frame.Finish());
  return Body(b);
}

// An ApplyRequest of `refs` ops that all point at ONE CompareAndSet whose condition lists
// `statuses` statuses, all pointing at one string "S". refs = 10'000 and statuses = 1'000'000
// is a 4 MB frame that made the Verifier check 10^10 strings.
inline std::vector<uint8_t> SharedOpFrame(uint64_t id, size_t refs, size_t statuses) {
  flatbuffers::FlatBufferBuilder b(statuses * 4 + refs * 4 + 1024);
  auto s = b.CreateString("S");
  std::vector<flatbuffers::Offset<flatbuffers::String>> set(statuses, s);
  auto condition = wire::CreateCondition(b, b.CreateVector(set));
  auto op = wire::CreateOp(b, wire::OpType::CompareAndSet, b.CreateString("ns"),
                           b.CreateVector(std::vector<uint8_t>{'k'}), 0, 0, 0, 0, condition);
  std::vector<flatbuffers::Offset<wire::Op>> ops(refs, op);
  auto request = wire::CreateApplyRequest(b, b.CreateVector(ops));
  b.Finish(wire::CreateFrame(b, id, wire::Body::ApplyRequest, request.Union()));
  return Body(b);
}

// An ApplyRequest of `ops` Inserts with distinct keys that all point at ONE payload of
// `payload_bytes` bytes: a small frame that asks the engine to write ops * payload_bytes.
inline std::vector<uint8_t> SharedPayloadFrame(uint64_t id, size_t ops, size_t payload_bytes) {
  flatbuffers::FlatBufferBuilder b(payload_bytes + ops * 64 + 1024);
  auto payload = b.CreateVector(std::vector<uint8_t>(payload_bytes, 'p'));
  auto ns = b.CreateString("ns");
  auto status = b.CreateString("NEW");
  std::vector<flatbuffers::Offset<wire::Op>> offsets;
  for (size_t i = 0; i < ops; ++i) {
    std::string key = "shared-" + std::to_string(i);
    auto k = b.CreateVector(reinterpret_cast<const uint8_t*>(key.data()), key.size());
    offsets.push_back(wire::CreateOp(b, wire::OpType::Insert, ns, k, status, payload));
  }
  auto request = wire::CreateApplyRequest(b, b.CreateVector(offsets));
  b.Finish(wire::CreateFrame(b, id, wire::Body::ApplyRequest, request.Union()));
  return Body(b);
}

// An ApplyResponse of `results` results that all point at ONE OpResult (FOUND) whose record
// holds a payload of `payload_bytes` bytes: what a hostile server can send a client.
inline std::vector<uint8_t> SharedResultFrame(uint64_t id, size_t results, size_t payload_bytes) {
  flatbuffers::FlatBufferBuilder b(payload_bytes + results * 4 + 1024);
  auto record = wire::CreateRecord(b, b.CreateString("S"), 1, 0, 0,
                                   b.CreateVector(std::vector<uint8_t>(payload_bytes, 'p')));
  auto result = wire::CreateOpResult(b, 0, wire::Outcome::Found, record);
  std::vector<flatbuffers::Offset<wire::OpResult>> offsets(results, result);
  auto response = wire::CreateApplyResponse(b, b.CreateVector(offsets));
  b.Finish(wire::CreateFrame(b, id, wire::Body::ApplyResponse, response.Union()));
  return Body(b);
}

}  // namespace idem::testing
