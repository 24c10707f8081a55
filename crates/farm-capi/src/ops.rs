//! `MpiOps` over the C MPI library the program links: each call is the
//! C function of the same name, its return code turned into an `MpiError`.

use std::os::raw::c_int;

use wanmpi::{ErrorClass, MpiError};
use wanmpi_farm::raw::{MpiOps, RawStatus};

use crate::ffi::{self, Comm, Request};

/// One of the farm's communicators, as a C handle.
pub struct COps {
    pub comm: Comm,
}

/// The error of an MPI call's return code, `None` for MPI_SUCCESS.
pub fn error(code: c_int, what: &str) -> Option<MpiError> {
    if code == ffi::SUCCESS {
        return None;
    }
    let mut class = code;
    // SAFETY: a plain query with an out-pointer to a local.
    unsafe { ffi::MPI_Error_class(code, &mut class) };
    // The farm only tells lost peers from the rest.
    let c = if class == ffi::ERR_PROC_FAILED { ErrorClass::ProcFailed } else { ErrorClass::Other };
    Some(MpiError::new(c, format!("{what} failed with MPI error {code} (class {class})")))
}

pub fn check(code: c_int, what: &str) -> Result<(), MpiError> {
    error(code, what).map_or(Ok(()), Err)
}

fn count(len: usize) -> Result<c_int, MpiError> {
    c_int::try_from(len).map_err(|_| MpiError::new(ErrorClass::Count, format!("{len} bytes exceed an MPI count")))
}

fn req_of(r: u64) -> Request {
    r as u32 as Request // round trip of `u64::from(h as u32)` below
}

fn handle(h: Request) -> u64 {
    u64::from(h as u32)
}

fn status(st: &ffi::Status, error_code: Option<c_int>) -> RawStatus {
    let mut n: c_int = 0;
    let mut cancelled: c_int = 0;
    // SAFETY: queries on a status we own.
    unsafe {
        ffi::MPI_Get_count(st, ffi::BYTE, &mut n);
        ffi::MPI_Test_cancelled(st, &mut cancelled);
    }
    let bytes = if n == ffi::UNDEFINED || n < 0 { 0 } else { n as usize };
    RawStatus { source: st.source, tag: st.tag, bytes, error: error_code.and_then(|c| error(c, "a farm message")), cancelled: cancelled != 0 }
}

impl MpiOps for COps {
    unsafe fn isend(&self, buf: *const u8, len: usize, dest: i32, tag: i32, sync: bool) -> Result<u64, MpiError> {
        let mut r = ffi::REQUEST_NULL;
        let n = count(len)?;
        let code = if sync {
            ffi::MPI_Issend(buf.cast(), n, ffi::BYTE, dest, tag, self.comm, &mut r)
        } else {
            ffi::MPI_Isend(buf.cast(), n, ffi::BYTE, dest, tag, self.comm, &mut r)
        };
        check(code, "MPI_Isend").map(|_| handle(r))
    }

    unsafe fn irecv(&self, buf: *mut u8, len: usize, source: i32, tag: i32) -> Result<u64, MpiError> {
        let mut r = ffi::REQUEST_NULL;
        let code = ffi::MPI_Irecv(buf.cast(), count(len)?, ffi::BYTE, source, tag, self.comm, &mut r);
        check(code, "MPI_Irecv").map(|_| handle(r))
    }

    fn testsome(&self, reqs: &[Option<u64>]) -> Result<Vec<(usize, RawStatus)>, MpiError> {
        let mut hs: Vec<Request> = reqs.iter().map(|r| r.map_or(ffi::REQUEST_NULL, req_of)).collect();
        let n = count(hs.len())?;
        let mut out: c_int = 0;
        let mut idx = vec![0 as c_int; hs.len()];
        let mut st = vec![ffi::Status::default(); hs.len()];
        // SAFETY: every array holds `n` elements.
        let code = unsafe { ffi::MPI_Testsome(n, hs.as_mut_ptr(), &mut out, idx.as_mut_ptr(), st.as_mut_ptr()) };
        // MPI_ERR_IN_STATUS: per-request errors are in the statuses.
        let per_status = code == ffi::ERR_IN_STATUS;
        if !per_status {
            check(code, "MPI_Testsome")?;
        }
        if out == ffi::UNDEFINED || out <= 0 {
            return Ok(vec![]);
        }
        let done = (out as usize).min(hs.len());
        Ok((0..done)
            .filter_map(|j| {
                let i = usize::try_from(idx[j]).ok().filter(|i| *i < reqs.len())?;
                let e = if per_status && st[j].error != ffi::ERR_PENDING { Some(st[j].error) } else { None };
                Some((i, status(&st[j], e)))
            })
            .collect())
    }

    fn test(&self, req: u64) -> Result<Option<RawStatus>, MpiError> {
        let mut r = req_of(req);
        let mut flag: c_int = 0;
        let mut st = ffi::Status::default();
        // SAFETY: out-pointers to locals.
        let code = unsafe { ffi::MPI_Test(&mut r, &mut flag, &mut st) };
        check(code, "MPI_Test")?;
        Ok((flag != 0).then(|| status(&st, None)))
    }

    fn cancel(&self, req: u64) -> Result<(), MpiError> {
        let mut r = req_of(req);
        // SAFETY: a handle the farm got from this library.
        check(unsafe { ffi::MPI_Cancel(&mut r) }, "MPI_Cancel")
    }

    fn request_free(&self, req: u64) -> Result<(), MpiError> {
        let mut r = req_of(req);
        // SAFETY: as in `cancel`.
        check(unsafe { ffi::MPI_Request_free(&mut r) }, "MPI_Request_free")
    }
}
