/* Test (our library only): info queries racing with the final olShutDown.
 *
 * The main thread runs CYCLES full initialisations (olInit, note every
 * device's handle, its TYPE and NAME and its platform's NAME, let the
 * workers see them, a short pause, olShutDown with no other reference, a
 * short pause). Meanwhile 4 threads call olGetDeviceInfo(TYPE, NAME),
 * olGetDeviceInfoSize(NAME), olGetPlatformInfo[Size](NAME) and
 * olIterateDevices without a pause on the handles of the latest
 * initialisation. Each call must either
 * succeed with exactly the values noted for that initialisation, or fail
 * with OL_ERRC_UNINITIALIZED (the library is down) or the handle kind's
 * code with Details saying the handle is from an earlier initialisation;
 * a failed call must leave the output untouched. olIterateDevices must
 * succeed after visiting device handles (those of whichever initialisation
 * it met) or fail uninitialised without visiting any. It must never crash.
 * Both outcomes must happen (the race was run).
 *
 * usage: info_race [cycles]
 */
#include "oldevices.h"

#include <pthread.h>
#include <time.h>

#define NAMECAP 128
#define WORKERS 4

struct epoch {
  ol_device_handle_t dev;
  ol_platform_handle_t plat;
  uint32_t type;
  char name[NAMECAP];
  size_t name_size;
  char plat_name[NAMECAP];
  size_t plat_name_size;
};

/* the main thread fills epochs[i] and then publishes i */
#define MAXEPOCH 4096
static struct epoch epochs[MAXEPOCH];
static atomic_int latest = -1;
static atomic_bool stop;
static atomic_long ok_calls, down_calls;

static void sleep_us(long us) {
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
  nanosleep(&ts, NULL);
}

/* A failure is acceptable only if it says the library or the handle's
 * initialisation is gone. */
static bool down(ol_result_t r, unsigned code) {
  if (olc_code(r) == OL_ERRC_UNINITIALIZED)
    return olc_details_has(r, "has not been initialized");
  return olc_code(r) == code && olc_details_has(r, "earlier initialisation");
}

static void untouched(const unsigned char *b, size_t n, const char *what) {
  for (size_t i = 0; i < n; i++)
    if (b[i] != 0xA5) {
      OLC_QUIET_CHECK(false, "%s: failed call wrote byte %zu", what, i);
      return;
    }
}

struct iter_state {
  int visits;
  bool bad;
};
static bool visit_dev(ol_device_handle_t d, void *user) {
  struct iter_state *st = user;
  st->visits++;
  st->bad |= ((uintptr_t)d >> 56) != 0xB2; /* a device handle: tag 0xB0 | kind 2 (impl/handles.go) */
  return true;
}

/* The outcomes a worker has seen. */
struct tally {
  long ok, dn;
};

/* Counts R's outcome; a failure must be the shutdown error (the handle
 * kind's CODE). Says whether the call succeeded. */
static bool succeeded(ol_result_t r, unsigned code, struct tally *t, int i, const char *what) {
  if (r == NULL) {
    t->ok++;
    return true;
  }
  t->dn++;
  OLC_QUIET_CHECK(down(r, code), "epoch %d: %s -> %u %s", i, what, olc_code(r), olc_details(r));
  return false;
}

/* A string query into BUF: on success WANT (WANT_SIZE bytes with its NUL)
 * and nothing after it, on failure the shutdown error and BUF untouched. */
static void check_name(ol_result_t r, unsigned code, const unsigned char *buf, size_t bufsize, const char *want,
                       size_t want_size, struct tally *t, int i, const char *what) {
  if (succeeded(r, code, t, i, what))
    OLC_QUIET_CHECK(memcmp(buf, want, want_size) == 0 && buf[want_size] == 0xA5, "epoch %d: %s differs from \"%s\"", i,
                    what, want);
  else
    untouched(buf, bufsize, what);
}

/* A size query into N (12345 before the call): on success WANT, on failure
 * the shutdown error and N untouched. */
static void check_size(ol_result_t r, unsigned code, size_t n, size_t want, struct tally *t, int i, const char *what) {
  if (succeeded(r, code, t, i, what))
    OLC_QUIET_CHECK(n == want, "epoch %d: %s %zu, want %zu", i, what, n, want);
  else
    OLC_QUIET_CHECK(n == 12345, "epoch %d: failed %s wrote its output", i, what);
}

static void *worker(void *arg) {
  (void)arg;
  unsigned char buf[NAMECAP + 16];
  while (!atomic_load(&stop)) {
    int i = atomic_load(&latest);
    if (i < 0)
      continue;
    const struct epoch *e = &epochs[i];
    struct tally t = {0, 0};
    for (int rep = 0; rep < 64; rep++) {
      uint32_t type = 0xA5A5A5A5;
      ol_result_t r = olGetDeviceInfo(e->dev, OL_DEVICE_INFO_TYPE, sizeof type, &type);
      if (succeeded(r, OL_ERRC_INVALID_DEVICE, &t, i, "TYPE"))
        OLC_QUIET_CHECK(type == e->type, "epoch %d: TYPE %u, want %u", i, type, e->type);
      else
        OLC_QUIET_CHECK(type == 0xA5A5A5A5, "epoch %d: failed TYPE wrote its output", i);
      memset(buf, 0xA5, sizeof buf);
      r = olGetDeviceInfo(e->dev, OL_DEVICE_INFO_NAME, NAMECAP, buf);
      check_name(r, OL_ERRC_INVALID_DEVICE, buf, sizeof buf, e->name, e->name_size, &t, i, "device NAME");
      size_t n = 12345;
      r = olGetDeviceInfoSize(e->dev, OL_DEVICE_INFO_NAME, &n);
      check_size(r, OL_ERRC_INVALID_DEVICE, n, e->name_size, &t, i, "NAME size");
      memset(buf, 0xA5, sizeof buf);
      r = olGetPlatformInfo(e->plat, OL_PLATFORM_INFO_NAME, NAMECAP, buf);
      check_name(r, OL_ERRC_INVALID_PLATFORM, buf, sizeof buf, e->plat_name, e->plat_name_size, &t, i,
                 "platform NAME");
      n = 12345;
      r = olGetPlatformInfoSize(e->plat, OL_PLATFORM_INFO_NAME, &n);
      check_size(r, OL_ERRC_INVALID_PLATFORM, n, e->plat_name_size, &t, i, "platform NAME size");
      struct iter_state st = {0, false};
      r = olIterateDevices(visit_dev, &st);
      if (r == NULL) {
        t.ok++;
        OLC_QUIET_CHECK(st.visits > 0 && !st.bad, "epoch %d: olIterateDevices visited %d devices (bad %d)", i, st.visits, st.bad);
      } else {
        t.dn++;
        OLC_QUIET_CHECK(olc_code(r) == OL_ERRC_UNINITIALIZED && st.visits == 0,
                        "epoch %d: olIterateDevices -> %u %s after %d visits", i, olc_code(r), olc_details(r), st.visits);
      }
    }
    atomic_fetch_add(&ok_calls, t.ok);
    atomic_fetch_add(&down_calls, t.dn);
  }
  return NULL;
}

int main(int argc, char **argv) {
  int cycles = argc > 1 ? atoi(argv[1]) : 300;
  if (cycles < 1 || cycles > MAXEPOCH)
    cycles = 300;
  olc_check_library((void *)olInit);
  pthread_t th[WORKERS];
  for (int i = 0; i < WORKERS; i++)
    pthread_create(&th[i], NULL, worker, NULL);
  for (int i = 0; i < cycles; i++) {
    ol_result_t r = olInit();
    OLC_QUIET_CHECK(r == NULL, "cycle %d: olInit -> %u %s", i, olc_code(r), olc_details(r));
    if (r != NULL)
      break;
    struct epoch *e = &epochs[i];
    olc_devlist l;
    olc_list_devices(&l);
    e->dev = l.n > 0 ? l.dev[0] : NULL;
    bool good = e->dev != NULL &&
                olGetDeviceInfo(e->dev, OL_DEVICE_INFO_TYPE, sizeof e->type, &e->type) == NULL &&
                olGetDeviceInfo(e->dev, OL_DEVICE_INFO_NAME, NAMECAP, e->name) == NULL &&
                olGetDeviceInfo(e->dev, OL_DEVICE_INFO_PLATFORM, sizeof e->plat, &e->plat) == NULL &&
                olGetPlatformInfo(e->plat, OL_PLATFORM_INFO_NAME, NAMECAP, e->plat_name) == NULL;
    OLC_QUIET_CHECK(good, "cycle %d: reading the device's properties failed", i);
    e->name_size = strlen(e->name) + 1;
    e->plat_name_size = strlen(e->plat_name) + 1;
    if (good)
      atomic_store(&latest, i);
    sleep_us(500 + (i % 7) * 100);
    r = olShutDown();
    OLC_QUIET_CHECK(r == NULL, "cycle %d: olShutDown -> %u %s", i, olc_code(r), olc_details(r));
    sleep_us(100 + (i % 5) * 50);
  }
  atomic_store(&stop, true);
  for (int i = 0; i < WORKERS; i++)
    pthread_join(th[i], NULL);
  long ok = atomic_load(&ok_calls), dn = atomic_load(&down_calls);
  printf("%d cycles: %ld calls succeeded, %ld found the library or handle gone\n", cycles, ok, dn);
  OLC_CHECK(ok > 0 && dn > 0, "both outcomes happened (%ld, %ld)", ok, dn);
  ol_result_t r = olShutDown();
  OLC_CHECK(olc_code(r) == OL_ERRC_UNINITIALIZED, "extra olShutDown -> %u %s", olc_code(r), olc_details(r));
  return olc_summary(NULL);
}
