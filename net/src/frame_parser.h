// FrameParser: splits a byte stream into frames. No socket: the connection (and the client)
// feed it whatever the socket returned, and tests feed it anything at all.
//
// Frame layout (docs/protocol.md): a 4-byte little-endian length N, then N bytes of body.
// N is checked against max_frame_bytes as soon as the 4 prefix bytes are in and before any
// buffer for the body is allocated, so a hostile prefix costs nothing; N = 0 is also bad.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace idem {

class FrameParser {
 public:
  enum class State {
    kNeedMore,  // every byte given was consumed; feed more
    kComplete,  // a frame is ready: TakeFrame(); bytes after it were not consumed
    kBad,       // length prefix is 0 or above the limit (bad_length()); the stream is unusable
  };

  explicit FrameParser(size_t max_frame_bytes) : max_frame_bytes_(max_frame_bytes) {}

  // Consumes bytes from [data, data + size) up to the end of the first frame they complete and
  // stores how many in *consumed. After kComplete call TakeFrame() before feeding again. After
  // kBad every call returns kBad.
  State Feed(const uint8_t* data, size_t size, size_t* consumed);

  // The body of the completed frame (without the prefix); resets for the next frame.
  std::vector<uint8_t> TakeFrame();

  // Forgets any partial frame and a kBad: the start of a new stream.
  void Reset();

  // Applies to frames whose length prefix is not yet complete (a client learns the server's
  // max_reply_bytes from its HelloReply).
  void set_max_frame_bytes(size_t max_frame_bytes) { max_frame_bytes_ = max_frame_bytes; }

  // No byte of the next frame has been fed yet.
  bool AtFrameStart() const { return prefix_bytes_ == 0 && !bad_; }

  // The offending length after kBad.
  uint64_t bad_length() const { return length_; }
  size_t max_frame_bytes() const { return max_frame_bytes_; }

 private:
  size_t max_frame_bytes_;
  uint8_t prefix_[4] = {};
  size_t prefix_bytes_ = 0;  // 0..4 bytes of the prefix received
  uint64_t length_ = 0;      // valid once prefix_bytes_ == 4
  std::vector<uint8_t> body_;
  bool bad_ = false;
};

}  // namespace idem
