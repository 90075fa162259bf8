"""liboffload: Python bindings of the Offload API (liboffload-go's or LLVM's
libLLVMOffload.so.22.1, or liboffload-go's libLLVMOffload.so.23.1),
standard library only.

    import liboffload as ol
    with ol.init():
        dev = ol.host_device()
        with dev.alloc(1024) as buf, dev.queue() as q:
            buf.copy_from(bytes(1024), queue=q)
            q.sync()

The library is found through $OFFLOAD_LIB or $LIBOFFLOAD_PATH, then the
build tree of a source checkout, then installed copies by soname
(library_path() tells which); load(release="23.1") or $OFFLOAD_RELEASE
picks a release, else 22.1 is tried first at each place. release() says
which one is loaded: with 23.1 the 23.1 features work (init(platforms=...),
Queue.query, profiling events and elapsed_ms, launch(arguments=[...],
cooperative=True), Device.alloc_aligned, Queue.prefetch); with 22.1 they
raise ReleaseError. Buffer.view(dtype, shape, strides, offset) is a typed
View that other array libraries take without a copy (DLPack,
__array_interface__, __cuda_array_interface__); from_dlpack(obj) takes
theirs (NumPy arrays, DLPack and array-interface objects), and copies and
kernel launches accept them directly (docs/python-arrays.md). Every
failure raises OffloadError with the ol_errc_t code (.code, .name) and the
library's Details text (.details). _api holds the
generated ctypes declarations of the whole API; lib() is the loaded
library with every prototype declared.
"""

from . import _api
from ._api import (AllocType, DeviceInfo, DeviceType, Errc, EventFlags,
                   EventInfo, KernelLaunchPropType, MemInfo, MemMigrationFlag,
                   PlatformBackend, PlatformInfo, QueueInfo, SymbolInfo,
                   SymbolKind, DeviceFpCapabilityFlag)
from ._core import (OffloadError, ReleaseError, Session, call, check,
                    has_release, init, is_initialized, lib, library_path,
                    live_objects, load, release, shutdown)
from ._arrays import Array, DType, View, dtype, from_dlpack, live_exports
from ._loader import RELEASES, SONAMES
from ._objects import (Buffer, Device, Event, GlobalVariable, Kernel,
                       Platform, Program, Queue, Symbol, devices, elapsed_ms,
                       host_device, mem_info, pack_args,
                       pending_host_functions, platforms)

__version__ = "0.1.0"

__all__ = [
    "AllocType", "Array", "Buffer", "DType", "View", "dtype", "from_dlpack",
    "live_exports", "Device", "DeviceFpCapabilityFlag", "DeviceInfo",
    "DeviceType", "Errc", "Event", "EventFlags", "EventInfo",
    "GlobalVariable", "Kernel", "KernelLaunchPropType", "MemInfo",
    "MemMigrationFlag", "OffloadError", "Platform", "PlatformBackend",
    "PlatformInfo", "Program", "Queue", "QueueInfo", "RELEASES",
    "ReleaseError", "SONAMES", "Session", "Symbol", "SymbolInfo",
    "SymbolKind", "call", "check", "devices", "elapsed_ms", "has_release",
    "host_device", "init", "is_initialized", "lib", "library_path",
    "live_objects", "load", "mem_info", "pack_args",
    "pending_host_functions", "platforms", "release", "shutdown",
]
