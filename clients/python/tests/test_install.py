"""`pip install ./clients/python` works offline, into a venv that sees Debian's python3-flatbuffers
(--system-site-packages), and the installed package imports and speaks the protocol from there.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class PipInstallTest(unittest.TestCase):
    def test_installs_offline_into_a_venv_and_imports_from_there(self):
        with tempfile.TemporaryDirectory(prefix="idemstore-py-venv-") as tmp:
            # A copy, so that the build's leftovers (build/, *.egg-info) stay out of the tree.
            source = os.path.join(tmp, "src")
            shutil.copytree(PACKAGE_DIR, source,
                            ignore=shutil.ignore_patterns("tests", "__pycache__", "build",
                                                          "*.egg-info"))
            venv = os.path.join(tmp, "venv")
            env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
            subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv],
                           check=True, capture_output=True, env=env)
            python = os.path.join(venv, "bin", "python")
            pip = subprocess.run(
                [python, "-m", "pip", "install", "--no-index", "--no-build-isolation",
                 "--disable-pip-version-check", source],
                capture_output=True, text=True, env=env, cwd=tmp)
            self.assertEqual(0, pip.returncode, pip.stdout + pip.stderr)
            check = subprocess.run(
                [python, "-c",
                 "import idemstore, idemstore._codec as c;"
                 "f = c.encode_apply(7, [idemstore.ops.insert('ns', 'k', status='S')]);"
                 "print(idemstore.__file__, idemstore.__version__, len(f))"],
                capture_output=True, text=True, env=env, cwd=tmp)
            self.assertEqual(0, check.returncode, check.stderr)
            where, version, _ = check.stdout.split()
            self.assertTrue(where.startswith(venv), where)
            self.assertEqual("0.1.0", version)


if __name__ == "__main__":
    unittest.main()
