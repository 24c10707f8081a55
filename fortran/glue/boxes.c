/* Boxes of attribute values set from Fortran. MPI-4.0 19.3.7: an attribute
 * that Fortran sets is an integer, and C reading it gets a pointer to that
 * integer (an MPI_Aint); an attribute C sets is a pointer, and Fortran
 * reading it gets the pointer's value. So a value set from Fortran is
 * stored as the address of a box holding it, and the glue tells its own
 * boxes from C's pointers by looking them up here (never by reading
 * through a pointer it did not make).
 *
 * A box is freed when the attribute is deleted through a keyval created
 * from Fortran (its delete trampoline) or a Fortran set fails; a box
 * under a keyval created in C is C's to share (MPI_COMM_DUP_FN copies the
 * pointer) and lives as long as the program. The set is an open-addressing
 * table of addresses under a mutex. */
#include <pthread.h>
#include <stdlib.h>
#include "glue.h"

#define WF_TOMB ((void *)1)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static void **slots;
static size_t cap, used; /* used counts live entries and tombstones */

static size_t hash(const void *p, size_t n)
{
    uintptr_t x = (uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (size_t)x & (n - 1);
}

/* The slot of p, or of the empty slot where it would go. Under lock. */
static void **find(void *p)
{
    for (size_t i = hash(p, cap);; i = (i + 1) & (cap - 1))
        if (slots[i] == p || slots[i] == NULL)
            return &slots[i];
}

/* Room for one more entry (rehashing without tombstones). Under lock. */
static int reserve(void)
{
    if (cap != 0 && (used + 1) * 2 <= cap)
        return 1;
    size_t live = 0;
    for (size_t i = 0; i < cap; i++)
        live += slots[i] != NULL && slots[i] != WF_TOMB;
    size_t ncap = cap ? cap : 64;
    while ((live + 1) * 4 > ncap)
        ncap *= 2;
    void **old = slots;
    size_t ocap = cap;
    slots = calloc(ncap, sizeof *slots);
    if (slots == NULL) {
        slots = old;
        return 0;
    }
    cap = ncap;
    used = live;
    for (size_t i = 0; i < ocap; i++)
        if (old[i] != NULL && old[i] != WF_TOMB)
            *find(old[i]) = old[i];
    free(old);
    return 1;
}

void *wf_box_new(MPI_Aint value)
{
    MPI_Aint *box = malloc(sizeof *box);
    if (box == NULL)
        return NULL;
    *box = value;
    pthread_mutex_lock(&lock);
    int ok = reserve();
    if (ok) {
        *find(box) = box;
        used++;
    }
    pthread_mutex_unlock(&lock);
    if (!ok) {
        free(box);
        return NULL;
    }
    return box;
}

int wf_box_get(void *p, MPI_Aint *value)
{
    if (p == NULL || p == WF_TOMB)
        return 0;
    pthread_mutex_lock(&lock);
    int found = cap != 0 && *find(p) == p;
    if (found)
        *value = *(MPI_Aint *)p;
    pthread_mutex_unlock(&lock);
    return found;
}

void wf_box_free(void *p)
{
    if (p == NULL || p == WF_TOMB)
        return;
    pthread_mutex_lock(&lock);
    int found = 0;
    if (cap != 0) {
        void **s = find(p);
        found = *s == p;
        if (found)
            *s = WF_TOMB;
    }
    pthread_mutex_unlock(&lock);
    if (found)
        free(p);
}
