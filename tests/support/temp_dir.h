// Test support: a temporary directory removed when it goes out of scope, and assertion macros
// for idem::Status / idem::Result.
#pragma once

#include <string>

#include <gtest/gtest.h>

#include "idem/result.h"
#include "idem/status.h"

namespace idem::testing {

class TempDir {
 public:
  TempDir();  // creates a fresh directory under $TMPDIR (or /tmp)
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string Sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace idem::testing

#define ASSERT_OK(expr)                                                  \
  do {                                                                   \
    const auto& _idem_s = (expr);                                        \
    ASSERT_TRUE(_idem_s.ok()) << ::idem::testing::StatusString(_idem_s); \
  } while (0)

namespace idem::testing {
inline std::string StatusString(const Status& s) { return s.ToString(); }
template <typename T>
std::string StatusString(const Result<T>& r) {
  return r.status().ToString();
}
}  // namespace idem::testing
