// Byte counts for people: "1.50 MiB", "512 B" (binary units, three significant digits).
#pragma once

#include <cstdint>
#include <string>

namespace idem::retention {

std::string FormatBytes(uint64_t bytes);

}  // namespace idem::retention
