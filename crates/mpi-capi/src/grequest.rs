//! Generalized requests (MPI-4.0 §13.2): the program's query, free and
//! cancel functions, wrapped for the runtime (`wanmpi_runtime::Generalized`).

use std::ffi::c_void;
use std::os::raw::c_int;

use wanmpi_runtime::{ErrorClass, Generalized, MpiError, Status};

use crate::args::out;
use crate::error::{call, fail};
use crate::global::{objs, rt};
use crate::predef::COMM_WORLD;
use crate::request::new_request;
use crate::status::MPI_Status;

pub type QueryFn = unsafe extern "C" fn(*mut c_void, *mut MPI_Status) -> c_int;
pub type FreeFn = unsafe extern "C" fn(*mut c_void) -> c_int;
pub type CancelFn = unsafe extern "C" fn(*mut c_void, c_int) -> c_int;

/// The program's functions and state. Calling them from whichever thread
/// completes the request is what MPI specifies.
#[derive(Clone, Copy)]
struct Callbacks {
    query: QueryFn,
    free: FreeFn,
    cancel: CancelFn,
    extra: *mut c_void,
}

// The extra state is the program's, handed back to its own functions.
unsafe impl Send for Callbacks {}

impl Callbacks {
    fn release(self) -> Option<MpiError> {
        // SAFETY: the program's free function with its own state.
        failed(unsafe { (self.free)(self.extra) }, "free")
    }

    fn cancelled(self, complete: bool) -> Option<MpiError> {
        // SAFETY: the program's cancel function with its own state.
        failed(unsafe { (self.cancel)(self.extra, c_int::from(complete)) }, "cancel")
    }

    fn status(self) -> Status {
        let mut st = MPI_Status { MPI_SOURCE: crate::predef::ANY_SOURCE, MPI_TAG: crate::predef::ANY_TAG, ..MPI_Status::default() };
        // SAFETY: the program's query function, on a status we own.
        let rc = unsafe { (self.query)(self.extra, &mut st) };
        let error = failed(rc, "query");
        Status { source: st.MPI_SOURCE, tag: st.MPI_TAG, bytes: st.bytes() as usize, error, cancelled: st.cancelled() }
    }
}

/// The error a program's function returned, in its error class.
fn failed(rc: c_int, which: &str) -> Option<MpiError> {
    (rc != 0).then(|| {
        let class = crate::error::class_of(rc).and_then(crate::error::class_from_int).unwrap_or(ErrorClass::Other);
        MpiError::new(class, format!("the generalized request's {which} function returned error {rc}"))
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Grequest_start(
    query: Option<QueryFn>,
    free: Option<FreeFn>,
    cancel: Option<CancelFn>,
    extra: *mut c_void,
    request: *mut c_int,
) -> c_int {
    call(COMM_WORLD, || {
        let o = out(request, "request")?;
        let (Some(query), Some(free), Some(cancel)) = (query, free, cancel) else {
            return fail(ErrorClass::Arg, "MPI_Grequest_start needs a query, a free and a cancel function");
        };
        let cb = Callbacks { query, free, cancel, extra };
        let g = Generalized {
            complete: false,
            query: Box::new(move || cb.status()),
            free: Some(Box::new(move || cb.release())),
            cancel: Box::new(move |complete| cb.cancelled(complete)),
        };
        *o = new_request(rt()?.grequest_start(g), COMM_WORLD, false)?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Grequest_complete(request: c_int) -> c_int {
    call(COMM_WORLD, || {
        let req = objs()
            .reqs
            .get(request)
            .map(|e| e.req)
            .ok_or_else(|| MpiError::new(ErrorClass::Request, format!("{request:#x} is not a valid request handle")))?;
        rt()?.grequest_complete(req)
    })
}
