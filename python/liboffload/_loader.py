"""Finding and loading the library: libLLVMOffload.so.22.1 (LLVM 22.1's
ABI) or libLLVMOffload.so.23.1 (LLVM 23.1's), found by soname.

Which release: the one asked for (liboffload.load(release="23.1"), or
$OFFLOAD_RELEASE), else whichever is found, 22.1 first at each place (the
ABI that existing ctypes users of liboffload.lib() were written for).
"""

import ctypes
import os
import re
import subprocess

from . import _api

# release -> soname, oldest first
SONAMES = dict(_api.SONAMES)
RELEASES = tuple(SONAMES)
SONAME = SONAMES[RELEASES[0]]  # the default release's

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
RELEASE_VAR = "OFFLOAD_RELEASE"


def _build_tree():
    """build/lib of the repository when the package runs from its source
    tree (python/liboffload/ -> ../../build/lib)."""
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.normpath(os.path.join(here, "..", "..", "build", "lib"))


_ld_cache_names = None


def _ld_cache(soname):
    """soname itself when the dynamic loader's cache (ldconfig -p) lists it,
    else None: a bare name that dlopen resolves without a path."""
    global _ld_cache_names
    if _ld_cache_names is None:
        names = set()
        for ldconfig in ("/sbin/ldconfig", "/usr/sbin/ldconfig", "ldconfig"):
            try:
                out = subprocess.run([ldconfig, "-p"], capture_output=True,
                                     text=True, timeout=10).stdout
            except (OSError, subprocess.SubprocessError):
                continue
            names = set(re.findall(r"^\s+(\S+)\s+\(", out, re.M))
            break
        _ld_cache_names = names
    return soname if soname in _ld_cache_names else None


def releases(release=None, environ=None):
    """The releases to look for, in order of preference: the one asked for
    (release, else $OFFLOAD_RELEASE), or every release, oldest first."""
    environ = os.environ if environ is None else environ
    release = release or environ.get(RELEASE_VAR) or None
    if release is None:
        return RELEASES
    release = str(release)
    if release not in SONAMES:
        raise ValueError("liboffload: release %r is not one of %s" %
                         (release, ", ".join(RELEASES)))
    return (release,)


def candidates(environ=None, build_tree=None, find_library=None,
               standard_dirs=STANDARD_DIRS, release=None):
    """The places tried, in order, as (source, path) pairs; at each place
    the sonames of releases() in order:

    1. $OFFLOAD_LIB, then $LIBOFFLOAD_PATH (a file, or a directory holding
       the library); when one is set only it is tried;
    2. build/lib of the repository, when the package runs from its source
       tree (a checkout uses its own build);
    3. installed copies: the soname itself when the dynamic loader's cache
       lists it (find_library(soname) -> soname or None; default: ldconfig
       -p), then the standard library directories.
    """
    environ = os.environ if environ is None else environ
    names = [SONAMES[r] for r in releases(release, environ)]
    for var in ENV_VARS:
        value = environ.get(var)
        if value:
            if os.path.isdir(value):
                return [(var, os.path.join(value, n)) for n in names]
            return [(var, value)]
    out = []
    tree = _build_tree() if build_tree is None else build_tree
    out += [("build tree", os.path.join(tree, n)) for n in names]
    find = _ld_cache if find_library is None else find_library
    for n in names:
        found = find(n)
        if found:
            out.append(("dynamic loader cache", found))
    for d in standard_dirs:
        out += [("standard directory", os.path.join(d, n)) for n in names]
    return out


def find(environ=None, release=None, **kw):
    """The path of the library to load; raises OSError naming every place
    tried when none has it."""
    tried = []
    for source, path in candidates(environ, release=release, **kw):
        # the loader cache gives a bare soname that only the dynamic
        # loader resolves; anything else must exist.
        if os.path.exists(path) or (os.sep not in path and path):
            return path
        tried.append("%s: %s" % (source, path))
    names = " or ".join(SONAMES[r] for r in releases(release, environ))
    raise OSError("liboffload: %s not found (set OFFLOAD_LIB to its path); "
                  "tried %s" % (names, "; ".join(tried)))


def load(path):
    """dlopen the library with the symbols kept local."""
    return ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_LOCAL)
