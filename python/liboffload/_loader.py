"""Finding and loading libLLVMOffload.so.22.1."""

import ctypes
import ctypes.util
import os

SONAME = "libLLVMOffload.so.22.1"

# Where a system install puts shared libraries.
STANDARD_DIRS = (
    "/usr/local/lib",
    "/usr/local/lib64",
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/lib/x86_64-linux-gnu",
    "/lib/aarch64-linux-gnu",
)

ENV_VARS = ("OFFLOAD_LIB", "LIBOFFLOAD_PATH")


def _build_tree():
    """build/lib of the repository when the package runs from its source
    tree (python/liboffload/ -> ../../build/lib)."""
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.normpath(os.path.join(here, "..", "..", "build", "lib"))


def _named(value):
    """An environment value: a file, or a directory holding the library."""
    if os.path.isdir(value):
        return os.path.join(value, SONAME)
    return value


def candidates(environ=None, build_tree=None, find_library=None,
               standard_dirs=STANDARD_DIRS):
    """The places tried, in order, as (source, path) pairs:

    1. $OFFLOAD_LIB, then $LIBOFFLOAD_PATH (a file, or a directory holding
       libLLVMOffload.so.22.1); when one is set only it is tried;
    2. build/lib of the repository, when the package runs from its source
       tree (a checkout uses its own build);
    3. installed copies: "liboffload" (the name only this implementation
       installs) and "LLVMOffload" through ctypes.util.find_library, then
       the standard library directories.
    """
    environ = os.environ if environ is None else environ
    for var in ENV_VARS:
        value = environ.get(var)
        if value:
            return [(var, _named(value))]
    out = []
    tree = _build_tree() if build_tree is None else build_tree
    out.append(("build tree", os.path.join(tree, SONAME)))
    find = ctypes.util.find_library if find_library is None else find_library
    for name in ("offload", "LLVMOffload"):
        found = find(name)
        if found:
            out.append(("ctypes.util.find_library(%r)" % name, found))
    for d in standard_dirs:
        out.append(("standard directory", os.path.join(d, SONAME)))
    return out


def find(environ=None, **kw):
    """The path of the library to load; raises OSError naming every place
    tried when none has it."""
    tried = []
    for source, path in candidates(environ, **kw):
        # find_library gives a bare soname that only the dynamic loader
        # resolves; anything else must exist.
        if os.path.exists(path) or (os.sep not in path and path):
            return path
        tried.append("%s: %s" % (source, path))
    raise OSError("liboffload: libLLVMOffload.so.22.1 not found (set "
                  "OFFLOAD_LIB to its path); tried " + "; ".join(tried))


def load(path):
    """dlopen the library with the symbols kept local."""
    return ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_LOCAL)
