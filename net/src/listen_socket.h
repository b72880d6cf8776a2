// The listening socket of a Server listener (binary protocol or HTTP), opened the same way for
// both: the host must be an IP address, and a non-loopback one needs allow_remote (exposing it is
// the operator's explicit choice); and what both listeners say about a socket they accepted.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange unincluded

#include <boost/asio.hpp>

#include "idem/result.h"

namespace idem {

// Opens, binds and listens `acceptor` on host:port and returns the bound port (the real one for
// port 0). InvalidArgument for a host that is not an IP address or a non-loopback one without
// `allow_remote`; IOError when binding fails. `listener` names the listener in messages ("" for
// the binary protocol's, "HTTP").
Result<uint16_t> OpenListenSocket(boost::asio::ip::tcp::acceptor& acceptor, const std::string& host,
                                  uint16_t port, bool allow_remote, std::string_view listener);

// An accepted socket's peer, read once at accept: `address` is its IP address (failed
// authentications count against it; "" when unknown), `name` "IP:PORT" for logs ("unknown peer").
struct PeerIdentity {
  std::string address;
  std::string name;
};
PeerIdentity DescribePeer(const boost::asio::ip::tcp::socket& socket);

}  // namespace idem
