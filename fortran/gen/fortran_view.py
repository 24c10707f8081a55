"""Which MPI functions Fortran has, and what a Fortran caller passes to
each: the parameter list of the explicit interfaces (`use mpi`, mpi_f08),
which differs from C's for a few functions (MPI_Init takes no argc/argv;
MPI-1's address functions take default INTEGERs), and whether the glue is
generated (glue_c.py) or written by hand (fortran/glue/*.c)."""

import copy
import re

# C-only functions: handle conversion (identity) and the C/Fortran status
# conversions.
C_ONLY = re.compile(r".*_(c2f|f2c)$|Status_c2f08|Status_f082c")

# Functions whose glue is written by hand (fortran/glue/special*.c,
# callbacks.c, legacy.c).
HAND_WRITTEN = {
    "Init", "Init_thread", "Pcontrol", "Wtime", "Wtick", "Aint_add",
    "Aint_diff", "Comm_get_attr", "Type_get_attr", "Win_get_attr",
    "Attr_get", "Attr_put", "Comm_create_keyval", "Type_create_keyval",
    "Win_create_keyval", "Keyval_create", "Comm_spawn",
    "Comm_spawn_multiple", "Info_create_env", "Grequest_start", "Address",
    "Type_extent", "Type_lb", "Type_ub", "Type_hvector", "Type_hindexed",
    "Type_struct", "Register_datarep", "Info_get_string", "Comm_set_attr",
    "Type_set_attr", "Win_set_attr",
}
# Not in the Fortran bindings: see docs/fortran.md.
LEFT_OUT = set()

# MPI-1 functions whose addresses are default INTEGERs in Fortran.
LEGACY_INT = {
    "Address": {"address"}, "Type_extent": {"extent"}, "Type_lb": {"displacement"},
    "Type_ub": {"displacement"}, "Type_hvector": {"stride"},
    "Type_hindexed": {"array_of_displacements"}, "Type_struct": {"array_of_displacements"},
    "Attr_get": {"attribute_val"}, "Attr_put": {"attribute_val"},
    "Keyval_create": {"extra_state"},
}
# Parameters a Fortran caller does not pass.
DROPPED = {"argc", "argv", "varargs"}
# Functions (not subroutines) and the Fortran type of their result.
RESULTS = {"Wtime": "double", "Wtick": "double", "Aint_add": "MPI_Aint",
           "Aint_diff": "MPI_Aint"}
NO_IERROR = {"Pcontrol", "Wtime", "Wtick", "Aint_add", "Aint_diff"}


def in_fortran(fn):
    return not (fn.name.endswith("_c") or C_ONLY.match(fn.name) or fn.name in LEFT_OUT)


def generated_glue(fn):
    return in_fortran(fn) and fn.name not in HAND_WRITTEN


def params(fn):
    """The parameters of the Fortran procedure, in order, without ierror."""
    out = []
    for p in fn.params:
        if p.name in DROPPED and fn.name not in ("Comm_spawn", "Comm_spawn_multiple"):
            continue
        q = copy.copy(p)
        if q.name in LEGACY_INT.get(fn.name, ()):
            q.ctype = "int*" if q.ctype.endswith("*") else "int"
            q.kind = "ptr" if q.array or q.ctype.endswith("*") else "val"
        if fn.name == "Comm_spawn_multiple" and q.name in ("array_of_commands", "array_of_argv"):
            q.kind = "argv"
            q.dims = "*" if q.name == "array_of_commands" else "count,*"
        out.append(q)
    return out


def has_ierror(fn):
    return fn.name not in NO_IERROR
