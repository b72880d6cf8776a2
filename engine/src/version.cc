#include "idem/version.h"

namespace idem {

// IDEM_VERSION is defined for this file only (engine/CMakeLists.txt), so that a new version
// rebuilds one file.
std::string_view Version() { return IDEM_VERSION; }

}  // namespace idem
