//! Nonblocking data access (MPI-4.0 §14.4.2-14.4.4, §14.4.5's MPI_File_i*
//! collectives): the access is done at once and the request returned
//! complete (a generalized request whose status is the access's), which
//! MPI allows. A nonblocking collective thus completes inside the call
//! (unlike MPI_Comm_idup, which completes in the background): fine for
//! programs that start it on every rank before waiting on anything else.

use std::ffi::c_void;
use std::os::raw::{c_int, c_long};

use wanmpi_io::At;
use wanmpi_runtime::{Generalized, Status};

use super::access::{self, with_buffer, Op};
use super::{call_file, FileHandle};
use crate::args::{out, Count};
use crate::error::R;
use crate::global::rt;
use crate::predef::COMM_WORLD;
use crate::request::new_request;

/// A request that is complete with status `s`.
fn done(s: Status) -> R<c_int> {
    let g = Generalized { complete: true, query: Box::new(move || s.clone()), free: None, cancel: Box::new(|_| None) };
    new_request(rt()?.grequest_start(g), COMM_WORLD, false)
}

unsafe fn start<C: Count>(fh: FileHandle, buf: *const c_void, c: C, dt: c_int, req: *mut c_int, op: Op<'_>) -> c_int {
    call_file(fh, || {
        let o = out(req, "request")?;
        *o = crate::predef::REQUEST_NULL;
        *o = done(with_buffer(fh, buf, c, dt, op)?)?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_iread_at(fh: FileHandle, o: c_long, buf: *mut c_void, c: c_int, dt: c_int, r: *mut c_int) -> c_int {
    start(fh, buf, c, dt, r, &access::read_at(o))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_iread_at_c(fh: FileHandle, o: c_long, buf: *mut c_void, c: c_long, dt: c_int, r: *mut c_int) -> c_int {
    start(fh, buf, c, dt, r, &access::read_at(o))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_iread_at_all(fh: FileHandle, o: c_long, buf: *mut c_void, c: c_int, dt: c_int, r: *mut c_int) -> c_int {
    start(fh, buf, c, dt, r, &access::read_at_all(o))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_iread_at_all_c(fh: FileHandle, o: c_long, buf: *mut c_void, c: c_long, dt: c_int, r: *mut c_int) -> c_int {
    start(fh, buf, c, dt, r, &access::read_at_all(o))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_iwrite_at(fh: FileHandle, o: c_long, buf: *const c_void, c: c_int, dt: c_int, r: *mut c_int) -> c_int {
    start(fh, buf, c, dt, r, &access::write_at(o))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_iwrite_at_c(fh: FileHandle, o: c_long, buf: *const c_void, c: c_long, dt: c_int, r: *mut c_int) -> c_int {
    start(fh, buf, c, dt, r, &access::write_at(o))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_iwrite_at_all(fh: FileHandle, o: c_long, buf: *const c_void, c: c_int, dt: c_int, r: *mut c_int) -> c_int {
    start(fh, buf, c, dt, r, &access::write_at_all(o))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_iwrite_at_all_c(fh: FileHandle, o: c_long, buf: *const c_void, c: c_long, dt: c_int, r: *mut c_int) -> c_int {
    start(fh, buf, c, dt, r, &access::write_at_all(o))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_iread(fh: FileHandle, buf: *mut c_void, c: c_int, dt: c_int, r: *mut c_int) -> c_int {
    start(fh, buf, c, dt, r, &access::read(At::Individual))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_iread_c(fh: FileHandle, buf: *mut c_void, c: c_long, dt: c_int, r: *mut c_int) -> c_int {
    start(fh, buf, c, dt, r, &access::read(At::Individual))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_iread_all(fh: FileHandle, buf: *mut c_void, c: c_int, dt: c_int, r: *mut c_int) -> c_int {
    start(fh, buf, c, dt, r, &access::read_all())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_iread_all_c(fh: FileHandle, buf: *mut c_void, c: c_long, dt: c_int, r: *mut c_int) -> c_int {
    start(fh, buf, c, dt, r, &access::read_all())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_iwrite(fh: FileHandle, buf: *const c_void, c: c_int, dt: c_int, r: *mut c_int) -> c_int {
    start(fh, buf, c, dt, r, &access::write(At::Individual))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_iwrite_c(fh: FileHandle, buf: *const c_void, c: c_long, dt: c_int, r: *mut c_int) -> c_int {
    start(fh, buf, c, dt, r, &access::write(At::Individual))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_iwrite_all(fh: FileHandle, buf: *const c_void, c: c_int, dt: c_int, r: *mut c_int) -> c_int {
    start(fh, buf, c, dt, r, &access::write_all())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_iwrite_all_c(fh: FileHandle, buf: *const c_void, c: c_long, dt: c_int, r: *mut c_int) -> c_int {
    start(fh, buf, c, dt, r, &access::write_all())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_iread_shared(fh: FileHandle, buf: *mut c_void, c: c_int, dt: c_int, r: *mut c_int) -> c_int {
    start(fh, buf, c, dt, r, &access::read(At::Shared))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_iread_shared_c(fh: FileHandle, buf: *mut c_void, c: c_long, dt: c_int, r: *mut c_int) -> c_int {
    start(fh, buf, c, dt, r, &access::read(At::Shared))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_iwrite_shared(fh: FileHandle, buf: *const c_void, c: c_int, dt: c_int, r: *mut c_int) -> c_int {
    start(fh, buf, c, dt, r, &access::write(At::Shared))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_iwrite_shared_c(fh: FileHandle, buf: *const c_void, c: c_long, dt: c_int, r: *mut c_int) -> c_int {
    start(fh, buf, c, dt, r, &access::write(At::Shared))
}
