// Detects that the process is a child created by fork() after the library
// was loaded. Only plain C runs here: nothing may enter Go in such a child.
#include <pthread.h>
#include <stddef.h>

#include "zapi.h"

volatile int ol_forked_child = 0;

const ol_error_struct_t ol_fork_result = {
    OL_ERRC_UNSUPPORTED,
    "liboffload-go cannot be used in a child process created by fork() after "
    "the library was loaded (the Go runtime's threads do not survive fork); "
    "start child processes with spawn or fork+exec instead, e.g. Python "
    "multiprocessing.set_start_method(\"spawn\")"};

static void ol_atfork_child(void) { ol_forked_child = 1; }

__attribute__((constructor)) static void ol_register_atfork(void) {
  pthread_atfork(NULL, NULL, ol_atfork_child);
}
