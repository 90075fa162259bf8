"""The liboffload Python package on a remote device under MPI
(docs/remote.md): run by make test-remote as

    tests/remote/mpirun.sh -np 1 python3 tests/python/remote_mpi.py : -np 1 build/bin/offload-proxy

(tests/remote/python.sh). Not a unittest module of make test-python (its
name does not start with test_): it needs an offload-proxy rank beside it.
The application lists the proxy's host device, allocates on it, copies to
and from it, fills, launches SAXPY there and checks the numbers, runs a
host function in queue order on the remote queue, and sees HOST memory of
the remote device refused (UNSUPPORTED). Prints
"remote-python: N passed, N failed, N skipped" last; the exit status is
not the job's (mpirun.sh's is 0 whenever every rank ended), so the caller
reads that line.
"""

import array
import ctypes
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import olpkg  # noqa: E402
from olpkg import liboffload as ol  # noqa: E402

Errc = ol.Errc


class RemoteTest(unittest.TestCase):

    def setUp(self):
        self.session = ol.init()
        self.addCleanup(self._end)
        self.host = ol.host_device()
        self.remote = [d for d in ol.devices()
                       if d.platform.name.startswith("remote")]
        self.assertTrue(self.remote, "no remote device: is an offload-proxy "
                        "rank running beside this process?")
        self.dev = self.remote[0]

    def _end(self):
        if ol.is_initialized():
            self.session.close()
        self.assertEqual(ol.live_objects(), [])

    def test_listed_after_local(self):
        devs = ol.devices()
        local = [d for d in devs if not d.platform.name.startswith("remote")]
        self.assertIn(self.host, local)
        # local devices first, then the proxy's
        self.assertEqual(devs, local + self.remote)
        # one proxy serving its host device: rank 1, named with its host
        self.assertEqual(len(self.remote), 1)
        name = self.dev.platform.name
        self.assertRegex(name, r"^remote rank 1 \(host [^)]+\): ")
        self.assertEqual(self.dev.platform.backend, ol.PlatformBackend.HOST)
        self.assertEqual(self.dev.type, ol.DeviceType.HOST)
        self.assertNotEqual(self.dev, self.host)

    def test_copy_fill_round_trip(self):
        n = 1 << 20  # 4 MiB of uint32: more than one piece of a copy
        src = array.array("I", range(n))
        out = array.array("I", bytes(4 * n))
        with self.dev.alloc(4 * n) as buf, self.dev.queue() as q:
            buf.copy_from(src, queue=q)
            buf.copy_to(out, queue=q)
            q.sync()
            self.assertEqual(out, src)
            buf.fill(ctypes.c_uint32(0xA5A5A5A5), size=4 * 1024, queue=q)
            buf.copy_to(out, queue=q)
            q.sync()
        self.assertEqual(set(out[:1024]), {0xA5A5A5A5})
        self.assertEqual(out[1024:], src[1024:])

    def test_saxpy_on_remote(self):
        prog = self.dev.load_program(olpkg.kernel("examples/saxpy_kernel.c"))
        self.addCleanup(prog.close)
        saxpy = prog.kernel("saxpy")
        n = 4096
        x = array.array("f", (float(i) for i in range(n)))
        y = array.array("f", (float(n - i) for i in range(n)))
        out = array.array("f", [0.0] * n)
        with self.dev.alloc(4 * n) as dx, self.dev.alloc(4 * n) as dy, \
                self.dev.queue() as q:
            dx.copy_from(x, queue=q)
            dy.copy_from(y, queue=q)
            q.launch(saxpy, n // 256, 256, ctypes.c_float(3.0), dx, dy,
                     ctypes.c_uint32(n))
            dy.copy_to(out, queue=q)
            q.sync()
        self.assertEqual(out.tolist(), [3.0 * x[i] + y[i] for i in range(n)])

    def test_host_function_in_queue_order(self):
        seen = []
        n = 256
        out = array.array("I", bytes(4 * n))
        with self.dev.alloc(4 * n) as buf, self.dev.queue() as q:
            buf.fill(ctypes.c_uint32(1), queue=q)
            q.launch_host_function(seen.append, "first")
            buf.fill(ctypes.c_uint32(2), queue=q)
            q.launch_host_function(seen.append, "second")
            buf.copy_to(out, queue=q)
            q.sync()
        self.assertEqual(seen, ["first", "second"])
        self.assertEqual(set(out), {2})

    def test_host_memory_refused(self):
        with self.assertRaises(ol.OffloadError) as cm:
            self.dev.alloc(64, type=ol.AllocType.HOST)
        self.assertEqual(cm.exception.code, Errc.UNSUPPORTED)
        self.assertIn("remote rank 1", str(cm.exception))


if __name__ == "__main__":
    result = unittest.TextTestRunner(stream=sys.stdout, verbosity=2).run(
        unittest.defaultTestLoader.loadTestsFromTestCase(RemoteTest))
    failed = len(result.failures) + len(result.errors)
    skipped = len(result.skipped)
    print("remote-python: %d passed, %d failed, %d skipped" %
          (result.testsRun - failed - skipped, failed, skipped), flush=True)
    sys.exit(1 if failed else 0)
