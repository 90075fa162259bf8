"""Tests of the package's array interop (python/liboffload/_arrays.py):
typed views, DLPack export (legacy and versioned capsules, read by a
consumer written here with ctypes from the DLPack header's layout, and by
NumPy), __array_interface__, __cuda_array_interface__, imports
(from_dlpack, copies and kernel arguments from NumPy arrays), lifetimes
under gc.collect(), the package without NumPy, the CUDA driver double, and
docs/python-arrays.md's example.

NumPy tests need NumPy importable by this interpreter (Debian's
python3-numpy; make test-python picks a python3 that has it); without it
they are reported as skips.
"""

import ctypes
import gc
import os
import re
import struct
import subprocess
import sys
import textwrap
import unittest
import weakref

import olpkg
from olpkg import liboffload as ol
from test_liboffload import PackageTest

try:
    import numpy
except ImportError:
    numpy = None

needs_numpy = unittest.skipIf(numpy is None, "NumPy is not importable by " +
                              sys.executable)

# ---- a DLPack consumer, from dlpack.h's layout (v1.1) -----------------------


class CDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class CDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16)]


class CTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", CDevice),
                ("ndim", ctypes.c_int32), ("dtype", CDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


CDeleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class CManaged(ctypes.Structure):
    _fields_ = [("dl_tensor", CTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


class CVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class CManagedVersioned(ctypes.Structure):
    _fields_ = [("version", CVersion), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64),
                ("dl_tensor", CTensor)]


class _Py:
    """Own prototypes of the capsule functions (pythonapi's attributes are
    shared with the package)."""


_py = _Py()
for _name in ("PyCapsule_GetName", "PyCapsule_GetPointer",
              "PyCapsule_SetName"):
    setattr(_py, _name, ctypes.pythonapi[_name])
_py.PyCapsule_GetName.restype = ctypes.c_char_p
_py.PyCapsule_GetName.argtypes = (ctypes.py_object,)
_py.PyCapsule_GetPointer.restype = ctypes.c_void_p
_py.PyCapsule_GetPointer.argtypes = (ctypes.py_object, ctypes.c_char_p)
_py.PyCapsule_SetName.restype = ctypes.c_int
_py.PyCapsule_SetName.argtypes = (ctypes.py_object, ctypes.c_void_p)
_USED = {b"dltensor": ctypes.create_string_buffer(b"used_dltensor"),
         b"dltensor_versioned":
         ctypes.create_string_buffer(b"used_dltensor_versioned")}


class Taken:
    """What a consumer took from a capsule: the struct's fields, and the
    deleter to call when it is done (release())."""

    def __init__(self, cap):
        self.name = _py.PyCapsule_GetName(cap)
        addr = _py.PyCapsule_GetPointer(cap, self.name)
        if self.name == b"dltensor_versioned":
            m = CManagedVersioned.from_address(addr)
            self.version = (m.version.major, m.version.minor)
            self.flags = m.flags
        else:
            m = CManaged.from_address(addr)
            self.version = self.flags = None
        t = m.dl_tensor
        self.data, self.byte_offset = t.data, t.byte_offset
        self.device = (t.device.device_type, t.device.device_id)
        self.dtype = (t.dtype.code, t.dtype.bits, t.dtype.lanes)
        self.shape = tuple(t.shape[i] for i in range(t.ndim))
        self.strides = tuple(t.strides[i] for i in range(t.ndim)) \
            if t.strides else None
        self.manager_ctx = m.manager_ctx
        self._addr, self._deleter = addr, m.deleter
        # taken: the producer's capsule must now leave the tensor alone
        if _py.PyCapsule_SetName(cap, ctypes.addressof(_USED[self.name])):
            raise RuntimeError("PyCapsule_SetName failed")

    def release(self):
        CDeleter(self._deleter)(self._addr)


def alive(ptr):
    """Whether the library still has an allocation at ptr."""
    try:
        ol.mem_info(ptr, ol.MemInfo.BASE)
        return True
    except ol.OffloadError:
        return False


# ---- views and their interface, without NumPy -------------------------------

class TestViews(PackageTest):

    def test_dtype_names_typestrs_and_numpy_dtypes(self):
        self.assertEqual(ol.dtype("float32").typestr, "<f4")
        self.assertEqual(ol.dtype("<i8").name, "int64")
        self.assertEqual(ol.dtype("uint8").typestr, "|u1")
        self.assertEqual(ol.dtype("complex64").itemsize, 8)
        self.assertRaises(ValueError, ol.dtype, "float128")
        self.assertRaises(ValueError, ol.dtype, ">f4")
        self.assertRaises(TypeError, ol.dtype, 4)
        if numpy is not None:
            for name in ("float32", "float64", "int16", "uint64", "bool",
                         "complex128"):
                self.assertEqual(ol.dtype(numpy.dtype(name)).name, name)
                self.assertEqual(ol.dtype(numpy.dtype(name).type).name, name)
                self.assertEqual(ol.dtype(name).typestr,
                                 numpy.dtype(name).str)

    def test_view_array_interface_is_the_buffers_memory(self):
        with self.host.alloc(64) as buf:
            v = buf.view("float32", (3, 4), offset=8)
            ai = v.__array_interface__
            self.assertEqual(ai["version"], 3)
            self.assertEqual(ai["data"], (buf.ptr + 8, False))
            self.assertEqual(ai["shape"], (3, 4))
            self.assertEqual(ai["typestr"], "<f4")
            self.assertIsNone(ai["strides"])  # C order
            col = buf.view("float32", (4,), strides=(16,), offset=4)
            self.assertEqual(col.__array_interface__["strides"], (16,))
            self.assertEqual(col.ptr, buf.ptr + 4)
            ro = buf.view("uint8", (8,), readonly=True)
            self.assertEqual(ro.__array_interface__["data"][1], True)
            del v, col, ro

    def test_views_are_bounds_checked(self):
        with self.host.alloc(64) as buf:
            buf.view("float64", (8,))                       # all of it
            self.assertRaises(ValueError, buf.view, "float64", (9,))
            self.assertRaises(ValueError, buf.view, "float32", (16,),
                              offset=4)
            self.assertRaises(ValueError, buf.view, "float32", (4,),
                              strides=(16,), offset=16)  # last at 64
            self.assertRaises(ValueError, buf.view, "float32", (2,),
                              strides=(-4,))             # before the start
            self.assertRaises(ValueError, buf.view, "uint8", (1,),
                              offset=-1)
            self.assertRaises(ValueError, buf.view, "uint8", (2, 2),
                              strides=(1,))
            buf.view("uint8", (0,), offset=64)           # empty, at the end
            v = buf.view("float32", (2,), strides=(-4,), offset=60)
            self.assertEqual(v.ptr, buf.ptr + 60)
            del v
        self.assertRaises(ol.OffloadError, buf.view, "uint8", (1,))

    def test_a_view_after_shutdown(self):
        buf = self.host.alloc(16)
        v = buf.view("uint8", (16,))
        self.session.close()                      # frees everything
        with self.assertRaises(ol.OffloadError):
            v.ptr
        self.assertRaises(BufferError, v.__dlpack__)
        del v                                     # frees nothing now

    def test_views_and_arrays_are_pointer_arguments(self):
        with self.host.alloc(64) as buf:
            v = buf.view("float32", (4,), offset=16)
            ba = bytearray(8)
            addr = ctypes.addressof((ctypes.c_char * 8).from_buffer(ba))
            self.assertEqual(ol.pack_args(v, ctypes.c_uint32(3)),
                             struct.pack("<QI4x", buf.ptr + 16, 3))
            self.assertEqual(ol.pack_args(ol.from_dlpack(ba)),
                             struct.pack("<Q", addr))
            del v

    def test_dlpack_device_of_the_host_device(self):
        with self.host.alloc(16) as buf:
            self.assertEqual(buf.__dlpack_device__(), (1, 0))
            self.assertEqual(buf.view("uint8", (4,)).__dlpack_device__(),
                             (1, 0))
            with self.assertRaises(AttributeError):
                buf.view("uint8", (4,)).__cuda_array_interface__


# ---- DLPack export, read by the consumer above ------------------------------

class TestDLPackExport(PackageTest):

    def test_versioned_capsule_as_numpy2_and_pytorch_ask(self):
        with self.host.alloc(256) as buf:
            v = buf.view("float32", (3, 5), strides=(40, 4), offset=12)
            cap = v.__dlpack__(max_version=(1, 0), dl_device=None,
                               copy=None, stream=None)
            t = Taken(cap)
            self.assertEqual(t.name, b"dltensor_versioned")
            self.assertEqual(t.version, (1, 0))   # not above the caller's
            self.assertEqual(t.flags, 0)
            self.assertEqual(t.data + t.byte_offset, buf.ptr + 12)
            self.assertEqual(t.shape, (3, 5))
            self.assertEqual(t.strides, (10, 1))  # elements
            self.assertEqual(t.dtype, (2, 32, 1))  # kDLFloat
            self.assertEqual(t.device, (1, 0))
            self.assertEqual(ol.live_exports(), 1)
            del cap, v
            gc.collect()
            self.assertEqual(ol.live_exports(), 1)  # the consumer holds it
            t.release()
            self.assertEqual(ol.live_exports(), 0)

    def test_newer_caller_gets_1_1_and_read_only_flag(self):
        with self.host.alloc(32) as buf:
            t = Taken(buf.view("int16", (4,), readonly=True).__dlpack__(
                max_version=(1, 3)))
            self.assertEqual(t.version, (1, 1))
            self.assertEqual(t.flags & 1, 1)      # READ_ONLY
            self.assertEqual(t.dtype, (0, 16, 1))
            t.release()
            # a legacy capsule cannot say read-only
            self.assertRaises(BufferError,
                              buf.view("int16", (4,), readonly=True)
                              .__dlpack__)

    def test_legacy_capsule_without_max_version(self):
        with self.host.alloc(32) as buf:
            for kw in ({}, {"max_version": None}, {"max_version": (0, 8)}):
                t = Taken(buf.__dlpack__(**kw))
                self.assertEqual(t.name, b"dltensor")
                self.assertEqual((t.data + t.byte_offset, t.shape,
                                  t.dtype), (buf.ptr, (32,), (1, 8, 1)))
                t.release()
            self.assertEqual(ol.live_exports(), 0)

    def test_copy_and_dl_device(self):
        with self.host.alloc(16) as buf:
            buf.copy_from(struct.pack("<4f", 1, 2, 3, 4))
            v = buf.view("float32", (4,))
            t = Taken(v.__dlpack__(max_version=(1, 0), dl_device=(1, 0),
                                   copy=False))
            self.assertEqual(t.data + t.byte_offset, buf.ptr)
            t.release()
            t = Taken(v.__dlpack__(max_version=(1, 0), copy=True))
            self.assertNotEqual(t.data + t.byte_offset, buf.ptr)
            self.assertEqual(t.flags & 2, 2)      # IS_COPIED
            self.assertEqual(ctypes.string_at(t.data + t.byte_offset, 16),
                             struct.pack("<4f", 1, 2, 3, 4))
            t.release()
            with self.assertRaises(BufferError):
                v.__dlpack__(max_version=(1, 0), dl_device=(2, 0))
            with self.assertRaises(BufferError):
                v.__dlpack__(stream=5)            # CPU: stream is None
            with self.assertRaises(BufferError):  # not whole elements
                buf.view("float32", (2,), strides=(6,)).__dlpack__()
            del v
            self.assertEqual(ol.live_exports(), 0)

    def test_close_while_exported_frees_when_the_consumer_lets_go(self):
        buf = self.host.alloc(64)
        ptr = buf.ptr
        t = Taken(buf.view("uint8", (64,)).__dlpack__())
        buf.close()                               # no error
        self.assertTrue(buf.closed)
        self.assertNotIn(buf, ol.live_objects())
        self.assertTrue(alive(ptr), "freed while a consumer holds it")
        ctypes.memset(t.data, 7, 64)              # still ours to write
        del buf
        gc.collect()
        self.assertTrue(alive(ptr))
        t.release()
        self.assertFalse(alive(ptr), "not freed by the last consumer")

    def test_an_unconsumed_capsule_holds_nothing(self):
        buf = self.host.alloc(64)
        ptr = buf.ptr
        cap = buf.__dlpack__()
        buf.close()
        self.assertTrue(alive(ptr))
        del cap
        gc.collect()
        self.assertEqual(ol.live_exports(), 0)
        self.assertFalse(alive(ptr))

    def test_a_view_holds_the_memory(self):
        buf = self.host.alloc(64)
        ptr = buf.ptr
        v = buf.view("uint8", (8,))
        buf.close()
        self.assertTrue(alive(ptr))
        del v
        self.assertFalse(alive(ptr))


# ---- NumPy ------------------------------------------------------------------

@needs_numpy
class TestNumPy(PackageTest):

    def test_asarray_round_trip_same_address(self):
        with self.host.alloc(64) as buf:
            a = numpy.asarray(buf.view("float32", (4, 4)))
            self.assertEqual(a.ctypes.data, buf.ptr)
            self.assertTrue(a.flags.writeable)
            a[...] = numpy.arange(16, dtype=numpy.float32).reshape(4, 4)
            # read through the library
            self.assertEqual(bytes(buf.copy_to()),
                             struct.pack("<16f", *range(16)))
            # and the reverse
            buf.copy_from(struct.pack("<16f", *range(100, 116)))
            self.assertEqual(a[3, 3], 115.0)
            b = numpy.asarray(buf)                # a Buffer: its bytes
            self.assertEqual((b.dtype, b.shape, b.ctypes.data),
                             (numpy.dtype("uint8"), (64,), buf.ptr))
            del a, b

    def test_from_dlpack_same_memory(self):
        with self.host.alloc(64) as buf:
            buf.copy_from(struct.pack("<8d", *range(8)))
            a = numpy.from_dlpack(buf.view("float64", (2, 4)))
            self.assertEqual(a.ctypes.data, buf.ptr)
            self.assertEqual(a.tolist(), [[0, 1, 2, 3], [4, 5, 6, 7]])
            buf.copy_from(struct.pack("<d", 42.0))
            self.assertEqual(a[0, 0], 42.0)       # no copy
            del a
            gc.collect()
            self.assertEqual(ol.live_exports(), 0)

    def test_views_with_offsets_and_strides(self):
        with self.host.alloc(64) as buf:
            buf.copy_from(struct.pack("<16f", *range(16)))
            col = buf.view("float32", (4,), strides=(16,), offset=4)
            self.assertEqual(numpy.asarray(col).tolist(), [1, 5, 9, 13])
            self.assertEqual(numpy.from_dlpack(col).tolist(), [1, 5, 9, 13])
            tr = buf.view("float32", (4, 4), strides=(4, 16))
            self.assertEqual(numpy.asarray(tr).tolist(),
                             numpy.arange(16).reshape(4, 4).T.tolist())
            for shape in ((), (0,), (0, 3)):
                e = buf.view("float32", shape, offset=64 if shape else 60)
                self.assertEqual(numpy.asarray(e).shape, shape)
                self.assertEqual(numpy.from_dlpack(e).shape, shape)
            del e
            rev = buf.view("float32", (4,), strides=(-4,), offset=12)
            self.assertEqual(numpy.from_dlpack(rev).tolist(), [3, 2, 1, 0])
            numpy.asarray(col)[:] = -1            # writes the buffer
            self.assertEqual(struct.unpack("<16f", buf.copy_to())[1::4],
                             (-1.0,) * 4)
            del col, tr, rev
            gc.collect()

    def test_export_outlives_the_buffer_object(self):
        buf = self.host.alloc(64)
        ptr = buf.ptr
        buf.copy_from(struct.pack("<16f", *range(16)))
        a = numpy.from_dlpack(buf.view("float32", (16,)))
        b = numpy.asarray(buf.view("float32", (16,)))
        with buf:
            pass                                  # close(): no error
        ref = weakref.ref(buf)
        del buf
        gc.collect()
        self.assertIsNotNone(ref(), "the exports hold the Buffer")
        self.assertTrue(alive(ptr))
        self.assertEqual(a.sum(), 120.0)
        self.assertEqual(b.sum(), 120.0)
        del a
        gc.collect()
        self.assertTrue(alive(ptr))               # b still holds it
        del b
        gc.collect()
        self.assertFalse(alive(ptr))
        self.assertIsNone(ref())

    def test_import_numpy_array_without_copy(self):
        x = numpy.arange(8, dtype=numpy.float32)
        imp = ol.from_dlpack(x)
        self.assertEqual(imp.ptr, x.ctypes.data)
        self.assertEqual((imp.shape, imp.dtype.name, imp.nbytes),
                         ((8,), "float32", 32))
        self.assertEqual(imp.device, self.host)
        ro = numpy.arange(4, dtype=numpy.int32)
        ro.flags.writeable = False                # NumPy refuses DLPack
        imp = ol.from_dlpack(ro)
        self.assertEqual((imp.ptr, imp.readonly), (ro.ctypes.data, True))
        with self.host.alloc(32) as buf:
            buf.copy_from(x)
            y = numpy.zeros(8, numpy.float32)
            buf.copy_to(y)
            self.assertEqual(y.tolist(), list(range(8)))
            self.assertRaises(TypeError, buf.copy_to, ro)
            self.assertRaises(ValueError, buf.copy_from, x[::2])
        self.assertRaises(TypeError, ol.from_dlpack, object())

    def test_queued_copy_keeps_the_array_alive(self):
        n = 1 << 20
        with self.host.alloc(4 * n) as buf, self.host.queue() as q:
            x = numpy.arange(n, dtype=numpy.float32)
            ref = weakref.ref(x)
            buf.copy_from(x, queue=q)
            del x
            gc.collect()
            self.assertIsNotNone(ref(), "dropped before the copy ran")
            q.sync()
            gc.collect()
            self.assertIsNone(ref(), "kept after the sync")
            out = numpy.empty(n, numpy.float32)
            buf.copy_to(out)
            self.assertTrue((out == numpy.arange(n,
                                                 dtype=numpy.float32)).all())
            # an import through DLPack: the capsule's owner is the array
            y = numpy.full(n, 3.0, numpy.float32)
            ref = weakref.ref(y)
            buf.copy_from(ol.from_dlpack(y), queue=q)
            del y
            gc.collect()
            self.assertIsNotNone(ref())
            q.sync()
            gc.collect()
            self.assertIsNone(ref())
            buf.copy_to(out)
            self.assertTrue((out == 3.0).all())

    def test_launch_arguments_take_numpy_arrays(self):
        if olpkg.RELEASE != "23.1":
            self.skipTest("launch(arguments=[...]) is 23.1's")

        class Pair(ctypes.Structure):
            _fields_ = [("a", ctypes.c_int32), ("b", ctypes.c_int32)]
        so = olpkg.kernel("tests/c/kernels/params.c")
        n = 4
        p = numpy.array([10, 20, 30, 40], dtype=numpy.int32)
        out = numpy.zeros((n, 8), dtype=numpy.int64)
        with self.host.load_program(so) as prog, self.host.queue() as q:
            q.launch(prog.kernel("params_mixed"), 1, n, arguments=[
                ctypes.c_byte(1), ctypes.c_short(2), ctypes.c_int(3),
                ctypes.c_double(0.5), p, Pair(4, 5), ctypes.c_int64(6),
                out])
            q.sync()
        want = [[1 + i, 2 + i, 3 + i, 4 + i, p[i], 4 + i, 5 + i, 6 + i]
                for i in range(n)]
        self.assertEqual(out.tolist(), want)

    def test_interpreter_exit_with_live_exports_and_imports(self):
        # arrays, capsules and imports alive at exit, with the library
        # shut down and not: a clean exit, nothing reported
        for shut in (True, False):
            code = textwrap.dedent("""
                import numpy as np
                import liboffload as ol
                s = ol.init()
                b = ol.host_device().alloc(64)
                a = np.from_dlpack(b.view("float32", (16,)))
                c = np.asarray(b.view("float32", (16,)))
                cap = b.__dlpack__()                  # never consumed
                vcap = b.__dlpack__(max_version=(1, 0))
                x = np.arange(4.0)
                imp = ol.from_dlpack(x)
                b.close()
                if %r:
                    s.close()
                print("exit")
                """ % shut)
            r = olpkg.run_python(code)
            self.assertEqual((r.returncode, r.stdout.strip(), r.stderr),
                             (0, "exit", ""))

    def test_launch_takes_numpy_arrays(self):
        so = olpkg.kernel("examples/saxpy_kernel.c")
        n = 1024
        x = numpy.arange(n, dtype=numpy.float32)
        y = numpy.ones(n, dtype=numpy.float32)
        with self.host.load_program(so) as prog, self.host.queue() as q:
            q.launch(prog.kernel("saxpy"), n // 256, 256,
                     ctypes.c_float(2.0), x, y, ctypes.c_uint32(n))
            q.sync()
        self.assertEqual(y.tolist(), [2.0 * i + 1 for i in range(n)])


# ---- without NumPy ----------------------------------------------------------

class TestWithoutNumPy(unittest.TestCase):

    def test_imports_and_exports_without_numpy(self):
        code = textwrap.dedent("""
            import sys
            sys.modules["numpy"] = None        # import numpy: ImportError
            import ctypes, gc
            import liboffload as ol
            assert "numpy" not in [m for m in sys.modules
                                   if sys.modules[m] is not None]
            with ol.init():
                with ol.host_device().alloc(16) as buf:
                    v = buf.view("float32", (4,))
                    ai = v.__array_interface__
                    assert ai["data"] == (buf.ptr, False), ai
                    for kw in ({}, {"max_version": (1, 0)}):
                        cap = v.__dlpack__(**kw)
                        assert type(cap).__name__ == "PyCapsule"
                        del cap
                    gc.collect()
                    assert ol.live_exports() == 0
                    imp = ol.from_dlpack(bytearray(8))
                    assert imp.nbytes == 8
                    try:
                        import numpy
                    except ImportError:
                        print("no numpy, ok")
            """)
        r = olpkg.run_python(code)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), "no numpy, ok")


# ---- the CUDA driver double -------------------------------------------------

def fake_cuda():
    """tests/drivers/fake_cuda.c built as a libcuda.so (as
    tests/c/device/Makefile builds it)."""
    out = os.path.join(olpkg.tmpdir(), "fake-cuda", "libcuda.so")
    if not os.path.exists(out):
        os.makedirs(os.path.dirname(out), exist_ok=True)
        cc = os.environ.get("CC", "cc")
        subprocess.run([cc, "-shared", "-fPIC", "-O1", "-I",
                        os.path.join(olpkg.ROOT, "include"),
                        os.path.join(olpkg.ROOT, "tests", "drivers",
                                     "fake_cuda.c"),
                        "-o", out, "-ldl", "-lpthread"], check=True)
    return out


CUDA_CHILD = r"""
import ctypes, gc, sys
sys.path.insert(0, sys.argv[1])
import test_arrays as T
import liboffload as ol
try:
    import numpy
except ImportError:
    numpy = None
with ol.init():
    gpus = [d for d in ol.devices() if d.platform.backend ==
            ol.PlatformBackend.CUDA]
    assert len(gpus) == 2, gpus
    for ordinal, gpu in enumerate(gpus):
        with gpu.alloc(64) as buf:
            assert buf.__dlpack_device__() == (2, ordinal)
            v = buf.view("float32", (4, 4), offset=0)
            cai = v.__cuda_array_interface__
            assert cai["version"] == 3 and cai["data"] == (buf.ptr, False)
            assert cai["shape"] == (4, 4) and cai["typestr"] == "<f4"
            assert cai["strides"] is None and cai["stream"] is None
            assert not hasattr(v, "__array_interface__")
            t = T.Taken(v.__dlpack__(max_version=(1, 0), stream=-1))
            assert t.device == (2, ordinal), t.device
            assert t.data + t.byte_offset == buf.ptr
            t.release()
            # a legacy caller with no arguments gets the same device
            t = T.Taken(buf.__dlpack__())
            assert (t.device, t.data) == ((2, ordinal), buf.ptr)
            t.release()
            for bad in (0,):
                try:
                    v.__dlpack__(stream=bad)
                    raise AssertionError("stream 0 accepted")
                except ValueError:
                    pass
            # a copy to the CPU
            buf.copy_from(bytes(range(64)))
            t = T.Taken(v.__dlpack__(max_version=(1, 0), dl_device=(1, 0)))
            assert t.device == (1, 0) and t.flags & 2
            assert ctypes.string_at(t.data + t.byte_offset, 64) == \
                bytes(range(64))
            t.release()
            # a copy on the device: a new allocation, freed by the deleter
            t = T.Taken(v.__dlpack__(max_version=(1, 0), copy=True))
            assert t.device == (2, ordinal) and t.flags & 2
            src = t.data + t.byte_offset
            assert src != buf.ptr and T.alive(src)
            back = ctypes.create_string_buffer(64)
            ol.call("olMemcpy", None, ctypes.addressof(back),
                    ol.host_device().handle, src, gpu.handle, 64)
            assert back.raw == bytes(range(64))
            t.release()
            assert not T.alive(src)
            try:
                v.__dlpack__(max_version=(1, 0), dl_device=(1, 0),
                             copy=False)
                raise AssertionError("copy=False accepted")
            except BufferError:
                pass
            # imported back: device memory of this GPU
            imp = ol.from_dlpack(v)
            assert imp.device == gpu and imp.ptr == buf.ptr
            del imp
            if numpy is not None:
                for fn in (numpy.from_dlpack, numpy.asarray):
                    try:
                        fn(v)
                        raise AssertionError("%s took device memory" % fn)
                    except (SystemError, AssertionError):
                        raise
                    except (BufferError, TypeError, RuntimeError,
                            ValueError) as e:
                        pass
                x = numpy.arange(16, dtype=numpy.float32)
                buf.copy_from(x)
                y = numpy.zeros(16, numpy.float32)
                buf.copy_to(y)
                assert (x == y).all()
                with gpu.alloc(64) as other:
                    other.copy_from(v)          # device to device
                    z = numpy.zeros(16, numpy.float32)
                    other.copy_to(z)
                    assert (x == z).all()
            del v
        with gpu.alloc(16, ol.AllocType.HOST) as h, \
                gpu.alloc(16, ol.AllocType.MANAGED) as m:
            assert h.__dlpack_device__() == (3, 0)
            assert m.__dlpack_device__() == (13, ordinal)
            assert not hasattr(h.view("uint8", (16,)),
                               "__cuda_array_interface__")
            assert m.view("uint8", (16,)).__cuda_array_interface__[
                "data"][0] == m.ptr
            if numpy is not None:
                a = numpy.from_dlpack(h)
                assert a.ctypes.data == h.ptr
                del a
        if numpy is not None:
            # host arrays as a GPU kernel's pointers: registered for the
            # launch (olMemRegister), unregistered after the sync
            n = 1024
            x = numpy.arange(n, dtype=numpy.float32)
            y = numpy.ones(n, dtype=numpy.float32)
            with gpu.load_program(sys.argv[2]) as prog, gpu.queue() as q:
                q.launch(prog.kernel("saxpy"), n // 256, 256,
                         ctypes.c_float(2.0), x, y, ctypes.c_uint32(n))
                q.sync()
            assert y.tolist() == [2.0 * i + 1 for i in range(n)], y[:4]
    gc.collect()
    assert ol.live_exports() == 0
    print("cuda ok", numpy is not None)
"""


def fake_cubin(source):
    """A host kernel image dressed as a cubin for the double
    (tests/c/device/fakecubin.sh)."""
    so = olpkg.kernel(source)
    out = so[:-3] + ".fakecubin"
    if not os.path.exists(out):
        subprocess.run(["sh", os.path.join(olpkg.ROOT, "tests", "c",
                                           "device", "fakecubin.sh"),
                        os.environ.get("OBJCOPY", "objcopy"),
                        os.environ.get("READELF", "readelf"), so, out],
                       check=True)
    return out


class TestFakeCUDA(unittest.TestCase):

    def test_cuda_double(self):
        drv = fake_cuda()
        cubin = fake_cubin("examples/saxpy_kernel.c")
        trace = os.path.join(olpkg.tmpdir(), "cuda-arrays.trace")
        if os.path.exists(trace):
            os.unlink(trace)
        r = subprocess.run(
            [sys.executable, "-c", CUDA_CHILD, olpkg.HERE, cubin],
            cwd=olpkg.ROOT, capture_output=True, text=True, timeout=120,
            env=olpkg.child_env(OFFLOAD_TRACE_FILE=trace,
                                OFFLOAD_CUDA_LIBRARY=drv,
                                FAKE_CUDA_DEVICES="2",
                                FAKE_CUDA_CC_MAJOR="8",
                                OFFLOAD_PLUGINS="cuda"))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(r.stdout.strip(),
                         "cuda ok %s" % (numpy is not None))
        if numpy is not None:
            # the launches registered x and y on each GPU, and let go
            with open(trace) as f:
                calls = re.findall(r"^---> (olMem(?:Un)?[Rr]egister)\(",
                                   f.read(), re.M)
            self.assertEqual(calls.count("olMemRegister"), 4, calls)
            self.assertEqual(calls.count("olMemUnregister"), 4, calls)


def fake_hsa():
    """tests/drivers/fake_hsa.c built as libhsa-runtime64.so."""
    out = os.path.join(olpkg.tmpdir(), "fake-amdgpu", "libhsa-runtime64.so")
    if not os.path.exists(out):
        os.makedirs(os.path.dirname(out), exist_ok=True)
        subprocess.run([os.environ.get("CC", "cc"), "-shared", "-fPIC",
                        "-O1", "-I", os.path.join(olpkg.ROOT, "include"),
                        os.path.join(olpkg.ROOT, "tests", "drivers",
                                     "fake_hsa.c"),
                        "-o", out, "-ldl", "-lpthread"], check=True)
    return out


AMD_CHILD = r"""
import sys
sys.path.insert(0, sys.argv[1])
import test_arrays as T
import liboffload as ol
with ol.init():
    gpus = [d for d in ol.devices() if d.platform.backend ==
            ol.PlatformBackend.AMDGPU]
    assert len(gpus) == 2, gpus
    for ordinal, gpu in enumerate(gpus):
        with gpu.alloc(16) as buf:
            assert buf.__dlpack_device__() == (10, ordinal)
            v = buf.view("int32", (4,))
            assert not hasattr(v, "__array_interface__")
            assert not hasattr(v, "__cuda_array_interface__")
            t = T.Taken(v.__dlpack__(max_version=(1, 0)))
            assert (t.device, t.data) == ((10, ordinal), buf.ptr)
            t.release()
            for bad in (1, 2):
                try:
                    v.__dlpack__(stream=bad)
                    raise AssertionError("ROCm stream %d accepted" % bad)
                except ValueError:
                    pass
            imp = ol.from_dlpack(v)
            assert imp.device == gpu and imp.ptr == buf.ptr
            del v, imp
        for kind in (ol.AllocType.HOST, ol.AllocType.MANAGED):
            with gpu.alloc(16, kind) as buf:
                assert buf.__dlpack_device__() == (11, 0)
                v = buf.view("uint8", (16,))
                assert v.__array_interface__["data"][0] == buf.ptr
                del v
    print("amdgpu ok")
"""


class TestFakeAMDGPU(unittest.TestCase):

    def test_amdgpu_double(self):
        r = subprocess.run(
            [sys.executable, "-c", AMD_CHILD, olpkg.HERE],
            cwd=olpkg.ROOT, capture_output=True, text=True, timeout=120,
            env=olpkg.child_env(OFFLOAD_HSA_LIBRARY=fake_hsa(),
                                FAKE_HSA_GPUS="2", FAKE_HSA_GFX="gfx90a",
                                OFFLOAD_PLUGINS="amdgpu"))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(r.stdout.strip(), "amdgpu ok")


# ---- docs/python-arrays.md --------------------------------------------------

class TestDocs(unittest.TestCase):

    def test_arrays_doc_example_runs_and_prints_what_it_says(self):
        with open(os.path.join(olpkg.ROOT, "docs", "python-arrays.md")) as f:
            text = f.read()
        block = re.search(r"^```python\n(.*?)^```", text, re.S | re.M)
        self.assertIsNotNone(block, "docs/python-arrays.md: no python block")
        code = block.group(1)
        prints = re.findall(r"^# prints: (.*)$", code, re.M)
        self.assertEqual(len(prints), 1, "one '# prints: ' line")
        if numpy is None:
            self.skipTest("the example uses NumPy")
        r = olpkg.run_python(code, timeout=120, cwd=olpkg.ROOT)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip().splitlines()[-1], prints[0],
                         r.stdout)


if __name__ == "__main__":
    unittest.main()
