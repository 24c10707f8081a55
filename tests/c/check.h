/* Shared helpers of the C conformance programs: CHECK aborts the job with
 * the failing condition; every program prints "PASS <name>" from rank 0. */
#ifndef WANMPI_TEST_CHECK_H
#define WANMPI_TEST_CHECK_H
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline int check_rank(void)
{
    int r = -1, init = 0;
    MPI_Initialized(&init);
    if (init)
        MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}

#define CHECK(cond, msg)                                                                       \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fprintf(stderr, "rank %d: %s:%d: check failed: %s (%s)\n", check_rank(), __FILE__, \
                    __LINE__, #cond, msg);                                                     \
            MPI_Abort(MPI_COMM_WORLD, 2);                                                      \
        }                                                                                      \
    } while (0)

#define OK(call) CHECK((call) == MPI_SUCCESS, #call)

static inline int error_class(int code)
{
    int c = -1;
    MPI_Error_class(code, &c);
    return c;
}

static inline void pass(const char *name)
{
    if (check_rank() == 0)
        printf("PASS %s\n", name);
}
#endif
