#include "frame_parser.h"

#include <algorithm>
#include <cstring>

namespace idem {

FrameParser::State FrameParser::Feed(const uint8_t* data, size_t size, size_t* consumed) {
  *consumed = 0;
  if (bad_) return State::kBad;
  while (prefix_bytes_ < 4) {
    if (*consumed == size) return State::kNeedMore;
    prefix_[prefix_bytes_++] = data[(*consumed)++];
    if (prefix_bytes_ == 4) {
      length_ = uint64_t{prefix_[0]} | uint64_t{prefix_[1]} << 8 | uint64_t{prefix_[2]} << 16 |
                uint64_t{prefix_[3]} << 24;
      if (length_ == 0 || length_ > max_frame_bytes_) {
        bad_ = true;
        return State::kBad;
      }
      body_.reserve(length_);  // only now, with the length known to be within the limit
    }
  }
  size_t take = std::min<size_t>(size - *consumed, length_ - body_.size());
  body_.insert(body_.end(), data + *consumed, data + *consumed + take);
  *consumed += take;
  return body_.size() == length_ ? State::kComplete : State::kNeedMore;
}

std::vector<uint8_t> FrameParser::TakeFrame() {
  std::vector<uint8_t> frame = std::move(body_);
  body_ = {};
  prefix_bytes_ = 0;
  length_ = 0;
  return frame;
}

void FrameParser::Reset() {
  TakeFrame();
  bad_ = false;
}

}  // namespace idem
