/* The (outer, inner) group keys of the startup rules' compiled walks: an open-addressing set, doubled at half full.
 * Shared by _merge_search.c (long_group_firsts: one rule a walk) and analyses/_kernel_stats.c (first_rule_scans:
 * both rules in one walk). outer: a process id, or a thread key (group_outer); inner: a name code. A slot's `seen`
 * is the walk's own mark (the group's first row found). */
#ifndef TRACELENS_GROUP_SET_H
#define TRACELENS_GROUP_SET_H

#include <stdint.h>
#include <stdlib.h>

typedef struct {
    uint64_t outer;
    int64_t inner;
    int used, seen;
} group_slot_t;

typedef struct {
    group_slot_t *slot;
    int64_t size, count;
    int shift; /* 64 - log2(size): a hash's top bits index the slots */
} group_set_t;

static inline uint64_t group_hash(uint64_t outer, int64_t inner) {
    return (outer * 0x9E3779B97F4A7C15ULL) ^ ((uint64_t)inner * 0xC2B2AE3D27D4EB4FULL);
}

static inline group_slot_t *group_find(group_set_t *g, uint64_t outer, int64_t inner) {
    uint64_t mask = (uint64_t)(g->size - 1), at = group_hash(outer, inner) >> g->shift;
    while (g->slot[at].used && (g->slot[at].outer != outer || g->slot[at].inner != inner)) at = (at + 1) & mask;
    return &g->slot[at];
}

/* 0, or -1 (no memory). */
static inline int group_add(group_set_t *g, uint64_t outer, int64_t inner) {
    group_slot_t *at = group_find(g, outer, inner);
    if (at->used) return 0;
    *at = (group_slot_t){outer, inner, 1, 0};
    if (2 * ++g->count <= g->size) return 0;
    group_set_t bigger = {calloc((size_t)g->size * 2, sizeof(group_slot_t)), g->size * 2, 0, g->shift - 1};
    if (!bigger.slot) return -1;
    for (int64_t q = 0; q < g->size; q++)
        if (g->slot[q].used) *group_find(&bigger, g->slot[q].outer, g->slot[q].inner) = g->slot[q];
    bigger.count = g->count;
    free(g->slot);
    *g = bigger;
    return 0;
}

/* A group's outer key: the pid, or (by thread) pid's low 32 bits above tid's, as columns.thread_key builds it. */
static inline uint64_t group_outer(int by_thread, int64_t pid, int64_t tid) {
    return by_thread ? ((uint64_t)(uint32_t)pid << 32) | (uint32_t)tid : (uint64_t)pid;
}

#endif
