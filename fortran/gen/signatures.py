"""The one table every Fortran binding is generated from: the prototypes of
include/mpi.h (its WANMPI_FN lines), each parameter classified by what a
Fortran caller passes for it.

A Fortran caller passes every argument by reference, so a C value parameter
(`int count`) arrives as a pointer that the glue dereferences, and a C
pointer parameter (`int *flag`, `MPI_Request *request`) arrives as is, since
MPI_Fint is int and handles are MPICH's integers. The kinds below name the
other cases: buffers (MPI_BOTTOM, MPI_IN_PLACE), statuses (the IGNORE
sentinels), strings (a hidden length), callbacks and attribute values.
"""

import re
from dataclasses import dataclass, field

# C handle types: an int in C and an INTEGER in Fortran; a derived type of
# one integer in mpi_f08.
HANDLES = {
    "MPI_Comm", "MPI_Datatype", "MPI_Group", "MPI_Op", "MPI_Request",
    "MPI_Errhandler", "MPI_Info", "MPI_Win", "MPI_File", "MPI_Message",
    "MPI_Session",
}
# 8-byte integer types and the Fortran kind parameter each one has.
WIDE = {"MPI_Aint": "MPI_ADDRESS_KIND", "MPI_Offset": "MPI_OFFSET_KIND",
        "MPI_Count": "MPI_COUNT_KIND"}
# int parameters a Fortran caller passes as LOGICAL. gfortran's LOGICAL is a
# 4-byte 1 or 0, as C's truth values are, so no conversion is needed; the
# name matters for the explicit interfaces only.
LOGICAL_NAMES = {"flag", "commute", "periods", "reorder", "remain_dims",
                 "weighted", "high"}
# Parameters that receive an address (MPI_Alloc_mem's baseptr): INTEGER
# (KIND=MPI_ADDRESS_KIND) in Fortran (TYPE(C_PTR) in mpi_f08), passed as is.
ADDRESS_OUT = {"baseptr"}
# Parameters that are C pointers carrying an integer value
# (attribute values, extra state): an INTEGER(KIND=MPI_ADDRESS_KIND) in
# Fortran, passed to C by value.
VALUE_AS_POINTER = {"attribute_val", "extra_state"}
# Sentinels for integer arrays.
WEIGHT_NAMES = {"sourceweights", "destweights", "weights"}


@dataclass
class Param:
    ctype: str      # C type without const and without the name, '*' kept
    name: str
    array: bool     # declared with [] (or an array by name)
    kind: str = ""  # see classify()
    const: bool = False
    dims: str = "*"  # Fortran dimension of an array


@dataclass
class Function:
    name: str        # without MPI_, as in the C name (Comm_split)
    ret: str
    params: list = field(default_factory=list)

    @property
    def fname(self):
        """The Fortran symbol's stem (gfortran: lower case, one '_')."""
        return "mpi_" + self.name.lower()


def parse(header_text):
    """Returns the functions of the header in order of declaration."""
    text = re.sub(r"/\*.*?\*/", "", header_text, flags=re.S)
    out = []
    for ret, name, params in re.findall(
            r"WANMPI_FN\(\s*([^,]+?)\s*,\s*(\w+)\s*,\s*\((.*?)\)\s*\)\s*\n",
            text, flags=re.S):
        fn = Function(name, ret.strip())
        params = " ".join(params.split())
        if params != "void":
            for raw in params.split(","):
                fn.params.append(parse_param(raw.strip()))
        out.append(fn)
    return out


def parse_param(raw):
    if raw == "...":
        return Param("...", "varargs", False, "varargs")
    const = raw.startswith("const ")
    raw = raw[6:] if const else raw
    m = re.match(r"^(.*?)(\w+)\s*((?:\[\w*\])*)$", raw)
    ctype = m.group(1).replace(" ", "")
    name = m.group(2)
    dims = m.group(3)
    p = Param(ctype, name, bool(dims), const=const)
    if dims.count("[") == 2:  # int ranges[][3]
        p.dims = "3,*"
    return p


def classify(fn):
    """Sets each parameter's kind:
    val      a scalar passed by value in C (dereference the Fortran pointer)
    ptr      passed through (outputs, arrays of int/handles/wide integers)
    buf      a choice buffer (MPI_BOTTOM, MPI_IN_PLACE)
    status   MPI_Status * (MPI_STATUS_IGNORE / MPI_STATUSES_IGNORE)
    str_in   const char * (blank-trimmed copy with a NUL)
    str_out  char * (copied back, blank padded)
    errcodes int array_of_errcodes[] (MPI_ERRCODES_IGNORE)
    weights  the weights of a distributed graph (MPI_UNWEIGHTED, ...)
    addr     an address output (baseptr): passed through
    valptr   an integer carried in a C void * (attribute value, extra state)
    callback a procedure
    """
    for p in fn.params:
        t = p.ctype
        if p.kind == "varargs":
            continue
        if t.endswith("function*") or t.endswith("function_c*"):
            p.kind = "callback"
        elif t == "char*" and p.const or (t == "char" and p.array and p.const):
            p.kind = "str_in"
        elif t == "char*" and not p.array:
            p.kind = "str_out"
        elif t in ("char*", "char**", "char***"):
            p.kind = "argv"
        elif t == "void*" and p.name in ADDRESS_OUT:
            p.kind = "addr"
        elif t == "void*" and p.name in VALUE_AS_POINTER:
            p.kind = "valptr"
        elif t == "void*":
            p.kind = "buf"
        elif t == "MPI_Status*" or (t == "MPI_Status" and p.array):
            p.kind = "status"
            p.array = p.array or "statuses" in p.name
        elif p.name == "array_of_errcodes":
            p.kind = "errcodes"
        elif p.name in WEIGHT_NAMES:
            p.kind = "weights"
        elif t.endswith("*") or p.array:
            p.kind = "ptr"
        else:
            p.kind = "val"
    return fn


def base_type(p):
    """The C type of one element: 'int', a handle name, a WIDE name, ..."""
    return p.ctype.rstrip("*")


def is_logical(p):
    return base_type(p) == "int" and p.name in LOGICAL_NAMES
