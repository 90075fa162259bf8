// The work-item loop of a plain kernel on the host (OL_KERNEL in
// <offload/kernel.h>), called directly through the kernel's descriptor with
// launches made up here: every work-item of the groups asked for runs once,
// with the ids the launch defines, whichever of the header's two loops runs
// it (global x ids below 2^30 and groups of at most 1024: the loop the
// compiler may split at a bounds check; otherwise the plain one). Built by
// the Makefile with several compilers and optimisation levels, as each may
// shape the loops differently.
// usage: kernel_loop (exit status 0 when every check passed)
#include <offload/kernel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Records what each work-item sees, at out[slot(global id)]: its ids packed
// into one record. base is subtracted from the global x id so that ids near
// 2^32 fit a small buffer; items at or past n do nothing.
struct rec { uint32_t gx, gy, gz, lx, ly, lz, bx, by, bz, hits; };
struct rec_args { struct rec *out; uint32_t base, n, sx, sy, ny; };
OL_KERNEL(record, struct rec_args, a) {
  uint32_t i = ol_global_id(0);
  if (i < a.n) {
    struct rec *r = &a.out[((size_t)ol_global_id(2) * a.ny * a.sy + ol_global_id(1)) * a.sx + (i - a.base)];
    r->gx = i, r->gy = ol_global_id(1), r->gz = ol_global_id(2);
    r->lx = ol_thread_id(0), r->ly = ol_thread_id(1), r->lz = ol_thread_id(2);
    r->bx = ol_group_id(0), r->by = ol_group_id(1), r->bz = ol_group_id(2);
    r->hits++;
  }
}

// The usual bounds-checked SAXPY, which the split loop is for.
struct saxpy_args { float a; const float *x; float *y; uint32_t n; };
OL_KERNEL(saxpy_guarded, struct saxpy_args, p) {
  uint32_t i = ol_global_id(0);
  if (i < p.n) p.y[i] = p.a * p.x[i] + p.y[i];
}

static int failures, checks;
#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    checks++;                                                                  \
    if (!(cond)) {                                                             \
      failures++;                                                              \
      if (failures <= 20) {                                                    \
        printf("FAIL %s:%d: ", __FILE__, __LINE__);                            \
        printf(__VA_ARGS__);                                                   \
        printf("\n");                                                          \
      }                                                                        \
    }                                                                          \
  } while (0)

// Runs groups [g0, g1) of a launch of ng groups of gs items; the records
// cover global x ids [first group's x * sx, +span) and all y, z. n is the
// bound on the global x id (items at or past it do nothing).
static void run_record(const char *what, const uint32_t ng[3], const uint32_t gs[3], uint64_t g0,
                       uint64_t g1, uint32_t n) {
  // the x range the records cover: all of it, or (one row of groups) the
  // groups' own, which may lie near 2^32
  const int row = ng[1] * ng[2] == 1;
  const uint32_t x0 = row ? (uint32_t)g0 * gs[0] : 0;
  const uint32_t span = row ? (uint32_t)(g1 - g0) * gs[0] : ng[0] * gs[0];
  const uint32_t sy = gs[1], sz = gs[2];
  const size_t count = (size_t)span * ng[1] * sy * ng[2] * sz;
  struct rec *out = calloc(count, sizeof *out);
  struct rec_args args = {out, x0, n, span, sy, ng[1]};
  ol_host_launch l = {{ng[0], ng[1], ng[2]}, {gs[0], gs[1], gs[2]}, g0, g1, NULL, NULL, NULL};
  __ol_kernel_record.desc.loop(&args, &l);
  // what every group in [g0, g1) must have done, from the launch alone
  size_t ran = 0;
  for (uint64_t g = g0; g < g1; g++) {
    const uint32_t bx = (uint32_t)(g % ng[0]), by = (uint32_t)(g / ng[0] % ng[1]),
                   bz = (uint32_t)(g / ((uint64_t)ng[0] * ng[1]));
    for (uint32_t lz = 0; lz < gs[2]; lz++)
      for (uint32_t ly = 0; ly < gs[1]; ly++)
        for (uint32_t lx = 0; lx < gs[0]; lx++) {
          const uint64_t gx = (uint64_t)bx * gs[0] + lx, gy = (uint64_t)by * gs[1] + ly,
                         gz = (uint64_t)bz * gs[2] + lz;
          if (gx >= n) continue;
          const struct rec *r = &out[(gz * ng[1] * sy + gy) * span + (gx - x0)];
          ran++;
          CHECK(r->hits == 1 && r->gx == gx && r->gy == gy && r->gz == gz && r->lx == lx &&
                    r->ly == ly && r->lz == lz && r->bx == bx && r->by == by && r->bz == bz,
                "%s: item (%llu,%llu,%llu) of group %llu: hits %u, ids (%u,%u,%u) local (%u,%u,%u) "
                "group (%u,%u,%u)",
                what, (unsigned long long)gx, (unsigned long long)gy, (unsigned long long)gz,
                (unsigned long long)g, r->hits, r->gx, r->gy, r->gz, r->lx, r->ly, r->lz, r->bx,
                r->by, r->bz);
        }
  }
  size_t hits = 0;
  for (size_t i = 0; i < count; i++) hits += out[i].hits;
  CHECK(hits == ran, "%s: %zu work-items ran, expected %zu", what, hits, ran);
  free(out);
}

static void saxpy_case(uint32_t n, uint32_t groups, uint32_t gsize, uint64_t g0, uint64_t g1) {
  const size_t len = (size_t)groups * gsize + 64;
  float *x = malloc(len * sizeof *x), *y = malloc(len * sizeof *y);
  for (size_t i = 0; i < len; i++) x[i] = (float)(i % 1000), y[i] = 1.0f;
  struct saxpy_args a = {2.0f, x, y, n};
  ol_host_launch l = {{groups, 1, 1}, {gsize, 1, 1}, g0, g1, NULL, NULL, NULL};
  __ol_kernel_saxpy_guarded.desc.loop(&a, &l);
  int bad = 0;
  for (size_t i = 0; i < len && bad < 5; i++) {
    const int in = i >= g0 * gsize && i < g1 * gsize && i < n;
    const float want = in ? 2.0f * (float)(i % 1000) + 1.0f : 1.0f;
    if (y[i] != want) bad++;
    CHECK(y[i] == want, "saxpy n=%u groups [%llu,%llu) of %u: y[%zu] = %g, want %g", n,
          (unsigned long long)g0, (unsigned long long)g1, gsize, i, (double)y[i], (double)want);
  }
  free(x);
  free(y);
}

int main(void) {
  // the split loop: bounds inside a group, at a group's edge, past the grid
  saxpy_case(1000, 4, 256, 0, 4);
  saxpy_case(1024, 4, 256, 0, 4);
  saxpy_case(5000, 4, 256, 0, 4);
  saxpy_case(0, 4, 256, 0, 4);
  saxpy_case(700, 4, 256, 1, 3); // a chunk of the groups only
  saxpy_case(1, 1, 1, 0, 1);
  saxpy_case(100, 3, 1024, 0, 3); // the largest group the split loop takes
  saxpy_case(3000, 2, 2048, 0, 2); // larger groups: the plain loop
  saxpy_case(5000, 2, 2048, 0, 2);

  // ids in 1, 2 and 3 dimensions, bounded and not
  run_record("1-D", (uint32_t[]){8, 1, 1}, (uint32_t[]){64, 1, 1}, 0, 8, 8 * 64);
  run_record("1-D bounded", (uint32_t[]){8, 1, 1}, (uint32_t[]){64, 1, 1}, 0, 8, 300);
  run_record("2-D", (uint32_t[]){3, 4, 1}, (uint32_t[]){16, 8, 1}, 0, 12, 1000);
  run_record("3-D chunk", (uint32_t[]){2, 3, 4}, (uint32_t[]){8, 2, 3}, 5, 19, 13);
  run_record("group of 1024", (uint32_t[]){2, 1, 1}, (uint32_t[]){1024, 1, 1}, 0, 2, 1500);
  run_record("group of 2048", (uint32_t[]){2, 1, 1}, (uint32_t[]){2048, 1, 1}, 0, 2, 3000);
  // global x ids around 2^30, where the loops change over
  const uint32_t at = 1u << 30, gs = 256, gbase = at / gs;
  run_record("below 2^30", (uint32_t[]){gbase + 4, 1, 1}, (uint32_t[]){gs, 1, 1}, gbase - 2, gbase,
             at - 100);
  run_record("across 2^30", (uint32_t[]){gbase + 4, 1, 1}, (uint32_t[]){gs, 1, 1}, gbase - 1,
             gbase + 2, at + 300);
  run_record("above 2^30", (uint32_t[]){gbase + 4, 1, 1}, (uint32_t[]){gs, 1, 1}, gbase + 1,
             gbase + 3, UINT32_MAX);
  // the last work-items a launch can have: ids up to 2^32 - 1
  const uint32_t top = UINT32_MAX / gs; // groups; the last id is top * gs - 1
  run_record("top of the id range", (uint32_t[]){top, 1, 1}, (uint32_t[]){gs, 1, 1}, top - 2, top,
             UINT32_MAX);
  run_record("top, bounded", (uint32_t[]){top, 1, 1}, (uint32_t[]){gs, 1, 1}, top - 2, top,
             top * gs - 50);

  printf("kernel-loop: %d checks, %d failed\n", checks, failures);
  return failures ? 1 : 0;
}
