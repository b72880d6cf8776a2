// ServerInfo: what a server announces to each client in its HelloReply (docs/protocol.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "idem/options.h"

namespace idem {

struct ServerInfo {
  std::string server_version;        // "idemstored 0.1.0"
  size_t max_frame_bytes = 0;        // a larger request frame closes the connection
  size_t max_reply_bytes = 0;        // largest response frame; 0: not announced (older server)
  size_t max_inflight_requests = 0;  // read-ahead per connection before backpressure
  int64_t idle_timeout_ms = 0;       // connections idle this long are closed
  Limits limits;                     // the Store's input limits (max_batch_ops, key bytes, ...)
};

}  // namespace idem
