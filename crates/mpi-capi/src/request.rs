//! Requests (MPI-3.1 §3.7.3-3.7.5, §3.8.4, §3.9): wait and test in every
//! form, free, cancel, get_status, persistent start. A request handle keeps
//! its runtime request and, once MPI_Request_get_status saw it complete,
//! the completion until MPI_Wait/MPI_Test collect it.

use std::os::raw::c_int;

use wanmpi_runtime::{Completion, ErrorClass, MpiError, Req, Status};

use crate::args::{out, slice, slice_mut};
use crate::error::{call, code_of, raise, ERR_IN_STATUS, R, SUCCESS};
use crate::global::{objs, rt, ReqEntry};
use crate::predef::{COMM_WORLD, REQUEST_NULL, UNDEFINED};
use crate::status::{self, MPI_Status};

pub fn new_request(req: Req, comm: c_int, persistent: bool) -> R<c_int> {
    objs().reqs.insert(ReqEntry { req, done: None, comm, persistent }).ok_or_else(|| MpiError::new(ErrorClass::NoMem, "too many requests"))
}

/// What a handle refers to, read under the table lock.
#[derive(Clone)]
struct Snap {
    req: Req,
    done: Option<Completion>,
    comm: c_int,
    persistent: bool,
    /// A persistent request that is not started (nothing cached either).
    inactive: bool,
}

fn snap(h: c_int) -> R<Snap> {
    let mut s = {
        let o = objs();
        let e = o.reqs.get(h).ok_or_else(|| MpiError::new(ErrorClass::Request, format!("{h:#x} is not a valid request handle")))?;
        Snap { req: e.req, done: e.done.clone(), comm: e.comm, persistent: e.persistent, inactive: false }
    };
    if s.persistent && s.done.is_none() {
        s.inactive = rt()?.request_inactive(s.req)?;
    }
    Ok(s)
}

/// Records that `h` completed: non-persistent handles become MPI_REQUEST_NULL.
fn retire(h: &mut c_int, s: &Snap) {
    let mut o = objs();
    if s.persistent {
        if let Some(e) = o.reqs.get_mut(*h) {
            e.done = None;
        }
    } else {
        o.reqs.remove(*h);
        *h = REQUEST_NULL;
    }
}

fn empty() -> Status {
    Status::empty()
}

/// The status a completion reports, and its error if the operation failed.
fn outcome(c: &Completion) -> (Status, Option<MpiError>) {
    (c.status.clone(), c.status.error.clone())
}

unsafe fn wait_one(h: &mut c_int, st: *mut MPI_Status) -> R<()> {
    if *h == REQUEST_NULL {
        status::write(st, &empty());
        return Ok(());
    }
    let s = snap(*h)?;
    let c = match &s.done {
        Some(c) => c.clone(),
        None => rt()?.wait(s.req)?,
    };
    retire(h, &s);
    let (stv, e) = outcome(&c);
    status::write(st, &stv);
    e.map_or(Ok(()), Err)
}

unsafe fn test_one(h: &mut c_int, flag: &mut c_int, st: *mut MPI_Status) -> R<()> {
    if *h == REQUEST_NULL {
        *flag = 1;
        status::write(st, &empty());
        return Ok(());
    }
    let s = snap(*h)?;
    let c = match &s.done {
        Some(c) => Some(c.clone()),
        None => rt()?.test(s.req)?,
    };
    let Some(c) = c else {
        *flag = 0;
        return Ok(());
    };
    *flag = 1;
    retire(h, &s);
    let (stv, e) = outcome(&c);
    status::write(st, &stv);
    e.map_or(Ok(()), Err)
}

fn comm_of(h: c_int) -> c_int {
    objs().reqs.get(h).map_or(COMM_WORLD, |e| e.comm)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Wait(request: *mut c_int, st: *mut MPI_Status) -> c_int {
    let comm = if request.is_null() { COMM_WORLD } else { comm_of(*request) };
    call(comm, || wait_one(out(request, "request")?, st))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Test(request: *mut c_int, flag: *mut c_int, st: *mut MPI_Status) -> c_int {
    let comm = if request.is_null() { COMM_WORLD } else { comm_of(*request) };
    call(comm, || test_one(out(request, "request")?, out(flag, "flag")?, st))
}

/// Runtime handles of `hs` (None for null or already-completed ones).
fn snaps(hs: &[c_int]) -> R<Vec<Option<Snap>>> {
    hs.iter().map(|&h| if h == REQUEST_NULL { Ok(None) } else { snap(h).map(Some) }).collect()
}

/// The runtime requests still to complete: not null, not inactive, not cached.
fn pending(ss: &[Option<Snap>]) -> Vec<Option<Req>> {
    ss.iter().map(|s| s.as_ref().filter(|s| s.done.is_none() && !s.inactive).map(|s| s.req)).collect()
}

/// Null handles and inactive persistent requests, which Waitany/Testany and
/// Waitsome/Testsome skip (MPI-4.0 §3.7.5).
fn skipped(s: &Option<Snap>) -> bool {
    s.as_ref().is_none_or(|s| s.inactive)
}

fn status_at(st: *mut MPI_Status, i: usize) -> *mut MPI_Status {
    if status::ignored(st) {
        st
    } else {
        st.wrapping_add(i)
    }
}

fn set_error(st: *mut MPI_Status, code: c_int) {
    if !status::ignored(st) {
        // SAFETY: the user's status array element.
        unsafe { (*st).MPI_ERROR = code };
    }
}

/// Null and inactive requests get the empty status in Waitall/Testall.
fn write_empty(ss: &[Option<Snap>], st: *mut MPI_Status) {
    for (i, s) in ss.iter().enumerate() {
        if skipped(s) {
            let p = status_at(st, i);
            status::write(p, &empty());
            set_error(p, SUCCESS);
        }
    }
}

/// Completes the multiple-completion calls: writes statuses, retires
/// handles, and reports MPI_ERR_IN_STATUS when any operation failed.
fn finish_many(hs: &mut [c_int], ss: &[Option<Snap>], done: &[(usize, Completion)], st: *mut MPI_Status, dense: bool) -> R<Option<c_int>> {
    let mut failed = None;
    for (k, (i, c)) in done.iter().enumerate() {
        let s = ss[*i].as_ref().expect("completed handles are not null");
        let p = status_at(st, if dense { k } else { *i });
        let (stv, e) = outcome(c);
        status::write(p, &stv);
        match e {
            Some(e) => {
                set_error(p, code_of(&e));
                failed.get_or_insert((s.comm, e));
            }
            None => set_error(p, SUCCESS),
        }
        retire(&mut hs[*i], s);
    }
    match failed {
        Some((comm, e)) => {
            raise(comm, e);
            Ok(Some(ERR_IN_STATUS))
        }
        None => Ok(None),
    }
}

fn cached(ss: &[Option<Snap>]) -> Vec<(usize, Completion)> {
    ss.iter().enumerate().filter_map(|(i, s)| s.as_ref().and_then(|s| s.done.clone()).map(|c| (i, c))).collect()
}

fn multi(count: c_int, reqs: *mut c_int, f: impl FnOnce(&mut [c_int]) -> R<Option<c_int>>) -> c_int {
    let mut special = None;
    let rc = call(COMM_WORLD, || {
        let n = crate::args::count(count)?;
        let hs = slice_mut(reqs, n, "array_of_requests")?;
        special = f(hs)?;
        Ok(())
    });
    special.unwrap_or(rc)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Waitall(count: c_int, reqs: *mut c_int, st: *mut MPI_Status) -> c_int {
    multi(count, reqs, |hs| {
        let ss = snaps(hs)?;
        let mut done = cached(&ss);
        let got = rt()?.waitall(&pending(&ss))?;
        done.extend(got.into_iter().enumerate().filter_map(|(i, c)| c.map(|c| (i, c))));
        done.sort_by_key(|(i, _)| *i);
        write_empty(&ss, st);
        finish_many(hs, &ss, &done, st, false)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Testall(count: c_int, reqs: *mut c_int, flag: *mut c_int, st: *mut MPI_Status) -> c_int {
    multi(count, reqs, |hs| {
        let flag = out(flag, "flag")?;
        let ss = snaps(hs)?;
        let mut done = cached(&ss);
        let Some(got) = rt()?.testall(&pending(&ss))? else {
            *flag = 0;
            // The cached completions stay cached for a later call.
            return Ok(None);
        };
        *flag = 1;
        done.extend(got.into_iter().enumerate().filter_map(|(i, c)| c.map(|c| (i, c))));
        done.sort_by_key(|(i, _)| *i);
        write_empty(&ss, st);
        finish_many(hs, &ss, &done, st, false)
    })
}

unsafe fn any(count: c_int, reqs: *mut c_int, index: *mut c_int, flag: Option<*mut c_int>, st: *mut MPI_Status) -> c_int {
    let mut special = None;
    let rc = call(COMM_WORLD, || {
        let n = crate::args::count(count)?;
        let hs = slice_mut(reqs, n, "array_of_requests")?;
        let index = out(index, "index")?;
        let ss = snaps(hs)?;
        let found = match cached(&ss).into_iter().next() {
            Some(c) => Some(c),
            None => {
                let p = pending(&ss);
                match flag {
                    Some(_) => rt()?.testany(&p)?,
                    None => rt()?.waitany(&p)?,
                }
            }
        };
        let all_null = ss.iter().all(skipped);
        if let Some(f) = flag {
            *out(f, "flag")? = c_int::from(found.is_some() || all_null);
        }
        let Some((i, c)) = found else {
            *index = UNDEFINED;
            if all_null {
                status::write(st, &empty());
            }
            return Ok(());
        };
        *index = i as c_int;
        let s = ss[i].as_ref().expect("completed handles are not null");
        retire(&mut hs[i], s);
        let (stv, e) = outcome(&c);
        status::write(st, &stv);
        if let Some(e) = e {
            special = Some(raise(s.comm, e));
        }
        Ok(())
    });
    special.unwrap_or(rc)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Waitany(count: c_int, reqs: *mut c_int, index: *mut c_int, st: *mut MPI_Status) -> c_int {
    any(count, reqs, index, None, st)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Testany(count: c_int, reqs: *mut c_int, index: *mut c_int, flag: *mut c_int, st: *mut MPI_Status) -> c_int {
    any(count, reqs, index, Some(flag), st)
}

unsafe fn some(incount: c_int, reqs: *mut c_int, outcount: *mut c_int, indices: *mut c_int, st: *mut MPI_Status, wait: bool) -> c_int {
    multi(incount, reqs, |hs| {
        let outc = out(outcount, "outcount")?;
        let ss = snaps(hs)?;
        if ss.iter().all(skipped) {
            *outc = UNDEFINED;
            return Ok(None);
        }
        let mut done = cached(&ss);
        if done.is_empty() {
            let p = pending(&ss);
            let got = if wait { rt()?.waitsome(&p)? } else { rt()?.testsome(&p)? };
            done = got.unwrap_or_default();
        }
        *outc = done.len() as c_int;
        let idx = slice_mut(indices, done.len(), "array_of_indices")?;
        for (k, (i, _)) in done.iter().enumerate() {
            idx[k] = *i as c_int;
        }
        finish_many(hs, &ss, &done, st, true)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Waitsome(incount: c_int, reqs: *mut c_int, outcount: *mut c_int, indices: *mut c_int, st: *mut MPI_Status) -> c_int {
    some(incount, reqs, outcount, indices, st, true)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Testsome(incount: c_int, reqs: *mut c_int, outcount: *mut c_int, indices: *mut c_int, st: *mut MPI_Status) -> c_int {
    some(incount, reqs, outcount, indices, st, false)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Request_free(request: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        let h = out(request, "request")?;
        let s = snap(*h)?;
        // A completion already collected by get_status has left the runtime.
        if s.done.is_none() || s.persistent {
            rt()?.request_free(s.req)?;
        }
        let mut o = objs();
        o.reqs.remove(*h);
        o.psends.remove(h);
        *h = REQUEST_NULL;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Request_get_status(request: c_int, flag: *mut c_int, st: *mut MPI_Status) -> c_int {
    call(COMM_WORLD, || {
        let flag = out(flag, "flag")?;
        if request == REQUEST_NULL {
            *flag = 1;
            status::write(st, &empty());
            return Ok(());
        }
        let s = snap(request)?;
        if s.inactive {
            *flag = 1;
            status::write(st, &empty());
            return Ok(());
        }
        let c = match s.done {
            Some(c) => Some(c),
            None => {
                let c = rt()?.test(s.req)?;
                if let (Some(c), Some(e)) = (&c, objs().reqs.get_mut(request)) {
                    e.done = Some(c.clone());
                }
                c
            }
        };
        *flag = c_int::from(c.is_some());
        if let Some(c) = c {
            status::write(st, &c.status);
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Cancel(request: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        let h = *out(request, "request")?;
        let s = snap(h)?;
        if s.done.is_none() {
            rt()?.cancel(s.req)?;
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Test_cancelled(st: *const MPI_Status, flag: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        let s = crate::args::slice(st, 1, "status")?;
        *out(flag, "flag")? = c_int::from(s[0].cancelled());
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Start(request: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        let h = *out(request, "request")?;
        start(&[h])
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Startall(count: c_int, reqs: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        let hs = slice(reqs, crate::args::count(count)?, "array_of_requests")?;
        start(hs)
    })
}

unsafe fn start(hs: &[c_int]) -> R<()> {
    let mut rs = Vec::with_capacity(hs.len());
    for &h in hs {
        snap(h)?;
    }
    // A partitioned send is posted by its last MPI_Pready, not here.
    for h in crate::partitioned::start(hs) {
        let s = snap(h)?;
        if !s.persistent {
            return crate::error::fail(ErrorClass::Request, "MPI_Start needs a persistent request");
        }
        rs.push(s.req);
    }
    rt()?.startall(&rs)?;
    // A completion MPI_Request_get_status saw belongs to the activation
    // before this one.
    let mut o = objs();
    for &h in hs {
        if let Some(e) = o.reqs.get_mut(h) {
            e.done = None;
        }
    }
    Ok(())
}
