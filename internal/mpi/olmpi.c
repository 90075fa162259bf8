// Open MPI 4.x through dlopen: see olmpi.h.
#define _GNU_SOURCE // RTLD_DEFAULT
#include "olmpi.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

typedef void *olm_handle; // MPI_Comm, MPI_Datatype, MPI_Request, ...

// Open MPI 4.1's struct ompi_status_public_t.
typedef struct {
  int source, tag, error;
  int cancelled;
  size_t ucount;
} olm_status;

enum { OLM_ANY_SOURCE = -1 };

static struct {
  int (*initialized)(int *);
  int (*finalized)(int *);
  int (*init_thread)(int *, char ***, int, int *);
  int (*query_thread)(int *);
  int (*finalize)(void);
  int (*comm_set_errhandler)(olm_handle, olm_handle);
  int (*comm_rank)(olm_handle, int *);
  int (*comm_size)(olm_handle, int *);
  int (*get_processor_name)(char *, int *);
  int (*error_string)(int, char *, int *);
  int (*isend)(const void *, int, olm_handle, int, int, olm_handle, olm_handle *);
  int (*irecv)(void *, int, olm_handle, int, int, olm_handle, olm_handle *);
  int (*send)(const void *, int, olm_handle, int, int, olm_handle);
  int (*recv)(void *, int, olm_handle, int, int, olm_handle, olm_status *);
  int (*test)(olm_handle *, int *, olm_status *);
  int (*cancel)(olm_handle *);
  int (*test_cancelled)(const olm_status *, int *);
  int (*iprobe)(int, int, olm_handle, int *, olm_status *);
  int (*get_count)(const olm_status *, olm_handle, int *);
  olm_handle comm_world, byte, errors_return;
} M;

int olm_load(const char *lib, char *err, size_t errlen) {
  void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    snprintf(err, errlen, "%s", e ? e : "dlopen failed");
    return -1;
  }
  struct {
    void **slot;
    const char *name;
    int handle; // a predefined handle: the address of a global
  } syms[] = {
      {(void **)&M.initialized, "MPI_Initialized"},
      {(void **)&M.finalized, "MPI_Finalized"},
      {(void **)&M.init_thread, "MPI_Init_thread"},
      {(void **)&M.query_thread, "MPI_Query_thread"},
      {(void **)&M.finalize, "MPI_Finalize"},
      {(void **)&M.comm_set_errhandler, "MPI_Comm_set_errhandler"},
      {(void **)&M.comm_rank, "MPI_Comm_rank"},
      {(void **)&M.comm_size, "MPI_Comm_size"},
      {(void **)&M.get_processor_name, "MPI_Get_processor_name"},
      {(void **)&M.error_string, "MPI_Error_string"},
      {(void **)&M.isend, "MPI_Isend"},
      {(void **)&M.irecv, "MPI_Irecv"},
      {(void **)&M.send, "MPI_Send"},
      {(void **)&M.recv, "MPI_Recv"},
      {(void **)&M.test, "MPI_Test"},
      {(void **)&M.cancel, "MPI_Cancel"},
      {(void **)&M.test_cancelled, "MPI_Test_cancelled"},
      {(void **)&M.iprobe, "MPI_Iprobe"},
      {(void **)&M.get_count, "MPI_Get_count"},
      // the predefined handles are these globals' addresses
      {&M.comm_world, "ompi_mpi_comm_world", 1},
      {&M.byte, "ompi_mpi_byte", 1},
      {&M.errors_return, "ompi_mpi_errors_return", 1},
  };
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
    void *p = dlsym(h, syms[i].name);
    // A predefined handle is the address libmpi itself uses: when the
    // application links Open MPI, its executable may hold a copy of the
    // global (a copy relocation, as gcc makes for PIE executables too) that
    // libmpi's own references were bound to; the global scope finds that
    // copy first, and libmpi's original is then never used.
    if (p && syms[i].handle) {
      void *global = dlsym(RTLD_DEFAULT, syms[i].name);
      if (global)
        p = global;
    }
    if (!p) {
      // not Open MPI (MPICH's libmpi.so.12 has none of the globals)
      snprintf(err, errlen, "%s has no %s: not Open MPI 4.x", lib, syms[i].name);
      memset(&M, 0, sizeof M);
      dlclose(h);
      return -1;
    }
    *syms[i].slot = p;
  }
  return 0;
}

int olm_initialized(int *flag) { return M.initialized(flag); }
int olm_finalized(int *flag) { return M.finalized(flag); }
int olm_init_thread(int required, int *provided) { return M.init_thread(NULL, NULL, required, provided); }
int olm_query_thread(int *provided) { return M.query_thread(provided); }
int olm_finalize(void) { return M.finalize(); }
int olm_errors_return(void) { return M.comm_set_errhandler(M.comm_world, M.errors_return); }

int olm_world(int *rank, int *size) {
  int rc = M.comm_rank(M.comm_world, rank);
  return rc ? rc : M.comm_size(M.comm_world, size);
}

int olm_processor_name(char *name, int *len) { return M.get_processor_name(name, len); }

void olm_error_string(int code, char *buf, size_t len) {
  char s[512]; // MPI_MAX_ERROR_STRING is 256
  int n = 0;
  if (M.error_string && M.error_string(code, s, &n) == 0 && n > 0 && n < (int)sizeof s) {
    s[n] = 0;
    snprintf(buf, len, "%s", s);
  } else {
    snprintf(buf, len, "MPI error %d", code);
  }
}

int olm_isend(const void *buf, int count, int dest, int tag, uintptr_t *req) {
  olm_handle r = NULL;
  int rc = M.isend(buf, count, M.byte, dest, tag, M.comm_world, &r);
  *req = (uintptr_t)r;
  return rc;
}

int olm_irecv(void *buf, int count, int src, int tag, uintptr_t *req) {
  olm_handle r = NULL;
  int rc = M.irecv(buf, count, M.byte, src, tag, M.comm_world, &r);
  *req = (uintptr_t)r;
  return rc;
}

int olm_test(uintptr_t *req, int *done) {
  olm_handle r = (olm_handle)*req;
  olm_status st;
  int rc = M.test(&r, done, &st);
  *req = (uintptr_t)r; // (status.MPI_ERROR is only set by calls that complete several)
  return rc;
}

int olm_cancel(uintptr_t *req, int *cancelled) {
  olm_handle r = (olm_handle)*req;
  *cancelled = 0;
  int rc = M.cancel(&r);
  if (rc)
    return rc;
  // A cancelled receive completes at once in Open MPI; give it 100 ms.
  for (int i = 0; i < 1000; i++) {
    olm_status st;
    int done = 0;
    rc = M.test(&r, &done, &st);
    if (rc)
      break;
    if (done) {
      M.test_cancelled(&st, cancelled);
      if (!*cancelled)
        *cancelled = 2; // it completed instead: the data arrived
      break;
    }
    struct timespec ts = {0, 100000};
    nanosleep(&ts, NULL);
  }
  *req = (uintptr_t)r;
  return rc;
}

int olm_post_copy(void *stage, unsigned char kind, const void *body, int n, int dest, int tag, olm_out *o) {
  unsigned char *b = stage;
  b[0] = kind;
  if (n > 0)
    memcpy(b + 1, body, (size_t)n);
  olm_handle r = NULL;
  olm_status st;
  o->done = 0;
  o->step = 1;
  int rc = M.isend(b, n + 1, M.byte, dest, tag, M.comm_world, &r);
  o->req = (uintptr_t)r;
  if (rc)
    return rc;
  o->step = 2;
  rc = M.test(&r, &o->done, &st);
  o->req = (uintptr_t)r;
  return rc;
}

int olm_poll_posted(int tag, void *buf, int cap, int check, olm_out *o) {
  olm_status st;
  o->found = 0;
  o->waiting = 0;
  o->step = 1;
  if (!o->posted) {
    olm_handle r = NULL;
    int rc = M.irecv(buf, cap, M.byte, OLM_ANY_SOURCE, tag, M.comm_world, &r);
    if (rc)
      return rc;
    o->posted = (uintptr_t)r;
  }
  o->step = 2;
  olm_handle r = (olm_handle)o->posted;
  int done = 0;
  memset(&st, 0, sizeof st);
  int rc = M.test(&r, &done, &st);
  o->posted = (uintptr_t)r;
  if (rc == OLM_ERR_TRUNCATE) {
    // a message larger than buf (none of the transport's): dropped
    o->posted = 0;
    o->found = 1;
    o->src = st.source;
    o->count = -1;
    return 0;
  }
  if (rc)
    return rc;
  if (done) {
    o->posted = 0;
    o->found = 1;
    o->src = st.source;
    return M.get_count(&st, M.byte, &o->count);
  }
  if (check) {
    o->step = 3;
    return M.iprobe(OLM_ANY_SOURCE, tag, M.comm_world, &o->waiting, &st);
  }
  return 0;
}

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t olm_raw_pingpong(int peer, int tag, void *buf, int bytes, int iters, int initiator) {
  int64_t t0 = now_ns();
  for (int i = 0; i < iters; i++) {
    if (initiator) {
      if (M.send(buf, bytes, M.byte, peer, tag, M.comm_world) ||
          M.recv(buf, bytes, M.byte, peer, tag, M.comm_world, NULL))
        return -1;
    } else {
      if (M.recv(buf, bytes, M.byte, peer, tag, M.comm_world, NULL) ||
          M.send(buf, bytes, M.byte, peer, tag, M.comm_world))
        return -1;
    }
  }
  return now_ns() - t0;
}

int64_t olm_raw_stream(int peer, int tag, void *buf, int bytes, int iters, int sender) {
  int64_t t0 = now_ns();
  for (int i = 0; i < iters; i++) {
    int rc = sender ? M.send(buf, bytes, M.byte, peer, tag, M.comm_world)
                    : M.recv(buf, bytes, M.byte, peer, tag, M.comm_world, NULL);
    if (rc)
      return -1;
  }
  char ack = 0;
  int rc = sender ? M.recv(&ack, 1, M.byte, peer, tag, M.comm_world, NULL)
                  : M.send(&ack, 1, M.byte, peer, tag, M.comm_world);
  return rc ? -1 : now_ns() - t0;
}

#include <stdlib.h>

extern void olmpiAtExit(void); // exit.go

static void olm_atexit(void) { olmpiAtExit(); }

void olm_register_atexit(void) {
  static int done;
  if (!__atomic_exchange_n(&done, 1, __ATOMIC_SEQ_CST))
    atexit(olm_atexit);
}

void olm_exit(int code) { exit(code); }
