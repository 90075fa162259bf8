/* Prints every device the library finds, one a line, as the device suite
 * names them: "<backend>:<index> <type> <name>". Not a test: the gpu-check
 * bundle's run.sh uses it to say which devices it runs on. Exit status 0
 * when olInit works, 1 otherwise.
 * SPDX-License-Identifier: Apache-2.0 */
#include "oldevices.h"

int main(int argc, char **argv) {
  if (argc > 1) {
    int help = !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help");
    fprintf(help ? stdout : stderr,
            "usage: %s\nPrints every device liboffload-go finds, one a line:\n"
            "<backend>:<index> <host|gpu|other> <name>, as OFFLOAD_TEST_DEVICES names them.\n",
            argv[0]);
    return help ? 0 : 2;
  }
  ol_result_t r = olInit();
  if (r) {
    printf("olInit failed: %s\n", r->Details ? r->Details : "(no details)");
    return 1;
  }
  olc_devlist l;
  olc_list_devices(&l);
  for (int i = 0; i < l.n; i++) {
    char name[256] = "?";
    ol_device_type_t t = OL_DEVICE_TYPE_ALL;
    olGetDeviceInfo(l.dev[i], OL_DEVICE_INFO_NAME, sizeof name, name);
    olGetDeviceInfo(l.dev[i], OL_DEVICE_INFO_TYPE, sizeof t, &t);
    printf("%s:%u %s %s\n", olc_backend_name(l.sel[i].backend), l.sel[i].index,
           t == OL_DEVICE_TYPE_HOST ? "host" : t == OL_DEVICE_TYPE_GPU ? "gpu" : "other", name);
  }
  olShutDown();
  return 0;
}
