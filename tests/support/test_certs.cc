#include "support/test_certs.h"

#include <sys/stat.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include <openssl/bio.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

namespace idem::testing {
namespace {

[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "test_certs: %s failed: %s\n", what,
               ERR_reason_error_string(ERR_get_error()));
  std::abort();
}

void Check(bool ok, const char* what) {
  if (!ok) Die(what);
}

EVP_PKEY* NewKey() {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  Check(key != nullptr, "EVP_EC_gen");
  return key;
}

std::string KeyPem(EVP_PKEY* key) {
  BIO* bio = BIO_new(BIO_s_mem());
  Check(PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr) == 1,
        "PEM_write_bio_PrivateKey");
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  std::string pem(data, static_cast<size_t>(n));
  BIO_free(bio);
  return pem;
}

std::string CertPem(X509* cert) {
  BIO* bio = BIO_new(BIO_s_mem());
  Check(PEM_write_bio_X509(bio, cert) == 1, "PEM_write_bio_X509");
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  std::string pem(data, static_cast<size_t>(n));
  BIO_free(bio);
  return pem;
}

void AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  Check(ext != nullptr, "X509V3_EXT_conf_nid");
  Check(X509_add_ext(cert, ext, -1) == 1, "X509_add_ext");
  X509_EXTENSION_free(ext);
}

// A certificate for `key`'s public half named `common_name`, valid over the given offsets from
// now; extensions and signature left to the caller.
X509* NewCert(EVP_PKEY* key, const std::string& common_name, int64_t not_before_s,
              int64_t not_after_s) {
  static std::atomic<long> serial{1};
  X509* cert = X509_new();
  Check(cert != nullptr, "X509_new");
  X509_set_version(cert, 2);  // v3
  ASN1_INTEGER_set(X509_get_serialNumber(cert), serial++);
  X509_gmtime_adj(X509_getm_notBefore(cert), static_cast<long>(not_before_s));
  X509_gmtime_adj(X509_getm_notAfter(cert), static_cast<long>(not_after_s));
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                             reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1,
                             0);
  return cert;
}

}  // namespace

struct TestCa::Keys {
  EVP_PKEY* key = nullptr;
  X509* cert = nullptr;
  ~Keys() {
    X509_free(cert);
    EVP_PKEY_free(key);
  }
};

TestCa::TestCa(const std::string& name) : keys_(std::make_unique<Keys>()) {
  keys_->key = NewKey();
  X509* cert = NewCert(keys_->key, name, -3600, 10 * 24 * 3600);
  keys_->cert = cert;
  X509_set_issuer_name(cert, X509_get_subject_name(cert));
  AddExtension(cert, cert, NID_basic_constraints, "critical,CA:TRUE");
  AddExtension(cert, cert, NID_key_usage, "critical,keyCertSign,cRLSign");
  AddExtension(cert, cert, NID_subject_key_identifier, "hash");
  Check(X509_sign(cert, keys_->key, EVP_sha256()) > 0, "X509_sign (CA)");
  cert_pem_ = CertPem(cert);
}

TestCa::~TestCa() = default;

TestCert TestCa::Issue(const CertSpec& spec) const {
  EVP_PKEY* key = NewKey();
  X509* cert = NewCert(key, spec.common_name, spec.not_before_s, spec.not_after_s);
  X509_set_issuer_name(cert, X509_get_subject_name(keys_->cert));
  AddExtension(cert, keys_->cert, NID_basic_constraints, "critical,CA:FALSE");
  AddExtension(cert, keys_->cert, NID_key_usage, "critical,digitalSignature");
  AddExtension(cert, keys_->cert, NID_ext_key_usage, spec.client ? "clientAuth" : "serverAuth");
  AddExtension(cert, keys_->cert, NID_authority_key_identifier, "keyid");
  std::string san;
  for (const std::string& dns : spec.dns) san += (san.empty() ? "DNS:" : ",DNS:") + dns;
  for (const std::string& ip : spec.ips) san += (san.empty() ? "IP:" : ",IP:") + ip;
  if (!san.empty()) AddExtension(cert, keys_->cert, NID_subject_alt_name, san);
  Check(X509_sign(cert, keys_->key, EVP_sha256()) > 0, "X509_sign");
  TestCert out{CertPem(cert), KeyPem(key)};
  X509_free(cert);
  EVP_PKEY_free(key);
  return out;
}

void WriteTestFile(const std::string& path, const std::string& content) {
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << content;
    if (!out.flush()) {
      std::fprintf(stderr, "test_certs: cannot write %s\n", path.c_str());
      std::abort();
    }
  }
  ::chmod(path.c_str(), 0600);
}

TlsFiles WriteTlsFiles(const std::string& dir, const std::string& name, const TestCa& ca,
                       const TestCert& cert) {
  TlsFiles files{dir + "/" + name + "-ca.pem", dir + "/" + name + ".pem",
                 dir + "/" + name + ".key"};
  WriteTestFile(files.ca_file, ca.cert_pem());
  WriteTestFile(files.cert_file, cert.cert_pem);
  WriteTestFile(files.key_file, cert.key_pem);
  return files;
}

}  // namespace idem::testing
