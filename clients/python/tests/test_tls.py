"""idemstore.Client with TLS and tokens against idemstored --tls-cert --auth-file: the server is
verified (chain and name), tokens are checked, grants apply; calls from many threads share one
TLS connection. Certificates are made by the openssl command for each test class.
"""
import concurrent.futures
import hashlib
import os
import subprocess
import tempfile
import unittest

import idemstore
from idemstore import Outcome, StatusCode, TlsOptions, errors
from server_process import ServerTestCase

WRITER_TOKEN = "writer-secret-0123456789abcdef"
READER_TOKEN = "reader-secret-0123456789abcdef"


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_ca(directory, name):
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.pem", "-days", "2",
            "-subj", f"/CN={name}", cwd=directory)
    return os.path.join(directory, f"{name}.pem")


def make_server_cert(directory, ca):
    """server.pem/server.key for 127.0.0.1 and localhost, signed by `ca`."""
    with open(os.path.join(directory, "san.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost",
            cwd=directory)
    openssl("x509", "-req", "-in", "server.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key",
            "-CAcreateserial", "-out", "server.pem", "-days", "2", "-extfile", "san.ext",
            cwd=directory)


def secret_hash(secret):
    """An auth-file hash (docs/security.md): sha256$SALT$SHA-256(salt bytes + secret)."""
    salt = os.urandom(16)
    return f"sha256${salt.hex()}${hashlib.sha256(salt + secret.encode()).hexdigest()}"


class TlsTokenTest(ServerTestCase):
    @classmethod
    def setUpClass(cls):
        cls._certs = tempfile.TemporaryDirectory(prefix="idemstore-py-certs-")
        d = cls._certs.name
        cls.ca = make_ca(d, "test-ca")
        cls.other_ca = make_ca(d, "other-ca")
        make_server_cert(d, "test-ca")
        auth = os.path.join(d, "auth")
        with open(auth, "w") as f:
            f.write(f"writer {secret_hash(WRITER_TOKEN)} *:read,write,admin\n"
                    f"reader {secret_hash(READER_TOKEN)} pay:read\n")
        os.chmod(auth, 0o600)
        cls.server_args = ("--tls-cert", os.path.join(d, "server.pem"),
                           "--tls-key", os.path.join(d, "server.key"), "--auth-file", auth)

    @classmethod
    def tearDownClass(cls):
        cls._certs.cleanup()

    def setUp(self):
        self.connect_options = {"tls": TlsOptions(ca_file=self.ca), "token": WRITER_TOKEN}
        super().setUp()

    def connect(self, **options):
        return super().connect(**{**self.connect_options, **options})

    def test_a_verified_server_and_an_accepted_token(self):
        self.assertEqual(Outcome.INSERTED, self.client.insert("pay", "k", status="S").outcome)
        self.assertEqual(Outcome.FOUND, self.client.get("pay", "k").outcome)

    def test_without_a_token_or_with_a_wrong_one_the_hello_is_refused(self):
        for token in (None, "not-a-token-anybody-has-0123"):
            with self.assertRaises(errors.ServerError) as raised:
                self.connect(token=token)
            self.assertEqual(StatusCode.UNAUTHENTICATED, raised.exception.code)

    def test_a_grant_not_covering_the_op_is_permission_denied(self):
        reader = self.connect(token=READER_TOKEN)
        self.assertEqual(Outcome.NOT_FOUND, reader.get("pay", "k").outcome)
        with self.assertRaises(errors.ServerError) as raised:
            reader.insert("pay", "k", status="S")
        self.assertEqual(StatusCode.PERMISSION_DENIED, raised.exception.code)
        self.assertIn("'reader'", raised.exception.message)

    def test_a_certificate_from_another_ca_is_refused(self):
        with self.assertRaises(errors.ConnectionError) as raised:
            self.connect(tls=TlsOptions(ca_file=self.other_ca))
        self.assertIn("certificate verify failed", raised.exception.message)

    def test_a_certificate_for_another_name_is_refused(self):
        with self.assertRaises(errors.ConnectionError) as raised:
            self.connect(tls=TlsOptions(ca_file=self.ca, server_name="other.example"))
        self.assertIn("certificate verify failed", raised.exception.message)

    def test_a_missing_ca_file_is_named(self):
        with self.assertRaises(errors.Error) as raised:
            self.connect(tls=TlsOptions(ca_file=os.path.join(self.tmp, "missing.pem")))
        self.assertEqual(StatusCode.INVALID_ARGUMENT, raised.exception.code)
        self.assertIn("missing.pem", raised.exception.message)

    def test_many_threads_share_one_tls_connection(self):
        def work(t):
            for i in range(60):
                self.assertEqual(Outcome.INSERTED,
                                 self.client.insert("load", f"{t}-{i}", status="S",
                                                    payload=os.urandom(200)).outcome)

        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            list(pool.map(work, range(8)))
        self.assertEqual(480, sum(1 for r in self.client.apply(
            [idemstore.ops.get("load", f"{t}-{i}") for t in range(8) for i in range(60)])
            if r.outcome is Outcome.FOUND))


class TlsToAPlainServerTest(ServerTestCase):
    def test_the_handshake_fails_with_a_connection_error(self):
        ca = make_ca(self.tmp, "ca")
        with self.assertRaises(errors.ConnectionError) as raised:
            idemstore.Client(self.server.address, tls=TlsOptions(ca_file=ca))
        self.assertIn("TLS handshake", raised.exception.message)


if __name__ == "__main__":
    unittest.main()
