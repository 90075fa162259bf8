// Kernels for the Go tests of the host device.
#include <offload/kernel.h>

struct ids_args { uint32_t *out; };
OL_KERNEL(write_ids, struct ids_args, a) {
  uint32_t i = ol_global_id(0) + ol_global_id(1) * ol_global_size(0) +
               ol_global_id(2) * ol_global_size(0) * ol_global_size(1);
  a.out[i] += i + 1;
}

struct sum_args { const uint32_t *in; uint32_t *out; };
OL_GROUP_KERNEL(group_sum, struct sum_args, a) {
  uint32_t *tmp = (uint32_t *)ol_dyn_shared();
  uint32_t t = ol_thread_id(0);
  tmp[t] = a.in[ol_global_id(0)];
  ol_barrier();
  for (uint32_t s = ol_group_size(0) / 2; s > 0; s /= 2) {
    if (t < s) tmp[t] += tmp[t + s];
    ol_barrier();
  }
  if (t == 0) a.out[ol_group_id(0)] = tmp[0];
}

OL_GLOBAL uint32_t counter;
OL_KERNEL_NOARGS(bump) { if (ol_global_id(0) == 0) counter++; }

struct step_args { uint32_t *seq; uint32_t idx; };
OL_KERNEL(step, struct step_args, a) { a.seq[a.idx] = a.seq[a.idx - 1] + a.seq[a.idx - 2]; }

int not_a_kernel(void) { return 1; }

struct count_args { uint32_t *count; };
OL_KERNEL(count_items, struct count_args, a) { __atomic_fetch_add(a.count, 1u, __ATOMIC_RELAXED); }
