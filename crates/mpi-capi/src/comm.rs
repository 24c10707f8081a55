//! Communicators (MPI-3.1 chapter 6): size/rank, dup, split, create, free,
//! compare, names, info, inter-communicators.

use std::ffi::c_char;
use std::os::raw::c_int;

use wanmpi_runtime::{CommId, Comparison, ErrorClass};

use crate::args::{comm_handle, comm_id, cstr, group, int, new_group, out, write_str};
use crate::error::{call, fail, R};
use crate::global::{objs, rt};
use crate::predef::{self, COMM_NULL, COMM_WORLD, UNDEFINED};

pub fn comparison(c: Comparison) -> c_int {
    match c {
        Comparison::Ident => predef::IDENT,
        Comparison::Congruent => predef::CONGRUENT,
        Comparison::Similar => predef::SIMILAR,
        Comparison::Unequal => predef::UNEQUAL,
    }
}

/// A new communicator inherits its parent's C error handler (the runtime
/// copies the handler, whose closure names the parent: re-bind it) and
/// its Cartesian topology when duplicated.
pub(crate) fn adopt(parent: c_int, child: CommId, keep_topology: bool) -> R<c_int> {
    let h = comm_handle(child);
    let eh = objs().comm_errh.get(&parent).copied();
    if let Some(eh) = eh {
        crate::errhandler::set(h, eh)?;
    }
    if keep_topology {
        let mut o = objs();
        if let Some(c) = o.carts.get(&parent).cloned() {
            o.carts.insert(h, c);
        }
        if let Some(g) = o.graphs.get(&parent).cloned() {
            o.graphs.insert(h, g);
        }
    }
    Ok(h)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_size(comm: c_int, size: *mut c_int) -> c_int {
    call(comm, || {
        *out(size, "size")? = int(rt()?.comm_size(comm_id(comm)?)?);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_rank(comm: c_int, rank: *mut c_int) -> c_int {
    call(comm, || {
        *out(rank, "rank")? = int(rt()?.comm_rank(comm_id(comm)?)?);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_dup(comm: c_int, newcomm: *mut c_int) -> c_int {
    call(comm, || {
        let o = out(newcomm, "newcomm")?;
        *o = crate::predef::COMM_NULL;
        let c = rt()?.comm_dup(comm_id(comm)?)?;
        *o = adopt(comm, c, true)?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_dup_with_info(comm: c_int, info: c_int, newcomm: *mut c_int) -> c_int {
    call(comm, || {
        let o = out(newcomm, "newcomm")?;
        *o = crate::predef::COMM_NULL;
        let i = crate::info::get(info)?;
        let c = rt()?.comm_dup_with_info(comm_id(comm)?, i)?;
        *o = adopt(comm, c, true)?;
        Ok(())
    })
}

unsafe fn idup(comm: c_int, info: Option<c_int>, newcomm: *mut c_int, req: *mut c_int) -> c_int {
    call(comm, || {
        let (o, q) = (out(newcomm, "newcomm")?, out(req, "request")?);
        let info = info.map(crate::info::get).transpose()?;
        let (c, r) = rt()?.comm_idup(comm_id(comm)?, info)?;
        *o = adopt(comm, c, true)?;
        *q = crate::request::new_request(r, comm, false)?;
        Ok(())
    })
}

/// MPI_Comm_idup: returns at once; the request completes once the members
/// agreed the new context (the runtime's `idup.rs`).
#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_idup(comm: c_int, newcomm: *mut c_int, req: *mut c_int) -> c_int {
    idup(comm, None, newcomm, req)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_idup_with_info(comm: c_int, info: c_int, newcomm: *mut c_int, req: *mut c_int) -> c_int {
    idup(comm, Some(info), newcomm, req)
}

/// The new communicator of a `_from_group(s)` call, with the error
/// handler the call names (none: MPI_COMM_WORLD's, as for other creations).
fn from_groups(c: CommId, errhandler: c_int) -> R<c_int> {
    let h = adopt(COMM_WORLD, c, false)?;
    if errhandler != crate::predef::ERRHANDLER_NULL {
        crate::errhandler::set(h, errhandler)?;
    }
    Ok(h)
}

/// MPI_Comm_create_from_group (MPI-4.0 §11.4), over groups of MPI_COMM_WORLD.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_create_from_group(
    g: c_int,
    stringtag: *const std::ffi::c_char,
    _info: c_int,
    errhandler: c_int,
    newcomm: *mut c_int,
) -> c_int {
    call(COMM_WORLD, || {
        let o = out(newcomm, "newcomm")?;
        let (grp, tag) = (group(g)?, crate::args::cstr(stringtag, "stringtag")?);
        *o = from_groups(rt()?.comm_create_from_group(&grp, tag)?, errhandler)?;
        Ok(())
    })
}

/// MPI_Intercomm_create_from_groups (MPI-4.0 §11.4), over groups of MPI_COMM_WORLD.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Intercomm_create_from_groups(
    local: c_int,
    local_leader: c_int,
    remote: c_int,
    remote_leader: c_int,
    stringtag: *const std::ffi::c_char,
    _info: c_int,
    errhandler: c_int,
    newintercomm: *mut c_int,
) -> c_int {
    call(COMM_WORLD, || {
        let o = out(newintercomm, "newintercomm")?;
        let (l, r, tag) = (group(local)?, group(remote)?, crate::args::cstr(stringtag, "stringtag")?);
        *o = from_groups(rt()?.intercomm_create_from_groups(&l, local_leader, &r, remote_leader, tag)?, errhandler)?;
        Ok(())
    })
}

/// MPI_Comm_create_group: collective over the group's members only.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_create_group(comm: c_int, g: c_int, tag: c_int, newcomm: *mut c_int) -> c_int {
    call(comm, || {
        let o = out(newcomm, "newcomm")?;
        let grp = group(g)?;
        *o = match rt()?.comm_create_group(comm_id(comm)?, &grp, tag)? {
            Some(c) => adopt(comm, c, false)?,
            None => COMM_NULL,
        };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_split(comm: c_int, color: c_int, key: c_int, newcomm: *mut c_int) -> c_int {
    call(comm, || {
        let o = out(newcomm, "newcomm")?;
        *o = match rt()?.comm_split(comm_id(comm)?, color, key)? {
            Some(c) => adopt(comm, c, false)?,
            None => COMM_NULL,
        };
        Ok(())
    })
}

const COMM_TYPE_SHARED: c_int = 1;
const COMM_TYPE_HW_GUIDED: c_int = 2;
const COMM_TYPE_HW_UNGUIDED: c_int = 3;
/// The info key naming the hardware resource of MPI_COMM_TYPE_HW_GUIDED,
/// and the one MPI_COMM_TYPE_HW_UNGUIDED reports back.
const HW_RESOURCE_TYPE: &str = "mpi_hw_resource_type";

/// The color of this process's host: a stable non-negative hash of its
/// host name (FNV-1a).
fn host_color() -> c_int {
    let mut x: u32 = 0x811c_9dc5;
    for b in crate::env::hostname().bytes() {
        x = (x ^ b as u32).wrapping_mul(0x0100_0193);
    }
    (x & 0x3fff_ffff) as c_int
}

/// Whether a `mpi_hw_resource_type` value names a whole machine (hwloc's
/// "Machine"; "node" as MPICH also says).
fn names_machine(v: &str) -> bool {
    v.eq_ignore_ascii_case("machine") || v.eq_ignore_ascii_case("node")
}

/// MPI_Comm_split_type (MPI-4.0 §7.4.2). wanmpi knows one level of
/// hardware: the host (processes are not bound to cores, so no finer
/// resource holds a process).
/// - MPI_COMM_TYPE_SHARED: the processes of one host.
/// - MPI_COMM_TYPE_HW_GUIDED: by the info value of `mpi_hw_resource_type`:
///   "mpi_shared_memory" is MPI_COMM_TYPE_SHARED, "machine" (or "node") the
///   host; any other resource, or no such key, gives MPI_COMM_NULL.
/// - MPI_COMM_TYPE_HW_UNGUIDED: the host, when that is a strict subset of
///   `comm` (and `info` is then given `mpi_hw_resource_type=machine`,
///   as MPICH does); else MPI_COMM_NULL.
/// - MPI_UNDEFINED opts out.
///
/// Every process takes part in one split whatever it asked for, so
/// processes that disagree get MPI_COMM_NULL or their own groups, never a
/// hang.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_split_type(comm: c_int, split_type: c_int, key: c_int, info: c_int, newcomm: *mut c_int) -> c_int {
    call(comm, || {
        let hints = crate::info::get(info)?;
        let color = match split_type {
            UNDEFINED => UNDEFINED,
            COMM_TYPE_SHARED | COMM_TYPE_HW_UNGUIDED => host_color(),
            COMM_TYPE_HW_GUIDED => match hints.get(HW_RESOURCE_TYPE).map(str::trim) {
                Some(v) if v == "mpi_shared_memory" || names_machine(v) => host_color(),
                _ => UNDEFINED,
            },
            t => return fail(ErrorClass::Arg, format!("split type {t} is not MPI_COMM_TYPE_SHARED, _HW_GUIDED, _HW_UNGUIDED or MPI_UNDEFINED")),
        };
        split_inner(comm, color, key, newcomm)?;
        if split_type == COMM_TYPE_HW_UNGUIDED && *newcomm != COMM_NULL {
            // The host's processes are the widest proper subset there is;
            // every host of `comm` finds the same, so all keep or all free.
            if rt()?.comm_size(comm_id(*newcomm)?)? < rt()?.comm_size(comm_id(comm)?)? {
                crate::info::set_if_user(info, HW_RESOURCE_TYPE, "machine")?;
            } else {
                free(&mut *newcomm)?;
            }
        }
        Ok(())
    })
}

unsafe fn split_inner(comm: c_int, color: c_int, key: c_int, newcomm: *mut c_int) -> R<()> {
    let o = out(newcomm, "newcomm")?;
    *o = match rt()?.comm_split(comm_id(comm)?, color, key)? {
        Some(c) => adopt(comm, c, false)?,
        None => COMM_NULL,
    };
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_create(comm: c_int, g: c_int, newcomm: *mut c_int) -> c_int {
    call(comm, || {
        let o = out(newcomm, "newcomm")?;
        let grp = group(g)?;
        *o = match rt()?.comm_create(comm_id(comm)?, &grp)? {
            Some(c) => adopt(comm, c, false)?,
            None => COMM_NULL,
        };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_free(comm: *mut c_int) -> c_int {
    let h = if comm.is_null() { COMM_WORLD } else { *comm };
    call(h, || free(out(comm, "comm")?))
}

/// Frees the communicator `*c` and what the C API keeps beside it.
fn free(c: &mut c_int) -> R<()> {
    rt()?.comm_free(comm_id(*c)?)?;
    let mut o = objs();
    o.carts.remove(c);
    o.graphs.remove(c);
    o.comm_errh.remove(c);
    *c = COMM_NULL;
    Ok(())
}

/// MPI_Comm_disconnect (MPI-4.0 §11.10.4): collective over `comm`; the
/// barrier lets every member finish what it sent on the communicator before
/// it goes, then it is freed. MPI_COMM_NULL is MPI_ERR_COMM.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_disconnect(comm: *mut c_int) -> c_int {
    let h = if comm.is_null() { COMM_WORLD } else { *comm };
    call(h, || {
        let c = out(comm, "comm")?;
        let id = comm_id(*c)?;
        if *c == COMM_WORLD || *c == crate::predef::COMM_SELF {
            return crate::error::fail(ErrorClass::Comm, "MPI_Comm_disconnect of a predefined communicator");
        }
        rt()?.barrier(id)?;
        rt()?.comm_free(id)?;
        let mut o = objs();
        o.carts.remove(c);
        o.graphs.remove(c);
        o.comm_errh.remove(c);
        *c = COMM_NULL;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_compare(a: c_int, b: c_int, result: *mut c_int) -> c_int {
    call(a, || {
        *out(result, "result")? = comparison(rt()?.comm_compare(comm_id(a)?, comm_id(b)?)?);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_group(comm: c_int, g: *mut c_int) -> c_int {
    call(comm, || {
        let o = out(g, "group")?;
        *o = new_group(rt()?.comm_group(comm_id(comm)?)?)?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_test_inter(comm: c_int, flag: *mut c_int) -> c_int {
    call(comm, || {
        *out(flag, "flag")? = c_int::from(rt()?.comm_is_inter(comm_id(comm)?)?);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_remote_size(comm: c_int, size: *mut c_int) -> c_int {
    call(comm, || {
        *out(size, "size")? = int(rt()?.comm_remote_group(comm_id(comm)?)?.size());
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_remote_group(comm: c_int, g: *mut c_int) -> c_int {
    call(comm, || {
        let o = out(g, "group")?;
        *o = new_group(rt()?.comm_remote_group(comm_id(comm)?)?)?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_set_name(comm: c_int, name: *const c_char) -> c_int {
    call(comm, || {
        let s = cstr(name, "comm_name")?;
        rt()?.comm_set_name(comm_id(comm)?, &s[..s.len().min(predef::MAX_OBJECT_NAME - 1)])
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_get_name(comm: c_int, name: *mut c_char, len: *mut c_int) -> c_int {
    call(comm, || {
        out(len, "resultlen")?;
        write_str(&rt()?.comm_get_name(comm_id(comm)?)?, name, predef::MAX_OBJECT_NAME, len)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_set_info(comm: c_int, info: c_int) -> c_int {
    call(comm, || rt()?.comm_set_info(comm_id(comm)?, crate::info::get(info)?))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_get_info(comm: c_int, info: *mut c_int) -> c_int {
    call(comm, || {
        let o = out(info, "info_used")?;
        let i = rt()?.comm_get_info(comm_id(comm)?)?;
        *o = crate::info::insert(i)?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Intercomm_create(
    local: c_int,
    local_leader: c_int,
    peer: c_int,
    remote_leader: c_int,
    tag: c_int,
    newcomm: *mut c_int,
) -> c_int {
    call(local, || {
        let o = out(newcomm, "newintercomm")?;
        // The peer communicator only matters at the leaders.
        let peer_id = comm_id(peer).unwrap_or(wanmpi_runtime::COMM_WORLD);
        let c = rt()?.intercomm_create(comm_id(local)?, local_leader, peer_id, remote_leader, tag)?;
        *o = adopt(local, c, false)?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Intercomm_merge(inter: c_int, high: c_int, newcomm: *mut c_int) -> c_int {
    call(inter, || {
        let o = out(newcomm, "newintracomm")?;
        let c = rt()?.intercomm_merge(comm_id(inter)?, high != 0)?;
        *o = adopt(inter, c, false)?;
        Ok(())
    })
}
