#include "listen_socket.h"

namespace idem {

Result<uint16_t> OpenListenSocket(boost::asio::ip::tcp::acceptor& acceptor, const std::string& host,
                                  uint16_t port, bool allow_remote, std::string_view listener) {
  namespace asio = boost::asio;
  using tcp = asio::ip::tcp;
  const std::string prefix = listener.empty() ? "" : std::string(listener) + " ";
  boost::system::error_code ec;
  asio::ip::address address = asio::ip::make_address(host, ec);
  if (ec)
    return Status::InvalidArgument(prefix + "listen host \"" + host + "\" is not an IP address");
  if (!address.is_loopback() && !allow_remote) {
    return Status::InvalidArgument(
        "refusing to listen " + (listener.empty() ? "" : "for " + std::string(listener) + " ") +
        "on non-loopback address " + host + " without allow_remote (--allow-remote)");
  }
  tcp::endpoint endpoint(address, port);
  auto fail = [&](const char* what) {
    return Status::IOError(prefix + what + " " + host + ":" + std::to_string(port) + ": " +
                           ec.message());
  };
  if (acceptor.open(endpoint.protocol(), ec)) return fail("open");
  if (acceptor.set_option(tcp::acceptor::reuse_address(true), ec)) return fail("setsockopt");
  if (acceptor.bind(endpoint, ec)) return fail("bind");
  if (acceptor.listen(asio::socket_base::max_listen_connections, ec)) return fail("listen");
  return acceptor.local_endpoint(ec).port();
}

PeerIdentity DescribePeer(const boost::asio::ip::tcp::socket& socket) {
  boost::system::error_code ec;
  const boost::asio::ip::tcp::endpoint remote = socket.remote_endpoint(ec);
  if (ec) return {"", "unknown peer"};
  std::string address = remote.address().to_string();
  std::string name = address + ":" + std::to_string(remote.port());
  return {std::move(address), std::move(name)};
}

}  // namespace idem
