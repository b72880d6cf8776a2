// Test support: a network Client on a server under test (idemstored as a ServerProcess, say),
// with a request timeout generous enough for a loaded test machine.
#pragma once

#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "idem/client.h"

namespace idem::testing {

// Null (and a test failure) if the connection fails.
inline std::unique_ptr<Client> ConnectTo(const std::string& address) {
  ClientOptions options;
  options.address = address;
  options.request_timeout_ms = 20'000;
  auto client = Client::Connect(options);
  EXPECT_TRUE(client.ok()) << client.status().ToString();
  return client.ok() ? std::move(*client) : nullptr;
}

}  // namespace idem::testing
