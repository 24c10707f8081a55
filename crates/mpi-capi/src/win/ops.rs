//! Communication calls (MPI-4.0 §12.3): MPI_Put, MPI_Get, MPI_Accumulate,
//! MPI_Get_accumulate, MPI_Fetch_and_op, MPI_Compare_and_swap and the
//! request-based MPI_Rput, MPI_Rget, MPI_Raccumulate, MPI_Rget_accumulate.
//! (Their `_c` forms are generated forwarders.)

use std::ffi::c_void;
use std::os::raw::{c_int, c_long};

use wanmpi_runtime::{Datatype, OriginBuf, Req, TargetSpec};

use super::{call_win, win_id};
use crate::args::{count, datatype, out, Count};
use crate::error::R;
use crate::global::rt;
use crate::op::op_for;
use crate::predef::{COMM_WORLD, REQUEST_NULL};

/// The origin, result or target arguments of one call, checked.
struct Side {
    count: usize,
    dt: Datatype,
}

fn side<C: Count>(c: C, dt: c_int) -> R<Side> {
    Ok(Side { count: count(c)?, dt: datatype(dt)? })
}

fn origin<'a>(buf: *const c_void, s: &'a Side) -> OriginBuf<'a> {
    OriginBuf { ptr: buf.cast(), count: s.count, dt: &s.dt }
}

fn target(rank: c_int, disp: c_long, s: &Side) -> TargetSpec<'_> {
    TargetSpec { rank, disp, count: s.count, dt: &s.dt }
}

/// Runs one communication call on `win`. `request` is null for the
/// plain forms; for the `R` forms it receives the call's request.
fn issue(win: c_int, request: *mut c_int, f: impl FnOnce(bool) -> R<Option<Req>>) -> c_int {
    call_win(win, || {
        let req = f(!request.is_null())?;
        if !request.is_null() {
            let h = match req {
                Some(r) => crate::request::new_request(r, COMM_WORLD, false)?,
                None => REQUEST_NULL,
            };
            *out(request, "request")? = h;
        }
        Ok(())
    })
}

/// The `R` forms need somewhere to put their request.
fn no_request(win: c_int) -> c_int {
    call_win(win, || crate::error::fail(wanmpi_runtime::ErrorClass::Arg, "request is a null pointer"))
}

#[allow(clippy::too_many_arguments)]
unsafe fn put<C: Count>(
    ob: *const c_void,
    oc: C,
    odt: c_int,
    rank: c_int,
    disp: c_long,
    tc: C,
    tdt: c_int,
    win: c_int,
    request: *mut c_int,
) -> c_int {
    issue(win, request, |want| {
        let (o, t) = (side(oc, odt)?, side(tc, tdt)?);
        rt()?.put(win_id(win)?, origin(ob, &o), target(rank, disp, &t), want)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Put(ob: *const c_void, oc: c_int, odt: c_int, rank: c_int, disp: c_long, tc: c_int, tdt: c_int, win: c_int) -> c_int {
    put(ob, oc, odt, rank, disp, tc, tdt, win, std::ptr::null_mut())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Put_c(
    ob: *const c_void,
    oc: c_long,
    odt: c_int,
    rank: c_int,
    disp: c_long,
    tc: c_long,
    tdt: c_int,
    win: c_int,
) -> c_int {
    put(ob, oc, odt, rank, disp, tc, tdt, win, std::ptr::null_mut())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Rput(
    ob: *const c_void,
    oc: c_int,
    odt: c_int,
    rank: c_int,
    disp: c_long,
    tc: c_int,
    tdt: c_int,
    win: c_int,
    request: *mut c_int,
) -> c_int {
    rput(ob, oc, odt, rank, disp, tc, tdt, win, request)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Rput_c(
    ob: *const c_void,
    oc: c_long,
    odt: c_int,
    rank: c_int,
    disp: c_long,
    tc: c_long,
    tdt: c_int,
    win: c_int,
    request: *mut c_int,
) -> c_int {
    rput(ob, oc, odt, rank, disp, tc, tdt, win, request)
}

// MPI_Rput and MPI_Rput_c.
#[allow(clippy::too_many_arguments)]
unsafe fn rput<C: Count>(
    ob: *const c_void,
    oc: C,
    odt: c_int,
    rank: c_int,
    disp: c_long,
    tc: C,
    tdt: c_int,
    win: c_int,
    request: *mut c_int,
) -> c_int {
    if request.is_null() {
        return no_request(win);
    }
    put(ob, oc, odt, rank, disp, tc, tdt, win, request)
}

#[allow(clippy::too_many_arguments)]
unsafe fn get<C: Count>(ob: *mut c_void, oc: C, odt: c_int, rank: c_int, disp: c_long, tc: C, tdt: c_int, win: c_int, request: *mut c_int) -> c_int {
    issue(win, request, |want| {
        let (o, t) = (side(oc, odt)?, side(tc, tdt)?);
        rt()?.get(win_id(win)?, origin(ob, &o), target(rank, disp, &t), want)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Get(ob: *mut c_void, oc: c_int, odt: c_int, rank: c_int, disp: c_long, tc: c_int, tdt: c_int, win: c_int) -> c_int {
    get(ob, oc, odt, rank, disp, tc, tdt, win, std::ptr::null_mut())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Get_c(ob: *mut c_void, oc: c_long, odt: c_int, rank: c_int, disp: c_long, tc: c_long, tdt: c_int, win: c_int) -> c_int {
    get(ob, oc, odt, rank, disp, tc, tdt, win, std::ptr::null_mut())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Rget(
    ob: *mut c_void,
    oc: c_int,
    odt: c_int,
    rank: c_int,
    disp: c_long,
    tc: c_int,
    tdt: c_int,
    win: c_int,
    request: *mut c_int,
) -> c_int {
    rget(ob, oc, odt, rank, disp, tc, tdt, win, request)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Rget_c(
    ob: *mut c_void,
    oc: c_long,
    odt: c_int,
    rank: c_int,
    disp: c_long,
    tc: c_long,
    tdt: c_int,
    win: c_int,
    request: *mut c_int,
) -> c_int {
    rget(ob, oc, odt, rank, disp, tc, tdt, win, request)
}

// MPI_Rget and MPI_Rget_c.
#[allow(clippy::too_many_arguments)]
unsafe fn rget<C: Count>(ob: *mut c_void, oc: C, odt: c_int, rank: c_int, disp: c_long, tc: C, tdt: c_int, win: c_int, request: *mut c_int) -> c_int {
    if request.is_null() {
        return no_request(win);
    }
    get(ob, oc, odt, rank, disp, tc, tdt, win, request)
}

#[allow(clippy::too_many_arguments)]
unsafe fn accumulate<C: Count>(
    ob: *const c_void,
    oc: C,
    odt: c_int,
    rank: c_int,
    disp: c_long,
    tc: C,
    tdt: c_int,
    op: c_int,
    win: c_int,
    request: *mut c_int,
) -> c_int {
    issue(win, request, |want| {
        let (o, t) = (side(oc, odt)?, side(tc, tdt)?);
        let op = op_for(op, tdt, &t.dt)?;
        rt()?.accumulate(win_id(win)?, origin(ob, &o), target(rank, disp, &t), &op, want)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Accumulate(
    ob: *const c_void,
    oc: c_int,
    odt: c_int,
    rank: c_int,
    disp: c_long,
    tc: c_int,
    tdt: c_int,
    op: c_int,
    win: c_int,
) -> c_int {
    accumulate(ob, oc, odt, rank, disp, tc, tdt, op, win, std::ptr::null_mut())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Accumulate_c(
    ob: *const c_void,
    oc: c_long,
    odt: c_int,
    rank: c_int,
    disp: c_long,
    tc: c_long,
    tdt: c_int,
    op: c_int,
    win: c_int,
) -> c_int {
    accumulate(ob, oc, odt, rank, disp, tc, tdt, op, win, std::ptr::null_mut())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Raccumulate(
    ob: *const c_void,
    oc: c_int,
    odt: c_int,
    rank: c_int,
    disp: c_long,
    tc: c_int,
    tdt: c_int,
    op: c_int,
    win: c_int,
    request: *mut c_int,
) -> c_int {
    raccumulate(ob, oc, odt, rank, disp, tc, tdt, op, win, request)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Raccumulate_c(
    ob: *const c_void,
    oc: c_long,
    odt: c_int,
    rank: c_int,
    disp: c_long,
    tc: c_long,
    tdt: c_int,
    op: c_int,
    win: c_int,
    request: *mut c_int,
) -> c_int {
    raccumulate(ob, oc, odt, rank, disp, tc, tdt, op, win, request)
}

// MPI_Raccumulate and MPI_Raccumulate_c.
#[allow(clippy::too_many_arguments)]
unsafe fn raccumulate<C: Count>(
    ob: *const c_void,
    oc: C,
    odt: c_int,
    rank: c_int,
    disp: c_long,
    tc: C,
    tdt: c_int,
    op: c_int,
    win: c_int,
    request: *mut c_int,
) -> c_int {
    if request.is_null() {
        return no_request(win);
    }
    accumulate(ob, oc, odt, rank, disp, tc, tdt, op, win, request)
}

#[allow(clippy::too_many_arguments)]
unsafe fn get_accumulate<C: Count>(
    ob: *const c_void,
    oc: C,
    odt: c_int,
    rb: *mut c_void,
    rc: C,
    rdt: c_int,
    rank: c_int,
    disp: c_long,
    tc: C,
    tdt: c_int,
    op: c_int,
    win: c_int,
    request: *mut c_int,
) -> c_int {
    issue(win, request, |want| {
        let (t, r) = (side(tc, tdt)?, side(rc, rdt)?);
        let opv = op_for(op, tdt, &t.dt)?;
        // MPI_NO_OP ignores the origin arguments (they may be null).
        let o = if crate::predef::op(op) == Some(wanmpi_runtime::PredefOp::NoOp) { None } else { Some(side(oc, odt)?) };
        let ob = o.as_ref().map(|o| origin(ob, o));
        rt()?.get_accumulate(win_id(win)?, ob, origin(rb, &r), target(rank, disp, &t), &opv, want)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Get_accumulate(
    ob: *const c_void,
    oc: c_int,
    odt: c_int,
    rb: *mut c_void,
    rc: c_int,
    rdt: c_int,
    rank: c_int,
    disp: c_long,
    tc: c_int,
    tdt: c_int,
    op: c_int,
    win: c_int,
) -> c_int {
    get_accumulate(ob, oc, odt, rb, rc, rdt, rank, disp, tc, tdt, op, win, std::ptr::null_mut())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Get_accumulate_c(
    ob: *const c_void,
    oc: c_long,
    odt: c_int,
    rb: *mut c_void,
    rc: c_long,
    rdt: c_int,
    rank: c_int,
    disp: c_long,
    tc: c_long,
    tdt: c_int,
    op: c_int,
    win: c_int,
) -> c_int {
    get_accumulate(ob, oc, odt, rb, rc, rdt, rank, disp, tc, tdt, op, win, std::ptr::null_mut())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Rget_accumulate(
    ob: *const c_void,
    oc: c_int,
    odt: c_int,
    rb: *mut c_void,
    rc: c_int,
    rdt: c_int,
    rank: c_int,
    disp: c_long,
    tc: c_int,
    tdt: c_int,
    op: c_int,
    win: c_int,
    request: *mut c_int,
) -> c_int {
    rget_accumulate(ob, oc, odt, rb, rc, rdt, rank, disp, tc, tdt, op, win, request)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Rget_accumulate_c(
    ob: *const c_void,
    oc: c_long,
    odt: c_int,
    rb: *mut c_void,
    rc: c_long,
    rdt: c_int,
    rank: c_int,
    disp: c_long,
    tc: c_long,
    tdt: c_int,
    op: c_int,
    win: c_int,
    request: *mut c_int,
) -> c_int {
    rget_accumulate(ob, oc, odt, rb, rc, rdt, rank, disp, tc, tdt, op, win, request)
}

// MPI_Rget_accumulate and MPI_Rget_accumulate_c.
#[allow(clippy::too_many_arguments)]
unsafe fn rget_accumulate<C: Count>(
    ob: *const c_void,
    oc: C,
    odt: c_int,
    rb: *mut c_void,
    rc: C,
    rdt: c_int,
    rank: c_int,
    disp: c_long,
    tc: C,
    tdt: c_int,
    op: c_int,
    win: c_int,
    request: *mut c_int,
) -> c_int {
    if request.is_null() {
        return no_request(win);
    }
    get_accumulate(ob, oc, odt, rb, rc, rdt, rank, disp, tc, tdt, op, win, request)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Fetch_and_op(ob: *const c_void, rb: *mut c_void, dt: c_int, rank: c_int, disp: c_long, op: c_int, win: c_int) -> c_int {
    get_accumulate(ob, 1, dt, rb, 1, dt, rank, disp, 1, dt, op, win, std::ptr::null_mut())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Compare_and_swap(
    ob: *const c_void,
    cb: *const c_void,
    rb: *mut c_void,
    dt: c_int,
    rank: c_int,
    disp: c_long,
    win: c_int,
) -> c_int {
    call_win(win, || {
        let d = datatype(dt)?;
        rt()?.compare_and_swap(win_id(win)?, ob.cast(), cb.cast(), rb.cast(), &d, rank, disp)
    })
}
