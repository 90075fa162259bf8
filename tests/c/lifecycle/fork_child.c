/* Test e (our library only): calls from a forked child.
 *
 * The parent initialises the library and forks.  In the child (which has
 * inherited a Go runtime whose threads did not survive the fork) every call
 * must fail fast with OL_ERRC_UNSUPPORTED, Details naming "fork" and
 * suggesting "spawn"; an alarm(10) turns a hang into a failure.  The parent
 * checks the child's exit status and then keeps using the library.
 * Among them olMemAlloc and olMemFree of pooled memory (issue 30), which
 * the C entry points would otherwise answer from the pool without Go: the
 * parent leaves a free block of that size in the pool before it forks, and
 * a live one for the child to free.
 */
#include "oldevices.h"

#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static bool count_cb(ol_device_handle_t dev, void *user) {
  (void)dev;
  (*(size_t *)user)++;
  return true;
}

/* an allocation size every device's pool serves (impl/pool.h) */
#define POOLED 1000

/* Child side: returns the number of failed checks (printed to stderr). */
static int child_checks(ol_device_handle_t inherited_dev, void *live) {
  int failures = 0;
  struct {
    const char *what;
    ol_result_t r;
  } calls[6];
  size_t n = 0;
  calls[0].what = "olIterateDevices";
  calls[0].r = olIterateDevices(count_cb, &n);
  calls[1].what = "olInit";
  calls[1].r = olInit();
  ol_device_type_t t;
  calls[2].what = "olGetDeviceInfo";
  calls[2].r = olGetDeviceInfo(inherited_dev, OL_DEVICE_INFO_TYPE, sizeof t, &t);
  void *p = NULL;
  calls[3].what = "olMemAlloc of a pooled size";
  calls[3].r = olMemAlloc(inherited_dev, OL_ALLOC_TYPE_DEVICE, POOLED, &p);
  calls[4].what = "olMemFree of a pooled block";
  calls[4].r = olMemFree(live);
  calls[5].what = "olShutDown";
  calls[5].r = olShutDown();
  for (int i = 0; i < 6; i++) {
    ol_result_t r = calls[i].r;
    bool ok = olc_code(r) == OL_ERRC_UNSUPPORTED && olc_details_has(r, "fork") &&
              olc_details_has(r, "spawn");
    if (!ok) {
      failures++;
      fprintf(stderr,
              "FAIL child: %s: expected %d with \"fork\" and \"spawn\" in "
              "Details, got %u \"%s\"\n",
              calls[i].what, (int)OL_ERRC_UNSUPPORTED, olc_code(r),
              olc_details(r));
    } else {
      fprintf(stderr, "child: %s -> %u \"%s\"\n", calls[i].what, olc_code(r),
              olc_details(r));
    }
  }
  return failures;
}

int main(void) {
  olc_check_library((void *)olInit);
  if (!OLC_ON(OLC_OURS, "the fork guard is specific to our library"))
    return olc_summary(NULL);

  ol_result_t r = olInit();
  OLC_CHECK(r == NULL, "parent olInit -> %u %s", olc_code(r), olc_details(r));
  olc_devlist l;
  r = olc_list_devices(&l);
  ol_device_handle_t first = l.n > 0 ? l.dev[0] : NULL;
  OLC_CHECK(r == NULL && first != NULL, "parent olIterateDevices -> %u %s",
            olc_code(r), olc_details(r));

  /* a free block of POOLED bytes in the pool, and a live one */
  void *live = NULL, *freed = NULL;
  r = olMemAlloc(first, OL_ALLOC_TYPE_DEVICE, POOLED, &freed);
  OLC_CHECK(r == NULL, "parent olMemAlloc -> %u %s", olc_code(r), olc_details(r));
  r = olMemAlloc(first, OL_ALLOC_TYPE_DEVICE, POOLED, &live);
  OLC_CHECK(r == NULL, "parent olMemAlloc -> %u %s", olc_code(r), olc_details(r));
  r = olMemFree(freed);
  OLC_CHECK(r == NULL, "parent olMemFree -> %u %s", olc_code(r), olc_details(r));

  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    OLC_CHECK(false, "fork: %s", strerror(errno));
    return olc_summary(NULL);
  }
  if (pid == 0) {
    signal(SIGALRM, SIG_DFL);
    alarm(10);
    int failures = child_checks(first, live);
    _exit(failures == 0 ? 0 : 1);
  }

  int status = 0;
  pid_t w;
  do {
    w = waitpid(pid, &status, 0);
  } while (w < 0 && errno == EINTR);
  OLC_CHECK(w == pid, "waitpid: %s", strerror(errno));
  if (WIFSIGNALED(status)) {
    OLC_CHECK(false, "child killed by signal %d%s", WTERMSIG(status),
              WTERMSIG(status) == SIGALRM ? " (SIGALRM: it hung)" : "");
  } else {
    OLC_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "child exited with status %d", WEXITSTATUS(status));
  }

  /* the parent is unaffected */
  r = olc_list_devices(&l);
  OLC_CHECK(r == NULL && l.n >= 1, "parent olIterateDevices after fork -> %u %s (%d devices)",
            olc_code(r), olc_details(r), l.n);
  ol_device_type_t t = OL_DEVICE_TYPE_FORCE_UINT32;
  r = olGetDeviceInfo(first, OL_DEVICE_INFO_TYPE, sizeof t, &t);
  OLC_CHECK(r == NULL, "parent olGetDeviceInfo after fork -> %u %s", olc_code(r),
            olc_details(r));
  r = olMemFree(live);
  OLC_CHECK(r == NULL, "parent olMemFree after fork -> %u %s", olc_code(r), olc_details(r));
  r = olShutDown();
  OLC_CHECK(r == NULL, "parent olShutDown after fork -> %u %s", olc_code(r),
            olc_details(r));
  r = olShutDown();
  OLC_CHECK(olc_code(r) == OL_ERRC_UNINITIALIZED,
            "parent extra olShutDown: expected %d, got %u %s",
            (int)OL_ERRC_UNINITIALIZED, olc_code(r), olc_details(r));
  return olc_summary(NULL);
}
