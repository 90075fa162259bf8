/* Test b: the host dlcloses the library without calling olShutDown.
 *
 * dlopen + olInit + dlclose (no shutdown); dlopen again: olInit must work and
 * the devices must still be listed.  The first olInit is still counted, so two
 * olShutDown calls succeed and a third reports OL_ERRC_UNINITIALIZED.
 *
 * usage: dlclose_no_shutdown /path/to/libLLVMOffload.so.22.1
 */
#include "olcheck.h"

#include <dlfcn.h>

typedef ol_result_t (*void_fn)(void);
typedef ol_result_t (*iterate_fn)(ol_device_iterate_cb_t, void *);
typedef ol_result_t (*devinfo_fn)(ol_device_handle_t, ol_device_info_t, size_t,
                                  void *);

struct api {
  void *lib;
  __typeof__(&olInit) init; /* (void) in 22.1, (const ol_init_args_t *) in 23.1 */
  void_fn shut;
  iterate_fn iter;
  devinfo_fn info;
};

static bool load(const char *path, struct api *a) {
  memset(a, 0, sizeof *a);
  a->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  OLC_CHECK(a->lib != NULL, "dlopen(%s): %s", path, dlerror());
  if (!a->lib)
    return false;
  a->init = (__typeof__(&olInit))dlsym(a->lib, "olInit");
  a->shut = (void_fn)dlsym(a->lib, "olShutDown");
  a->iter = (iterate_fn)dlsym(a->lib, "olIterateDevices");
  a->info = (devinfo_fn)dlsym(a->lib, "olGetDeviceInfo");
  bool ok = a->init && a->shut && a->iter && a->info;
  OLC_CHECK(ok, "dlsym of olInit/olShutDown/olIterateDevices/olGetDeviceInfo");
  if (ok)
    olc_check_library_is((void *)a->init, path);
  return ok;
}

struct seen {
  size_t count;
  size_t hosts;
  devinfo_fn info;
  size_t info_errors;
};

static bool visit(ol_device_handle_t dev, void *user) {
  struct seen *s = user;
  s->count++;
  ol_device_type_t type = OL_DEVICE_TYPE_FORCE_UINT32;
  if (s->info(dev, OL_DEVICE_INFO_TYPE, sizeof type, &type) != NULL)
    s->info_errors++;
  else if (type == OL_DEVICE_TYPE_HOST)
    s->hosts++;
  return true;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s LIBRARY\n", argv[0]);
    return 2;
  }
  struct api a;
  if (!load(argv[1], &a))
    return olc_summary(NULL);

  ol_result_t r = a.init(OLC_INIT_ARG);
  OLC_CHECK(r == NULL, "first olInit -> %u %s", olc_code(r), olc_details(r));
  OLC_CHECK(dlclose(a.lib) == 0, "first dlclose: %s", dlerror());

  if (!load(argv[1], &a))
    return olc_summary(NULL);
  r = a.init(OLC_INIT_ARG);
  OLC_CHECK(r == NULL, "olInit after dlclose -> %u %s", olc_code(r),
            olc_details(r));

  struct seen s = {.info = a.info};
  r = a.iter(visit, &s);
  OLC_CHECK(r == NULL, "olIterateDevices -> %u %s", olc_code(r), olc_details(r));
  OLC_CHECK(s.count >= 1, "no devices listed after reload");
  OLC_CHECK(s.hosts == 1, "expected exactly one host device, saw %zu", s.hosts);
  OLC_CHECK(s.info_errors == 0, "%zu TYPE queries failed", s.info_errors);
  printf("devices after reload: %zu\n", s.count);

  r = a.shut();
  OLC_CHECK(r == NULL, "olShutDown #1 -> %u %s", olc_code(r), olc_details(r));
  r = a.shut();
  OLC_CHECK(r == NULL, "olShutDown #2 -> %u %s", olc_code(r), olc_details(r));
  r = a.shut();
  OLC_CHECK(olc_code(r) == OL_ERRC_UNINITIALIZED,
            "olShutDown #3: expected OL_ERRC_UNINITIALIZED (%d), got %u %s",
            (int)OL_ERRC_UNINITIALIZED, olc_code(r), olc_details(r));

  OLC_CHECK(dlclose(a.lib) == 0, "second dlclose: %s", dlerror());
  return olc_summary(NULL);
}
