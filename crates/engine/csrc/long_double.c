/* Reduction arithmetic on C `long double` and `long double _Complex`.
 *
 * Rust has no 80-bit x87 float type, so the few operations MPI defines on
 * MPI_LONG_DOUBLE, MPI_C_LONG_DOUBLE_COMPLEX and MPI_LONG_DOUBLE_INT are done
 * here by the C compiler, in the target's own `long double`. Buffers come from
 * the network and may be unaligned: every element is moved with memcpy.
 *
 * Operand order follows MPI: inout[i] = in[i] op inout[i].
 */
#include <stddef.h>
#include <string.h>

_Static_assert(sizeof(long double) == 16, "wanmpi expects a 16-byte long double (x86_64 or aarch64 Linux)");

/* Keep in step with LdOp in src/op/long_double.rs. */
enum { LD_SUM = 0, LD_PROD = 1, LD_MAX = 2, LD_MIN = 3, LD_LAND = 4, LD_LOR = 5, LD_LXOR = 6 };

int wanmpi_ld_reduce(int op, const unsigned char *in, unsigned char *inout, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        long double a, b, r;
        memcpy(&a, in + i * sizeof a, sizeof a);
        memcpy(&b, inout + i * sizeof b, sizeof b);
        switch (op) {
        case LD_SUM: r = a + b; break;
        case LD_PROD: r = a * b; break;
        case LD_MAX: r = a > b ? a : b; break;
        case LD_MIN: r = a < b ? a : b; break;
        /* Logical ops on a real type, as MPICH allows: non-zero is true. */
        case LD_LAND: r = (a != 0 && b != 0) ? 1.0L : 0.0L; break;
        case LD_LOR: r = (a != 0 || b != 0) ? 1.0L : 0.0L; break;
        case LD_LXOR: r = ((a != 0) != (b != 0)) ? 1.0L : 0.0L; break;
        default: return -1;
        }
        memcpy(inout + i * sizeof r, &r, sizeof r);
    }
    return 0;
}

/* Complex as two long doubles (real, imaginary), the C layout of
 * `long double _Complex`. The product uses the textbook formula, like the
 * float and double complex products on the Rust side. */
int wanmpi_ldc_reduce(int op, const unsigned char *in, unsigned char *inout, size_t count)
{
    const size_t elem = 2 * sizeof(long double);
    for (size_t i = 0; i < count; i++) {
        long double a[2], b[2], r[2];
        memcpy(a, in + i * elem, elem);
        memcpy(b, inout + i * elem, elem);
        switch (op) {
        case LD_SUM:
            r[0] = a[0] + b[0];
            r[1] = a[1] + b[1];
            break;
        case LD_PROD:
            r[0] = a[0] * b[0] - a[1] * b[1];
            r[1] = a[0] * b[1] + a[1] * b[0];
            break;
        default: return -1;
        }
        memcpy(inout + i * elem, r, elem);
    }
    return 0;
}

/* Three-way comparison for MINLOC/MAXLOC: -1, 0, 1, or 2 when unordered (NaN). */
int wanmpi_ld_cmp(const unsigned char *a, const unsigned char *b)
{
    long double x, y;
    memcpy(&x, a, sizeof x);
    memcpy(&y, b, sizeof y);
    if (x < y) return -1;
    if (x > y) return 1;
    if (x == y) return 0;
    return 2;
}

/* Conversions used by the tests to build and read long double values. */
void wanmpi_ld_from_f64(double v, unsigned char *out)
{
    long double x = v;
    memcpy(out, &x, sizeof x);
}

double wanmpi_ld_to_f64(const unsigned char *in)
{
    long double x;
    memcpy(&x, in, sizeof x);
    return (double)x;
}
