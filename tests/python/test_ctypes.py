"""ctypes tests for libLLVMOffload.so.22.1 (ours or LLVM's) and
libLLVMOffload.so.23.1.

Run:  python3 -m unittest discover -s tests/python -v
Library: $OFFLOAD_LIB, default ../../build/lib/libLLVMOffload.so.22.1 next to
this file.  Only the standard library is used; every C type is declared here.
The one call whose prototype the two releases differ in that these tests
make is olInit: () in 22.1, (const ol_init_args_t *InitArgs) in 23.1, where
NULL starts every platform (init() below).

All tests leave the library's reference count where they found it (0), so
they may run in any order inside one process.
"""

import _ctypes
import ctypes
import multiprocessing
import os
import unittest
from ctypes import (CFUNCTYPE, POINTER, Structure, byref, c_bool, c_char_p,
                    c_size_t, c_uint32, c_void_p, create_string_buffer)

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_LIB = os.path.normpath(
    os.path.join(HERE, "..", "..", "build", "lib", "libLLVMOffload.so.22.1"))
LIB_PATH = os.environ.get("OFFLOAD_LIB") or DEFAULT_LIB

# ---- C declarations ------------------------------------------------------


class ErrorStruct(Structure):
    """struct ol_error_struct_t { ol_errc_t Code; const char *Details; }"""
    _fields_ = [("Code", c_uint32), ("Details", c_char_p)]


Result = POINTER(ErrorStruct)  # ol_result_t; NULL means success
DeviceIterateCb = CFUNCTYPE(c_bool, c_void_p, c_void_p)

# ol_errc_t
OL_ERRC_INVALID_SIZE = 8
OL_ERRC_UNINITIALIZED = 18
OL_ERRC_INVALID_NULL_HANDLE = 19
# ol_device_info_t
OL_DEVICE_INFO_TYPE = 0
OL_DEVICE_INFO_PLATFORM = 1
OL_DEVICE_INFO_NAME = 2
# ol_platform_info_t
OL_PLATFORM_INFO_NAME = 0
OL_PLATFORM_INFO_BACKEND = 3
# enum values
OL_DEVICE_TYPE_HOST = 4
OL_DEVICE_TYPE_LAST = 5
OL_PLATFORM_BACKEND_HOST = 4

UNINIT_TEXT = (b"liboffload has not been initialized - please call olInit "
               b"before using this API")


def load(path=LIB_PATH):
    """dlopen the library and declare the prototypes used here."""
    lib = ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_LOCAL)
    protos = {
        "olInit": [],
        "olShutDown": [],
        "olIterateDevices": [DeviceIterateCb, c_void_p],
        "olGetDeviceInfo": [c_void_p, c_uint32, c_size_t, c_void_p],
        "olGetDeviceInfoSize": [c_void_p, c_uint32, POINTER(c_size_t)],
        "olGetPlatformInfo": [c_void_p, c_uint32, c_size_t, c_void_p],
        "olGetPlatformInfoSize": [c_void_p, c_uint32, POINTER(c_size_t)],
    }
    # 23.1 (the library that exports olQueryQueue): olInit takes InitArgs
    lib.release = "23.1" if hasattr(lib, "olQueryQueue") else "22.1"
    if lib.release == "23.1":
        protos["olInit"] = [c_void_p]
    for name, args in protos.items():
        fn = getattr(lib, name)
        fn.argtypes = args
        fn.restype = Result
    return lib


def init(lib):
    """olInit of the library's release (23.1: InitArgs NULL, every platform)."""
    if lib.release == "23.1":
        return lib.olInit(None)
    return lib.olInit()


def unload(lib):
    _ctypes.dlclose(lib._handle)


def describe(res):
    if not res:
        return "OL_SUCCESS"
    return "code %d %r" % (res.contents.Code, res.contents.Details)


def list_devices(lib):
    """olIterateDevices -> list of device handles (ints)."""
    found = []

    def visit(dev, _user):
        found.append(dev)
        return True

    cb = DeviceIterateCb(visit)  # keep alive for the duration of the call
    res = lib.olIterateDevices(cb, None)
    if res:
        raise AssertionError("olIterateDevices: " + describe(res))
    return found


def info_u32(fn, handle, prop):
    value = c_uint32(0xFFFFFFFF)
    res = fn(handle, prop, ctypes.sizeof(value), byref(value))
    if res:
        raise AssertionError("%s(%#x, %d): %s" %
                             (fn.__name__, handle or 0, prop, describe(res)))
    return value.value


def info_handle(fn, handle, prop):
    value = c_void_p()
    res = fn(handle, prop, ctypes.sizeof(value), byref(value))
    if res:
        raise AssertionError("%s(%#x, %d): %s" %
                             (fn.__name__, handle or 0, prop, describe(res)))
    return value.value


def info_string(fn, size_fn, handle, prop):
    size = c_size_t(0)
    res = size_fn(handle, prop, byref(size))
    if res:
        raise AssertionError("%s(%#x, %d): %s" %
                             (size_fn.__name__, handle or 0, prop,
                              describe(res)))
    buf = create_string_buffer(size.value)
    res = fn(handle, prop, size.value, buf)
    if res:
        raise AssertionError("%s(%#x, %d): %s" %
                             (fn.__name__, handle or 0, prop, describe(res)))
    if size.value < 1 or buf.raw[size.value - 1] != 0:
        raise AssertionError("string property %d not NUL-terminated" % prop)
    return buf.value.decode("utf-8", "replace")


def describe_devices(lib):
    """[(type, name, platform name, platform backend)] of every device."""
    out = []
    for dev in list_devices(lib):
        dtype = info_u32(lib.olGetDeviceInfo, dev, OL_DEVICE_INFO_TYPE)
        name = info_string(lib.olGetDeviceInfo, lib.olGetDeviceInfoSize, dev,
                           OL_DEVICE_INFO_NAME)
        plat = info_handle(lib.olGetDeviceInfo, dev, OL_DEVICE_INFO_PLATFORM)
        if not plat:
            raise AssertionError("device %#x has a NULL platform" % dev)
        pname = info_string(lib.olGetPlatformInfo, lib.olGetPlatformInfoSize,
                            plat, OL_PLATFORM_INFO_NAME)
        backend = info_u32(lib.olGetPlatformInfo, plat,
                           OL_PLATFORM_INFO_BACKEND)
        out.append((dtype, name, pname, backend))
    return out


def spawn_child_enumerate(path):
    """Runs in a 'spawn' child: load, init, enumerate, shut down."""
    lib = load(path)
    res = init(lib)
    if res:
        return ("olInit failed", describe(res))
    try:
        devices = describe_devices(lib)
    finally:
        res = lib.olShutDown()
    if res:
        return ("olShutDown failed", describe(res))
    return ("ok", devices)


# ---- tests ---------------------------------------------------------------


class LibraryTest(unittest.TestCase):

    def setUp(self):
        if not os.path.exists(LIB_PATH):
            self.fail("library not found: %s (set OFFLOAD_LIB)" % LIB_PATH)
        self.lib = load()
        # cleanups run last-in first-out: the olShutDown registered by
        # init() runs before this dlclose
        self.addCleanup(self._unload)

    def _unload(self):
        unload(self.lib)
        del self.lib

    def assertOk(self, res, what):
        self.assertFalse(res, "%s: %s" % (what, describe(res)))

    def init(self):
        self.assertOk(init(self.lib), "olInit")
        self.addCleanup(self._shutdown)

    def _shutdown(self):
        self.assertOk(self.lib.olShutDown(), "olShutDown")


class TestEnumerate(LibraryTest):

    def test_enumerate_devices_and_platforms(self):
        self.init()
        devices = describe_devices(self.lib)
        self.assertGreaterEqual(len(devices), 1, "no devices")
        for dtype, name, pname, backend in devices:
            self.assertLess(dtype, OL_DEVICE_TYPE_LAST, "device type")
            self.assertTrue(name, "empty device NAME")
            self.assertTrue(pname, "empty platform NAME")
        hosts = [d for d in devices if d[0] == OL_DEVICE_TYPE_HOST]
        self.assertEqual(len(hosts), 1, "host devices in %r" % (devices,))
        _, _, pname, backend = hosts[0]
        self.assertEqual(pname, "Host")
        self.assertEqual(backend, OL_PLATFORM_BACKEND_HOST)
        # the host device is listed last
        self.assertEqual(devices[-1][0], OL_DEVICE_TYPE_HOST)


class TestErrors(LibraryTest):

    def test_uninitialized_before_init(self):
        lib = self.lib
        first = lib.olShutDown()
        self.assertTrue(first, "olShutDown without olInit succeeded")
        self.assertEqual(first.contents.Code, OL_ERRC_UNINITIALIZED)
        self.assertEqual(first.contents.Details, UNINIT_TEXT)
        value = c_uint32()
        calls = [
            lib.olIterateDevices(DeviceIterateCb(lambda d, u: True), None),
            lib.olGetDeviceInfo(None, OL_DEVICE_INFO_TYPE, 4, byref(value)),
            lib.olGetPlatformInfo(None, OL_PLATFORM_INFO_NAME, 0, None),
        ]
        for res in calls:
            self.assertTrue(res, "call before olInit succeeded")
            self.assertEqual(res.contents.Code, OL_ERRC_UNINITIALIZED)
            self.assertEqual(res.contents.Details, UNINIT_TEXT)
            # one static result for every call
            self.assertEqual(ctypes.addressof(res.contents),
                             ctypes.addressof(first.contents))

    def test_error_for_null_device(self):
        self.init()
        value = c_uint32(0xDEAD)
        res = self.lib.olGetDeviceInfo(None, OL_DEVICE_INFO_TYPE, 4,
                                       byref(value))
        self.assertTrue(res, "NULL device accepted")
        err = res.contents
        self.assertEqual(err.Code, OL_ERRC_INVALID_NULL_HANDLE)
        self.assertIsInstance(err.Details, bytes)
        self.assertEqual(err.Details, b"validation failure: NULL == Device")
        self.assertEqual(value.value, 0xDEAD, "output written on error")
        # the same error again is the same result object
        again = self.lib.olGetDeviceInfo(None, OL_DEVICE_INFO_TYPE, 4,
                                         byref(value))
        self.assertEqual(ctypes.addressof(again.contents),
                         ctypes.addressof(res.contents))
        # a different error is readable as well
        res = self.lib.olGetDeviceInfo(None, OL_DEVICE_INFO_TYPE, 0,
                                       byref(value))
        self.assertTrue(res)
        self.assertEqual(res.contents.Code, OL_ERRC_INVALID_SIZE)
        self.assertEqual(res.contents.Details,
                         b"validation failure: PropSize == 0")


class TestReload(unittest.TestCase):

    def test_load_unload_100_cycles(self):
        if not os.path.exists(LIB_PATH):
            self.fail("library not found: %s (set OFFLOAD_LIB)" % LIB_PATH)
        reference = None
        for cycle in range(100):
            lib = load()
            res = init(lib)
            self.assertFalse(res, "cycle %d olInit: %s" % (cycle,
                                                           describe(res)))
            try:
                devices = describe_devices(lib)
            finally:
                res = lib.olShutDown()
            self.assertFalse(res, "cycle %d olShutDown: %s" %
                             (cycle, describe(res)))
            if reference is None:
                reference = devices
                self.assertTrue(any(d[0] == OL_DEVICE_TYPE_HOST
                                    for d in devices), devices)
            self.assertEqual(devices, reference, "cycle %d" % cycle)
            res = lib.olShutDown()
            self.assertTrue(res and res.contents.Code == OL_ERRC_UNINITIALIZED,
                            "cycle %d extra olShutDown: %s" %
                            (cycle, describe(res)))
            unload(lib)
            del lib


class TestSpawn(LibraryTest):

    def test_spawn_child_enumerates(self):
        # The parent has the library loaded and initialised while the child
        # is started; 'spawn' gives the child a fresh interpreter.
        self.init()
        parent = describe_devices(self.lib)
        ctx = multiprocessing.get_context("spawn")
        with ctx.Pool(1) as pool:
            status, payload = pool.apply_async(
                spawn_child_enumerate, (LIB_PATH,)).get(timeout=120)
        self.assertEqual(status, "ok", payload)
        self.assertEqual(payload, parent)
        self.assertTrue(any(d[0] == OL_DEVICE_TYPE_HOST for d in payload))


if __name__ == "__main__":
    unittest.main()
