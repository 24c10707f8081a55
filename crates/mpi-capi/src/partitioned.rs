//! Partitioned point-to-point communication (MPI-4.0 chapter 4) over
//! persistent requests: MPI_Psend_init is a persistent send of all the
//! partitions, posted once every partition of an activation is marked
//! ready (MPI_Pready*); MPI_Precv_init is a persistent receive, and
//! MPI_Parrived reports a partition as arrived once the whole message has.
//! MPI allows both (a partition may arrive later than its MPI_Pready, and
//! all at once). The messages travel on the communicator's point-to-point
//! context under the user's tag, so an ordinary receive with that tag
//! could take one: programs keep their tags apart.

use std::ffi::c_void;
use std::os::raw::{c_int, c_long};

use wanmpi_runtime::{ErrorClass, MpiError, SendMode};

use crate::args::{buffer, comm_id, count, datatype, out, slice};
use crate::error::{call, fail, R};
use crate::global::{objs, rt};
use crate::predef::{COMM_WORLD, REQUEST_NULL};
use crate::request::new_request;

/// A partitioned send's activation: which partitions are ready.
#[derive(Debug, Clone)]
pub struct PSend {
    ready: Vec<bool>,
    started: bool,
}

fn elements(partitions: c_int, n: c_long) -> R<usize> {
    let p = count(partitions)?;
    let n = usize::try_from(n).or_else(|_| fail(ErrorClass::Count, format!("count {n} is negative")))?;
    p.checked_mul(n).ok_or_else(|| MpiError::new(ErrorClass::Count, "partitions times count overflows"))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Psend_init(
    buf: *const c_void,
    partitions: c_int,
    n: c_long,
    dt: c_int,
    dest: c_int,
    tag: c_int,
    comm: c_int,
    _info: c_int,
    req: *mut c_int,
) -> c_int {
    call(comm, || {
        let o = out(req, "request")?;
        let (total, d) = (elements(partitions, n)?, datatype(dt)?);
        buffer(buf as *const u8, total, &d)?;
        let r = rt()?.send_init(buf as *const u8, total, &d, dest, tag, comm_id(comm)?, SendMode::Standard)?;
        let h = new_request(r, comm, true)?;
        objs().psends.insert(h, PSend { ready: vec![false; count(partitions)?], started: false });
        *o = h;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Precv_init(
    buf: *mut c_void,
    partitions: c_int,
    n: c_long,
    dt: c_int,
    source: c_int,
    tag: c_int,
    comm: c_int,
    _info: c_int,
    req: *mut c_int,
) -> c_int {
    call(comm, || {
        let o = out(req, "request")?;
        let (total, d) = (elements(partitions, n)?, datatype(dt)?);
        buffer(buf as *const u8, total, &d)?;
        *o = new_request(rt()?.recv_init(buf as *mut u8, total, &d, source, tag, comm_id(comm)?)?, comm, true)?;
        Ok(())
    })
}

/// MPI_Start of partitioned sends: each activation begins with no
/// partition ready (a send of no partitions goes at once). Returns the
/// handles MPI_Start passes on to the runtime now.
pub fn start(hs: &[c_int]) -> Vec<c_int> {
    let mut o = objs();
    hs.iter()
        .copied()
        .filter(|h| match o.psends.get_mut(h) {
            Some(p) => {
                p.ready.iter_mut().for_each(|r| *r = false);
                p.started = !p.ready.is_empty();
                p.ready.is_empty()
            }
            None => true,
        })
        .collect()
}

/// Marks `parts` ready; the send goes when the last one is.
fn ready(request: c_int, parts: &[c_int]) -> R<()> {
    let complete = {
        let mut o = objs();
        let p = o.psends.get_mut(&request).ok_or_else(|| MpiError::new(ErrorClass::Request, "MPI_Pready needs a partitioned send request"))?;
        if !p.started {
            return fail(ErrorClass::Request, "MPI_Pready before MPI_Start (or after every partition was ready)");
        }
        for &i in parts {
            let slot = usize::try_from(i).ok().and_then(|i| p.ready.get_mut(i));
            let Some(slot) = slot else { return fail(ErrorClass::Arg, format!("partition {i} of {}", p.ready.len())) };
            *slot = true;
        }
        let all = p.ready.iter().all(|&r| r);
        if all {
            p.started = false;
        }
        all
    };
    if complete {
        let req = objs().reqs.get(request).map(|e| e.req).ok_or_else(|| MpiError::new(ErrorClass::Request, "the request was freed"))?;
        // SAFETY: the buffer given to MPI_Psend_init, which MPI keeps valid while the request lives.
        unsafe { rt()?.start(req)? };
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Pready(partition: c_int, request: c_int) -> c_int {
    call(COMM_WORLD, || ready(request, &[partition]))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Pready_range(low: c_int, high: c_int, request: c_int) -> c_int {
    call(COMM_WORLD, || {
        if low > high {
            return fail(ErrorClass::Arg, format!("partition range {low}..={high} is empty"));
        }
        ready(request, &(low..=high).collect::<Vec<_>>())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Pready_list(n: c_int, parts: *const c_int, request: c_int) -> c_int {
    call(COMM_WORLD, || ready(request, slice(parts, count(n)?, "array_of_partitions")?))
}

/// MPI_Parrived: a partition has arrived once the whole message has.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Parrived(request: c_int, partition: c_int, flag: *mut c_int) -> c_int {
    if request == REQUEST_NULL || partition < 0 {
        return call(COMM_WORLD, || fail(ErrorClass::Arg, format!("MPI_Parrived on partition {partition} of {request:#x}")));
    }
    let mut unused = crate::status::MPI_Status::default();
    crate::request::PMPI_Request_get_status(request, flag, &mut unused)
}
