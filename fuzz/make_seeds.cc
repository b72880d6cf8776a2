// Writes the fuzzer's seed corpus (fuzz/corpus/): one file per kind of input the harness reads,
// each small. Regenerate after a protocol or record-format change:
//   ./dev fuzz-seeds   (builds this in build-fuzz and rewrites fuzz/corpus/)
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "hostile_frames.h"
#include "protocol_codec.h"
#include "record_codec.h"

namespace idem {
namespace {

using namespace std::chrono_literals;

void Write(const std::string& dir, const std::string& name, const uint8_t* data, size_t size) {
  std::ofstream out(dir + "/" + name, std::ios::binary);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
}
// A frame body (what VerifyFrame sees) and, as a stream, the same frame with its prefix.
void WriteFrame(const std::string& dir, const std::string& name, const FrameBytes& frame) {
  Write(dir, name + ".body", frame.data() + 4, frame.size() - 4);
  Write(dir, name + ".stream", frame.data(), frame.size());
}
void WriteBody(const std::string& dir, const std::string& name, const std::vector<uint8_t>& b) {
  Write(dir, name + ".body", b.data(), b.size());
}

int Main(const std::string& dir) {
  WriteFrame(dir, "hello", EncodeHello(1, "seed"));
  ServerInfo info;
  info.server_version = "idemstored seed";
  info.max_frame_bytes = 4u << 20;
  info.max_reply_bytes = 4u << 20;
  info.limits = Limits{};
  WriteFrame(dir, "hello_reply", EncodeHelloReply(1, info));
  WriteFrame(dir, "stats_request", EncodeStatsRequest(2));
  StoreStats stats;
  stats.durability = Durability::kSync;
  stats.ops = 7;
  WriteFrame(dir, "stats_response", EncodeStatsResponse(2, stats));
  WriteFrame(dir, "error", EncodeError(0, Status::InvalidArgument("seed error")));

  std::vector<Op> ops = {
      Op::Insert({.ns = "ns",
                  .key = "k",
                  .status = "NEW",
                  .payload = "payload",
                  .fingerprint = "fp",
                  .ttl = 1s}),
      Op::CompareAndSet({.ns = "ns",
                         .key = "k",
                         .condition = {.status_in = {"A", "B"}, .version = 1, .fence = 2},
                         .update = {.status = "X", .payload = "y", .ttl = 5ms}}),
      Op::Get({.ns = "ns", .key = "k"}),
      Op::Delete({.ns = "ns", .key = "k", .condition = {.fence = 3}}),
  };
  Op begin = Op::Get({.ns = "ns", .key = "job"});
  begin.type = OpType::kBegin;
  begin.owner = "worker";
  begin.lease = 1s;
  begin.wait = 10ms;
  begin.fingerprint = "fp";
  ops.push_back(begin);
  Op transition = Op::Get({.ns = "ns", .key = "state"});
  transition.type = OpType::kTransition;
  transition.status = "DONE";
  ops.push_back(transition);
  WriteFrame(dir, "apply_request", EncodeApplyRequest(3, ops));

  std::vector<Result<OpResult>> results;
  Record record;
  record.status = "PAID";
  record.version = 2;
  record.fence = 9;
  record.fingerprint = "fp";
  record.payload = "response";
  record.created_ms = 1;
  record.updated_ms = 2;
  record.owner = "worker";
  record.lease_until_ms = 5;
  OpResult found;
  found.outcome = Outcome::kFound;
  found.record = record;
  results.push_back(found);
  OpResult issued;
  issued.outcome = Outcome::kIssued;
  issued.token = "tok";
  results.push_back(issued);
  results.push_back(OpResult{});
  results.push_back(Status::NotSupported("unknown operation type 99"));
  WriteFrame(dir, "apply_response", EncodeApplyResponse(3, results));

  WriteBody(dir, "no_body_apply", testing::FrameWithoutBody(4, wire::Body::ApplyRequest));
  WriteBody(dir, "no_body_response", testing::FrameWithoutBody(4, wire::Body::ApplyResponse));
  WriteBody(dir, "shared_op", testing::SharedOpFrame(5, 16, 64));
  WriteBody(dir, "shared_payload", testing::SharedPayloadFrame(6, 4, 64));
  WriteBody(dir, "shared_result", testing::SharedResultFrame(7, 4, 64));

  std::string stored;
  EncodeRecord(record, &stored);
  Write(dir, "record", reinterpret_cast<const uint8_t*>(stored.data()), stored.size());
  return 0;
}

}  // namespace
}  // namespace idem

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  return idem::Main(argv[1]);
}
