#!/usr/bin/env python3
"""Generates a translator from another MPI ABI to wanmpi's core, from
include/mpi.h: Open MPI's (libmpi.so.40) or the MPI standard's
(libmpi_abi.so).

    python3 abi/gen/translator.py ompi include/mpi.h OMPI_MPI_H OUTDIR
    python3 abi/gen/translator.py standard include/mpi.h MPI_ABI_H OUTDIR

The foreign header (Open MPI's own mpi.h from Debian's libopenmpi-dev, or
our mpi_abi.h written by mpi_abi_h.py) is the one the translator is compiled
against, so every definition is checked against the prototype a foreign
binary was built with. Writes into OUTDIR:

  core.h        the core's constants (CORE_MPI_...) and the renamed core
                functions (wcore_PMPI_Send, ...) with MPICH-ABI types
  objects.c     (ompi) the predefined objects Open MPI binaries refer to
                (ompi_mpi_comm_world, ompi_mpi_int, ...), each holding the
                core handle it stands for
  predefined.c  (standard) the core handle of each small-integer handle
  maps.h        switches from core handles and values to the foreign ones
  translate.c   one function per MPI procedure: arguments to the core's
                form, the core's call, results back

Functions named in HAND are written by hand in abi/common/*.c. Nothing
generated is committed: abi/install runs this at build time."""

import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "fortran", "gen"))
sys.path.insert(0, os.path.join(HERE, "..", "standard"))

import constants  # noqa: E402
import signatures  # noqa: E402

# Handle kinds: C type -> (short name, Open MPI object size). The sizes are
# those of Open MPI 4.1's padded predefined objects, which binaries copy
# (copy relocations), so ours must be as large.
KINDS = {
    "MPI_Comm": ("comm", 0x200), "MPI_Group": ("group", 0x100),
    "MPI_Datatype": ("type", 0x200), "MPI_Op": ("op", 0x800),
    "MPI_Request": ("req", 0x100), "MPI_Message": ("msg", 0x100),
    "MPI_Errhandler": ("eh", 0x400), "MPI_Info": ("info", 0x100),
    "MPI_Win": ("win", 0x200), "MPI_Session": ("sess", 0x100),
}
FILE_OBJECT_SIZE = 0x600

# Functions written by hand (abi/ompi/): callbacks, strings bounded by
# Open MPI's limits, arrays whose length is not a parameter, statuses in
# Fortran form, attribute values that carry ranks.
HAND = {
    "Op_create", "Op_create_c", "Op_free",
    "Comm_create_errhandler", "Win_create_errhandler", "File_create_errhandler",
    "Session_create_errhandler",
    "Comm_create_keyval", "Type_create_keyval", "Win_create_keyval", "Keyval_create",
    "Grequest_start", "Register_datarep", "Register_datarep_c",
    "Comm_get_attr", "Attr_get", "Win_get_attr", "Type_get_attr",
    "Type_get_contents", "Type_get_contents_c",
    "Status_c2f", "Status_f2c", "Status_c2f08", "Status_f082c", "Status_f2f08", "Status_f082f",
    "Comm_spawn", "Comm_spawn_multiple",
    "Get_library_version", "Error_string", "Info_get_nthkey",
    "Comm_get_name", "Type_get_name", "Win_get_name",
    "Pcontrol",
}
# Types Open MPI 4.1's header lacks and compat.h does not add: functions
# using them are left out (Open MPI has no such function).
SKIP_TYPES = {"MPI_F08_status", "MPI_Handler_function"}

RANK_NAMES = {"dest", "source", "root", "rank", "target_rank", "local_leader", "remote_leader"}
TAG_NAMES = {"tag", "sendtag", "recvtag"}
KEYVAL_NAMES = {"keyval", "comm_keyval", "type_keyval", "win_keyval"}
# int parameters with values of their own in each ABI: name -> map.
VALUE_NAMES = {"order": "order", "lock_type": "lock", "assert": "assert", "split_type": "split",
               "typeclass": "typeclass", "required": "thread", "amode": "amode", "whence": "seek"}
# Output ints: name -> map applied after the call.
OUT_VALUES = {"rank_source": "rank", "rank_dest": "rank", "combiner": "combiner", "provided": "thread",
              "amode": "amode"}
# Output ints whose map depends on the procedure.
OUT_VALUES_BY_FN = {("Comm_compare", "result"): "compare", ("Group_compare", "result"): "compare"}
# Handle pointers that carry a handle in as well as out.
INOUT_FN = re.compile(r"(_free$|^Free|_close$|_commit$|^Wait$|^Test$|^Start$|^Cancel$|"
                      r"_disconnect$|_finalize$|^Mrecv|^Imrecv|^Request_free$)")
# Arrays of handles or values: parameter -> the expression of their length.
ARRAY_LEN = {
    "array_of_requests": ["count", "incount"],
    "array_of_statuses": ["count", "incount"],
    "array_of_types": ["count"],
    "array_of_info": ["count"],
    "ranks1": ["n"],
    "ranks2": ["n"],
    "array_of_distribs": ["ndims"],
    "array_of_dargs": ["ndims"],
}
# The core's integer types are 8 bytes each; declared as the foreign ABI
# spells them (Open MPI: long long; the standard: int64_t, long here), so
# that pointers to them pass without casts.
CORE_TYPES = {"MPI_Aint": "long", "MPI_Count": "long long", "MPI_Offset": "long long", "MPI_Fint": "int",
              "MPI_File": "void *", "MPI_Status": "wc_status", "MPI_F08_status": "void"}


def raw_params(header_text):
    """{name: [raw parameter text]} as written in include/mpi.h."""
    text = re.sub(r"/\*.*?\*/", "", header_text, flags=re.S)
    out = {}
    for _ret, name, params in re.findall(
            r"WANMPI_FN\(\s*([^,]+?)\s*,\s*(\w+)\s*,\s*\((.*?)\)\s*\)\s*\n", text, flags=re.S):
        params = " ".join(params.split())
        out[name] = [] if params == "void" else [p.strip() for p in params.split(",")]
    return out


def core_type_text(text):
    """A parameter or type of the MPICH ABI as the translator declares it."""
    for t in KINDS:
        text = re.sub(r"\b%s\b" % t, "int", text)
    for t, c in CORE_TYPES.items():
        text = re.sub(r"\b%s\b" % t, c, text)
    # Callbacks are passed as untyped pointers: the hand-written glue makes them.
    text = re.sub(r"\bMPI_\w+_function(_c)?\s*\*", "void *", text)
    text = re.sub(r"\bMPI_\w+_fn\s*\*", "void *", text)
    return text


def core_decls(functions, raws):
    lines = []
    for f in functions:
        ret = core_type_text(f.ret)
        params = ", ".join(core_type_text(p) for p in raws[f.name]) or "void"
        lines.append("%s wcore_PMPI_%s(%s);" % (ret, f.name, params))
    return "\n".join(lines) + "\n"


def kind_of(ctype):
    return KINDS.get(ctype.rstrip("*"), (None,))[0]


def length_expr(fn, p):
    names = {q.name for q in fn.params}
    for cand in ARRAY_LEN.get(p.name, []):
        if cand in names:
            return cand
    return None


class Body:
    """The pieces of one translated function."""

    def __init__(self):
        self.pre, self.args, self.post, self.cleanup = [], [], [], []


def translate_param(fn, p, b):
    """Adds what parameter p needs; returns False when the generator
    cannot translate it (the function must then be written by hand)."""
    t = signatures.base_type(p)
    k = p.kind
    kind = kind_of(t)
    n = p.name
    if k == "val":
        if kind:
            b.args.append("wo_%s_in(%s)" % (kind, n))
        elif t == "MPI_File":
            b.args.append("wo_file_in(%s)" % n)
        elif t == "int" and n in RANK_NAMES:
            b.args.append("wo_rank_in(%s)" % n)
        elif t == "int" and n in TAG_NAMES:
            b.args.append("wo_tag_in(%s)" % n)
        elif t == "int" and n in KEYVAL_NAMES:
            b.args.append("wo_keyval_in(%s)" % n)
        elif t == "int" and n == "errorcode" and fn.name != "Abort":
            b.args.append("wo_err_in(%s)" % n)
        elif t == "int" and n == "errorclass":
            b.args.append("wo_err_in(%s)" % n)
        elif t == "int" and n in VALUE_NAMES:
            b.args.append("wo_%s_in(%s)" % (VALUE_NAMES[n], n))
        else:
            b.args.append(n)
        return True
    if k == "buf":
        if n in ("base", "location", "buffer_addr"):
            b.args.append(n)
        else:
            b.args.append("wo_buf_in(%s)" % n)
        return True
    if k in ("addr", "valptr", "str_in", "argv"):
        b.args.append(n)
        return True
    if k == "str_out":
        # Strings whose Open MPI bound is at least the core's pass through.
        b.args.append(n)
        return True
    if k == "weights":
        b.args.append("wo_weights_in(%s)" % n)
        return True
    if k == "errcodes":
        return False
    if k == "status":
        if p.array:
            ln = length_expr(fn, p)
            if not ln:
                return False
            b.pre.append("int wo_n_%s = %s ? wo_len(%s) : 0;" % (n, n, ln))
            b.pre.append("WO_TMP(wc_status, c_%s, wo_n_%s);" % (n, n))
            b.pre.append("wo_statuses_clear(c_%s, wo_n_%s);" % (n, n))
            b.pre.append("if (%s) wo_statuses_keep_error(c_%s, %s, wo_n_%s);" % (n, n, n, n))
            b.args.append("%s ? c_%s : CORE_STATUSES_IGNORE" % (n, n))
            b.post.append("if (%s) wo_statuses_out(%s, c_%s, wo_n_%s);" % (n, n, n, n))
            b.cleanup.append("WO_FREE(c_%s);" % n)
            return True
        if p.const:
            b.pre.append("wc_status c_%s;" % n)
            b.pre.append("if (%s) wo_status_in(&c_%s, %s);" % (n, n, n))
            b.args.append("%s ? &c_%s : CORE_STATUS_IGNORE" % (n, n))
            return True
        inout = fn.name.startswith("Status_set")
        b.pre.append("wc_status c_%s;" % n)
        # An output status keeps the program's MPI_ERROR unless the call
        # sets it (MPI leaves it alone for single completions: MPICH's
        # pt2pt/mprobe checks that).
        b.pre.append("if (%s) wo_status_in(&c_%s, %s); else wo_status_clear(&c_%s);" % (n, n, n, n)
                     if inout else "wo_status_clear(&c_%s);\n    if (%s) wo_statuses_keep_error(&c_%s, %s, 1);" % (n, n, n, n))
        b.args.append("%s ? &c_%s : CORE_STATUS_IGNORE" % (n, n))
        b.post.append("if (%s) wo_status_out(%s, &c_%s);" % (n, n, n))
        return True
    if k == "ptr":
        if p.array and t in ("MPI_Datatype",) and n in ("sendtypes", "recvtypes"):
            side = "WO_OUT" if n == "sendtypes" else "WO_IN"
            neighbor = "1" if fn.name.lower().find("neighbor") >= 0 else "0"
            # In place, the send types are not read (and may be anything).
            cond = "%s && sendbuf != MPI_IN_PLACE" % n if n == "sendtypes" else n
            b.pre.append("int wo_n_%s = %s ? wo_peer_count(wo_comm_in(comm), %s, %s) : 0;" % (n, cond, neighbor, side))
            b.pre.append("WO_TMP(int, c_%s, wo_n_%s);" % (n, n))
            b.pre.append("for (int i = 0; i < wo_n_%s; i++) c_%s[i] = wo_type_in(%s[i]);" % (n, n, n))
            b.args.append("%s ? c_%s : NULL" % (n, n))
            b.cleanup.append("WO_FREE(c_%s);" % n)
            return True
        if p.array and (kind or n in ("ranks1", "ranks2", "array_of_distribs", "array_of_dargs")):
            ln = length_expr(fn, p)
            if not ln:
                return False
            inout = INOUT_FN.search(fn.name) or n == "array_of_requests"
            ctype = "int"
            b.pre.append("int wo_n_%s = %s ? wo_len(%s) : 0;" % (n, n, ln))
            b.pre.append("WO_TMP(%s, c_%s, wo_n_%s);" % (ctype, n, n))
            conv_in = {"ranks1": "wo_rank_in", "array_of_distribs": "wo_distrib_in",
                       "array_of_dargs": "wo_darg_in"}.get(n, "wo_%s_in" % kind if kind else None)
            if n != "ranks2" and (inout or p.const or not p.ctype.endswith("*")):
                b.pre.append("for (int i = 0; i < wo_n_%s; i++) c_%s[i] = %s(%s[i]);" % (n, n, conv_in, n))
            b.args.append("%s ? c_%s : NULL" % (n, n))
            if n == "ranks2":
                b.post.append("for (int i = 0; i < wo_n_%s; i++) %s[i] = wo_rank_out(c_%s[i]);" % (n, n, n))
            elif kind and not p.const:
                b.post.append("for (int i = 0; i < wo_n_%s; i++) %s[i] = wo_%s_out(c_%s[i]);" % (n, n, kind, n))
            b.cleanup.append("WO_FREE(c_%s);" % n)
            return True
        if p.array and kind:
            return False
        if kind:
            inout = INOUT_FN.search(fn.name)
            # An output starts as the null handle: a failed call that
            # writes nothing gives the program its ABI's null (MPICH sets a
            # failed MPI_Comm_dup's result to MPI_COMM_NULL; programs test it).
            null = "CORE_" + null_of(t)
            b.pre.append("int c_%s = %s;" % (n, "%s ? wo_%s_in(*%s) : %s" % (n, kind, n, null) if inout else null))
            b.args.append("%s ? &c_%s : NULL" % (n, n))
            b.post.append("if (%s) *%s = wo_%s_out(c_%s);" % (n, n, kind, n))
            return True
        if t == "MPI_File":
            inout = INOUT_FN.search(fn.name)
            b.pre.append("void *c_%s = %s;" % (n, "%s ? wo_file_in(*%s) : NULL" % (n, n) if inout else "NULL"))
            b.args.append("%s ? &c_%s : NULL" % (n, n))
            b.post.append("if (%s) *%s = wo_file_out(c_%s);" % (n, n, n))
            return True
        out_map = OUT_VALUES_BY_FN.get((fn.name, n), OUT_VALUES.get(n))
        if t == "int" and out_map and not p.array:
            b.post.append("if (%s && wo_rc == CORE_MPI_SUCCESS) *%s = wo_%s_out(*%s);" % (n, n, out_map, n))
            b.args.append(n)
            return True
        if t == "int" and n in ("errorclass", "errorcode") and not p.array:
            b.post.append("if (%s && wo_rc == CORE_MPI_SUCCESS) *%s = wo_err_out(*%s);" % (n, n, n))
            b.args.append(n)
            return True
        if t == "int" and n in KEYVAL_NAMES and not p.array:
            b.pre.append("if (%s) *%s = wo_keyval_in(*%s);" % (n, n, n))
            b.post.append("if (%s) *%s = wo_keyval_out(*%s);" % (n, n, n))
            b.args.append(n)
            return True
        if t == "int" and n == "status" and fn.name == "Topo_test":
            b.post.append("if (%s && wo_rc == CORE_MPI_SUCCESS) *%s = wo_topo_out(*%s);" % (n, n, n))
            b.args.append(n)
            return True
        if p.ctype.endswith("*") and t not in ("int", "MPI_Aint", "MPI_Count", "MPI_Offset", "void"):
            return False
        b.args.append(n)
        return True
    return False


def translate(fn):
    """The C definition of the Open MPI-ABI function, or None."""
    if fn.name in HAND or fn.ret.rstrip("*") in SKIP_TYPES:
        return None
    if any(p.kind in ("callback", "varargs") or signatures.base_type(p) in SKIP_TYPES
           or p.ctype.endswith("_function*") or p.ctype.endswith("_function_c*") for p in fn.params):
        return None
    b = Body()
    for p in fn.params:
        if not translate_param(fn, p, b):
            return None
    return b


def render(fn, raws, b):
    params = ", ".join(raws[fn.name]) or "void"
    call = "wcore_PMPI_%s(%s)" % (fn.name, ", ".join(b.args))
    out = ["%s PMPI_%s(%s)" % (fn.ret, fn.name, params), "{"]
    out += ["    " + x for x in b.pre]
    kind = kind_of(fn.ret)
    if fn.ret == "int":
        out.append("    int wo_rc = %s;" % call)
        out += ["    " + x for x in b.post]
        out += ["    " + x for x in b.cleanup]
        out.append("    return wo_err_out(wo_rc);")
    elif kind:
        assert not b.post and not b.cleanup
        out.append("    return wo_%s_out(%s);" % (kind, call))
    elif fn.ret == "MPI_File":
        out.append("    return wo_file_out(%s);" % call)
    elif fn.ret == "void":
        out.append("    %s;" % call)
    else:
        assert not b.post and not b.cleanup, fn.name
        out.append("    return %s;" % call)
    out.append("}")
    out.append("WO_WEAK(%s)" % fn.name)
    return "\n".join(out) + "\n"


def ompi_predefined(ompi_text):
    """[(MPI name, C type, ompi symbol)] of Open MPI's predefined objects."""
    return re.findall(r"#define\s+(MPI_\w+)\s+OMPI_PREDEFINED_GLOBAL\(\s*(\w+)\s*,\s*(\w+)\s*\)", ompi_text)


# Open MPI datatypes the core lacks, carried as a core type of the same
# size and kind of use (Fortran's LOGICAL*n moves as INTEGER*n bytes).
FALLBACK = {"MPI_LOGICAL1": "MPI_INTEGER1", "MPI_LOGICAL2": "MPI_INTEGER2",
            "MPI_LOGICAL4": "MPI_LOGICAL", "MPI_LOGICAL8": "MPI_INTEGER8"}
# The core handle of a datatype neither the core nor FALLBACK has: a
# zero-size type made at first use (objects.h, WO_UNAVAILABLE), as Open MPI
# gives the types a platform lacks.
UNAVAILABLE = "WO_UNAVAILABLE"


def core_value(names, ctype, values):
    """The core handle of an Open MPI object named by any of `names`."""
    null = null_of(ctype)
    for n in names:
        for cand in (n, FALLBACK.get(n)):
            v = values.get(cand)
            if v is not None and (v != values[null] or cand == null):
                return v
    return UNAVAILABLE if ctype == "MPI_Datatype" else values[null]


def objects_c(predef, values):
    """The predefined objects: magic, core handle, padding to Open MPI's size."""
    out = ['/* Generated by abi/gen/translator.py: do not edit. */', '#include "objects.h"', ""]
    names, order = {}, []
    for mpi, ctype, sym in predef:
        if sym not in names:
            order.append((sym, ctype))
        names.setdefault(sym, []).append(mpi)
    for sym, ctype in order:
        if ctype == "MPI_File":
            size, core = FILE_OBJECT_SIZE, 0
        else:
            size = KINDS[ctype][1]
            core = core_value(names[sym], ctype, values)
        out.append("WO_OBJECT(%s, 0x%x, %s)" % (sym, size, core))
    # Where each object is once loaded (the program's copy, when the
    # program copied it): handles.c learns from these which addresses may
    # be dereferenced.
    out.append("\nconst struct wo_place wo_places[] = {")
    for sym, ctype in order:
        size = FILE_OBJECT_SIZE if ctype == "MPI_File" else KINDS[ctype][1]
        out.append("    {&%s, 0x%x}," % (sym, size))
    out.append("};\nconst int wo_place_count = %d;" % len(order))
    return "\n".join(out) + "\n"


def null_of(ctype):
    return {"MPI_Comm": "MPI_COMM_NULL", "MPI_Group": "MPI_GROUP_NULL", "MPI_Datatype": "MPI_DATATYPE_NULL",
            "MPI_Op": "MPI_OP_NULL", "MPI_Request": "MPI_REQUEST_NULL", "MPI_Message": "MPI_MESSAGE_NULL",
            "MPI_Errhandler": "MPI_ERRHANDLER_NULL", "MPI_Info": "MPI_INFO_NULL", "MPI_Win": "MPI_WIN_NULL",
            "MPI_Session": "MPI_SESSION_NULL"}[ctype]


def foreign_has(name, foreign_text):
    """Whether the foreign header names `name` (a define or an enum member:
    the C compiler, not this script, knows an enum's value)."""
    return re.search(r"\b%s\b" % name, foreign_text) is not None


def maps_h(predef, values, foreign_text, our_names):
    """Switches from core handles to the foreign ones, and value maps."""
    out = ["/* Generated by abi/gen/translator.py: do not edit. */", ""]
    by_kind = {}
    for mpi, ctype, _sym in predef:
        if ctype == "MPI_File" or ctype not in KINDS:
            continue
        by_kind.setdefault(ctype, [])
        by_kind[ctype].append(mpi)
    for ctype, names in by_kind.items():
        kind = KINDS[ctype][0]
        null = null_of(ctype)
        # The null handle first: names the core lacks share its value.
        names = [null] + [n for n in names if n != null]
        out.append("static inline %s wo_%s_out(int c)\n{\n    switch (c) {" % (ctype, kind))
        used = set()
        # A core handle goes back to the name that is its own before one
        # that borrows it (MPI_INTEGER1 before MPI_LOGICAL1).
        own = [(n, values[n]) for n in names if n in values]
        borrowed = [(n, values[FALLBACK[n]]) for n in names if n not in values and FALLBACK.get(n) in values]
        for n, v in own + borrowed:
            if v in used:
                continue
            used.add(v)
            out.append("    case %d: return %s;" % (v, n))
        out.append("    }\n    return (%s)wo_enc(c);\n}" % ctype)
    if "MPI_Session" not in by_kind:
        out.append("static inline MPI_Session wo_sess_out(int c)\n{\n"
                   "    return c == CORE_MPI_SESSION_NULL ? MPI_SESSION_NULL : (MPI_Session)wo_enc(c);\n}")
    for fname, names in VALUE_MAPS.items():
        pairs = [(ours, theirs) for ours, theirs in names
                 if ours in values and foreign_has(theirs, foreign_text)]
        out.append(value_map(fname, pairs, values))
    for fname, names in BITMASKS.items():
        out.append(bitmask_map(fname, [n for n in names if n in values and foreign_has(n, foreign_text)], values))
    errs = [n for n in our_names if re.match(r"^MPI_(T_)?ERR_\w+$", n) and n != "MPI_ERR_LASTCODE"
            and foreign_has(n, foreign_text)]
    out.append(value_map("err", [("MPI_SUCCESS", "MPI_SUCCESS")] + [(n, n) for n in errs], values))
    return "\n".join(out) + "\n"


def bitmask_map(fname, names, values):
    """wo_F_in and wo_F_out for a set of flags, bit by bit."""
    ins = "".join("    if (v & %s)\n        c |= %d;\n" % (n, values[n]) for n in names)
    outs = "".join("    if (v & %d)\n        c |= %s;\n" % (values[n], n) for n in names)
    return ("static inline int wo_%s_in(int v)\n{\n    int c = 0;\n%s    return c;\n}\n"
            "static inline int wo_%s_out(int v)\n{\n    int c = 0;\n%s    return c;\n}"
            % (fname, ins, fname, outs))


def value_map(fname, pairs, values):
    """wo_F_in (Open MPI's value -> core's) and wo_F_out; others pass."""
    ins = ["    case %s: return %d;" % (theirs, values[ours]) for ours, theirs in pairs]
    outs, used = [], set()
    for ours, theirs in pairs:
        if values[ours] in used:
            continue
        used.add(values[ours])
        outs.append("    case %d: return %s;" % (values[ours], theirs))
    return ("static inline int wo_%s_in(int v)\n{\n    switch (v) {\n%s\n    }\n    return v;\n}\n"
            "static inline int wo_%s_out(int v)\n{\n    switch (v) {\n%s\n    }\n    return v;\n}"
            % (fname, "\n".join(ins), fname, "\n".join(outs)))


def _same(*names):
    return [(n, n) for n in names]


VALUE_MAPS = {
    "rank": _same("MPI_ANY_SOURCE", "MPI_PROC_NULL", "MPI_ROOT"),
    "tag": _same("MPI_ANY_TAG"),
    "thread": _same("MPI_THREAD_SINGLE", "MPI_THREAD_FUNNELED", "MPI_THREAD_SERIALIZED", "MPI_THREAD_MULTIPLE"),
    "compare": _same("MPI_IDENT", "MPI_CONGRUENT", "MPI_SIMILAR", "MPI_UNEQUAL"),
    "order": _same("MPI_ORDER_C", "MPI_ORDER_FORTRAN"),
    "distrib": _same("MPI_DISTRIBUTE_BLOCK", "MPI_DISTRIBUTE_CYCLIC", "MPI_DISTRIBUTE_NONE"),
    "darg": _same("MPI_DISTRIBUTE_DFLT_DARG"),
    "typeclass": _same("MPI_TYPECLASS_REAL", "MPI_TYPECLASS_INTEGER", "MPI_TYPECLASS_COMPLEX"),
    "lock": _same("MPI_LOCK_EXCLUSIVE", "MPI_LOCK_SHARED"),
    "topo": _same("MPI_GRAPH", "MPI_CART", "MPI_DIST_GRAPH"),
    "split": _same("MPI_COMM_TYPE_SHARED", "MPI_COMM_TYPE_HW_GUIDED", "MPI_COMM_TYPE_HW_UNGUIDED"),
    "seek": _same("MPI_SEEK_SET", "MPI_SEEK_CUR", "MPI_SEEK_END"),
    "keyval": _same("MPI_TAG_UB", "MPI_HOST", "MPI_IO", "MPI_WTIME_IS_GLOBAL", "MPI_UNIVERSE_SIZE",
                    "MPI_LASTUSEDCODE", "MPI_APPNUM", "MPI_KEYVAL_INVALID", "MPI_WIN_BASE", "MPI_WIN_SIZE",
                    "MPI_WIN_DISP_UNIT", "MPI_WIN_CREATE_FLAVOR", "MPI_WIN_MODEL"),
    "model": _same("MPI_WIN_SEPARATE", "MPI_WIN_UNIFIED"),
    "flavor": _same("MPI_WIN_FLAVOR_CREATE", "MPI_WIN_FLAVOR_ALLOCATE", "MPI_WIN_FLAVOR_DYNAMIC",
                    "MPI_WIN_FLAVOR_SHARED"),
    "combiner": _same("MPI_COMBINER_NAMED", "MPI_COMBINER_DUP", "MPI_COMBINER_CONTIGUOUS",
                      "MPI_COMBINER_VECTOR", "MPI_COMBINER_HVECTOR", "MPI_COMBINER_INDEXED",
                      "MPI_COMBINER_HINDEXED", "MPI_COMBINER_INDEXED_BLOCK", "MPI_COMBINER_STRUCT",
                      "MPI_COMBINER_SUBARRAY", "MPI_COMBINER_DARRAY", "MPI_COMBINER_F90_REAL",
                      "MPI_COMBINER_F90_COMPLEX", "MPI_COMBINER_F90_INTEGER", "MPI_COMBINER_RESIZED",
                      "MPI_COMBINER_HINDEXED_BLOCK")
    + [("MPI_COMBINER_HVECTOR_INTEGER", "OMPI_WAS_MPI_COMBINER_HVECTOR_INTEGER"),
       ("MPI_COMBINER_HINDEXED_INTEGER", "OMPI_WAS_MPI_COMBINER_HINDEXED_INTEGER"),
       ("MPI_COMBINER_STRUCT_INTEGER", "OMPI_WAS_MPI_COMBINER_STRUCT_INTEGER")],
}
# Flags that combine: translated bit by bit.
BITMASKS = {
    "assert": ["MPI_MODE_NOCHECK", "MPI_MODE_NOSTORE", "MPI_MODE_NOPUT", "MPI_MODE_NOPRECEDE",
               "MPI_MODE_NOSUCCEED"],
    "amode": ["MPI_MODE_CREATE", "MPI_MODE_RDONLY", "MPI_MODE_WRONLY", "MPI_MODE_RDWR",
              "MPI_MODE_DELETE_ON_CLOSE", "MPI_MODE_UNIQUE_OPEN", "MPI_MODE_EXCL", "MPI_MODE_APPEND",
              "MPI_MODE_SEQUENTIAL"],
}


def core_h(functions, raws, consts, values):
    out = ["/* Generated by abi/gen/translator.py from include/mpi.h: do not edit. */",
           "#ifndef WO_CORE_H", "#define WO_CORE_H",
           "typedef struct { int count_lo, count_hi_and_cancelled, MPI_SOURCE, MPI_TAG, MPI_ERROR; } wc_status;",
           "#define CORE_STATUS_IGNORE ((wc_status *)1)",
           "#define CORE_STATUSES_IGNORE ((wc_status *)1)",
           "#define CORE_IN_PLACE ((void *)-1)",
           "int wcore_MPIR_Dup_fn(int, int, void *, void *, void *, int *);"]
    for n, _t in consts:
        if n in values:
            out.append("#define CORE_%s (%d)" % (n, values[n]))
    out.append(core_decls(functions, raws))
    out.append("#endif")
    return "\n".join(out) + "\n"


def standard_predefined():
    """[(MPI name, C type, None)] of the standard ABI's predefined handles."""
    import values as standard
    return [(n, t, None) for n, t, _v in standard.HANDLES]


def predefined_c(values):
    """The core handle of each small-integer handle of the standard ABI."""
    import values as standard
    out = ["/* Generated by abi/gen/translator.py: do not edit. */", '#include "wabi.h"', "",
           "const int wo_small[WO_SMALL] = {"]
    for n, t, v in standard.HANDLES:
        if t == "MPI_File":
            continue
        out.append("    [0x%03x] = %s, /* %s */" % (v, core_value([n], t, values), n))
    out.append("};")
    return "\n".join(out) + "\n"


def main():
    profile, header, foreign_header, outdir = sys.argv[1:5]
    if profile not in ("ompi", "standard"):
        sys.exit("translator.py: profile must be ompi or standard")
    text = open(header).read()
    foreign_text = open(foreign_header).read()
    functions = [signatures.classify(f) for f in signatures.parse(text)]
    raws = raw_params(text)
    consts = constants.defines(text)
    names = [n for n, _ in consts]
    # Enum constants of include/mpi.h the maps need beside its defines.
    extra = ["MPI_WIN_SEPARATE", "MPI_WIN_UNIFIED", "MPI_WIN_FLAVOR_CREATE", "MPI_WIN_FLAVOR_ALLOCATE",
             "MPI_WIN_FLAVOR_DYNAMIC", "MPI_WIN_FLAVOR_SHARED"]
    predef = ompi_predefined(foreign_text) if profile == "ompi" else standard_predefined()
    if profile == "standard":
        CORE_TYPES.update({"MPI_Count": "long", "MPI_Offset": "long"})
    values = constants.evaluate(header, names + extra, os.environ.get("CC", "cc"))
    os.makedirs(outdir, exist_ok=True)
    body = ["/* Generated by abi/gen/translator.py from include/mpi.h: do not edit. */", '#include "wabi.h"', ""]
    done, left = 0, []
    # Procedures the foreign header makes macros (Open MPI's MPI_Aint_add): no symbol.
    macros = set(re.findall(r"#define\s+MPI_(\w+)\(", foreign_text))
    for f in functions:
        if f.name in macros:
            continue
        b = translate(f)
        if b is None:
            if f.name not in HAND:
                left.append(f.name)
            continue
        body.append(render(f, raws, b))
        done += 1
    files = {
        "core.h": core_h(functions, raws, consts, values),
        "maps.h": maps_h(predef, values, foreign_text, names + extra),
        "translate.c": "\n".join(body),
    }
    if profile == "ompi":
        files["objects.c"] = objects_c(predef, values)
    else:
        files["predefined.c"] = predefined_c(values)
    for name, content in files.items():
        with open(os.path.join(outdir, name), "w") as fh:
            fh.write(content)
    with open(os.path.join(outdir, "untranslated.txt"), "w") as fh:
        fh.write("\n".join(left) + "\n")
    print("abi/gen/translator.py (%s): %d functions generated, %d by hand, %d left out (%s)"
          % (profile, done, len(HAND), len(left), os.path.join(outdir, "untranslated.txt")))


if __name__ == "__main__":
    main()
