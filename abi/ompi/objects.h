/* Open MPI's predefined objects (ompi_mpi_comm_world, ompi_mpi_int, ...):
 * what an Open MPI binary's MPI_COMM_WORLD points at. Binaries refer to
 * them by name and may copy them into their own data (copy relocations),
 * so each is as large as Open MPI's and holds, at its start, the core
 * handle it stands for; the rest is zero. Used without Open MPI's mpi.h
 * (objects.c defines the symbols with types of its own). */
#ifndef WO_OBJECTS_H
#define WO_OBJECTS_H

#include <stdint.h>

#define WO_MAGIC 0x574e4d50u /* "WNMP" */
#ifndef WO_UNAVAILABLE
#define WO_UNAVAILABLE 1 /* as in wabi.h: objects.c is compiled without it */
#endif

struct wo_head {
    uint32_t magic;
    int32_t core;
};

/* One object: the head, padded to Open MPI's size. */
#define WO_OBJECT(sym, size, core_handle)                                    \
    __attribute__((visibility("default"))) struct {                          \
        struct wo_head head;                                                 \
        char pad[(size) - sizeof(struct wo_head)];                           \
    } sym = {{WO_MAGIC, (int32_t)(core_handle)}, {0}};                       \
    __attribute__((visibility("default"))) void *sym##_addr = &sym;

/* An object's address and size, for the table of every predefined object. */
struct wo_place {
    const void *at;
    unsigned size;
};
extern const struct wo_place wo_places[];
extern const int wo_place_count;

#endif
