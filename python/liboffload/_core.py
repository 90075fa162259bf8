"""The loaded library, errors, init/shutdown and the objects they own."""

import ctypes
import os
import threading

from . import _api, _loader
from ._api import Errc


class OffloadError(Exception):
    """An error from the library (or from this package, for misuse that
    would reach freed memory).

    code     the ol_errc_t value (an Errc, or an int the API does not name)
    name     the code's C name, e.g. "OL_ERRC_INVALID_SIZE"
    details  the library's explanation (the result's Details text)
    function the API function that failed, e.g. "olMemAlloc"
    """

    def __init__(self, code, details, function=None):
        try:
            code = Errc(code)
            name = code.c_name
        except ValueError:
            name = "OL_ERRC_%d" % code
        self.code = code
        self.name = name
        self.details = details
        self.function = function
        prefix = function + ": " if function else ""
        super().__init__("%s%s: %s" % (prefix, name, details))

    def __reduce__(self):
        # picklable (multiprocessing sends it between processes)
        return (type(self), (int(self.code), self.details, self.function))


class ReleaseError(OffloadError):
    """A feature of a newer Offload release asked of an older library, e.g.
    Queue.query() (olQueryQueue, 23.1) with libLLVMOffload.so.22.1 loaded.
    An OffloadError with code Errc.UNSUPPORTED; needed and loaded are the
    releases ("23.1", "22.1")."""

    def __init__(self, feature, needed, loaded, function=None, path=None):
        self.feature = feature
        self.needed = needed
        self.loaded = loaded
        self.path = path
        where = " (%s)" % path if path else ""
        super().__init__(
            Errc.UNSUPPORTED,
            "%s needs the Offload %s library; the one loaded%s is release "
            "%s: load libLLVMOffload.so.%s (liboffload.load(release=%r) or "
            "OFFLOAD_RELEASE=%s before the first call)" %
            (feature, needed, where, loaded, needed, needed, needed),
            function)

    def __reduce__(self):
        return (type(self), (self.feature, self.needed, self.loaded,
                             self.function, self.path))


class _State:
    lock = threading.RLock()
    lib = None
    path = None
    release = None  # the release asked for (load(release=...)), or None
    count = 0      # olInit references taken through this package
    epoch = 0      # full shutdowns so far
    live = {}      # id -> owned object (queues, events, programs, buffers)


_in_host_function = threading.local()


def _version(release):
    return tuple(int(x) for x in release.split("."))


def load(release=None, path=None):
    """Choose the library before the first call and load it; returns its
    release ("22.1" or "23.1"). release: the one to use (default:
    $OFFLOAD_RELEASE, else whichever is found, 22.1 first); path: the file
    (default: $OFFLOAD_LIB, $LIBOFFLOAD_PATH, the build tree, installed
    copies by soname). A process uses one library: asking for another once
    one is loaded raises RuntimeError."""
    if release is not None:
        release = _loader.releases(release)[0]
    with _State.lock:
        if _State.lib is not None:
            loaded = _State.lib.ol_release
            if (release is not None and release != loaded) or \
                    (path is not None and os.path.realpath(path) !=
                     os.path.realpath(_State.path)):
                raise RuntimeError(
                    "liboffload: %s (release %s) is loaded already; a "
                    "process uses one library" % (_State.path, loaded))
            return loaded
        if path is not None:
            _State.path = path
        _State.release = release
        return lib().ol_release


def library_path():
    """The path of the library this package loads (or loaded)."""
    with _State.lock:
        if _State.path is None:
            _State.path = _loader.find(release=_State.release)
        return _State.path


def lib():
    """The library as a ctypes.CDLL with every prototype of its release
    declared (lib().ol_release says which)."""
    loaded = _State.lib
    if loaded is not None:
        return loaded
    with _State.lock:
        if _State.lib is None:
            path = library_path()
            loaded = _api.declare(_loader.load(path))
            want = _State.release or os.environ.get(_loader.RELEASE_VAR)
            if want and loaded.ol_release != want:
                raise OSError(
                    "liboffload: %s is the Offload %s library, not %s "
                    "(asked for by %s)" % (
                        path, loaded.ol_release, want,
                        "load(release=...)" if _State.release
                        else "$" + _loader.RELEASE_VAR))
            _State.lib = loaded
        return _State.lib


def release():
    """The Offload release of the loaded library: "22.1" or "23.1"."""
    return lib().ol_release


def has_release(needed):
    """Whether the loaded library implements release needed or a newer one."""
    return _version(release()) >= _version(needed)


def need(needed, feature, function=None):
    """Raise ReleaseError unless the loaded library is release needed or
    newer."""
    if not has_release(needed):
        raise ReleaseError(feature, needed, release(), function,
                           _State.path)


def check(result, function):
    """Raise OffloadError for a failed ol_result_t."""
    if result:
        err = result.contents
        details = err.Details.decode("utf-8", "replace") if err.Details else ""
        raise OffloadError(err.Code, details, function)


def call(function, *args):
    """Call an API function by name; raise OffloadError when it fails."""
    check(getattr(lib(), function)(*args), function)


def is_initialized():
    """Whether this package holds an olInit reference."""
    return _State.count > 0


class Session:
    """One olInit reference; a context manager whose exit shuts it down."""

    def __init__(self):
        self._open = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        if self._open:
            self._open = False
            shutdown()


def init(platforms=None):
    """olInit. Returns a Session: `with liboffload.init():` shuts down at the
    end; calling liboffload.shutdown() explicitly is the same.

    platforms (23.1): the backends to start, e.g. [PlatformBackend.CUDA]
    (the host platform always starts); None or [] starts every one. The
    22.1 library always starts every platform: platforms raises
    ReleaseError there."""
    if not has_release("23.1"):
        if platforms is not None:
            need("23.1", "init(platforms=...)", "olInit")
        call("olInit")
    elif platforms is None:
        call("olInit", None)
    else:
        backends = [_api.PlatformBackend(p) for p in platforms]
        arr = (ctypes.c_uint32 * max(1, len(backends)))(*backends)
        args = _api.InitArgs(ctypes.sizeof(_api.InitArgs), len(backends),
                             ctypes.cast(arr, ctypes.POINTER(ctypes.c_uint32)))
        call("olInit", ctypes.byref(args))
    with _State.lock:
        _State.count += 1
    return Session()


def register(obj):
    with _State.lock:
        _State.live[id(obj)] = obj
        obj._epoch = _State.epoch


def unregister(obj):
    with _State.lock:
        _State.live.pop(id(obj), None)


def live_objects():
    """The queues, events, programs and buffers created through this package
    and not released yet."""
    with _State.lock:
        return list(_State.live.values())


def release_all():
    """Release every live object: sync the queues, then destroy events,
    queues and programs and free memory. Errors are ignored: this is the
    path to a clean shutdown."""
    objs = live_objects()
    order = {"Queue": 0, "Event": 1, "Program": 2, "Buffer": 3}
    for obj in objs:
        if type(obj).__name__ == "Queue":
            try:
                obj._sync_quietly()
            except OffloadError:
                pass
    for obj in sorted(objs, key=lambda o: order.get(type(o).__name__, 9)):
        try:
            obj._release()
        except OffloadError:
            pass


def shutdown():
    """olShutDown. The final one (of those taken through this package)
    first releases every object still open."""
    # No lock is held across calls that wait: a host function being waited
    # for may itself use the package.
    with _State.lock:
        final = _State.count == 1
    if final and not getattr(_in_host_function, "active", False):
        release_all()
    call("olShutDown")
    with _State.lock:
        if _State.count > 0:
            _State.count -= 1
        if _State.count == 0:
            _State.epoch += 1


# ---- info queries -------------------------------------------------------

def get_info(enum_cls, handle, prop, wrap):
    """Query one info property and decode it through the generated type
    table; wrap(kind, value) turns a handle into an object."""
    get, get_size, types = _api.INFO[enum_cls]
    prop = enum_cls(prop)
    if not _api.in_release(prop, release()):
        # a property a newer release added (DeviceInfo.SINGLE_FP_SUPPORT...)
        added = next(r for r, new in _api.NEW_VALUES.items()
                     if prop in new.get(enum_cls, ()))
        need(added, prop.c_name, get)
    info = types[prop]
    lib_ = lib()
    if info.kind in ("string", "array"):
        size = ctypes.c_size_t(0)
        check(getattr(lib_, get_size)(handle, prop, ctypes.byref(size)),
              get_size)
        count = max(1, size.value // ctypes.sizeof(info.ctype))
        buf = (info.ctype * count)()
        check(getattr(lib_, get)(handle, prop, ctypes.sizeof(buf), buf), get)
        if info.kind == "string":
            return buf.value.decode("utf-8", "replace")
        return [getattr(v, "value", v) for v in buf]
    value = info.ctype()
    check(getattr(lib_, get)(handle, prop, ctypes.sizeof(value),
                             ctypes.byref(value)), get)
    if info.kind == "struct":
        return value
    v = value.value
    if info.kind in ("enum", "flags"):
        try:
            return info.pytype(v)
        except ValueError:
            return v
    if info.kind == "handle":
        return wrap(info.pytype, v) if v else None
    return v


def info_properties(cls, enum_cls, handle_attr="handle", skip=()):
    """Add a read-only property per info value to cls: DeviceInfo.NAME ->
    Device.name, decoded by get_info."""
    for prop in enum_cls:
        pname = prop.name.lower()
        if pname in skip or hasattr(cls, pname):
            continue

        def fget(self, prop=prop):
            return self.info(prop)
        fget.__doc__ = "%s (%s)" % (prop.c_name, _api.INFO[enum_cls][2][prop].kind)
        setattr(cls, pname, property(fget))
