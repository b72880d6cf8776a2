// CRC-32C (engine/src/crc32c.h): both implementations against a bit-by-bit reference, and the
// mask round trip.
#include "crc32c.h"

#include <string>

#include <gtest/gtest.h>

namespace idem {
namespace {

uint32_t ReferenceCrc32c(std::string_view bytes) {
  uint32_t crc = 0xFFFFFFFFu;
  for (char c : bytes) {
    crc ^= static_cast<uint8_t>(c);
    for (int k = 0; k < 8; ++k) crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
  }
  return crc ^ 0xFFFFFFFFu;
}

TEST(Crc32cTest, HardwareAndPortableAgreeWithTheReference) {
  EXPECT_EQ(0xE3069283u, Crc32c("123456789"));  // the CRC-32C check value
  EXPECT_EQ(0xE3069283u, Crc32c("123456789", /*portable=*/true));
  std::string bytes;
  for (int i = 0; i < 10'000; ++i) bytes.push_back(static_cast<char>(i * 7919 % 251));
  for (size_t n : {0, 1, 7, 8, 9, 63, 4096, 10'000}) {
    const std::string_view prefix = std::string_view(bytes).substr(0, n);
    EXPECT_EQ(ReferenceCrc32c(prefix), Crc32c(prefix)) << n;
    EXPECT_EQ(ReferenceCrc32c(prefix), Crc32c(prefix, /*portable=*/true)) << n;
  }
}

TEST(Crc32cTest, MaskingRoundTripsAndChangesTheValue) {
  for (uint32_t crc : {0u, 1u, 0xE3069283u, 0xFFFFFFFFu}) {
    EXPECT_EQ(crc, UnmaskCrc(MaskCrc(crc)));
    EXPECT_NE(crc, MaskCrc(crc));
  }
}

}  // namespace
}  // namespace idem
