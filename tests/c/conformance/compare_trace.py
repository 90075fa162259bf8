#!/usr/bin/env python3
"""Run trace_prog with OFFLOAD_TRACE=1 against the library under test and
against LLVM's reference library, normalise both stderr traces and compare
them line by line.

Normalisation:
  * every 0x<hex> becomes 0xADDR (heap/stack/handle addresses differ);
  * lines about OL_DEVICE_INFO_NAME are environment-specific (LLVM reports
    "Virtual Host Device", ours the CPU model), so their string value and
    the sizes derived from it are replaced by placeholders;
  * LLVM prints the final olShutDown as a bare "---> olShutDown" without a
    newline (tracing is gone once the context is destroyed), while ours
    prints "---> olShutDown()-> OL_SUCCESS".  The bare form at the very end
    of the trace is treated as that full line;
  * lines of ours that start with "liboffload-go: " (why a platform is
    absent, printed at olInit) have no LLVM counterpart and are left out.

usage: compare_trace.py TRACE_PROG LIBDIR LLVM_LIBDIR
Prints "trace: N passed, N failed, 0 skipped" (the closing line of
tests/c/common/olcheck.h); exit status 1 on any failure.
"""
import os
import re
import subprocess
import sys

passed = 0
failed = 0


def check(ok, msg):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print("FAIL trace: " + msg)


def run(prog, libdir):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OFFLOAD_")}
    # a driver double's directory (run_tests.sh: CONFORMANCE_DRIVER_DIR)
    # after the library's, for both libraries
    drivers = os.environ.get("CONFORMANCE_DRIVER_DIR", "")
    env["LD_LIBRARY_PATH"] = libdir + (":" + drivers if drivers else "")
    env["OFFLOAD_TRACE"] = "1"
    p = subprocess.run([prog], env=env, capture_output=True, timeout=120)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(
        errors="replace")


BARE_SHUTDOWN = "---> olShutDown"
FULL_SHUTDOWN = "---> olShutDown()-> OL_SUCCESS"
ADDR = re.compile(r"0x[0-9a-fA-F]+")


def normalise(text):
    if text.endswith(BARE_SHUTDOWN):
        text = text[: -len(BARE_SHUTDOWN)] + FULL_SHUTDOWN + "\n"
    out = []
    for line in text.split("\n"):
        if line.startswith("liboffload-go: "):
            continue  # ours only: why a platform is absent (no LLVM equivalent)
        line = ADDR.sub("0xADDR", line)
        if "OL_DEVICE_INFO_NAME" in line:
            line = re.sub(r"\.PropSize = \d+", ".PropSize = N", line)
            line = re.sub(r"\.PropSizeRet = 0xADDR \(\d+\)",
                          ".PropSizeRet = 0xADDR (N)", line)
            head, sep, tail = line.rpartition("))-> ")
            m = re.search(r"\.PropValue = 0xADDR \(", head)
            if sep and m:
                line = head[: m.end()] + "NAME" + sep + tail
        out.append(line)
    if out and out[-1] == "":
        out.pop()
    return out


def main():
    prog, libdir, llvm_libdir = sys.argv[1:4]
    rc_t, out_t, err_t = run(prog, libdir)
    rc_r, out_r, err_r = run(prog, llvm_libdir)

    check(rc_r == 0, "reference run exited %d: %s" % (rc_r, out_r.strip()))
    check(rc_t == 0, "run under test exited %d: %s" % (rc_t, out_t.strip()))
    # the trace goes to stderr only
    check(out_t == "trace_prog: ok\n", "stdout under test: %r" % out_t)
    check(out_r == "trace_prog: ok\n", "reference stdout: %r" % out_r)

    ours = os.path.realpath(libdir) != os.path.realpath(llvm_libdir)
    if ours:
        # our library prints the final shutdown with its result (contract)
        check(err_t.endswith(FULL_SHUTDOWN + "\n"),
              "trace under test should end with %r, ends with %r"
              % (FULL_SHUTDOWN + "\\n", err_t[-60:]))
    check(err_r.endswith(BARE_SHUTDOWN) and
          not err_r.endswith("\n" + FULL_SHUTDOWN),
          "reference trace should end with a bare %r" % BARE_SHUTDOWN)

    a = normalise(err_t)
    b = normalise(err_r)
    check(len(b) >= 20, "reference trace has only %d lines" % len(b))
    check(len(a) == len(b),
          "line count: expected %d (LLVM), got %d" % (len(b), len(a)))
    for i in range(max(len(a), len(b))):
        got = a[i] if i < len(a) else "<missing>"
        want = b[i] if i < len(b) else "<missing>"
        check(got == want, "line %d differs\n  expected (LLVM): %s\n"
              "  got:             %s" % (i + 1, want, got))

    print("trace: %d passed, %d failed, 0 skipped" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
