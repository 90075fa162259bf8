"""Platforms, devices, memory, queues, events, programs, kernels, host
functions."""

import ctypes
import itertools
import operator
import os
import threading

from . import _api, _arrays, _core
from ._api import (AllocType, DeviceInfo, DeviceType, Errc, EventFlags,
                   EventInfo, KernelLaunchPropType, MemInfo, MemMigrationFlag,
                   PlatformInfo, QueueInfo, SymbolInfo, SymbolKind)
from ._core import (OffloadError, call, get_info, has_release,
                    info_properties, need)


def _wrap(kind, value):
    """An object for a handle returned by an info query."""
    if kind == "platform":
        return Platform(value)
    if kind == "device":
        return Device(value)
    for obj in _core.live_objects():
        if getattr(obj, "_kind", None) == kind and obj.handle == value:
            return obj
    return value


class _Handle:
    """An object named by a library handle (an int)."""

    _info_enum = None

    def __init__(self, handle):
        self.handle = handle

    def __eq__(self, other):
        return type(other) is type(self) and other.handle == self.handle

    def __hash__(self):
        return hash((type(self).__name__, self.handle))

    def info(self, prop):
        """One info property, decoded (enum, str, int, bool, object)."""
        return get_info(self._info_enum, self.handle, prop, _wrap)


class _Owned(_Handle):
    """An object this package created and must release: a context manager,
    released by close(), by the end of its `with`, or by the final
    shutdown()."""

    def __init__(self, handle):
        super().__init__(handle)
        self.closed = False
        _core.register(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if not self.closed:
            self.close()

    def close(self):
        """Release the object (again: an error from the library)."""
        self._release()

    def _release(self):
        raise NotImplementedError


# ---- platforms and devices ---------------------------------------------

class Platform(_Handle):
    """A platform (one backend). Info properties: name, vendor_name,
    version, backend."""

    _info_enum = PlatformInfo

    @property
    def devices(self):
        return [d for d in devices() if d.platform == self]

    def __repr__(self):
        return "<Platform %#x>" % (self.handle or 0)


info_properties(Platform, PlatformInfo)


class Device(_Handle):
    """A device. Every DeviceInfo value is a property (name, type,
    platform, vendor, max_work_group_size, ...)."""

    _info_enum = DeviceInfo

    @property
    def is_host(self):
        return self.type == DeviceType.HOST

    def alloc(self, size, type=AllocType.DEVICE):
        """olMemAlloc: a Buffer of size bytes (a context manager)."""
        return Buffer(self, size, type)

    def alloc_aligned(self, size, alignment, type=AllocType.DEVICE):
        """olMemAllocAligned (23.1): a Buffer of size bytes whose address is
        a multiple of alignment (a power of two)."""
        return Buffer(self, size, type, alignment=alignment)

    def queue(self):
        """olCreateQueue: a Queue (a context manager)."""
        return Queue(self)

    def load_program(self, image):
        """olCreateProgram from bytes-like image data or a file path."""
        return Program(self, image)

    def is_valid_binary(self, image):
        """olIsValidBinary."""
        data = _image_bytes(image)
        valid = ctypes.c_bool(False)
        call("olIsValidBinary", self.handle, data, len(data),
             ctypes.byref(valid))
        return valid.value

    def __repr__(self):
        return "<Device %#x>" % (self.handle or 0)


info_properties(Device, DeviceInfo)


def devices():
    """olIterateDevices: every device, in the library's order."""
    found = []

    def visit(dev, _user):
        found.append(dev)
        return True

    cb = _api.ol_device_iterate_cb_t(visit)  # alive for the call
    call("olIterateDevices", cb, None)
    return [Device(d) for d in found]


def platforms():
    """The platforms of the devices, each once, in device order."""
    out = []
    for d in devices():
        p = d.platform
        if p not in out:
            out.append(p)
    return out


def host_device():
    """The host CPU device."""
    for d in devices():
        if d.type == DeviceType.HOST:
            return d
    raise OffloadError(Errc.NOT_FOUND, "no host device", "olIterateDevices")


# ---- memory ------------------------------------------------------------

def _host_memory(obj, writable):
    """(address, size, keep-alive) of a buffer-protocol object (bytes,
    bytearray, array.array, memoryview, numpy arrays, ...)."""
    try:
        mv = memoryview(obj)
    except TypeError:
        raise TypeError("%s does not support the buffer protocol" %
                        type(obj).__name__) from None
    if not mv.c_contiguous:
        raise ValueError("the buffer must be C-contiguous")
    size = mv.nbytes
    if size == 0:
        return None, 0, mv
    mv = mv.cast("B") if mv.ndim != 1 or mv.format != "B" else mv
    if not mv.readonly:
        arr = (ctypes.c_char * size).from_buffer(mv)
        return ctypes.addressof(arr), size, arr
    if writable:
        raise TypeError("%s is read-only" % type(obj).__name__)
    if type(obj) is bytes:
        # the bytes object's own storage, without a copy
        return ctypes.cast(ctypes.c_char_p(obj), ctypes.c_void_p).value, \
            size, obj
    arr = (ctypes.c_char * size).from_buffer_copy(mv)
    return ctypes.addressof(arr), size, arr


def _queue_handle(queue):
    return None if queue is None else queue.handle


class Buffer(_Owned):
    """Memory from olMemAlloc (or olMemAllocAligned, 23.1, with an
    alignment). ptr is its address; close()/free() or the end of its `with`
    frees it."""

    _kind = "memory"
    _info_enum = MemInfo

    def __init__(self, device, size, type=AllocType.DEVICE, alignment=None):
        out = ctypes.c_void_p()
        if alignment is None:
            call("olMemAlloc", device.handle, AllocType(type), size,
                 ctypes.byref(out))
        else:
            need("23.1", "Device.alloc_aligned", "olMemAllocAligned")
            call("olMemAllocAligned", device.handle, AllocType(type), size,
                 alignment, ctypes.byref(out))
        self.device = device
        self.size = size
        self.alignment = alignment
        self.type = AllocType(type)
        self._ptr = out.value
        self._holds = 0          # live views and exports of the memory
        self._free_pending = False
        self._hold_lock = threading.RLock()  # a collection may unhold
        super().__init__(out.value)

    @property
    def ptr(self):
        if self.closed:
            # the address may belong to a newer allocation by now
            raise OffloadError(
                Errc.INVALID_ARGUMENT,
                "buffer at %#x (%d bytes) was already freed" %
                (self._ptr, self.size), "olMemFree")
        return self._ptr

    def free(self):
        """olMemFree."""
        self.close()

    def _release(self):
        ptr = self.ptr
        _arrays._reap()  # exports no consumer took hold nothing
        with self._hold_lock:
            if self._holds:
                # a view or an export still uses the memory: the last of
                # them frees it (_unhold)
                self.closed = True
                self._free_pending = True
                _core.unregister(self)
                return
        call("olMemFree", ptr)
        self.closed = True
        _core.unregister(self)

    def _hold(self):
        with self._hold_lock:
            self._holds += 1

    def _unhold(self):
        with self._hold_lock:
            self._holds -= 1
            free = self._holds == 0 and self._free_pending
            if free:
                self._free_pending = False
        # Only while the library still has the allocation: a full
        # shutdown since it was made freed everything, and the address may
        # be another allocation's now.
        if free and self._epoch == _core._State.epoch and \
                _core.is_initialized():
            try:
                call("olMemFree", self._ptr)
            except OffloadError:
                pass  # a deleter cannot raise

    def view(self, dtype, shape, strides=None, offset=0, readonly=False):
        """A typed View of the memory: dtype a name ("float32"), typestr or
        NumPy dtype; shape a tuple; strides and offset in bytes (default: C
        order from offset 0). The elements it reaches must lie inside the
        buffer. It exports the memory to array libraries (DLPack, the array
        interfaces) without a copy, and holds the memory: close() while a
        view or an export lives frees it when the last one goes."""
        return _arrays.View(self, dtype, shape, strides, offset, readonly)

    def _bytes_view(self):
        return _arrays.View(self, "uint8", (self.size,))

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None,
                   copy=None):
        """The buffer as a 1-D uint8 DLPack tensor (View.__dlpack__)."""
        return self._bytes_view().__dlpack__(
            stream=stream, max_version=max_version, dl_device=dl_device,
            copy=copy)

    def __dlpack_device__(self):
        """(DLPack device type, device id) of the memory: (1, 0) for the
        host device, (2, ordinal) for CUDA device memory, (3, 0) CUDA
        pinned host, (13, ordinal) CUDA managed, (10, ordinal) AMD device
        memory, (11, 0) AMD host and managed memory."""
        self.ptr  # raises for a freed buffer
        return _arrays.dlpack_device(self.device, self.type)

    def __array__(self, dtype=None, copy=None):
        """numpy.asarray(buffer): the bytes as a uint8 array on the same
        memory (memory the CPU reaches)."""
        return self._bytes_view().__array__(dtype, copy)

    def info(self, prop):
        return get_info(MemInfo, self.ptr, prop, _wrap)

    def _range(self, function, offset, size):
        """self.ptr + offset after checking that [offset, offset + size)
        lies inside the buffer: an address past it may be another
        allocation (or, on the host device, the allocator's own data)."""
        ptr = self.ptr
        offset = operator.index(offset)
        size = operator.index(size)
        if offset < 0 or size < 0 or offset > self.size or \
                size > self.size - offset:
            raise OffloadError(
                Errc.INVALID_SIZE,
                "offset %d and size %d are outside the buffer at %#x "
                "(%d bytes)" % (offset, size, ptr, self.size), function)
        return ptr + offset

    def copy_from(self, src, offset=0, queue=None):
        """Copy an object into the buffer at offset: any buffer-protocol
        object (bytes, bytearray, array.array, memoryview, numpy array), a
        DLPack or array-interface object (host or device memory of a device
        this library sees), a View or a Buffer. With a queue the copy is
        queued (src is kept alive until the queue is synced)."""
        addr, size, src_dev, keep = _arrays.memory(src, writable=False)
        dst = self._range("olMemcpy", offset, size)
        if size == 0:
            return self
        call("olMemcpy", _queue_handle(queue), dst,
             self.device.handle, addr, src_dev.handle, size)
        if queue is not None:
            queue._keep(keep)
        return self

    def copy_to(self, dst=None, offset=0, queue=None):
        """Copy the buffer (from offset) into a writable object (as
        copy_from takes: host or device memory), or,
        without dst, into a new bytearray of the rest of the buffer, which
        is returned. With a queue the copy is queued: read dst after
        queue.sync()."""
        if dst is None:
            self._range("olMemcpy", offset, 0)
            dst = bytearray(self.size - offset)
        addr, size, dst_dev, keep = _arrays.memory(dst, writable=True)
        src = self._range("olMemcpy", offset, size)
        if size == 0:
            return dst  # nothing to copy (an empty object has no address)
        call("olMemcpy", _queue_handle(queue), addr, dst_dev.handle,
             src, self.device.handle, size)
        if queue is not None:
            queue._keep(keep)
        return dst

    def copy_from_buffer(self, src, size=None, queue=None):
        """Device-to-device olMemcpy from another Buffer."""
        size = src.size if size is None else size
        dst = self._range("olMemcpy", 0, size)
        call("olMemcpy", _queue_handle(queue), dst, self.device.handle,
             src._range("olMemcpy", 0, size), src.device.handle, size)
        return self

    def fill(self, pattern, size=None, offset=0, queue=None):
        """olMemFill: repeat the bytes of pattern over size bytes (default:
        the rest of the buffer)."""
        addr, psize, keep = _host_memory(pattern, writable=False)
        if size is None:
            self._range("olMemFill", offset, 0)
            size = self.size - offset
        dst = self._range("olMemFill", offset, size)
        call("olMemFill", _queue_handle(queue), dst, psize, addr, size)
        if queue is not None:
            queue._keep(keep)
        return self

    @property
    def _as_parameter_(self):
        return ctypes.c_void_p(self.ptr)

    def __int__(self):
        return self.ptr

    def __repr__(self):
        state = " freed" if self.closed else ""
        return "<Buffer %#x %d bytes %s%s>" % (self._ptr, self.size,
                                              self.type.name, state)


# ---- kernel arguments --------------------------------------------------

_arg_structs = {}


def pack_args(*values):
    """The bytes of a C struct with one member per value, laid out as the C
    compiler lays it out (alignment and trailing padding included):
    ctypes scalars (c_float(2.0), c_uint32(n), ...), ctypes structures,
    arrays and pointers, None (a NULL pointer), a Buffer, View or
    GlobalVariable (its address), an array of another library (a NumPy
    array, any DLPack or array-interface object: the address of its data,
    host memory as the host sees it). A plain int or float is refused: its
    C type would be a guess."""
    return _pack(values, None, [])


def _pack(values, device, keep):
    """pack_args for a kernel on device: host arrays are registered with
    the device where it needs it; keep receives what the launch must keep
    alive until it has run."""
    types, inits = [], []
    for i, v in enumerate(values):
        if isinstance(v, Buffer):
            t, v = ctypes.c_void_p, v.ptr
        elif _arrays.is_array(v):
            addr, k = _arrays.kernel_pointer(v, device)
            keep.append(k)
            t, v = ctypes.c_void_p, addr
        elif isinstance(v, GlobalVariable):
            t, v = ctypes.c_void_p, v.address
        elif v is None:
            t = ctypes.c_void_p
        elif isinstance(v, ctypes._SimpleCData):
            t, v = type(v), v.value
        elif isinstance(v, (ctypes.Structure, ctypes.Union, ctypes.Array,
                            ctypes._Pointer)):
            t = type(v)
        else:
            raise TypeError(
                "kernel argument %d: %r has no C type; wrap it in a ctypes "
                "type (ctypes.c_uint32(%r), ctypes.c_float(...))" %
                (i, v, v))
        types.append(t)
        inits.append(v)
    key = tuple(types)
    cls = _arg_structs.get(key)
    if cls is None:
        cls = type("KernelArgs", (ctypes.Structure,),
                   {"_fields_": [("a%d" % i, t) for i, t in enumerate(types)]})
        _arg_structs[key] = cls
    return bytes(cls(*inits))


def _arg_value(i, v, device, keep):
    """The ctypes object of one argument of an argument list (23.1's
    NumArgs/ArgPtrs/ArgSizes): a ctypes value passes its own bytes; a
    Buffer, View, GlobalVariable or array its address, None a NULL pointer,
    bytes-like objects their bytes."""
    if isinstance(v, Buffer):
        v = ctypes.c_void_p(v.ptr)
    elif _arrays.is_array(v):
        addr, k = _arrays.kernel_pointer(v, device)
        keep.append(k)
        v = ctypes.c_void_p(addr)
    elif isinstance(v, GlobalVariable):
        v = ctypes.c_void_p(v.address)
    elif v is None:
        v = ctypes.c_void_p()
    elif isinstance(v, (bytes, bytearray, memoryview)):
        data = bytes(v)
        v = (ctypes.c_char * len(data)).from_buffer_copy(data)
    elif not isinstance(v, (ctypes._SimpleCData, ctypes.Structure,
                            ctypes.Union, ctypes.Array, ctypes._Pointer)):
        raise TypeError(
            "kernel argument %d: %r has no C type; wrap it in a ctypes "
            "type (ctypes.c_uint32(%r), ctypes.c_float(...))" % (i, v, v))
    return v


def _dims(value, what):
    """(x, y, z) and the number of dimensions given of an int or a tuple."""
    if isinstance(value, int):
        value = (value,)
    value = tuple(value)
    if not 1 <= len(value) <= 3:
        raise ValueError("%s: 1 to 3 dimensions, not %d" % (what, len(value)))
    return value + (1,) * (3 - len(value)), len(value)


# ---- host functions ----------------------------------------------------

_host_calls = {}              # token -> (callable, args, kwargs, queue)
_host_tokens = itertools.count(1)


def _run_host_function(user_data):
    entry = _host_calls.pop(user_data, None)
    if entry is None:
        return
    fn, args, kwargs, queue = entry
    _core._in_host_function.active = True
    try:
        fn(*args, **kwargs)
    except BaseException as exc:  # reported by queue.sync()
        queue._host_errors.append(exc)
    finally:
        _core._in_host_function.active = False


# One C entry point for every host function, alive for the life of the
# process; UserData names the queued call.
_host_trampoline = _api.ol_host_function_cb_t(_run_host_function)


def pending_host_functions():
    """How many host functions are queued and have not run yet."""
    return len(_host_calls)


# ---- queues and events -------------------------------------------------

class Queue(_Owned):
    """An in-order queue (olCreateQueue). close() or the end of its `with`
    syncs it and destroys it."""

    _kind = "queue"
    _info_enum = QueueInfo

    def __init__(self, device):
        out = ctypes.c_void_p()
        call("olCreateQueue", device.handle, ctypes.byref(out))
        self.device = device
        self._pending = []
        self._host_errors = []
        self._lock = threading.Lock()
        super().__init__(out.value)

    def _keep(self, obj):
        with self._lock:
            self._pending.append(obj)

    def _sync_quietly(self):
        try:
            call("olSyncQueue", self.handle)
        finally:
            with self._lock:
                self._pending = []

    def sync(self):
        """olSyncQueue. Then re-raises the first exception a host function
        of this queue raised since the last sync."""
        self._sync_quietly()
        with self._lock:
            errors, self._host_errors = self._host_errors, []
        if errors:
            raise errors[0]

    def _release(self):
        if not self.closed:
            try:
                self._sync_quietly()
            except OffloadError:
                pass
        call("olDestroyQueue", self.handle)
        self.closed = True
        _core.unregister(self)

    def __exit__(self, exc_type, *exc):
        # sync first so that host-function errors surface here
        if self.closed:
            return
        try:
            if exc_type is None:
                self.sync()
        finally:
            self.close()

    @property
    def empty(self):
        return self.info(QueueInfo.EMPTY)

    def record_event(self, profiling=False):
        """olCreateEvent: an Event that completes when the work queued so
        far has. profiling=True (23.1): it also records when the device
        passed it, for elapsed_ms()."""
        return Event(self, profiling)

    def wait_events(self, *events):
        """olWaitEvents: later work waits for the events."""
        arr = (_api.ol_event_handle_t * len(events))(
            *[e.handle for e in events])
        call("olWaitEvents", self.handle, arr if events else None,
             len(events))

    def launch(self, kernel, num_groups, group_size, *args,
               shared_memory=0, arguments=None, cooperative=False):
        """olLaunchKernel. num_groups and group_size are an int or a tuple of
        up to 3; args are packed by pack_args into the kernel's argument
        struct, or are one bytes-like object or ctypes structure holding
        that struct itself. Pointer arguments may be Buffers, Views, NumPy
        arrays or any DLPack or array-interface object: host memory is
        registered (olMemRegister) with a GPU for the launch, and each is
        kept alive until the queue is synced.

        With the 23.1 library also: arguments, a list of the kernel's
        arguments one by one (ctypes values, Buffers, None, bytes), passed
        as NumArgs/ArgPtrs/ArgSizes, one per parameter (an OL_KERNEL takes
        one, its struct: arguments=[the_struct]; an OL_KERNEL_PARAMS one per
        parameter, see docs/kernels.md); cooperative=True,
        a cooperative launch (every group resident at once; devices without
        it refuse with UNSUPPORTED). Both raise ReleaseError with 22.1."""
        ng, nd1 = _dims(num_groups, "num_groups")
        gs, nd2 = _dims(group_size, "group_size")
        ndim = max(nd1, nd2)
        size = _api.KernelLaunchSizeArgs(ndim, _api.Dimensions(*ng),
                                         _api.Dimensions(*gs), shared_memory)
        if arguments is not None and args:
            raise TypeError("launch: give the arguments either as *args "
                            "(one struct) or as arguments=[...], not both")
        if arguments is not None:
            need("23.1", "Queue.launch(arguments=[...])", "olLaunchKernel")
        if cooperative:
            need("23.1", "Queue.launch(cooperative=True)", "olLaunchKernel")
        device = kernel.program.device
        arrays = []  # imported arrays and registrations, until it has run
        if arguments is None:
            if len(args) == 1 and isinstance(args[0], (bytes, bytearray,
                                                       memoryview)):
                data = bytes(args[0])
            elif len(args) == 1 and isinstance(args[0], ctypes.Structure):
                data = bytes(args[0])
            else:
                data = _pack(args, device, arrays)
            buf = ctypes.create_string_buffer(data, len(data)) if data \
                else None
            if not has_release("23.1"):
                call("olLaunchKernel", self.handle,
                     kernel.program.device.handle, kernel.handle, buf,
                     len(data), ctypes.byref(size))
                self._keep((buf, args, arrays))
                return
            # 23.1: the argument struct as the one argument
            values = [buf] if buf is not None else []
        else:
            values = [_arg_value(i, v, device, arrays)
                      for i, v in enumerate(arguments)]
        n = len(values)
        ptrs = (ctypes.c_void_p * n)(*[ctypes.addressof(v) for v in values]) \
            if n else None
        sizes = (ctypes.c_size_t * n)(*[ctypes.sizeof(v) for v in values]) \
            if n else None
        props = None
        if cooperative:
            flag = ctypes.c_bool(True)
            props = (_api.KernelLaunchProp * 2)(
                _api.KernelLaunchProp(KernelLaunchPropType.IS_COOPERATIVE,
                                      ctypes.addressof(flag)),
                _api.KernelLaunchProp(KernelLaunchPropType.NONE, None))
        call("olLaunchKernel", self.handle, kernel.program.device.handle,
             kernel.handle, ctypes.byref(size), props, n, ptrs, sizes)
        self._keep((values, ptrs, sizes, props, args, arguments, arrays))

    def query(self):
        """olQueryQueue (23.1): whether the work queued so far has
        completed, without waiting."""
        need("23.1", "Queue.query", "olQueryQueue")
        done = ctypes.c_bool(False)
        call("olQueryQueue", self.handle, ctypes.byref(done))
        return done.value

    @property
    def is_complete(self):
        """query() as a property (23.1)."""
        return self.query()

    def prefetch(self, *ranges, to_host=False):
        """olMemPrefetch (23.1): move managed memory toward the queue's
        device (or, with to_host, toward the host), in queue order. Each
        range is a Buffer or an (address, size) pair; memory that cannot
        move is left alone (a prefetch is a hint)."""
        need("23.1", "Queue.prefetch", "olMemPrefetch")
        mems, sizes = [], []
        for r in ranges:
            if isinstance(r, Buffer):
                mems.append(r.ptr)
                sizes.append(r.size)
            else:
                addr, n = r
                mems.append(int(addr))
                sizes.append(operator.index(n))
        count = len(mems)
        flags = MemMigrationFlag.DEVICE_TO_HOST if to_host \
            else MemMigrationFlag.HOST_TO_DEVICE
        call("olMemPrefetch", self.handle, count,
             (ctypes.c_void_p * count)(*mems) if count else None,
             (ctypes.c_size_t * count)(*sizes) if count else None,
             int(flags))

    def launch_host_function(self, fn, *args, **kwargs):
        """olLaunchHostFunction: fn(*args, **kwargs) runs on a library
        thread when the queue reaches it. fn is kept alive until it has
        run; an exception it raises is re-raised by the next sync()."""
        token = next(_host_tokens)
        _host_calls[token] = (fn, args, kwargs, self)
        try:
            call("olLaunchHostFunction", self.handle, _host_trampoline,
                 token)
        except BaseException:
            _host_calls.pop(token, None)
            raise

    def __repr__(self):
        return "<Queue %#x%s>" % (self.handle or 0,
                                  " closed" if self.closed else "")


info_properties(Queue, QueueInfo, skip=("device",))


class Event(_Owned):
    """An event (olCreateEvent on a queue). With profiling=True (23.1,
    OL_EVENT_FLAGS_ENABLE_PROFILING) two events measure the device time
    between them: elapsed_ms(start, end)."""

    _kind = "event"
    _info_enum = EventInfo

    def __init__(self, queue, profiling=False):
        out = ctypes.c_void_p()
        if has_release("23.1"):
            flags = EventFlags.ENABLE_PROFILING if profiling \
                else EventFlags.NONE
            call("olCreateEvent", queue.handle, flags, ctypes.byref(out))
        else:
            if profiling:
                need("23.1", "a profiling event (record_event(profiling="
                     "True))", "olCreateEvent")
            call("olCreateEvent", queue.handle, ctypes.byref(out))
        self.profiling = bool(profiling)
        super().__init__(out.value)

    def sync(self):
        """olSyncEvent."""
        call("olSyncEvent", self.handle)

    def _release(self):
        call("olDestroyEvent", self.handle)
        self.closed = True
        _core.unregister(self)

    def __repr__(self):
        return "<Event %#x>" % (self.handle or 0)


info_properties(Event, EventInfo)


def elapsed_ms(start, end):
    """olGetEventElapsedTime (23.1): the device time from profiling event
    start to profiling event end, in milliseconds (waits for both)."""
    need("23.1", "elapsed_ms", "olGetEventElapsedTime")
    out = ctypes.c_float()
    call("olGetEventElapsedTime", start.handle, end.handle,
         ctypes.byref(out))
    return out.value


# ---- programs and symbols ----------------------------------------------

def _image_bytes(image):
    if isinstance(image, (str, os.PathLike)):
        with open(image, "rb") as f:
            return f.read()
    return bytes(memoryview(image))


class Program(_Owned):
    """A program (olCreateProgram) from image bytes or a file path."""

    _kind = "program"

    def __init__(self, device, image):
        data = _image_bytes(image)
        out = ctypes.c_void_p()
        call("olCreateProgram", device.handle, data, len(data),
             ctypes.byref(out))
        self.device = device
        super().__init__(out.value)

    def symbol(self, name, kind):
        """olGetSymbol."""
        out = ctypes.c_void_p()
        if "\0" in name:
            # C would read the name only up to the NUL: another symbol
            raise OffloadError(
                Errc.INVALID_ARGUMENT,
                "symbol name %r contains a NUL character" % name,
                "olGetSymbol")
        call("olGetSymbol", self.handle, name.encode(), SymbolKind(kind),
             ctypes.byref(out))
        cls = Kernel if SymbolKind(kind) == SymbolKind.KERNEL \
            else GlobalVariable
        return cls(self, name, out.value)

    def kernel(self, name):
        return self.symbol(name, SymbolKind.KERNEL)

    def global_variable(self, name):
        return self.symbol(name, SymbolKind.GLOBAL_VARIABLE)

    def _release(self):
        call("olDestroyProgram", self.handle)
        self.closed = True
        _core.unregister(self)

    def __repr__(self):
        return "<Program %#x>" % (self.handle or 0)


class Symbol(_Handle):
    """A kernel or global variable of a program (owned by the program)."""

    _info_enum = SymbolInfo

    def __init__(self, program, name, handle):
        super().__init__(handle)
        self.program = program
        self.name = name

    def __repr__(self):
        return "<%s %s %#x>" % (type(self).__name__, self.name,
                                self.handle or 0)


info_properties(Symbol, SymbolInfo)


class Kernel(Symbol):

    def max_cooperative_group_count(self, group_size, shared_memory=0):
        """olGetKernelMaxCooperativeGroupCount (23.1): the most groups of
        group_size (an int or a tuple) a cooperative launch may have."""
        need("23.1", "Kernel.max_cooperative_group_count",
             "olGetKernelMaxCooperativeGroupCount")
        gs, nd = _dims(group_size, "group_size")
        size = _api.KernelLaunchSizeArgs(nd, _api.Dimensions(1, 1, 1),
                                         _api.Dimensions(*gs), shared_memory)
        out = ctypes.c_uint32()
        call("olGetKernelMaxCooperativeGroupCount",
             self.program.device.handle, self.handle, ctypes.byref(size),
             ctypes.byref(out))
        return out.value

    def optimal_group_size(self, shared_memory=0):
        """olCalculateOptimalOccupancy."""
        out = ctypes.c_size_t()
        call("olCalculateOptimalOccupancy", self.program.device.handle,
             self.handle, shared_memory, ctypes.byref(out))
        return out.value


class GlobalVariable(Symbol):

    @property
    def address(self):
        return self.info(SymbolInfo.GLOBAL_VARIABLE_ADDRESS)

    @property
    def size(self):
        return self.info(SymbolInfo.GLOBAL_VARIABLE_SIZE)

    def read(self, dst=None):
        """Copy the variable into dst (writable, its size) or a new
        bytearray (olMemcpy without a queue)."""
        dev = self.program.device
        if dst is None:
            dst = bytearray(self.size)
        addr, size, _keep = _host_memory(dst, writable=True)
        call("olMemcpy", None, addr, host_device().handle, self.address,
             dev.handle, size)
        return dst

    def write(self, src):
        """Copy a host object into the variable (olMemcpy without a
        queue)."""
        dev = self.program.device
        addr, size, _keep = _host_memory(src, writable=False)
        call("olMemcpy", None, self.address, dev.handle, addr,
             host_device().handle, size)


def mem_info(ptr, prop):
    """olGetMemInfo of any address inside an allocation."""
    return get_info(MemInfo, ptr, prop, _wrap)
