//! Process groups (MPI-3.1 §6.3).

use std::os::raw::c_int;

use wanmpi_runtime::{ErrorClass, MpiError};

use crate::args::{count, group, int, new_group, out, slice, slice_mut};
use crate::comm::comparison;
use crate::error::{call, R};
use crate::global::{objs, rt};
use crate::predef::{COMM_WORLD, GROUP_EMPTY, GROUP_NULL, UNDEFINED};

fn ranks<'a>(n: c_int, p: *const c_int, what: &str) -> R<&'a [c_int]> {
    slice(p, count(n)?, what)
}

fn ranges<'a>(n: c_int, p: *const [c_int; 3]) -> R<&'a [[c_int; 3]]> {
    slice(p, count(n)?, "ranges")
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Group_size(g: c_int, size: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        *out(size, "size")? = int(group(g)?.size());
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Group_rank(g: c_int, rank: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        let me = rt()?.rank();
        *out(rank, "rank")? = group(g)?.rank_of(me).map_or(UNDEFINED, int);
        Ok(())
    })
}

fn store(o: *mut c_int, g: R<wanmpi_runtime::Group>) -> R<()> {
    let o = out(o, "newgroup")?;
    *o = new_group(g?)?;
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Group_incl(g: c_int, n: c_int, rs: *const c_int, newgroup: *mut c_int) -> c_int {
    call(COMM_WORLD, || store(newgroup, group(g)?.incl(ranks(n, rs, "ranks")?)))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Group_excl(g: c_int, n: c_int, rs: *const c_int, newgroup: *mut c_int) -> c_int {
    call(COMM_WORLD, || store(newgroup, group(g)?.excl(ranks(n, rs, "ranks")?)))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Group_range_incl(g: c_int, n: c_int, r: *const [c_int; 3], newgroup: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        let grp = group(g)?;
        let rs = grp.expand_ranges(ranges(n, r)?)?;
        store(newgroup, grp.incl(&rs))
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Group_range_excl(g: c_int, n: c_int, r: *const [c_int; 3], newgroup: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        let grp = group(g)?;
        let rs = grp.expand_ranges(ranges(n, r)?)?;
        store(newgroup, grp.excl(&rs))
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Group_translate_ranks(g1: c_int, n: c_int, rs1: *const c_int, g2: c_int, rs2: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        let a = group(g1)?;
        let b = group(g2)?;
        let src = ranks(n, rs1, "ranks1")?;
        let dst = slice_mut(rs2, src.len(), "ranks2")?;
        // MPI_PROC_NULL translates to itself.
        for (d, &r) in dst.iter_mut().zip(src) {
            *d = if r == crate::predef::PROC_NULL { r } else { a.translate(&[r], &b)?[0].map_or(UNDEFINED, int) };
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Group_compare(g1: c_int, g2: c_int, result: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        *out(result, "result")? = comparison(group(g1)?.compare(&*group(g2)?));
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Group_union(g1: c_int, g2: c_int, newgroup: *mut c_int) -> c_int {
    call(COMM_WORLD, || store(newgroup, Ok(group(g1)?.union(&*group(g2)?))))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Group_intersection(g1: c_int, g2: c_int, newgroup: *mut c_int) -> c_int {
    call(COMM_WORLD, || store(newgroup, Ok(group(g1)?.intersection(&*group(g2)?))))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Group_difference(g1: c_int, g2: c_int, newgroup: *mut c_int) -> c_int {
    call(COMM_WORLD, || store(newgroup, Ok(group(g1)?.difference(&*group(g2)?))))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Group_free(g: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        let h = out(g, "group")?;
        if *h != GROUP_EMPTY {
            objs().groups.remove(*h).ok_or_else(|| MpiError::new(ErrorClass::Group, format!("{:#x} is not a valid group handle", *h)))?;
        }
        *h = GROUP_NULL;
        Ok(())
    })
}
