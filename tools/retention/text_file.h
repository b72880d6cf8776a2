// Writing a report file: all or an IOError naming the path.
#pragma once

#include <string>

#include "idem/status.h"

namespace idem::retention {

// Writes `text` to `path` (replacing it) via a temporary file and a rename, so a reader never
// sees half a report.
Status WriteTextFile(const std::string& path, const std::string& text);

}  // namespace idem::retention
