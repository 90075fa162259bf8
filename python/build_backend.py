"""A minimal PEP 517 build backend for the pure-Python liboffload package:
builds a wheel (and an sdist) with the standard library only."""

import base64
import hashlib
import io
import os
import tarfile
import zipfile

NAME = "liboffload"
VERSION = "0.1.0"
HERE = os.path.dirname(os.path.abspath(__file__))
TAG = "py3-none-any"
DIST = "%s-%s" % (NAME, VERSION)

METADATA = """Metadata-Version: 2.1
Name: %s
Version: %s
Summary: Python bindings of the Offload API (liboffload-go, libLLVMOffload.so.22.1 and libLLVMOffload.so.23.1)
License: Apache-2.0
Requires-Python: >=3.8
""" % (NAME, VERSION)

WHEEL = """Wheel-Version: 1.0
Generator: liboffload build_backend
Root-Is-Purelib: true
Tag: %s
""" % TAG


def _package_files():
    """(archive name, path) of every .py file of the package, sorted."""
    out = []
    root = os.path.join(HERE, NAME)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for f in sorted(filenames):
            if f.endswith(".py"):
                path = os.path.join(dirpath, f)
                out.append((os.path.relpath(path, HERE).replace(os.sep, "/"),
                            path))
    return out


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest())
    return "%s,sha256=%s,%d" % (name, digest.rstrip(b"=").decode(), len(data))


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None,
                metadata_directory=None):
    name = "%s-%s.whl" % (DIST, TAG)
    info = "%s.dist-info" % DIST
    record = []
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w",
                         zipfile.ZIP_DEFLATED) as whl:
        def add(arcname, data):
            whl.writestr(zipfile.ZipInfo(arcname, (1980, 1, 1, 0, 0, 0)),
                         data)
            record.append(_record_line(arcname, data))
        for arcname, path in _package_files():
            with open(path, "rb") as f:
                add(arcname, f.read())
        add(info + "/METADATA", METADATA.encode())
        add(info + "/WHEEL", WHEEL.encode())
        add(info + "/top_level.txt", (NAME + "\n").encode())
        record.append(info + "/RECORD,,")
        whl.writestr(zipfile.ZipInfo(info + "/RECORD", (1980, 1, 1, 0, 0, 0)),
                     "\n".join(record) + "\n")
    return name


def build_sdist(sdist_directory, config_settings=None):
    name = DIST + ".tar.gz"
    files = [(a, p) for a, p in _package_files()]
    files += [(f, os.path.join(HERE, f))
              for f in ("pyproject.toml", "build_backend.py")]
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as tar:
        for arcname, path in files:
            tar.add(path, arcname=DIST + "/" + arcname)
        data = METADATA.encode()
        ti = tarfile.TarInfo(DIST + "/PKG-INFO")
        ti.size = len(data)
        tar.addfile(ti, io.BytesIO(data))
    return name
