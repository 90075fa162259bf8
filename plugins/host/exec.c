#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "exec.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ------------------------------------------------------------- fibers --- */

// Stack of one work-item of a group kernel. Pages are only touched when
// used, so the reservation costs address space, not memory.
#define OL_FIBER_STACK (128 * 1024)

enum { FIBER_READY, FIBER_BARRIER, FIBER_DONE };

typedef struct ol_fiber {
  ol_host_sync_item item; // first: the kernel gets a pointer to it
  void *sp;               // saved stack pointer while switched out
  void *stack;            // mapping, guard page first
  int state;
  struct ol_fiber_pool *pool;
} ol_fiber;

struct ol_fiber_pool {
  ol_fiber *fibers;
  size_t count;
  size_t n;       // work-items of the group being run
  size_t live;    // of those, how many have not finished
  void *sched_sp; // the scheduler's stack pointer while a fiber runs
  const ol_host_kernel_desc *desc;
  const void *args;
};

#if defined(__x86_64__)
// ol_switch(save, to): saves the callee-saved registers on the current
// stack, stores the stack pointer in *save and resumes the stack `to`.
// MXCSR and the x87 control word are not switched: all fibers of a group
// share the thread's floating-point environment (kernels do not change it,
// docs/kernels.md), and run_group_fibers restores the worker's around the
// group. Saving them cost half of each switch (stmxcsr/ldmxcsr are slow).
__asm__(".text\n"
        ".p2align 4\n"
        "ol_switch:\n"
        "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
        "  movq %rsp, (%rdi)\n"
        "  movq %rsi, %rsp\n"
        "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
        "  ret\n"
        "ol_fiber_entry:\n"
        "  movq %r13, %rdi\n"
        "  andq $-16, %rsp\n"
        "  callq *%r12\n"
        "  ud2\n");
void ol_switch(void **save, void *to) __asm__("ol_switch");
void ol_fiber_entry(void) __asm__("ol_fiber_entry");

static void *fiber_init_stack(void *top, void (*fn)(ol_fiber *), ol_fiber *arg) {
  uint64_t *sp = (uint64_t *)top;
  *--sp = 0;                         // alignment slot
  *--sp = (uint64_t)ol_fiber_entry;  // return address of ol_switch
  *--sp = 0;                         // rbp
  *--sp = 0;                         // rbx
  *--sp = (uint64_t)fn;              // r12
  *--sp = (uint64_t)arg;             // r13
  *--sp = 0;                         // r14
  *--sp = 0;                         // r15
  return sp;
}

typedef struct { uint32_t mxcsr, x87cw; } fp_env;
static inline void fp_env_save(fp_env *e) {
  __asm__ volatile("stmxcsr %0\n fnstcw %1" : "=m"(e->mxcsr), "=m"(e->x87cw));
}
static inline void fp_env_restore(const fp_env *e) {
  __asm__ volatile("ldmxcsr %0\n fldcw %1" : : "m"(e->mxcsr), "m"(e->x87cw));
}
#elif defined(__aarch64__)
__asm__(".text\n"
        ".p2align 4\n"
        "ol_switch:\n"
        "  sub sp, sp, #176\n"
        "  stp x19, x20, [sp, #0]\n  stp x21, x22, [sp, #16]\n  stp x23, x24, [sp, #32]\n"
        "  stp x25, x26, [sp, #48]\n  stp x27, x28, [sp, #64]\n  stp x29, x30, [sp, #80]\n"
        "  stp d8, d9, [sp, #96]\n  stp d10, d11, [sp, #112]\n  stp d12, d13, [sp, #128]\n"
        "  stp d14, d15, [sp, #144]\n"
        "  mov x9, sp\n  str x9, [x0]\n  mov sp, x1\n"
        "  ldp x19, x20, [sp, #0]\n  ldp x21, x22, [sp, #16]\n  ldp x23, x24, [sp, #32]\n"
        "  ldp x25, x26, [sp, #48]\n  ldp x27, x28, [sp, #64]\n  ldp x29, x30, [sp, #80]\n"
        "  ldp d8, d9, [sp, #96]\n  ldp d10, d11, [sp, #112]\n  ldp d12, d13, [sp, #128]\n"
        "  ldp d14, d15, [sp, #144]\n"
        "  add sp, sp, #176\n"
        "  ret\n"
        "ol_fiber_entry:\n"
        "  mov x0, x20\n"
        "  blr x19\n"
        "  brk #0\n");
void ol_switch(void **save, void *to) __asm__("ol_switch");
void ol_fiber_entry(void) __asm__("ol_fiber_entry");

static void *fiber_init_stack(void *top, void (*fn)(ol_fiber *), ol_fiber *arg) {
  uint64_t *sp = (uint64_t *)((uintptr_t)top & ~(uintptr_t)15) - 22;
  memset(sp, 0, 176);
  sp[0] = (uint64_t)fn;              // x19
  sp[1] = (uint64_t)arg;             // x20
  sp[11] = (uint64_t)ol_fiber_entry; // x30 (return address)
  return sp;
}

typedef struct { uint64_t fpcr; } fp_env;
static inline void fp_env_save(fp_env *e) { __asm__ volatile("mrs %0, fpcr" : "=r"(e->fpcr)); }
static inline void fp_env_restore(const fp_env *e) { __asm__ volatile("msr fpcr, %0" : : "r"(e->fpcr)); }
#else
#error "liboffload-go host fibers: add a context switch for this architecture"
#endif

// Where a fiber that stops (at a barrier or at its end) goes: straight to
// the next work-item of the pass that has not finished, or back to the
// scheduler after the last one. One stack switch per work-item and barrier.
static void *next_sp(ol_fiber *f) {
  ol_fiber_pool *p = f->pool;
  for (ol_fiber *g = f + 1; g < p->fibers + p->n; g++)
    if (g->state != FIBER_DONE) return g->sp;
  return p->sched_sp;
}

static void fiber_barrier(ol_host_sync_item *it) {
  ol_fiber *f = (ol_fiber *)it;
  f->state = FIBER_BARRIER;
  ol_switch(&f->sp, next_sp(f));
}

// Body of every fiber: run the work-item it was given, report, wait for the
// next one. It never returns.
static void fiber_main(ol_fiber *f) {
  for (;;) {
    ol_fiber_pool *p = f->pool;
    p->desc->item(p->args, &f->item);
    f->state = FIBER_DONE;
    p->live--;
    ol_switch(&f->sp, next_sp(f));
  }
}

ol_fiber_pool *ol_fiber_pool_new(void) { return calloc(1, sizeof(ol_fiber_pool)); }

void ol_fiber_pool_free(ol_fiber_pool *pool) {
  if (!pool) return;
  for (size_t i = 0; i < pool->count; i++)
    munmap(pool->fibers[i].stack, OL_FIBER_STACK + (size_t)getpagesize());
  free(pool->fibers);
  free(pool);
}

// The most work-items a group can have (the host device's limit, also the
// number of copies kernel.h's OL_PRIVATE reserves).
#define OL_MAX_GROUP OL_HOST_MAX_GROUP

static int pool_grow(ol_fiber_pool *p, size_t n) {
  if (n <= p->count) return 0;
  if (n > OL_MAX_GROUP) return -1;
  if (!p->fibers) {
    // Allocated once at full size: a fiber's stack points at its slot, so
    // the array never moves.
    p->fibers = calloc(OL_MAX_GROUP, sizeof *p->fibers);
    if (!p->fibers) return -1;
  }
  size_t page = (size_t)getpagesize();
  for (size_t i = p->count; i < n; i++) {
    ol_fiber *f = &p->fibers[i];
    void *m = mmap(NULL, OL_FIBER_STACK + page, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (m == MAP_FAILED) return -1;
    mprotect(m, page, PROT_NONE); // guard page: overflow faults
    f->stack = m;
    f->pool = p;
    f->item.barrier = fiber_barrier;
    f->item.scheduler = p;
    // Stack tops staggered by 5 cache lines (mod 4 KiB): the hot frames of
    // a group's fibers would otherwise all map to the same cache sets.
    size_t stagger = (i * 5 % 64) * 64;
    f->sp = fiber_init_stack((char *)m + page + OL_FIBER_STACK - stagger, fiber_main, f);
    p->count = i + 1;
  }
  return 0;
}

static const char *run_group_fibers(ol_fiber_pool *p, const ol_host_launch *l, const uint32_t group[3]) {
  const uint32_t gx = l->group_size[0], gy = l->group_size[1], gz = l->group_size[2];
  const size_t n = (size_t)gx * gy * gz;
  if (pool_grow(p, n) != 0) return "cannot reserve stacks for the work-items of a group";
  size_t i = 0;
  for (uint32_t z = 0; z < gz; z++)
    for (uint32_t y = 0; y < gy; y++)
      for (uint32_t x = 0; x < gx; x++, i++) {
        ol_fiber *f = &p->fibers[i];
        f->item.local[0] = x, f->item.local[1] = y, f->item.local[2] = z;
        memcpy(f->item.group, group, sizeof f->item.group);
        f->item.global[0] = group[0] * gx + x;
        f->item.global[1] = group[1] * gy + y;
        f->item.global[2] = group[2] * gz + z;
        f->item.launch = l;
        f->state = FIBER_READY;
      }
  // Round robin: each pass runs every live work-item, in order, up to its
  // next barrier (or its end), each switching straight to the next; after a
  // pass, all live work-items wait at the barrier, so the next pass
  // releases them.
  p->n = n;
  p->live = n;
  fp_env env;
  fp_env_save(&env);
  while (p->live > 0) {
    size_t k = 0;
    while (p->fibers[k].state == FIBER_DONE) k++;
    ol_switch(&p->sched_sp, p->fibers[k].sp);
  }
  fp_env_restore(&env);
  return 0;
}

/* ----------------------------------------------------------- jobs --- */

void ol_host_job_fail(ol_host_job_ctl *ctl) {
  __atomic_store_n(&ctl->failed, 1, __ATOMIC_RELAXED);
}

// Takes the next chunk [*begin, *end); 0 when none is left or the job failed.
static int job_take(ol_host_job_ctl *ctl, uint64_t *begin, uint64_t *end) {
  uint64_t n = __atomic_load_n(&ctl->next, __ATOMIC_RELAXED);
  for (;;) {
    if (n >= ctl->total || __atomic_load_n(&ctl->failed, __ATOMIC_RELAXED)) return 0;
    uint64_t left = ctl->total - n;
    uint64_t k = left / (2 * (uint64_t)ctl->workers);
    if (k < ctl->min_chunk) k = ctl->min_chunk;
    if (k > left) k = left;
    if (__atomic_compare_exchange_n(&ctl->next, &n, n + k, 1, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED)) {
      *begin = n;
      *end = n + k;
      return 1;
    }
  }
}

// Runs groups [begin, end) with the launch l (its group range is set here).
static const char *run_range(const ol_host_kernel_desc *desc, const void *args, ol_host_launch *l,
                             ol_fiber_pool *pool, uint64_t begin, uint64_t end) {
  if (desc->kind == OL_HOST_KERNEL_LOOP) {
    l->group_begin = begin;
    l->group_end = end;
    desc->loop(args, l);
    return 0;
  }
  pool->desc = desc;
  pool->args = args;
  const char *err = 0;
  for (uint64_t g = begin; g < end && !err; g++) {
    uint32_t group[3];
    ol__group_of(g, l->num_groups, group);
    l->group_begin = g;
    l->group_end = g + 1;
    err = run_group_fibers(pool, l, group);
  }
  return err;
}

const char ol_host_grid_misuse[] =
    "the kernel called ol_grid_barrier() outside a cooperative launch (its groups do not all run at once)";

int ol_host_is_grid_misuse(const char *msg) { return msg == ol_host_grid_misuse; }

// The grid barrier of a launch that is not cooperative: the groups may
// not all be running, so waiting could never end. It notes the misuse
// (l->grid is the caller's flag) and returns.
static void grid_barrier_misuse(const ol_host_launch *l) {
  __atomic_store_n((uint32_t *)l->grid, 1, __ATOMIC_RELAXED);
}

// A launch's fixed part; its dynamic group-local memory is the caller's to
// free. Returns 0 or an error text. misuse is the flag a grid barrier sets.
static const char *launch_init(ol_host_launch *l, const uint32_t num_groups[3],
                               const uint32_t group_size[3], size_t dyn_shared, uint32_t *misuse) {
  memcpy(l->num_groups, num_groups, sizeof l->num_groups);
  memcpy(l->group_size, group_size, sizeof l->group_size);
  l->grid_barrier = grid_barrier_misuse;
  l->grid = misuse;
  l->dyn_shared = NULL;
  if (dyn_shared) {
    l->dyn_shared = aligned_alloc(64, (dyn_shared + 63) & ~(size_t)63);
    if (!l->dyn_shared) return "cannot allocate the dynamic group-local memory";
  }
  return 0;
}

const char *ol_host_exec(const ol_host_kernel_desc *desc, const void *args,
                         const uint32_t num_groups[3], const uint32_t group_size[3],
                         uint64_t group_begin, uint64_t group_end, size_t dyn_shared,
                         ol_fiber_pool *pool) {
  ol_host_launch l;
  uint32_t misuse = 0;
  const char *err = launch_init(&l, num_groups, group_size, dyn_shared, &misuse);
  if (!err) err = run_range(desc, args, &l, pool, group_begin, group_end);
  free(l.dyn_shared);
  if (!err && __atomic_load_n(&misuse, __ATOMIC_RELAXED)) err = ol_host_grid_misuse;
  return err;
}

const char *ol_host_exec_chunks(ol_host_job_ctl *ctl, const ol_host_kernel_desc *desc,
                                const void *args, const uint32_t num_groups[3],
                                const uint32_t group_size[3], size_t dyn_shared,
                                ol_fiber_pool *pool) {
  uint64_t begin, end;
  if (!job_take(ctl, &begin, &end)) return 0;
  ol_host_launch l;
  uint32_t misuse = 0;
  const char *err = launch_init(&l, num_groups, group_size, dyn_shared, &misuse);
  while (!err) {
    err = run_range(desc, args, &l, pool, begin, end);
    if (!err && __atomic_load_n(&misuse, __ATOMIC_RELAXED)) err = ol_host_grid_misuse;
    if (!err && !job_take(ctl, &begin, &end)) break;
  }
  if (err) ol_host_job_fail(ctl);
  free(l.dyn_shared);
  return err;
}

/* ------------------------------------------------ cooperative launches --- */

// The grid of a cooperative launch: the start gate and the grid barrier
// (a generation count: the last group to arrive starts the next one). The
// waits block rather than spin, so more groups than cores cost no CPU
// while they wait.
typedef struct coop_grid {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  uint64_t groups, arrived, generation;
  int gate; // 0 closed, 1 run, -1 give up (a group's thread could not start)
} coop_grid;

// One group of a cooperative launch and its thread.
typedef struct coop_group {
  ol_host_launch l;
  ol_fiber_pool *pool; // group kernels only
  uint64_t index;
  coop_grid *grid;
  const ol_host_kernel_desc *desc;
  const void *args;
  pthread_t thread;
  int started;
} coop_group;

static void coop_barrier(const ol_host_launch *l) {
  coop_grid *g = l->grid;
  pthread_mutex_lock(&g->mu);
  uint64_t gen = g->generation;
  if (++g->arrived == g->groups) {
    g->arrived = 0;
    g->generation++;
    pthread_cond_broadcast(&g->cv);
  } else {
    while (g->generation == gen) pthread_cond_wait(&g->cv, &g->mu);
  }
  pthread_mutex_unlock(&g->mu);
}

static void *coop_main(void *arg) {
  coop_group *c = arg;
  coop_grid *g = c->grid;
  pthread_mutex_lock(&g->mu);
  while (g->gate == 0) pthread_cond_wait(&g->cv, &g->mu);
  int run = g->gate > 0;
  pthread_mutex_unlock(&g->mu);
  // resources were had up front: running a group cannot fail
  if (run) run_range(c->desc, c->args, &c->l, c->pool, c->index, c->index + 1);
  return NULL;
}

static void coop_open_gate(coop_grid *g, int how) {
  pthread_mutex_lock(&g->mu);
  g->gate = how;
  pthread_cond_broadcast(&g->cv);
  pthread_mutex_unlock(&g->mu);
}

// A group's thread: as much stack as a queue's thread would give a group
// (phased kernels keep OL_PRIVATE arrays there), whatever ulimit -s says.
#define OL_COOP_STACK (8u << 20)

const char *ol_host_exec_coop(const ol_host_kernel_desc *desc, const void *args,
                              const uint32_t num_groups[3], const uint32_t group_size[3],
                              size_t dyn_shared) {
  const uint64_t n = (uint64_t)num_groups[0] * num_groups[1] * num_groups[2];
  const size_t items = (size_t)group_size[0] * group_size[1] * group_size[2];
  coop_grid grid = {.groups = n};
  pthread_mutex_init(&grid.mu, NULL);
  pthread_cond_init(&grid.cv, NULL);
  coop_group *gs = calloc(n, sizeof *gs);
  const char *err = gs ? 0 : "cannot allocate the groups of a cooperative launch";
  for (uint64_t i = 0; i < n && !err; i++) {
    coop_group *c = &gs[i];
    uint32_t unused = 0;
    err = launch_init(&c->l, num_groups, group_size, dyn_shared, &unused);
    c->l.grid_barrier = coop_barrier;
    c->l.grid = &grid;
    c->index = i;
    c->grid = &grid;
    c->desc = desc;
    c->args = args;
    if (!err && desc->kind == OL_HOST_KERNEL_GROUP) {
      c->pool = ol_fiber_pool_new();
      if (!c->pool || pool_grow(c->pool, items) != 0)
        err = "cannot reserve stacks for the work-items of a group";
    }
  }
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, OL_COOP_STACK);
  for (uint64_t i = 0; i < n && !err; i++) {
    if (pthread_create(&gs[i].thread, &attr, coop_main, &gs[i]) != 0)
      err = "cannot create a thread for every group of a cooperative launch";
    else
      gs[i].started = 1;
  }
  pthread_attr_destroy(&attr);
  // all or nothing: the groups start together, or none runs
  coop_open_gate(&grid, err ? -1 : 1);
  for (uint64_t i = 0; gs && i < n; i++) {
    if (gs[i].started) pthread_join(gs[i].thread, NULL);
    free(gs[i].l.dyn_shared);
    ol_fiber_pool_free(gs[i].pool);
  }
  free(gs);
  pthread_cond_destroy(&grid.cv);
  pthread_mutex_destroy(&grid.mu);
  return err;
}

void ol_host_copy_chunks(ol_host_job_ctl *ctl, uintptr_t dst, uintptr_t src, uint64_t size,
                         uint64_t block) {
  uint64_t begin, end;
  while (job_take(ctl, &begin, &end)) {
    uint64_t from = begin * block, to = end * block < size ? end * block : size;
    memcpy((void *)(dst + from), (const void *)(src + from), to - from);
  }
}

/* --------------------------------------------------- host functions --- */

// The host function running on this thread (its token), so that a call it
// makes back into the library can tell a wait that could never end.
static __thread uintptr_t current_host_function;

void ol_host_call(void *fn, void *user, uintptr_t token) {
  uintptr_t outer = current_host_function;
  current_host_function = token;
  ((void (*)(void *))fn)(user);
  current_host_function = outer;
}

uintptr_t ol_host_current(void) { return current_host_function; }

void ol_host_fill(void *dst, const void *pattern, size_t pattern_size, size_t size) {
  if (size == 0) return;
  if (pattern_size == 1) {
    memset(dst, *(const unsigned char *)pattern, size);
    return;
  }
  unsigned char *d = dst;
  size_t done = pattern_size < size ? pattern_size : size;
  memcpy(d, pattern, done);
  while (done < size) {
    size_t n = done < size - done ? done : size - done;
    memcpy(d + done, d, n);
    done += n;
  }
}

/* ---------------------------------------------------------- programs --- */

const void *ol_host_stage(const void *image, size_t size, int *fd_out, char *err, size_t err_size) {
  // Each program gets its own in-memory file: the dynamic loader treats
  // every one as a different library, so two programs loaded from the same
  // bytes have separate globals, constructors and destructors.
  int fd = memfd_create("liboffload-go-program", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) {
    snprintf(err, err_size, "memfd_create failed: %s", strerror(errno));
    return NULL;
  }
  const char *p = image;
  size_t left = size;
  while (left > 0) {
    ssize_t w = write(fd, p, left);
    if (w <= 0) {
      snprintf(err, err_size, "cannot write the image to memory: %s", strerror(errno));
      close(fd);
      return NULL;
    }
    p += w;
    left -= (size_t)w;
  }
  // From here on the bytes cannot change: what is validated is what the
  // loader reads, whatever the caller does with its buffer meanwhile.
  if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0) {
    snprintf(err, err_size, "cannot seal the image's in-memory file: %s", strerror(errno));
    close(fd);
    return NULL;
  }
  void *map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) {
    snprintf(err, err_size, "cannot map the image's in-memory file: %s", strerror(errno));
    close(fd);
    return NULL;
  }
  *fd_out = fd;
  return map;
}

void ol_host_unstage(const void *map, size_t size) { munmap((void *)map, size); }

// name_in_use reports whether a loaded object is known to the loader by path.
struct name_probe {
  const char *path;
  int found;
};

static int probe_name(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  struct name_probe *p = data;
  if (info->dlpi_name && strcmp(info->dlpi_name, p->path) == 0) {
    p->found = 1;
    return 1;
  }
  return 0;
}

static int name_in_use(const char *path) {
  struct name_probe p = {path, 0};
  dl_iterate_phdr(probe_name, &p);
  return p.found;
}

void *ol_host_open(int *fd, uintptr_t *base_out, char *err, size_t err_size) {
  // The loader knows a library by the path it was opened by, and dlopen of
  // a path it knows returns that library without reading the file. The
  // file stays open while the program is loaded, so no other program's
  // file gets its number; but a library the loader cannot unload (built
  // with -z nodelete, or with unique symbols) stays after its file is
  // closed, and its path would hand it to the next program whose file got
  // the same number. Such a number is skipped: the file moves to another.
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", *fd);
  while (name_in_use(path)) {
    int next = fcntl(*fd, F_DUPFD_CLOEXEC, *fd + 1);
    if (next < 0) {
      snprintf(err, err_size, "cannot give the image's in-memory file a number the loader does not know: %s", strerror(errno));
      return NULL;
    }
    close(*fd);
    *fd = next;
    snprintf(path, sizeof path, "/proc/self/fd/%d", *fd);
  }
  dlerror();
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    snprintf(err, err_size, "%s", e ? e : "dlopen failed");
    return NULL;
  }
  // The load base: the program's symbol values are relative to it.
  struct link_map *lm = NULL;
  if (dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || !lm) {
    const char *e = dlerror();
    snprintf(err, err_size, "cannot find where the image was loaded: %s", e ? e : "dlinfo failed");
    dlclose(h);
    return NULL;
  }
  *base_out = (uintptr_t)lm->l_addr;
  return h;
}

void ol_host_close_fd(int fd) { close(fd); }

int ol_host_unload(void *handle, int fd, char *err, size_t err_size) {
  dlerror();
  int rc = dlclose(handle);
  close(fd);
  if (rc != 0) {
    const char *e = dlerror();
    snprintf(err, err_size, "%s", e ? e : "dlclose failed");
    return -1;
  }
  return 0;
}

void *ol_host_sym(void *handle, const char *name) { return dlsym(handle, name); }
