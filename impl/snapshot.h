// The info snapshot: the answers to every info query of the objects of the
// fixed kinds (api/offload.json: platforms and devices), and the device
// list, published at each initialisation so that the C entry points answer
// those queries (and olIterateDevices) without entering Go (RATIONALE.md,
// "Why are platform and device info queries answered in C?").
//
// The snapshot lives in one static array that is never freed or unmapped,
// guarded by a sequence counter (a seqlock): odd while nothing is published
// or while it is being rewritten, even while a published snapshot is
// stable. A reader copies what it needs, then checks that the counter did
// not move; if it moved, or on any other doubt, it answers nothing and the
// caller takes the Go path, which gives every error and Detail as before.
// It is published by the first info query or device iteration of an
// initialisation that reaches Go (snapshot.go, under its own mutex), and
// unpublished by the final olShutDown; publishing writes the whole
// directory (the first 2 * OL_SNAP_MAX_KINDS words).
//
// Layout, in 64-bit words:
//   words[k] for k < OL_SNAP_MAX_KINDS: kind k's directory:
//     bits 0..23 slots, bits 24..31 properties per object (P),
//     bits 32..63 word index of its first record
//   words[OL_SNAP_MAX_KINDS + k]: kind k's iteration list (olIterate<Kind>s):
//     0 when it has none, else bit 63 set, bits 32..62 the word index of
//     its handles in iteration order, bits 0..31 their count
//   a record per slot (slot = the handle's low 24 bits): the handle value,
//     then one word per property: bits 0..31 size in bytes (0: not
//     answered here), bits 32..63 word index of its bytes
//   the value bytes, exactly as the Go path writes them, each padded to
//     whole words.
#ifndef LIBOFFLOAD_GO_SNAPSHOT_H
#define LIBOFFLOAD_GO_SNAPSHOT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define OL_SNAP_WORDS (1u << 14)
#define OL_SNAP_MAX_KINDS 4u
// a handle's slot index: its low 24 bits (impl/handles.go, indexMask)
#define OL_SNAP_INDEX_MASK 0xffffffu
// values longer than this many bytes take the Go path
#define OL_SNAP_MAX_VALUE 256u

#define OL_SNAP_HIDDEN __attribute__((visibility("hidden")))

void ol_snap_publish(const uint64_t *words, size_t n) OL_SNAP_HIDDEN;
void ol_snap_unpublish(void) OL_SNAP_HIDDEN;

// ol_snap_info answers olGet<Kind>Info(h, prop, propSize, value) when the
// answer is a success: it returns 1 after writing the value, 0 (having
// written nothing) when the Go path must answer. ol_snap_size does the same
// for olGet<Kind>InfoSize(h, prop, sizeRet). kind is the fixed kind's index
// (api/gen snapshot.go). The shims in cmd/liboffload declare these two
// themselves.
int ol_snap_info(unsigned kind, uint64_t h, uint32_t prop, size_t propSize,
                 void *value) OL_SNAP_HIDDEN;
int ol_snap_size(unsigned kind, uint64_t h, uint32_t prop,
                 size_t *sizeRet) OL_SNAP_HIDDEN;

// ol_snap_list copies kind's handles, in iteration order, into out (room
// for cap) and returns how many; -1 (having written nothing) when the Go
// path must answer: nothing published, or more than cap handles.
int ol_snap_list(unsigned kind, uint64_t *out, int cap) OL_SNAP_HIDDEN;

#endif
