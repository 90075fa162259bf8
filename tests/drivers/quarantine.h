/* The quarantine of freed device memory, which both driver doubles keep
 * (fake_cuda.c, fake_hsa.c): freed device memory is inaccessible for a
 * while, so that a backend that frees memory its queued work still uses
 * fails loudly. The freed block's bytes (which queued copies and fills
 * reach) and its device addresses (which kernels reach) are PROT_NONE, and
 * it cannot be handed out again, until it leaves the quarantine: oldest
 * first, once more than QUARANTINE_BLOCKS blocks or QUARANTINE_BYTES bytes
 * are in it (the newest block always stays). A use of quarantined memory
 * ends the process with SIGSEGV.
 *
 * The including double defines, before it includes this: struct block
 * (off, size, quarantined), and QUARANTINE_ARENA(d), the arena of device
 * d, whose addr are the device addresses, backing their bytes, and blocks
 * its blocks. Every function here runs with the double's lock held.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef FAKE_DRIVERS_QUARANTINE_H
#define FAKE_DRIVERS_QUARANTINE_H

#include <stddef.h>
#include <sys/mman.h>

#define QUARANTINE_BLOCKS 256
#define QUARANTINE_BYTES ((size_t)1 << 30)
static struct {
  int dev, idx;
} quarantine[QUARANTINE_BLOCKS];
static int quarantine_head, quarantine_n;
static size_t quarantine_bytes;
/* kernels of the double running: while some are, the arenas' device
 * addresses are accessible (the double's device_access), but for the
 * quarantined blocks' */
static int kernels_running;

/* the k-th entry of the quarantine, oldest first */
#define QUARANTINED(k) quarantine[(quarantine_head + (k)) % QUARANTINE_BLOCKS]

/* block i of device d leaves the quarantine */
static inline void unquarantine(int d, int i) {
  struct block *b = &QUARANTINE_ARENA(d)->blocks[i];
  mprotect(QUARANTINE_ARENA(d)->backing + b->off, b->size, PROT_READ | PROT_WRITE);
  if (kernels_running)
    mprotect(QUARANTINE_ARENA(d)->addr + b->off, b->size, PROT_READ | PROT_WRITE);
  b->quarantined = 0;
  quarantine_bytes -= b->size;
}

/* block i of device d, just freed, enters the quarantine */
static inline void enter_quarantine(int d, int i) {
  struct block *b = &QUARANTINE_ARENA(d)->blocks[i];
  mprotect(QUARANTINE_ARENA(d)->backing + b->off, b->size, PROT_NONE);
  mprotect(QUARANTINE_ARENA(d)->addr + b->off, b->size, PROT_NONE);
  b->quarantined = 1;
  quarantine_bytes += b->size;
  QUARANTINED(quarantine_n).dev = d;
  QUARANTINED(quarantine_n).idx = i;
  quarantine_n++;
  while (quarantine_n > 1 && (quarantine_n > QUARANTINE_BLOCKS - 1 || quarantine_bytes > QUARANTINE_BYTES)) {
    unquarantine(QUARANTINED(0).dev, QUARANTINED(0).idx);
    quarantine_head = (quarantine_head + 1) % QUARANTINE_BLOCKS;
    quarantine_n--;
  }
}

/* the device addresses were just made accessible for kernels: the
 * quarantined blocks' stay inaccessible */
static inline void protect_quarantine(void) {
  for (int k = 0; k < quarantine_n; k++) {
    struct block *b = &QUARANTINE_ARENA(QUARANTINED(k).dev)->blocks[QUARANTINED(k).idx];
    mprotect(QUARANTINE_ARENA(QUARANTINED(k).dev)->addr + b->off, b->size, PROT_NONE);
  }
}

/* every block leaves the quarantine (the arenas are about to be emptied) */
static inline void clear_quarantine(void) {
  for (; quarantine_n > 0; quarantine_n--) {
    unquarantine(QUARANTINED(0).dev, QUARANTINED(0).idx);
    quarantine_head = (quarantine_head + 1) % QUARANTINE_BLOCKS;
  }
}

#endif
