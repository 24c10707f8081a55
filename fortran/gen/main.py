#!/usr/bin/env python3
"""Generates wanmpi's Fortran bindings from include/mpi.h.

    python3 fortran/gen/main.py include/mpi.h OUTDIR

writes OUTDIR/mpif.h, OUTDIR/mpi.f90, OUTDIR/mpi_f08.f90 and
OUTDIR/glue_gen.c (the C glue of every function without hand-written glue).
fortran/install compiles them; nothing generated is committed."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import constants  # noqa: E402
import fortran_src  # noqa: E402
import glue_c  # noqa: E402
import signatures  # noqa: E402


def main():
    header, outdir = sys.argv[1], sys.argv[2]
    text = open(header).read()
    functions = [signatures.classify(f) for f in signatures.parse(text)]
    consts = constants.defines(text)
    values = constants.evaluate(header, [n for n, _ in consts], os.environ.get("CC", "cc"))
    kinds = constants.KINDS
    os.makedirs(outdir, exist_ok=True)
    files = {
        "mpif.h": fortran_src.mpif_h(consts, values, kinds),
        "mpi.f90": fortran_src.module_mpi(functions, consts, values, kinds),
        "mpi_f08.f90": fortran_src.module_f08(functions, consts, values, kinds),
    }
    for name, body in files.items():
        with open(os.path.join(outdir, name), "w") as f:
            f.write(body)
    glue_c.write(functions, fortran_src.large_count_forms(functions), os.path.join(outdir, "glue_gen.c"))


if __name__ == "__main__":
    main()
