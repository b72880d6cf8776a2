// The idemstore release this library was built as: the version a backup's manifest records, a
// server announces in its HelloReply, and every program prints for --version.
#pragma once

#include <string_view>

namespace idem {

std::string_view Version();  // e.g. "0.1.0" (the CMake project's version)

}  // namespace idem
