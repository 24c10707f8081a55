/* Which pointers may be predefined objects: the two address ranges where
 * the dynamic linker put them (a program that refers to an object keeps its
 * own copy of it; the others stay in this library). A garbage handle
 * outside them is rejected with the core's invalid-handle error instead of
 * being read; one inside them lands on readable data whose magic does not
 * match. Computed once, before any MPI call, by a constructor. */
#include "wabi.h"

struct wo_range wo_ranges[2];

static int by_address(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const struct wo_place *)a)->at, y = (uintptr_t)((const struct wo_place *)b)->at;
    return x < y ? -1 : x > y;
}

static struct wo_range cover(const struct wo_place *p, int n)
{
    uintptr_t lo = (uintptr_t)p[0].at, hi = lo;
    for (int i = 0; i < n; i++) {
        uintptr_t end = (uintptr_t)p[i].at + p[i].size - sizeof(struct wo_head);
        hi = end > hi ? end : hi;
    }
    return (struct wo_range){lo, hi - lo + 1};
}

__attribute__((constructor)) static void find_ranges(void)
{
    int n = wo_place_count;
    struct wo_place *p = malloc(sizeof *p * (size_t)n);
    if (!p)
        abort();
    memcpy(p, wo_places, sizeof *p * (size_t)n);
    qsort(p, (size_t)n, sizeof *p, by_address);
    /* Split at the widest gap: the program's copies, then ours. */
    int cut = n;
    uintptr_t widest = 0;
    for (int i = 1; i < n; i++) {
        uintptr_t gap = (uintptr_t)p[i].at - (uintptr_t)p[i - 1].at;
        if (gap > widest) {
            widest = gap;
            cut = i;
        }
    }
    wo_ranges[0] = cover(p, cut);
    wo_ranges[1] = cut < n ? cover(p + cut, n - cut) : (struct wo_range){0, 0};
    free(p);
}
