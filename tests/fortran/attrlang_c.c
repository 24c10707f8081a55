/* The C half of attrlang.f90: reads an attribute Fortran set (C sees a
 * pointer to the integer, MPI-4.0 19.3.7) and sets one with a pointer
 * value (Fortran sees the pointer's value). Fortran's names: lower case,
 * one underscore, everything by reference. */
#include <stddef.h>
#include <stdint.h>
#include <mpi.h>

static int c_value = 42;

/* *ok = 1 when the attribute under keyval is a pointer to expected. */
void c_read_attr_(MPI_Fint *comm, MPI_Fint *keyval, MPI_Aint *expected, MPI_Fint *ok)
{
    MPI_Aint *v = NULL;
    int flag = 0;
    *ok = MPI_Comm_get_attr(MPI_Comm_f2c(*comm), *keyval, &v, &flag) == MPI_SUCCESS && flag && *v == *expected;
}

/* Sets &c_value under a new C keyval; returns the keyval and the address. */
void c_set_attr_(MPI_Fint *comm, MPI_Fint *keyval, MPI_Aint *address)
{
    int k;
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &k, NULL);
    MPI_Comm_set_attr(MPI_Comm_f2c(*comm), k, &c_value);
    *keyval = k;
    *address = (MPI_Aint)(intptr_t)&c_value;
}
