/* olLaunchHostFunction on queues of the device under test.
 * SPDX-License-Identifier: Apache-2.0 */
#include "oldevices.h"

static void set_flag(void *user) { atomic_store((atomic_int *)user, 1); }

static void test_trivial(void) {
  ol_queue_handle_t q = olc_queue();
  atomic_int flag = 0;
  OLC_OK(olLaunchHostFunction(q, set_flag, &flag));
  OLC_OK(olSyncQueue(q));
  OLC_EQ(atomic_load(&flag), 1);
  OLC_OK(olDestroyQueue(q));
}

/* The callback runs on a thread of the library, not in the caller. */
struct where {
  pthread_t thread;
  atomic_int ran;
};
static void record_thread(void *user) {
  struct where *w = user;
  w->thread = pthread_self();
  atomic_store(&w->ran, 1);
}

static void test_runs_on_library_thread(void) {
  ol_queue_handle_t q = olc_queue();
  struct where w;
  atomic_store(&w.ran, 0);
  OLC_OK(olLaunchHostFunction(q, record_thread, &w));
  OLC_OK(olSyncQueue(q));
  if (OLC_TRUE(atomic_load(&w.ran) == 1))
    OLC_TRUE(!pthread_equal(w.thread, pthread_self()));
  OLC_OK(olDestroyQueue(q));
}

/* UserData may be NULL and is passed through as NULL. */
static atomic_int null_seen;
static void check_null(void *user) { atomic_store(&null_seen, user == NULL ? 1 : 2); }

static void test_null_user_data(void) {
  ol_queue_handle_t q = olc_queue();
  atomic_store(&null_seen, 0);
  OLC_OK(olLaunchHostFunction(q, check_null, NULL));
  OLC_OK(olSyncQueue(q));
  OLC_EQ(atomic_load(&null_seen), 1);
  OLC_OK(olDestroyQueue(q));
}

/* 14 chained callbacks computing Fibonacci numbers: each needs the two
 * before it to have run. */
struct fib {
  uint32_t v[16];
  uint32_t next;
};
static void fib_step(void *user) {
  struct fib *f = user;
  f->v[f->next] = f->v[f->next - 1] + f->v[f->next - 2];
  f->next++;
}

static void test_fibonacci_chain(void) {
  ol_queue_handle_t q = olc_queue();
  struct fib f;
  memset(&f, 0, sizeof f);
  f.v[0] = 0, f.v[1] = 1, f.next = 2;
  for (int i = 0; i < 14; i++)
    OLC_OK(olLaunchHostFunction(q, fib_step, &f));
  OLC_OK(olSyncQueue(q));
  uint32_t want[16] = {0, 1};
  for (int i = 2; i < 16; i++)
    want[i] = want[i - 1] + want[i - 2];
  OLC_EQ_ARRAY(f.v, 16, want[i]);
  OLC_EQ(f.next, 16);
  OLC_OK(olDestroyQueue(q));
}

/* Many callbacks keep their order. */
struct order {
  uint32_t seen[2000];
  uint32_t n;
};
struct order_item {
  struct order *o;
  uint32_t id;
};
static void order_fn(void *user) {
  struct order_item *it = user;
  it->o->seen[it->o->n++] = it->id;
}

static void test_many_in_order(void) {
  enum { N = 2000 };
  ol_queue_handle_t q = olc_queue();
  static struct order o;
  static struct order_item items[N];
  memset(&o, 0, sizeof o);
  int bad = 0;
  for (uint32_t i = 0; i < N; i++) {
    items[i].o = &o, items[i].id = i;
    bad += olLaunchHostFunction(q, order_fn, &items[i]) != NULL;
  }
  OLC_EQ(bad, 0);
  OLC_OK(olSyncQueue(q));
  OLC_EQ(o.n, N);
  OLC_EQ_ARRAY(o.seen, N, i);
  OLC_OK(olDestroyQueue(q));
}

/* A spinning host function holds back a kernel for 500 ms: its output is
 * still zero then, and right after a sync. */
static void test_blocks_kernel(void) {
  OLC_HOST_VISIBLE();
  ol_program_handle_t prog = olc_program("foo");
  ol_symbol_handle_t foo = olc_kernel(prog, "foo");
  uint32_t *out = olc_alloc(OL_ALLOC_TYPE_MANAGED, 64 * sizeof(uint32_t));
  if (!foo || !out)
    return;
  memset(out, 0, 64 * sizeof(uint32_t));
  ol_queue_handle_t q = olc_queue();
  olc_gate g;
  olc_gate_close(&g, q);
  ol_kernel_launch_size_args_t l = olc_size1(1, 64);
  struct {
    uint32_t *out;
  } args = {out};
  OLC_OK(olLaunchKernel(q, olc_dev, foo, &args, sizeof args, &l));
  double t0 = olc_now_ms();
  int nonzero = 0;
  while (olc_now_ms() - t0 < 500) {
    for (int i = 0; i < 64; i++)
      nonzero += out[i] != 0;
    olc_sleep_ms(10);
  }
  OLC_EQ(nonzero, 0);
  bool empty = true;
  OLC_OK(olGetQueueInfo(q, OL_QUEUE_INFO_EMPTY, sizeof empty, &empty));
  OLC_TRUE(!empty);
  olc_gate_open(&g);
  OLC_OK(olSyncQueue(q));
  OLC_EQ_ARRAY(out, 64, i);
  OLC_OK(olMemFree(out));
  OLC_OK(olDestroyQueue(q));
  OLC_OK(olDestroyProgram(prog));
}

/* A callback may itself call the API (synchronous forms). */
struct reentrant {
  uint32_t *dst;
  ol_result_t fill, info;
  size_t size;
};
static void call_api(void *user) {
  struct reentrant *r = user;
  uint32_t v = 0x1234;
  r->fill = olMemFill(NULL, r->dst, sizeof v, &v, 16 * sizeof v);
  r->info = olGetMemInfo(r->dst, OL_MEM_INFO_SIZE, sizeof r->size, &r->size);
}

static void test_callback_calls_api(void) {
  OLC_HOST_VISIBLE();
  ol_queue_handle_t q = olc_queue();
  struct reentrant r;
  memset(&r, 0, sizeof r);
  r.dst = olc_alloc(OL_ALLOC_TYPE_HOST, 16 * sizeof(uint32_t));
  r.fill = r.info = (ol_result_t)1;
  if (!r.dst)
    return;
  OLC_OK(olLaunchHostFunction(q, call_api, &r));
  OLC_OK(olSyncQueue(q));
  OLC_TRUE(r.fill == NULL);
  OLC_TRUE(r.info == NULL);
  OLC_EQ(r.size, 16 * sizeof(uint32_t));
  OLC_EQ_ARRAY(r.dst, 16, 0x1234u);
  OLC_OK(olMemFree(r.dst));
  OLC_OK(olDestroyQueue(q));
}

/* Host functions on different queues run concurrently: two callbacks that
 * wait for each other finish. */
static atomic_int meet_a, meet_b;
static void meet_fn_a(void *u) {
  (void)u;
  atomic_store(&meet_a, 1);
  double t0 = olc_now_ms();
  while (!atomic_load(&meet_b) && olc_now_ms() - t0 < 3000)
    sched_yield();
}
static void meet_fn_b(void *u) {
  (void)u;
  atomic_store(&meet_b, 1);
  double t0 = olc_now_ms();
  while (!atomic_load(&meet_a) && olc_now_ms() - t0 < 3000)
    sched_yield();
}

static void test_queues_run_concurrently(void) {
  atomic_store(&meet_a, 0), atomic_store(&meet_b, 0);
  ol_queue_handle_t q1 = olc_queue(), q2 = olc_queue();
  double t0 = olc_now_ms();
  OLC_OK(olLaunchHostFunction(q1, meet_fn_a, NULL));
  OLC_OK(olLaunchHostFunction(q2, meet_fn_b, NULL));
  OLC_OK(olSyncQueue(q1));
  OLC_OK(olSyncQueue(q2));
  OLC_TRUE(olc_now_ms() - t0 < 2500);
  OLC_EQ(atomic_load(&meet_a) + atomic_load(&meet_b), 2);
  OLC_OK(olDestroyQueue(q1));
  OLC_OK(olDestroyQueue(q2));
}

static void test_errors(void) {
  ol_queue_handle_t q = olc_queue();
  atomic_int flag = 0;
  OLC_OK(olDestroyQueue(q));
  OLC_ERR_HAS(olLaunchHostFunction(q, set_flag, &flag), OL_ERRC_INVALID_QUEUE, "destroyed");
  olc_sleep_ms(20);
  OLC_EQ(atomic_load(&flag), 0);
}

int main(int argc, char **argv) {
  olc_start(argc, argv);
  while (olc_next_device()) {
    OLC_RUN(test_trivial);
    OLC_RUN(test_runs_on_library_thread);
    OLC_RUN(test_null_user_data);
    OLC_RUN(test_fibonacci_chain);
    OLC_RUN(test_many_in_order);
    OLC_RUN(test_blocks_kernel);
    OLC_RUN(test_callback_calls_api);
    OLC_RUN(test_queues_run_concurrently);
    OLC_RUN(test_errors);
  }
  return olc_finish("hostfunc");
}
