/* Test e (our library only): calls from a forked child.
 *
 * The parent initialises the library and forks.  In the child (which has
 * inherited a Go runtime whose threads did not survive the fork) every call
 * must fail fast with OL_ERRC_UNSUPPORTED, Details naming "fork" and
 * suggesting "spawn"; an alarm(10) turns a hang into a failure.  The parent
 * checks the child's exit status and then keeps using the library.
 */
#include "lc_common.h"

#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static bool count_cb(ol_device_handle_t dev, void *user) {
  (void)dev;
  (*(size_t *)user)++;
  return true;
}

struct devsave {
  ol_device_handle_t first;
};

static bool first_cb(ol_device_handle_t dev, void *user) {
  struct devsave *s = user;
  if (!s->first)
    s->first = dev;
  return true;
}

/* Child side: returns the number of failed checks (printed to stderr). */
static int child_checks(ol_device_handle_t inherited_dev) {
  int failures = 0;
  struct {
    const char *what;
    ol_result_t r;
  } calls[4];
  size_t n = 0;
  calls[0].what = "olIterateDevices";
  calls[0].r = olIterateDevices(count_cb, &n);
  calls[1].what = "olInit";
  calls[1].r = olInit();
  ol_device_type_t t;
  calls[2].what = "olGetDeviceInfo";
  calls[2].r = olGetDeviceInfo(inherited_dev, OL_DEVICE_INFO_TYPE, sizeof t, &t);
  calls[3].what = "olShutDown";
  calls[3].r = olShutDown();
  for (int i = 0; i < 4; i++) {
    ol_result_t r = calls[i].r;
    bool ok = lc_code(r) == OL_ERRC_UNSUPPORTED && lc_details_has(r, "fork") &&
              lc_details_has(r, "spawn");
    if (!ok) {
      failures++;
      fprintf(stderr,
              "FAIL child: %s: expected %d with \"fork\" and \"spawn\" in "
              "Details, got %u \"%s\"\n",
              calls[i].what, (int)OL_ERRC_UNSUPPORTED, lc_code(r),
              lc_details(r));
    } else {
      fprintf(stderr, "child: %s -> %u \"%s\"\n", calls[i].what, lc_code(r),
              lc_details(r));
    }
  }
  return failures;
}

int main(void) {
  lc_check_library((void *)olInit);
  LC_OURS_ONLY("the fork guard is specific to our library");

  ol_result_t r = olInit();
  LC_CHECK(r == NULL, "parent olInit -> %u %s", lc_code(r), lc_details(r));
  struct devsave s = {0};
  r = olIterateDevices(first_cb, &s);
  LC_CHECK(r == NULL && s.first != NULL, "parent olIterateDevices -> %u %s",
           lc_code(r), lc_details(r));

  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    LC_CHECK(false, "fork: %s", strerror(errno));
    return lc_finish();
  }
  if (pid == 0) {
    signal(SIGALRM, SIG_DFL);
    alarm(10);
    int failures = child_checks(s.first);
    _exit(failures == 0 ? 0 : 1);
  }

  int status = 0;
  pid_t w;
  do {
    w = waitpid(pid, &status, 0);
  } while (w < 0 && errno == EINTR);
  LC_CHECK(w == pid, "waitpid: %s", strerror(errno));
  if (WIFSIGNALED(status)) {
    LC_CHECK(false, "child killed by signal %d%s", WTERMSIG(status),
             WTERMSIG(status) == SIGALRM ? " (SIGALRM: it hung)" : "");
  } else {
    LC_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
             "child exited with status %d", WEXITSTATUS(status));
  }

  /* the parent is unaffected */
  size_t n = 0;
  r = olIterateDevices(count_cb, &n);
  LC_CHECK(r == NULL && n >= 1, "parent olIterateDevices after fork -> %u %s (%zu devices)",
           lc_code(r), lc_details(r), n);
  ol_device_type_t t = OL_DEVICE_TYPE_FORCE_UINT32;
  r = olGetDeviceInfo(s.first, OL_DEVICE_INFO_TYPE, sizeof t, &t);
  LC_CHECK(r == NULL, "parent olGetDeviceInfo after fork -> %u %s", lc_code(r),
           lc_details(r));
  r = olShutDown();
  LC_CHECK(r == NULL, "parent olShutDown after fork -> %u %s", lc_code(r),
           lc_details(r));
  r = olShutDown();
  LC_CHECK(lc_code(r) == OL_ERRC_UNINITIALIZED,
           "parent extra olShutDown: expected %d, got %u %s",
           (int)OL_ERRC_UNINITIALIZED, lc_code(r), lc_details(r));
  return lc_finish();
}
