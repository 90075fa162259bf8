"""Arrays: typed views of Buffers exported through DLPack and the array
interfaces, and other libraries' arrays imported as memory for copies and
kernel arguments. Standard library only: NumPy is used when the caller
brings it, never imported here except by View.__array__ (which only NumPy
calls).

DLPack's structs are built with ctypes and handed out in PyCapsules made by
ctypes.pythonapi.PyCapsule_New; RATIONALE.md ("Why DLPack through ctypes
capsules") says why and how the lifetimes work.
"""

import ctypes
import gc
import operator
import re
import sys
import threading
import weakref

from . import _core
from ._api import AllocType, DeviceType, Errc, PlatformBackend
from ._core import call, has_release

# ---- DLPack (dlpack.h 1.x) ---------------------------------------------

kDLCPU = 1
kDLCUDA = 2
kDLCUDAHost = 3
kDLROCM = 10
kDLROCMHost = 11
kDLCUDAManaged = 13
kDLOneAPI = 14
# device types whose memory the CPU reads and writes in place
CPU_ACCESSIBLE = (kDLCPU, kDLCUDAHost, kDLROCMHost, kDLCUDAManaged)

FLAG_READ_ONLY = 1 << 0
FLAG_IS_COPIED = 1 << 1

# the newest DLPack version whose layout this module writes
DLPACK_VERSION = (1, 1)


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice),
                ("ndim", ctypes.c_int32), ("dtype", DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


# the deleter's parameter is a pointer to the managed struct itself
DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", DELETER)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                ("deleter", DELETER), ("flags", ctypes.c_uint64),
                ("dl_tensor", DLTensor)]


# ---- capsules ----------------------------------------------------------

# Own function objects (indexing makes new ones): pythonapi's attributes are
# shared with every other user of ctypes, who may set other argtypes.
_api_ = ctypes.pythonapi
_PyCapsule_New = _api_["PyCapsule_New"]
_PyCapsule_New.restype = ctypes.py_object
_PyCapsule_New.argtypes = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
_PyCapsule_IsValid = _api_["PyCapsule_IsValid"]
_PyCapsule_IsValid.restype = ctypes.c_int
_PyCapsule_IsValid.argtypes = (ctypes.c_void_p, ctypes.c_void_p)
_PyCapsule_GetPointer = _api_["PyCapsule_GetPointer"]
_PyCapsule_GetPointer.restype = ctypes.c_void_p
_PyCapsule_GetPointer.argtypes = (ctypes.c_void_p, ctypes.c_void_p)
_PyCapsule_GetName = _api_["PyCapsule_GetName"]
_PyCapsule_GetName.restype = ctypes.c_void_p
_PyCapsule_GetName.argtypes = (ctypes.py_object,)
_PyCapsule_SetName = _api_["PyCapsule_SetName"]
_PyCapsule_SetName.restype = ctypes.c_int
_PyCapsule_SetName.argtypes = (ctypes.py_object, ctypes.c_void_p)
_Py_IncRef = _api_["Py_IncRef"]
_Py_IncRef.argtypes = (ctypes.py_object,)


def _forever(obj):
    """Take a reference that is never dropped: a capsule or a managed
    tensor may be destroyed during interpreter shutdown, after this
    module's objects; the C code and names they point at must outlive it."""
    _Py_IncRef(obj)
    return obj


def _c_name(text):
    """A NUL-terminated name at an address valid for the life of the
    process (capsule names are pointers the capsule keeps)."""
    buf = _forever(ctypes.create_string_buffer(text))
    return ctypes.addressof(buf)


NAME_LEGACY = _c_name(b"dltensor")
NAME_VERSIONED = _c_name(b"dltensor_versioned")
NAME_USED_LEGACY = _c_name(b"used_dltensor")
NAME_USED_VERSIONED = _c_name(b"used_dltensor_versioned")

# address of a managed tensor this package exported -> what it keeps alive
_exports = {}
# reentrant: a garbage collection (which reaps) may start inside any
# section that allocates
_exports_lock = threading.RLock()


def _delete(addr, exports=_exports, lock=_exports_lock):
    # The deleter: the consumer (or the capsule, unconsumed) is done. The
    # struct's memory and the view (which holds the Buffer) go with the
    # entry; the Buffer is freed here when it was closed and this was its
    # last holder. Defaults bind the dict: at interpreter exit module
    # globals may already be gone.
    try:
        with lock:
            entry = exports.pop(addr, None)
        del entry
    except Exception:  # a deleter cannot report anything
        pass


_DELETE = _forever(DELETER(_delete))


def _reap():
    """Release the tensors of capsules no consumer took and nobody holds.

    The capsules have no destructor: a consumer that refuses a tensor
    (NumPy 1.24 with CUDA memory) drops the capsule with its exception
    set, and a destructor written in Python cannot run then without
    losing that exception (ctypes reports and clears it: a SystemError).
    So each entry keeps its capsule, and this looks at them: renamed
    "used_..." means a consumer owns the tensor and calls the deleter
    (the capsule is let go); still named and referenced only by the entry
    means abandoned. Called on each export, on live_exports(), before a
    Buffer is freed and after each garbage collection."""
    with _exports_lock:
        entries = list(_exports.items())
    dead = []
    for addr, entry in entries:
        if entry[4] is None:
            continue
        named = _PyCapsule_IsValid(id(entry[4]), NAME_LEGACY) or \
            _PyCapsule_IsValid(id(entry[4]), NAME_VERSIONED)
        if not named:
            entry[4] = None  # consumed: its consumer calls the deleter
        elif sys.getrefcount(entry[4]) <= 2:  # the entry's and the call's
            dead.append(addr)
    with _exports_lock:
        dead = [_exports.pop(addr, None) for addr in dead]
    del dead  # drops the views (and so the Buffers' holds) outside the lock


def _after_gc(phase, info):
    if phase == "stop":
        _reap()


gc.callbacks.append(_after_gc)


def live_exports():
    """How many managed tensors this package exported that no consumer
    has released yet."""
    _reap()
    with _exports_lock:
        return len(_exports)


# ---- dtypes ------------------------------------------------------------

_DL_CODES = {"i": 0, "u": 1, "f": 2, "c": 5, "b": 6}
_KINDS = {0: "i", 1: "u", 2: "f", 5: "c", 6: "b"}
_NAMES = {"bool": ("b", 1)}
for _bits in (8, 16, 32, 64):
    _NAMES["int%d" % _bits] = ("i", _bits // 8)
    _NAMES["uint%d" % _bits] = ("u", _bits // 8)
for _bits in (16, 32, 64):
    _NAMES["float%d" % _bits] = ("f", _bits // 8)
for _bits in (64, 128):
    _NAMES["complex%d" % _bits] = ("c", _bits // 8)
_TYPESTR = re.compile(r"^([<|=]?)([biufc])(\d+)$")


class DType:
    """An element type: kind ("b", "i", "u", "f", "c", NumPy's letters)
    and itemsize in bytes. name is NumPy's ("float32"), typestr the array
    interface's ("<f4")."""

    __slots__ = ("kind", "itemsize")

    def __init__(self, kind, itemsize):
        self.kind = kind
        self.itemsize = itemsize

    @property
    def name(self):
        if self.kind == "b":
            return "bool"
        prefix = {"i": "int", "u": "uint", "f": "float", "c": "complex"}
        return "%s%d" % (prefix[self.kind], self.itemsize * 8)

    @property
    def typestr(self):
        order = "|" if self.itemsize == 1 else "<"
        return "%s%s%d" % (order, self.kind, self.itemsize)

    def __eq__(self, other):
        try:
            other = dtype(other)
        except (TypeError, ValueError):
            return NotImplemented
        return (self.kind, self.itemsize) == (other.kind, other.itemsize)

    def __hash__(self):
        return hash((self.kind, self.itemsize))

    def __repr__(self):
        return "dtype(%r)" % self.name


def dtype(value):
    """A DType from a name ("float32"), an array-interface typestr
    ("<f4"), a NumPy dtype or scalar type, or a DType."""
    if isinstance(value, DType):
        return value
    if isinstance(value, str):
        text = value
    elif isinstance(getattr(value, "str", None), str):
        text = value.str           # a NumPy dtype: its typestr
    elif isinstance(value, type):
        np = sys.modules.get("numpy")  # imported if value is one of its
        if np is not None and issubclass(value, np.generic):
            text = np.dtype(value).str  # numpy.float32 and the like
        else:
            text = value.__name__
    else:
        raise TypeError("dtype: %r is not a type name, typestr or NumPy "
                        "dtype" % (value,))
    if text in _NAMES:
        return DType(*_NAMES[text])
    m = _TYPESTR.match(text)
    if m:
        kind, size = m.group(2), int(m.group(3))
        if (kind, size) in _NAMES.values():
            return DType(kind, size)
    raise ValueError("dtype %r: not one of %s (little-endian typestrs such "
                     "as '<f4' also work)" % (value, ", ".join(_NAMES)))


def _dl_dtype(dt):
    return DLDataType(_DL_CODES[dt.kind], dt.itemsize * 8, 1)


def _from_dl_dtype(code, bits, lanes):
    kind = _KINDS.get(code)
    if kind is None or lanes != 1 or bits % 8:
        return None  # opaque, bfloat, vectors, sub-byte: bytes only
    try:
        return dtype("%s%d" % (kind, bits // 8))
    except ValueError:
        return None


# ---- where memory is ---------------------------------------------------

def _ordinal(device):
    """The device's index among its platform's devices: the plugins add
    them in the driver's order, so it is the CUDA (HIP) device ordinal."""
    from ._objects import devices
    same = [d for d in devices() if d.platform == device.platform]
    return same.index(device)


def dlpack_device(device, alloc_type):
    """(DLPack device type, id) of an allocation of alloc_type on device."""
    if device.type == DeviceType.HOST:
        return (kDLCPU, 0)
    backend = device.platform.backend
    alloc_type = AllocType(alloc_type)
    if backend == PlatformBackend.CUDA:
        if alloc_type == AllocType.HOST:
            return (kDLCUDAHost, 0)
        if alloc_type == AllocType.MANAGED:
            return (kDLCUDAManaged, _ordinal(device))
        return (kDLCUDA, _ordinal(device))
    if backend == PlatformBackend.AMDGPU:
        if alloc_type == AllocType.DEVICE:
            return (kDLROCM, _ordinal(device))
        # pinned host and fine-grained (managed) memory: host memory
        return (kDLROCMHost, 0)
    if alloc_type == AllocType.DEVICE:
        return (kDLOneAPI, _ordinal(device))
    return (kDLCPU, 0)


def _device_for(dl_type, dl_id):
    """The library's Device for DLPack device memory (type, id), or a
    BufferError."""
    from ._objects import devices
    backend = {kDLCUDA: PlatformBackend.CUDA,
               kDLROCM: PlatformBackend.AMDGPU}.get(dl_type)
    if backend is None:
        raise BufferError("DLPack device type %d is not memory this "
                          "library reaches (CPU, CUDA or ROCm)" % dl_type)
    gpus = [d for d in devices() if d.type != DeviceType.HOST and
            d.platform.backend == backend]
    for d in gpus:
        if _ordinal(d) == dl_id:
            return d
    raise BufferError("%s device %d is not a device this library sees "
                      "(it sees %d)" % (backend.name, dl_id, len(gpus)))


def _host():
    from ._objects import host_device
    return host_device()


# ---- views (export) ------------------------------------------------------

def _extent(shape, strides, itemsize):
    """(lowest, highest + 1) byte offsets an array reaches, relative to
    its first element; (0, 0) when it has no elements."""
    if any(n == 0 for n in shape):
        return 0, 0
    lo = sum(min(0, (n - 1) * s) for n, s in zip(shape, strides))
    hi = sum(max(0, (n - 1) * s) for n, s in zip(shape, strides))
    return lo, hi + itemsize


def _c_strides(shape, itemsize):
    out, step = [], itemsize
    for n in reversed(shape):
        out.append(step)
        step *= max(n, 1)
    return tuple(reversed(out))


def _is_c_contiguous(shape, strides, itemsize):
    if any(n == 0 for n in shape):
        return True
    step = itemsize
    for n, s in zip(reversed(shape), reversed(strides)):
        if n != 1 and s != step:
            return False
        step *= n
    return True


class View:
    """A typed window on a Buffer: dtype, shape, byte strides and byte
    offset (Buffer.view). It exports the memory as an array through
    __dlpack__, __array_interface__ (memory the CPU reaches) and
    __cuda_array_interface__ (CUDA device and managed memory). A view
    holds its Buffer: closing the Buffer while a view or any export of it
    lives frees the memory only when the last of them goes."""

    def __init__(self, buffer, dtype_, shape, strides=None, offset=0,
                 readonly=False):
        self.dtype = dtype(dtype_)
        if isinstance(shape, int):
            shape = (shape,)
        self.shape = tuple(operator.index(n) for n in shape)
        if any(n < 0 for n in self.shape):
            raise ValueError("view: negative dimension in shape %r" %
                             (self.shape,))
        itemsize = self.dtype.itemsize
        if strides is None:
            strides = _c_strides(self.shape, itemsize)
        else:
            if isinstance(strides, int):
                strides = (strides,)
            strides = tuple(operator.index(s) for s in strides)
            if len(strides) != len(self.shape):
                raise ValueError("view: %d strides for %d dimensions" %
                                 (len(strides), len(self.shape)))
        self.strides = strides
        self.offset = operator.index(offset)
        self.readonly = bool(readonly)
        lo, hi = _extent(self.shape, strides, itemsize)
        ptr = buffer.ptr  # raises for a freed buffer
        if self.offset < 0 or self.offset > buffer.size or \
                self.offset + lo < 0 or self.offset + hi > buffer.size:
            raise ValueError(
                "view: %s %r with strides %r at offset %d reaches bytes "
                "[%d, %d), outside the buffer at %#x (%d bytes)" %
                (self.dtype.name, self.shape, strides, self.offset,
                 self.offset + lo, self.offset + hi, ptr, buffer.size))
        self.buffer = buffer
        buffer._hold()
        weakref.finalize(self, buffer._unhold)

    # -- shape and place --
    def _gone(self):
        # a final shutdown since the buffer was made freed its memory
        return self.buffer._epoch != _core._State.epoch

    @property
    def ptr(self):
        """The address of element [0, ..., 0]."""
        if self._gone():
            raise _core.OffloadError(
                Errc.INVALID_ARGUMENT, "the view's memory at %#x was freed "
                "by the library's shutdown" % (self.buffer._ptr,), "olMemFree")
        return self.buffer._ptr + self.offset

    @property
    def device(self):
        return self.buffer.device

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def itemsize(self):
        return self.dtype.itemsize

    @property
    def nbytes(self):
        return self.size * self.itemsize

    @property
    def c_contiguous(self):
        return _is_c_contiguous(self.shape, self.strides, self.itemsize)

    def __dlpack_device__(self):
        return dlpack_device(self.buffer.device, self.buffer.type)

    @property
    def _cpu_accessible(self):
        return self.__dlpack_device__()[0] in CPU_ACCESSIBLE

    # -- DLPack --
    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None,
                   copy=None):
        """A PyCapsule holding a DLPack managed tensor of this view:
        "dltensor_versioned" (DLPack 1.x) when max_version >= (1, 0),
        else a legacy "dltensor". dl_device (1, 0) of device memory, or
        copy=True, exports a copy; copy=False refuses to copy
        (BufferError). Work queued on the memory must be complete (sync
        its queues first): the export waits for nothing."""
        _reap()
        if self._gone():
            raise BufferError("the view's memory was freed by the library's "
                              "shutdown")
        own = self.__dlpack_device__()
        _check_stream(own[0], stream)
        versioned = False
        if max_version is not None:
            major, minor = (operator.index(v) for v in tuple(max_version))
            versioned = major >= 1
            version = (1, 0) if (major, minor) == (1, 0) else DLPACK_VERSION
        if dl_device is not None:
            dl_device = tuple(operator.index(v) for v in dl_device)
        target = own
        if dl_device is not None and dl_device != own:
            if dl_device == (kDLCPU, 0) and (own[0] in CPU_ACCESSIBLE or
                                             copy is not False):
                target = dl_device
            else:
                raise BufferError(
                    "cannot export memory of DLPack device %r to device %r%s"
                    % (own, dl_device, " without a copy (copy=False)"
                       if dl_device == (kDLCPU, 0) else ""))
        need_copy = copy is True or (target[0] in CPU_ACCESSIBLE and
                                     own[0] not in CPU_ACCESSIBLE)
        if need_copy and copy is False:
            raise BufferError("the export needs a copy and copy=False")
        if self.readonly and not versioned:
            # a legacy capsule cannot say read-only: its consumer may write
            raise BufferError("a read-only view is exported only as a "
                              "versioned capsule (max_version >= (1, 0))")
        if own[0] == kDLOneAPI and not need_copy:
            raise BufferError("Level Zero device memory cannot be exported")
        for s in self.strides:
            if s % self.itemsize:
                raise BufferError(
                    "stride %d bytes is not a multiple of the %d-byte "
                    "element: DLPack strides count elements" %
                    (s, self.itemsize))
        keep = self
        flags = FLAG_READ_ONLY if self.readonly else 0
        base, byte_offset = self.buffer._ptr, self.offset
        if need_copy:
            keep, base, byte_offset, target = self._copy_for(target)
            flags |= FLAG_IS_COPIED
        ndim = len(self.shape)
        shape = (ctypes.c_int64 * max(ndim, 1))(*self.shape)
        strides = (ctypes.c_int64 * max(ndim, 1))(
            *[s // self.itemsize for s in self.strides])
        tensor = DLTensor(base, DLDevice(*target), ndim,
                          _dl_dtype(self.dtype),
                          ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64)),
                          ctypes.cast(strides,
                                      ctypes.POINTER(ctypes.c_int64)),
                          byte_offset)
        if versioned:
            managed = DLManagedTensorVersioned(
                DLPackVersion(*version), None, _DELETE, flags, tensor)
            name = NAME_VERSIONED
        else:
            managed = DLManagedTensor(tensor, None, _DELETE)
            name = NAME_LEGACY
        addr = ctypes.addressof(managed)
        managed.manager_ctx = addr
        entry = [managed, shape, strides, keep, None]
        with _exports_lock:
            _exports[addr] = entry
        try:
            cap = _PyCapsule_New(addr, name, None)
        except BaseException:
            _delete(addr)
            raise
        entry[4] = cap
        return cap

    def _copy_for(self, target):
        """(keep-alive, base address, byte offset, device) of a copy of the
        bytes this view reaches, on target (the CPU, or the view's own
        device)."""
        lo, hi = _extent(self.shape, self.strides, self.itemsize)
        span = hi - lo
        src = self.buffer._ptr + self.offset + lo
        dev = self.buffer.device
        if target[0] in CPU_ACCESSIBLE:
            mem = (ctypes.c_char * max(span, 1))()
            if span:
                call("olMemcpy", None, ctypes.addressof(mem),
                     _host().handle, src, dev.handle, span)
            return mem, ctypes.addressof(mem), -lo, (kDLCPU, 0)
        copy = dev.alloc(max(span, 1), self.buffer.type)
        if span:
            call("olMemcpy", None, copy.ptr, dev.handle, src, dev.handle,
                 span)
        keep = copy.view("uint8", (max(span, 1),))
        copy.close()  # freed when the consumer lets go of the view
        return keep, copy._ptr, -lo, target

    # -- the array interfaces --
    @property
    def __array_interface__(self):
        """NumPy's array interface (version 3) of memory the CPU reaches:
        numpy.asarray(view) is a writable array on the same memory."""
        if not self._cpu_accessible:
            raise AttributeError(
                "__array_interface__: the memory is on %s, not reachable "
                "by the CPU" % (self.__dlpack_device__(),))
        return self._interface(3)

    @property
    def __cuda_array_interface__(self):
        """The CUDA array interface (version 3) of CUDA device or managed
        memory. No stream: the memory is ready (sync its queues before
        exporting)."""
        if self.__dlpack_device__()[0] not in (kDLCUDA, kDLCUDAManaged):
            raise AttributeError(
                "__cuda_array_interface__: the memory is not CUDA device "
                "memory (DLPack device %r)" % (self.__dlpack_device__(),))
        d = self._interface(3)
        d["stream"] = None
        return d

    def _interface(self, version):
        ptr = self.ptr  # valid for an empty view too (NumPy refuses NULL)
        return {
            "version": version,
            "shape": self.shape,
            "typestr": self.dtype.typestr,
            "descr": [("", self.dtype.typestr)],
            "data": (ptr, self.readonly),
            "strides": None if self.c_contiguous else self.strides,
        }

    def __array__(self, dtype=None, copy=None):
        """numpy.asarray(view): an array on the same memory (memory the
        CPU reaches); TypeError for device memory."""
        if not self._cpu_accessible:
            raise TypeError(
                "the view's memory is on device %r, which the CPU cannot "
                "read: copy it to the host (Buffer.copy_to) first" %
                (self.__dlpack_device__(),))
        import numpy
        holder = _InterfaceHolder(self)
        arr = numpy.asarray(holder)
        if dtype is not None and numpy.dtype(dtype) != arr.dtype:
            if copy is False:
                raise ValueError("a dtype change needs a copy")
            return arr.astype(dtype)
        if copy:
            return arr.copy()
        return arr

    def __repr__(self):
        return "<View %s%r strides=%r offset=%d of %r>" % (
            self.dtype.name, self.shape, self.strides, self.offset,
            self.buffer)


class _InterfaceHolder:
    """What numpy.asarray keeps as the array's base for View.__array__."""

    def __init__(self, view):
        self.view = view
        self.__array_interface__ = view.__array_interface__


def _check_stream(dl_type, stream):
    if stream is None:
        return
    if dl_type == kDLCPU:
        raise BufferError("stream must be None for CPU memory, not %r" %
                          (stream,))
    if not isinstance(stream, int) or isinstance(stream, bool):
        raise TypeError("stream must be an int or None, not %r" % (stream,))
    if dl_type in (kDLCUDA, kDLCUDAHost, kDLCUDAManaged) and stream == 0:
        raise ValueError("stream 0 is ambiguous for CUDA; use 1 (legacy "
                         "default stream) or 2 (per-thread)")
    if dl_type in (kDLROCM, kDLROCMHost) and stream in (1, 2):
        raise ValueError("stream %d is not a ROCm stream" % stream)


# ---- imports -------------------------------------------------------------

_call_deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


def _release_tensor(deleter, addr):
    if deleter:
        _call_deleter(deleter)(addr)


class Array:
    """Another library's array as memory this package uses in place
    (from_dlpack). ptr is the address of element [0, ..., 0], device the
    library's Device whose memory it is (the host device for memory the
    CPU reaches), shape, strides (bytes), dtype (None for types DLPack
    has that NumPy lacks), readonly. The producer's memory stays alive
    while the Array, or any queue that used it and was not synced, does."""

    def __init__(self, ptr, device, shape, strides, dt, readonly, owner,
                 dl_device, itemsize=None):
        self.ptr = ptr
        self.device = device
        self.shape = tuple(shape)
        self.itemsize = dt.itemsize if dt is not None else itemsize
        self.strides = tuple(strides) if strides is not None else \
            _c_strides(self.shape, self.itemsize)
        self.dtype = dt
        self.readonly = readonly
        self.owner = owner
        self.dl_device = dl_device

    @property
    def nbytes(self):
        n = self.itemsize
        for d in self.shape:
            n *= d
        return n

    @property
    def c_contiguous(self):
        return _is_c_contiguous(self.shape, self.strides, self.itemsize)

    @property
    def cpu_accessible(self):
        return self.dl_device[0] in CPU_ACCESSIBLE

    def __repr__(self):
        return "<Array %s%r at %#x on %r>" % (
            self.dtype.name if self.dtype else "opaque", self.shape,
            self.ptr, self.device)


def _import_capsule(obj, cap):
    name_ptr = _PyCapsule_GetName(cap)
    name = ctypes.string_at(name_ptr) if name_ptr else b""
    if name == b"dltensor_versioned":
        addr = _PyCapsule_GetPointer(id(cap), NAME_VERSIONED)
        m = DLManagedTensorVersioned.from_address(addr)
        if m.version.major != 1:
            raise BufferError("DLPack %d.%d tensor: only 1.x is read here" %
                              (m.version.major, m.version.minor))
        used, readonly = NAME_USED_VERSIONED, bool(m.flags & FLAG_READ_ONLY)
    elif name == b"dltensor":
        addr = _PyCapsule_GetPointer(id(cap), NAME_LEGACY)
        m = DLManagedTensor.from_address(addr)
        used, readonly = NAME_USED_LEGACY, False
    else:
        raise BufferError("%s.__dlpack__ returned a capsule named %r, not a "
                          "DLPack tensor" % (type(obj).__name__, name))
    # Ours from here: the capsule's destructor leaves a renamed one alone,
    # and our finalizer calls the producer's deleter.
    if _PyCapsule_SetName(cap, used):
        raise BufferError("cannot take the DLPack capsule")
    deleter = ctypes.cast(m.deleter, ctypes.c_void_p).value
    t = m.dl_tensor
    try:
        dl_device = (t.device.device_type, t.device.device_id)
        dt = _from_dl_dtype(t.dtype.code, t.dtype.bits, t.dtype.lanes)
        ndim = t.ndim
        shape = [t.shape[i] for i in range(ndim)]
        itemsize = max(1, (t.dtype.bits * t.dtype.lanes + 7) // 8)
        strides = None if not t.strides else \
            [t.strides[i] * itemsize for i in range(ndim)]
        device = _host() if dl_device[0] in CPU_ACCESSIBLE else \
            _device_for(*dl_device)
        ptr = (t.data or 0) + t.byte_offset
        arr = Array(ptr, device, shape, strides, dt, readonly, obj,
                    dl_device, itemsize)
    except BaseException:
        _release_tensor(deleter, addr)
        raise
    weakref.finalize(arr, _release_tensor, deleter, addr)
    return arr


def _import_interface(obj, iface, cuda):
    shape = tuple(iface["shape"])
    dt = dtype(iface["typestr"])
    data = iface.get("data")
    if data is None or not isinstance(data, tuple):
        raise BufferError("an array interface without a data address")
    ptr, readonly = data
    strides = iface.get("strides")
    if cuda:
        device = _cuda_owner(ptr)
        dl_device = (kDLCUDA, _ordinal(device))
    else:
        device = _host()
        dl_device = (kDLCPU, 0)
    return Array(ptr, device, shape, strides, dt, bool(readonly), obj,
                 dl_device)


def _cuda_owner(ptr):
    """The CUDA Device of a CUDA array interface pointer: the library's
    own allocations say; else the only CUDA device there is."""
    from ._objects import devices, mem_info
    from ._api import MemInfo
    try:
        return mem_info(ptr, MemInfo.DEVICE)
    except _core.OffloadError:
        pass
    gpus = [d for d in devices() if d.type != DeviceType.HOST and
            d.platform.backend == PlatformBackend.CUDA]
    if len(gpus) == 1:
        return gpus[0]
    raise BufferError("cannot tell which of %d CUDA devices the pointer "
                      "%#x belongs to: pass it through DLPack" %
                      (len(gpus), ptr))


def from_dlpack(obj):
    """Another library's array (or a View/Buffer of this package) as an
    Array of this package, without a copy: through DLPack when obj has
    __dlpack__, else __cuda_array_interface__, __array_interface__, or
    the buffer protocol. CPU memory and device memory of devices this
    library sees are taken; memory elsewhere raises BufferError, an object
    that is no array TypeError."""
    if isinstance(obj, Array):
        return obj
    err = None
    if hasattr(obj, "__dlpack__"):
        try:
            try:
                cap = obj.__dlpack__(max_version=DLPACK_VERSION)
            except TypeError:
                cap = obj.__dlpack__()  # a producer before DLPack 1.0
            return _import_capsule(obj, cap)
        except BufferError as e:  # e.g. NumPy's read-only arrays
            err = e
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        return _import_interface(obj, cai, cuda=True)
    ai = getattr(obj, "__array_interface__", None)
    if isinstance(ai, dict) and isinstance(ai.get("data"), tuple):
        return _import_interface(obj, ai, cuda=False)
    try:
        mv = memoryview(obj)
    except TypeError:
        if err is not None:
            raise err
        raise TypeError("%s is not an array: no __dlpack__, array "
                        "interface or buffer protocol" %
                        type(obj).__name__) from None
    return _import_memoryview(obj, mv)


def _import_memoryview(obj, mv):
    if mv.nbytes == 0:
        return Array(0, _host(), (0,), None, dtype("uint8"), mv.readonly,
                     mv, (kDLCPU, 0))
    if mv.readonly:
        raise BufferError("%s is read-only and has no array interface: its "
                          "address cannot be taken" % type(obj).__name__)
    flat = mv if mv.ndim == 1 and mv.format == "B" and mv.c_contiguous \
        else None
    if flat is None:
        if not mv.c_contiguous:
            raise BufferError("%s is not C-contiguous" % type(obj).__name__)
        flat = mv.cast("B")
    arr = (ctypes.c_char * flat.nbytes).from_buffer(flat)
    return Array(ctypes.addressof(arr), _host(), (flat.nbytes,), None,
                 dtype("uint8"), False, (obj, arr), (kDLCPU, 0))


_CDATA = ctypes.c_int.__mro__[-2]  # _ctypes._CData: every ctypes value


def is_array(value):
    """Whether a kernel argument is an array passed by its address."""
    if isinstance(value, (View, Array)):
        return True
    if isinstance(value, (bytes, bytearray, memoryview, _CDATA)):
        return False
    return any(hasattr(value, a) for a in (
        "__dlpack__", "__array_interface__", "__cuda_array_interface__"))


def _unregister(dev_handle, ptr, epoch):
    if _core._State.epoch != epoch or not _core.is_initialized():
        return  # shutdown dropped every registration
    try:
        if has_release("23.1"):
            call("olMemUnregister", dev_handle, ptr, 0)
        else:
            call("olMemUnregister", dev_handle, ptr)
    except Exception:
        pass


class _Registration:
    """One olMemRegister of host memory for a device, dropped when the last
    use (a queue's pending work) lets go."""

    def __init__(self, device, ptr, size, owner):
        out = ctypes.c_void_p()
        call("olMemRegister", device.handle, ptr, size, 0, ctypes.byref(out))
        self.address = out.value
        self.owner = owner
        weakref.finalize(self, _unregister, device.handle, ptr,
                         _core._State.epoch)


def kernel_pointer(value, device):
    """(address for a kernel on device, keep-alive) of an array argument."""
    if isinstance(value, View):
        if device is not None and value.device != device and \
                not value._cpu_accessible:
            raise ValueError("kernel argument: %r is memory of another "
                             "device" % (value,))
        return value.ptr, value
    arr = from_dlpack(value)
    if not arr.cpu_accessible:
        if device is not None and arr.device != device:
            raise ValueError("kernel argument: %r is memory of another "
                             "device than the kernel's (%r)" % (arr, device))
        return arr.ptr, arr
    if device is None or device.type == DeviceType.HOST or arr.nbytes == 0:
        return arr.ptr, arr
    lo, hi = _extent(arr.shape, arr.strides, arr.itemsize)
    reg = _Registration(device, arr.ptr + lo, hi - lo, arr)
    return reg.address - lo, reg


def memory(obj, writable):
    """(address, size, Device, keep-alive) of a contiguous object for a
    copy: a Buffer, View, or any array or buffer-protocol object."""
    from ._objects import Buffer, _host_memory
    if isinstance(obj, Buffer):
        return obj.ptr, obj.size, obj.device, obj
    if isinstance(obj, View):
        if not obj.c_contiguous:
            raise ValueError("the view must be C-contiguous")
        if writable and obj.readonly:
            raise TypeError("the view is read-only")
        return obj.ptr, obj.nbytes, obj.device, obj  # the view holds it
    try:
        memoryview(obj)
    except TypeError:
        pass
    else:
        addr, size, keep = _host_memory(obj, writable)
        return addr, size, _host(), keep
    arr = from_dlpack(obj)
    if not arr.c_contiguous:
        raise ValueError("%s is not C-contiguous" % type(obj).__name__)
    if writable and arr.readonly:
        raise TypeError("%s is read-only" % type(obj).__name__)
    return arr.ptr, arr.nbytes, arr.device, arr


assert sys.byteorder == "little", "typestrs here are little-endian"
