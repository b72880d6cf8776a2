// The stored response's encoding (stored_response.h): what is written decodes to the same
// response, and damaged bytes are Corruption, never a crash or a huge allocation.
#include <string>

#include <gtest/gtest.h>

#include "stored_response.h"

namespace idem {
namespace {

StoredResponse Sample() {
  StoredResponse r;
  r.status = 201;
  r.headers = {{"Content-Type", "application/json"}, {"Location", "/orders/7"}};
  r.body = "{\"id\":7}";
  r.body_size = r.body.size();
  return r;
}

TEST(GatewayStoredResponseTest, RoundTrips) {
  const StoredResponse r = Sample();
  const std::string bytes = EncodeStoredResponse(r);
  EXPECT_EQ(EncodedStoredResponseSize(r), bytes.size());
  Result<StoredResponse> back = DecodeStoredResponse(bytes);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(r, *back);
}

TEST(GatewayStoredResponseTest, NotStoredMarkerKeepsStatusAndSizeOnly) {
  StoredResponse marker = Sample();
  marker.body_stored = false;
  marker.body.clear();
  marker.body_size = 5u << 20;
  const std::string bytes = EncodeStoredResponse(marker);
  EXPECT_LT(bytes.size(), 100u);
  Result<StoredResponse> back = DecodeStoredResponse(bytes);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_FALSE(back->body_stored);
  EXPECT_EQ(201u, back->status);
  EXPECT_EQ(5u << 20, back->body_size);
  EXPECT_TRUE(back->body.empty());
}

TEST(GatewayStoredResponseTest, EveryTruncationIsCorruption) {
  const std::string bytes = EncodeStoredResponse(Sample());
  for (size_t n = 0; n < bytes.size(); ++n) {
    Result<StoredResponse> r = DecodeStoredResponse(bytes.substr(0, n));
    ASSERT_FALSE(r.ok()) << "truncated to " << n;
    EXPECT_EQ(Status::Code::kCorruption, r.status().code());
  }
}

TEST(GatewayStoredResponseTest, DamageIsCorruption) {
  std::string bytes = EncodeStoredResponse(Sample());
  EXPECT_FALSE(DecodeStoredResponse(bytes + "x").ok());  // trailing bytes
  std::string bad_magic = bytes;
  bad_magic[0] = 'X';
  EXPECT_FALSE(DecodeStoredResponse(bad_magic).ok());
  std::string bad_status = bytes;
  bad_status[5] = 0;  // status 0
  bad_status[6] = 0;
  EXPECT_FALSE(DecodeStoredResponse(bad_status).ok());
  std::string huge_count = bytes;
  huge_count[7] = '\xff';  // 65535 headers in a record of a few dozen bytes
  huge_count[8] = '\xff';
  EXPECT_FALSE(DecodeStoredResponse(huge_count).ok());
  EXPECT_FALSE(DecodeStoredResponse("not a response").ok());
}

}  // namespace
}  // namespace idem
