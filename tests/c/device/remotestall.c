/* A proxy that stops answering (docs/remote.md, "How errors look"): the
 * job is -np 1 this : -np 2 offload-proxy on one machine, and the first
 * selected device must be a remote host device (OFFLOAD_TEST_DEVICES=
 * host:1,host:2). A kernel on it reports its process's ID (the proxy's:
 * fx_getpid); the test stops that process with SIGSTOP, as a hung proxy or
 * a dead link would leave it: alive to MPI, silent. Then work queued on
 * it fails at the next sync within OFFLOAD_REMOTE_TIMEOUT (2 s here) with
 * an error naming the rank and host; later calls on its devices fail at
 * once; the other proxy's device and the local host device keep working;
 * olShutDown completes; a new olInit leaves the silent proxy out within
 * the bound (its Hello is not answered) and still lists the other's
 * device. Last, SIGCONT lets it receive the application's Exit at the end,
 * so that the job ends cleanly. Not part of the device suite.
 * SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <signal.h>

#include "remotelost.h"

static pid_t stopped; /* the proxy this test stopped, continued at the end */

/* Whether every thread of pid is stopped (Linux: the state letter of each
 * /proc/PID/task/TID/stat, after the command's closing parenthesis). */
static bool all_threads_stopped(pid_t pid) {
  char dir[64];
  snprintf(dir, sizeof dir, "/proc/%d/task", (int)pid);
  DIR *d = opendir(dir);
  if (!d)
    return false;
  bool all = true;
  int seen = 0;
  struct dirent *e;
  while (all && (e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.')
      continue;
    char path[384], buf[512];
    snprintf(path, sizeof path, "%s/%s/stat", dir, e->d_name);
    FILE *f = fopen(path, "r");
    if (!f)
      continue; /* a thread that ended meanwhile */
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *close = strrchr(buf, ')');
    char st = close && close[1] == ' ' ? close[2] : '?';
    all = st == 'T' || st == 't' || st == 'Z' || st == 'X';
    seen++;
  }
  closedir(d);
  return all && seen > 0;
}

/* kill(SIGSTOP) only queues the signal: one thread of the process is
 * woken to take it and then stops the others, so on a loaded machine the
 * proxy's other threads may go on answering until that thread is
 * scheduled (seen: a sync queued after the kill answered in 2 ms and the
 * proxy stopped later). Waits, at most limit_ms, until the whole process
 * is stopped. */
static bool stop_process(pid_t pid, double limit_ms) {
  if (!OLC_CHECK(kill(pid, SIGSTOP) == 0, "kill(%d, SIGSTOP): %s", (int)pid, strerror(errno)))
    return false;
  double t0 = olc_now_ms();
  while (!all_threads_stopped(pid)) {
    if (olc_now_ms() - t0 > limit_ms)
      return OLC_CHECK(false, "proxy %d not stopped %.0f ms after SIGSTOP", (int)pid, limit_ms);
    usleep(1000);
  }
  return true;
}

/* The platform name of d ("remote rank R (host H): ..."). */
static void platform_name(ol_device_handle_t d, char *buf, size_t n) {
  buf[0] = 0;
  olGetPlatformInfo(olc_platform_of(d), OL_PLATFORM_INFO_NAME, n, buf);
}

/* The number of devices whose platform name starts with prefix. */
static int devices_named(const char *prefix) {
  olc_devlist l;
  OLC_OK(olc_list_devices(&l));
  int n = 0;
  for (int i = 0; i < l.n; i++) {
    char name[256];
    platform_name(l.dev[i], name, sizeof name);
    n += strncmp(name, prefix, strlen(prefix)) == 0;
  }
  return n;
}

static void test_silent_proxy(void) {
  if (!olc_remote) {
    olc_fail(__FILE__, __LINE__, "the first device must be a remote device (OFFLOAD_TEST_DEVICES)");
    return;
  }
  ol_device_handle_t silent = olc_dev;
  char pname[256], who[128];
  platform_name(silent, pname, sizeof pname);
  /* "remote rank 1 (host H)": what every error about it must name */
  const char *colon = strstr(pname, "):");
  if (!OLC_TRUE(strncmp(pname, "remote rank ", 12) == 0 && colon != NULL))
    return;
  snprintf(who, sizeof who, "%.*s", (int)(colon + 1 - pname), pname);

  ol_program_handle_t p = olc_program("fx_getpid");
  ol_symbol_handle_t k = p ? olc_kernel(p, "get_pid") : NULL;
  int64_t *out = olc_alloc(OL_ALLOC_TYPE_DEVICE, 4096);
  if (!k || !out)
    return;
  ol_queue_handle_t q = olc_queue();
  ol_kernel_launch_size_args_t l = olc_size1(1, 1);
  struct {
    int64_t *out;
  } a = {out};
  OLC_OK(olLaunchKernel(q, silent, k, &a, sizeof a, &l));
  OLC_OK(olSyncQueue(q));
  int64_t pid = 0;
  OLC_TRUE(olc_read(&pid, out, sizeof pid));
  if (!OLC_TRUE(pid > 1 && pid != getpid()))
    return;
  stopped = (pid_t)pid;
  if (!stop_process(stopped, 60000)) /* only a process that never stops fails it */
    return;

  /* work queued on the silent proxy reports it at the sync, in time */
  uint8_t pat = 7;
  OLC_OK(olMemFill(q, out, 1, &pat, 4096));
  OLC_OK(olLaunchKernel(q, silent, k, &a, sizeof a, &l));
  double t0 = olc_now_ms();
  ol_result_t r = olSyncQueue(q);
  double took = olc_now_ms() - t0;
  OLC_ERR_HAS(r, OL_ERRC_BACKEND_FAILURE, who);
  if (r)
    OLC_ERR_HAS(r, OL_ERRC_BACKEND_FAILURE, "OFFLOAD_REMOTE_TIMEOUT");
  OLC_CHECK(took >= REMOTE_TIMEOUT_MS / 2 && took < 5 * REMOTE_TIMEOUT_MS,
            "the sync took %.0f ms with OFFLOAD_REMOTE_TIMEOUT=%d ms", took, REMOTE_TIMEOUT_MS);
  /* later calls on its devices fail at once, naming it */
  void *m2 = NULL;
  t0 = olc_now_ms();
  OLC_ERR_HAS(olMemAlloc(silent, OL_ALLOC_TYPE_DEVICE, 64, &m2), OL_ERRC_BACKEND_FAILURE, who);
  ol_queue_handle_t q2 = NULL;
  OLC_ERR_HAS(olCreateQueue(silent, &q2), OL_ERRC_BACKEND_FAILURE, who);
  took = olc_now_ms() - t0;
  OLC_CHECK(took < REMOTE_TIMEOUT_MS, "calls on a lost proxy waited %.0f ms", took);
  /* its objects can still be released */
  OLC_OK(olDestroyQueue(q));
  olMemFree(out);
  olDestroyProgram(p);

  /* the other proxy and the local host device keep working */
  others_keep_working(silent);
  char other[256];
  platform_name(olc_dev, other, sizeof other);

  /* olShutDown completes with the proxy silent; a new olInit asks it
   * again (Hello) and leaves it out within the bound */
  t0 = olc_now_ms();
  OLC_OK(olShutDown());
  took = olc_now_ms() - t0;
  OLC_CHECK(took < 5 * REMOTE_TIMEOUT_MS, "olShutDown took %.0f ms", took);
  t0 = olc_now_ms();
  OLC_OK(olInit());
  took = olc_now_ms() - t0;
  OLC_CHECK(took < 5 * REMOTE_TIMEOUT_MS, "olInit with a silent proxy took %.0f ms with OFFLOAD_REMOTE_TIMEOUT=%d ms",
            took, REMOTE_TIMEOUT_MS);
  OLC_EQ(devices_named(who), 0);
  const char *ocolon = strstr(other, "):");
  if (ocolon) {
    char owho[128];
    snprintf(owho, sizeof owho, "%.*s", (int)(ocolon + 1 - other), other);
    OLC_EQ(devices_named(owho), 1);
  }
  olc_host = olc_host_device();
}

int main(int argc, char **argv) {
  set_remote_timeout();
  olc_start(argc, argv);
  if (olc_next_device())
    OLC_RUN(test_silent_proxy);
  int rc = olc_finish("remotestall");
  /* let it go: it receives this process's Exit at its end, and the job
   * ends with every rank */
  if (stopped > 0)
    kill(stopped, SIGCONT);
  return rc;
}
