/* Fortran strings to and from C: Fortran passes a string's length as a
 * hidden size_t argument after all others and pads with blanks instead of
 * ending with a NUL. */
#include <stdlib.h>
#include <string.h>
#include "glue.h"

/* The largest MPI_MAX_* string (MPI_MAX_LIBRARY_VERSION_STRING) plus one:
 * C functions write up to their maximum whatever the Fortran length. */
#define WF_STR_MIN 8193

char *wf_str_in(const char *s, size_t len)
{
    /* Blanks around a Fortran string are padding, not content (MPI says so
     * of info keys and values and of spawn arguments; MPICH treats every
     * input string so). */
    while (len > 0 && s[0] == ' ') {
        s++;
        len--;
    }
    while (len > 0 && s[len - 1] == ' ')
        len--;
    char *c = malloc(len + 1);
    if (c == NULL)
        return NULL;
    memcpy(c, s, len);
    c[len] = '\0';
    return c;
}

char *wf_str_buf(size_t len)
{
    size_t n = len + 1 > WF_STR_MIN ? len + 1 : WF_STR_MIN;
    return calloc(n, 1);
}

void wf_str_out(char *dst, size_t len, const char *src)
{
    size_t n = strlen(src);
    if (n > len)
        n = len;
    memcpy(dst, src, n);
    memset(dst + n, ' ', len - n);
}
