// Test support: certificates made at test time with OpenSSL's API (EC P-256 keys, fast to
// generate), so that no private key is ever checked in.
//
//   TestCa ca("test CA");
//   TestCert server = ca.Issue({.dns = {"localhost"}, .ips = {"127.0.0.1"}});
//   TlsFiles files = WriteTlsFiles(dir, "server", ca, server);  // ca.pem, server.pem, server.key
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace idem::testing {

// A certificate and its private key, PEM.
struct TestCert {
  std::string cert_pem;
  std::string key_pem;
};

struct CertSpec {
  std::string common_name = "idem test";
  std::vector<std::string> dns;  // subjectAltName DNS entries
  std::vector<std::string> ips;  // subjectAltName IP entries ("127.0.0.1")
  // Validity relative to now, in seconds: the default is valid now; {-2 days, -1 day} has expired.
  int64_t not_before_s = -3600;
  int64_t not_after_s = 24 * 3600;
  bool client = false;  // extendedKeyUsage clientAuth instead of serverAuth
};

// A self-signed certification authority that issues leaf certificates.
class TestCa {
 public:
  explicit TestCa(const std::string& name);
  ~TestCa();
  TestCa(const TestCa&) = delete;
  TestCa& operator=(const TestCa&) = delete;

  const std::string& cert_pem() const { return cert_pem_; }
  // A leaf certificate signed by this CA. Aborts the test binary on an OpenSSL failure (a broken
  // test environment, not a test outcome).
  TestCert Issue(const CertSpec& spec) const;

 private:
  struct Keys;
  std::unique_ptr<Keys> keys_;
  std::string cert_pem_;
};

// Writes `content` to `path` (mode 0600); aborts on failure.
void WriteTestFile(const std::string& path, const std::string& content);

// The files a TLS endpoint is configured with: its CA's certificate, its own and its key.
struct TlsFiles {
  std::string ca_file, cert_file, key_file;
};
// Writes DIR/NAME-ca.pem, DIR/NAME.pem and DIR/NAME.key.
TlsFiles WriteTlsFiles(const std::string& dir, const std::string& name, const TestCa& ca,
                       const TestCert& cert);

}  // namespace idem::testing
