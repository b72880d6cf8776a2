// Test support for authentication: a credentials file (--auth-file) written by the test, its
// secrets hashed with HashSecret at test time, and the secrets the tests present.
#pragma once

#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "credentials.h"
#include "support/temp_dir.h"

namespace idem::testing {

// The principals the auth tests use, and their secrets.
inline const std::string kAdminToken = "admin-secret-0123456789";
inline const std::string kCheckoutToken = "checkout-secret-0123456789";  // payments rw
inline const std::string kReaderToken = "reader-secret-0123456789";      // payments read

class CredentialsFile {
 public:
  CredentialsFile() { Write(DefaultPrincipals()); }

  // "NAME SECRET GRANTS..." lines: each SECRET is replaced by its hash.
  static std::string DefaultPrincipals() {
    return "admin " + kAdminToken + " *:read,write,admin\n" +  //
           "checkout " + kCheckoutToken + " payments:read,write refunds:read\n" + "reader " +
           kReaderToken + " payments:read\n";
  }

  // Writes `principals` (lines as DefaultPrincipals') with every secret hashed.
  void Write(const std::string& principals) {
    std::string text = "# written by the test\n";
    size_t begin = 0;
    while (begin < principals.size()) {
      size_t end = principals.find('\n', begin);
      if (end == std::string::npos) end = principals.size();
      const std::string line = principals.substr(begin, end - begin);
      begin = end + 1;
      const size_t a = line.find(' '), b = line.find(' ', a + 1);
      Result<std::string> hash = HashSecret(line.substr(a + 1, b - a - 1));
      EXPECT_TRUE(hash.ok()) << hash.status().ToString();
      text += line.substr(0, a) + " " + (hash.ok() ? *hash : "") + line.substr(b) + "\n";
    }
    WriteRaw(text);
  }
  void WriteRaw(const std::string& text) {
    std::ofstream out(path_, std::ios::trunc);
    out << text;
  }
  const std::string& path() const { return path_; }

 private:
  TempDir dir_;
  std::string path_ = dir_.Sub("credentials");
};

}  // namespace idem::testing
