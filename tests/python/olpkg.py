"""Shared set-up of the liboffload package tests: where the package and the
library come from, and kernels compiled for the host device.

The package is imported from $LIBOFFLOAD_TEST_INSTALLED when set (make
test-python installs it there with pip first), else from python/ of this
repository. The library is $OFFLOAD_LIB, default build/lib of this
repository (set for the children the tests start, too): either release,
libLLVMOffload.so.22.1 or libLLVMOffload.so.23.1 (make test-python runs
the suite once with each); RELEASE is its release, from its soname.
"""

import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
INSTALLED = os.environ.get("LIBOFFLOAD_TEST_INSTALLED")
PKG_DIR = INSTALLED or os.path.join(ROOT, "python")
if PKG_DIR not in sys.path:
    sys.path.insert(0, PKG_DIR)
LIB_PATH = os.environ.get("OFFLOAD_LIB") or os.path.join(
    ROOT, "build", "lib", "libLLVMOffload.so.22.1")
os.environ["OFFLOAD_LIB"] = LIB_PATH
os.environ.pop("OFFLOAD_RELEASE", None)  # the file decides
RELEASE = "23.1" if os.path.basename(
    os.path.realpath(LIB_PATH)).endswith(".so.23.1") else "22.1"

import liboffload  # noqa: E402

_tmp = None
_built = {}


def tmpdir():
    global _tmp
    if _tmp is None:
        _tmp = tempfile.mkdtemp(prefix="liboffload-pytest-")
        import atexit
        atexit.register(shutil.rmtree, _tmp, True)
    return _tmp


def kernel(source):
    """Compile a kernel source (relative to the repository root) for the
    host device: cc -O2 -fPIC -shared -I include. Returns the .so path."""
    if source not in _built:
        out = os.path.join(tmpdir(), os.path.basename(source)[:-2] + ".so")
        cc = os.environ.get("CC", "cc")
        subprocess.run([cc, "-O2", "-fPIC", "-shared", "-Wall", "-Werror",
                        "-I", os.path.join(ROOT, "include"),
                        os.path.join(ROOT, source), "-o", out], check=True)
        _built[source] = out
    return _built[source]


def child_env(**extra):
    """Environment for a child Python that imports the same package and
    library."""
    env = dict(os.environ)
    env["PYTHONPATH"] = PKG_DIR + os.pathsep + env.get("PYTHONPATH", "")
    env["OFFLOAD_LIB"] = LIB_PATH
    env.update(extra)
    return {k: v for k, v in env.items() if v != ""}


def run_python(code, timeout=120, cwd=None, **extra_env):
    """Run code in a fresh interpreter; a hang past timeout is an error
    (subprocess.TimeoutExpired)."""
    return subprocess.run([sys.executable, "-c", code], cwd=cwd or ROOT,
                          env=child_env(**extra_env), capture_output=True,
                          text=True, timeout=timeout)
