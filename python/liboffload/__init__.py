"""liboffload: Python bindings of the Offload API (liboffload-go or LLVM's
libLLVMOffload.so.22.1), standard library only.

    import liboffload as ol
    with ol.init():
        dev = ol.host_device()
        with dev.alloc(1024) as buf, dev.queue() as q:
            buf.copy_from(bytes(1024), queue=q)
            q.sync()

The library is found through $OFFLOAD_LIB or $LIBOFFLOAD_PATH, then the
build tree of a source checkout, then installed copies (library_path()
tells which). Every failure raises OffloadError with the ol_errc_t code
(.code, .name) and the library's Details text (.details). _api holds the
generated ctypes declarations of the whole API; lib() is the loaded
library with every prototype declared.
"""

from . import _api
from ._api import (AllocType, DeviceInfo, DeviceType, Errc, EventInfo,
                   MemInfo, PlatformBackend, PlatformInfo, QueueInfo,
                   SymbolInfo, SymbolKind, DeviceFpCapabilityFlag)
from ._core import (OffloadError, Session, call, check, init, is_initialized,
                    lib, library_path, live_objects, shutdown)
from ._objects import (Buffer, Device, Event, GlobalVariable, Kernel,
                       Platform, Program, Queue, Symbol, devices, host_device,
                       mem_info, pack_args, pending_host_functions, platforms)

__version__ = "0.1.0"

__all__ = [
    "AllocType", "Buffer", "Device", "DeviceFpCapabilityFlag", "DeviceInfo",
    "DeviceType", "Errc", "Event", "EventInfo", "GlobalVariable", "Kernel",
    "MemInfo", "OffloadError", "Platform", "PlatformBackend", "PlatformInfo",
    "Program", "Queue", "QueueInfo", "Session", "Symbol", "SymbolInfo",
    "SymbolKind", "call", "check", "devices", "host_device", "init",
    "is_initialized", "lib", "library_path", "live_objects", "mem_info",
    "pack_args", "pending_host_functions", "platforms", "shutdown",
]
