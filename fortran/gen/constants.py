"""The integer constants of include/mpi.h with their values and C types,
evaluated by the C compiler (a program that prints them), so that the
Fortran headers can never disagree with the C library's values."""

import os
import re
import subprocess
import tempfile

from signatures import HANDLES

# Defines that are not integer constants for Fortran: pointers (sentinels are
# common blocks in Fortran), callbacks, strings, macros.
SKIP = re.compile(r"^(MPI_BOTTOM|MPI_IN_PLACE|MPI_STATUSE?S?_IGNORE|MPI_ERRCODES_IGNORE"
                  r"|MPI_ARGVS?_NULL|MPI_AINT_FMT_.*|MPI_FILE_DEFINED|MPI_F_.*|.*_FN(_NULL)?(_C)?)$")
# Constants whose Fortran kind is wider than INTEGER.
KINDS = {"MPI_DISPLACEMENT_CURRENT": "MPI_OFFSET_KIND"}


def defines(header_text):
    """[(name, C type)] of the header's integer constants: its defines in
    order, then the members of its anonymous enums."""
    out, types = [], {}
    for name, value in re.findall(r"^#define\s+(MPIX?_\w+)\s+(.+?)\s*$", header_text, flags=re.M):
        value = re.sub(r"/\*.*", "", value).strip()
        if SKIP.match(name) or "(" in name or value.startswith('"'):
            continue
        m = re.match(r"^\(\((\w+)\)", value)
        if m and m.group(1) in HANDLES:
            t = m.group(1)
        elif re.match(r"^MPIX?_\w+$", value):
            if value not in types:
                continue
            t = types[value]
        elif re.match(r"^\(?-?(0x)?[0-9a-fA-F]+\)?$", value):
            t = "int"
        else:
            continue
        types[name] = t
        out.append((name, t))
    # Anonymous enums of int constants (MPI_WIN_FLAVOR_*, MPI_WIN_UNIFIED).
    for body in re.findall(r"^enum\s*\{([^}]*)\}\s*;", header_text, flags=re.M):
        for name in re.findall(r"\b(MPIX?_\w+)\s*=", body):
            out.append((name, "int"))
    return out


def evaluate(header_path, names, cc="cc"):
    """{name: int value}, by compiling and running a C program."""
    body = "".join('    printf("%s %%lld\\n", (long long)(%s));\n' % (n, n) for n in names)
    src = '#include <stdio.h>\n#include "%s"\nint main(void)\n{\n%s    return 0;\n}\n' % (
        os.path.abspath(header_path), body)
    with tempfile.TemporaryDirectory() as d:
        c, exe = os.path.join(d, "c.c"), os.path.join(d, "c")
        with open(c, "w") as f:
            f.write(src)
        subprocess.run([cc, "-o", exe, c], check=True)
        lines = subprocess.run([exe], check=True, capture_output=True, text=True).stdout
    values = {}
    for line in lines.splitlines():
        n, v = line.split()
        values[n] = int(v)
    return values
