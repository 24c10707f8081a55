//! Blocking data access (MPI-4.0 §14.4.2-14.4.4): explicit offsets,
//! individual and shared file pointers, collective and ordered forms.
//! Each call decodes its buffer and hands it to `wanmpi_io::File`.

use std::ffi::c_void;
use std::os::raw::{c_int, c_long};

use wanmpi_io::{At, File};
use wanmpi_runtime::{Datatype, Status};

use super::{call_file, file, FileHandle};
use crate::args::{buffer, count, datatype, Count};
use crate::error::R;
use crate::status::{self, MPI_Status};

/// A data access's operation on the decoded buffer.
pub type Op<'a> = &'a dyn Fn(&File, *mut u8, usize, &Datatype) -> R<Status>;

/// Decodes `buf, c, dt` and runs `op` on the file of `fh`.
pub unsafe fn with_buffer<C: Count>(fh: FileHandle, buf: *const c_void, c: C, dt: c_int, op: Op<'_>) -> R<Status> {
    let f = file(fh)?;
    let n = count(c)?;
    let d = datatype(dt)?;
    buffer(buf as *const u8, n, &d)?;
    op(&f, buf as *mut u8, n, &d)
}

/// A blocking access: its status on success.
unsafe fn access<C: Count>(fh: FileHandle, buf: *const c_void, c: C, dt: c_int, st: *mut MPI_Status, op: Op<'_>) -> c_int {
    call_file(fh, || {
        let s = with_buffer(fh, buf, c, dt, op)?;
        status::write(st, &s);
        Ok(())
    })
}

// The operations, shared with the split-collective and nonblocking forms.
// SAFETY (all): `with_buffer` checked the buffer against count and datatype.
pub fn read_at(o: c_long) -> impl Fn(&File, *mut u8, usize, &Datatype) -> R<Status> {
    move |f, b, n, d| unsafe { f.read(At::Offset(o), b, n, d) }
}
pub fn read_at_all(o: c_long) -> impl Fn(&File, *mut u8, usize, &Datatype) -> R<Status> {
    move |f, b, n, d| unsafe { f.read_all(At::Offset(o), b, n, d) }
}
pub fn write_at(o: c_long) -> impl Fn(&File, *mut u8, usize, &Datatype) -> R<Status> {
    move |f, b, n, d| unsafe { f.write(At::Offset(o), b, n, d) }
}
pub fn write_at_all(o: c_long) -> impl Fn(&File, *mut u8, usize, &Datatype) -> R<Status> {
    move |f, b, n, d| unsafe { f.write_all(At::Offset(o), b, n, d) }
}
pub fn read(at: At) -> impl Fn(&File, *mut u8, usize, &Datatype) -> R<Status> {
    move |f, b, n, d| unsafe { f.read(at, b, n, d) }
}
pub fn write(at: At) -> impl Fn(&File, *mut u8, usize, &Datatype) -> R<Status> {
    move |f, b, n, d| unsafe { f.write(at, b, n, d) }
}
pub fn read_all() -> impl Fn(&File, *mut u8, usize, &Datatype) -> R<Status> {
    |f, b, n, d| unsafe { f.read_all(At::Individual, b, n, d) }
}
pub fn write_all() -> impl Fn(&File, *mut u8, usize, &Datatype) -> R<Status> {
    |f, b, n, d| unsafe { f.write_all(At::Individual, b, n, d) }
}
pub fn read_ordered() -> impl Fn(&File, *mut u8, usize, &Datatype) -> R<Status> {
    |f, b, n, d| unsafe { f.read_ordered(b, n, d) }
}
pub fn write_ordered() -> impl Fn(&File, *mut u8, usize, &Datatype) -> R<Status> {
    |f, b, n, d| unsafe { f.write_ordered(b, n, d) }
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_read_at(fh: FileHandle, o: c_long, buf: *mut c_void, c: c_int, dt: c_int, st: *mut MPI_Status) -> c_int {
    access(fh, buf, c, dt, st, &read_at(o))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_read_at_c(fh: FileHandle, o: c_long, buf: *mut c_void, c: c_long, dt: c_int, st: *mut MPI_Status) -> c_int {
    access(fh, buf, c, dt, st, &read_at(o))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_read_at_all(fh: FileHandle, o: c_long, buf: *mut c_void, c: c_int, dt: c_int, st: *mut MPI_Status) -> c_int {
    access(fh, buf, c, dt, st, &read_at_all(o))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_read_at_all_c(fh: FileHandle, o: c_long, buf: *mut c_void, c: c_long, dt: c_int, st: *mut MPI_Status) -> c_int {
    access(fh, buf, c, dt, st, &read_at_all(o))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_write_at(fh: FileHandle, o: c_long, buf: *const c_void, c: c_int, dt: c_int, st: *mut MPI_Status) -> c_int {
    access(fh, buf, c, dt, st, &write_at(o))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_write_at_c(fh: FileHandle, o: c_long, buf: *const c_void, c: c_long, dt: c_int, st: *mut MPI_Status) -> c_int {
    access(fh, buf, c, dt, st, &write_at(o))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_write_at_all(fh: FileHandle, o: c_long, buf: *const c_void, c: c_int, dt: c_int, st: *mut MPI_Status) -> c_int {
    access(fh, buf, c, dt, st, &write_at_all(o))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_write_at_all_c(fh: FileHandle, o: c_long, buf: *const c_void, c: c_long, dt: c_int, st: *mut MPI_Status) -> c_int {
    access(fh, buf, c, dt, st, &write_at_all(o))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_read(fh: FileHandle, buf: *mut c_void, c: c_int, dt: c_int, st: *mut MPI_Status) -> c_int {
    access(fh, buf, c, dt, st, &read(At::Individual))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_read_c(fh: FileHandle, buf: *mut c_void, c: c_long, dt: c_int, st: *mut MPI_Status) -> c_int {
    access(fh, buf, c, dt, st, &read(At::Individual))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_read_all(fh: FileHandle, buf: *mut c_void, c: c_int, dt: c_int, st: *mut MPI_Status) -> c_int {
    access(fh, buf, c, dt, st, &read_all())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_read_all_c(fh: FileHandle, buf: *mut c_void, c: c_long, dt: c_int, st: *mut MPI_Status) -> c_int {
    access(fh, buf, c, dt, st, &read_all())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_write(fh: FileHandle, buf: *const c_void, c: c_int, dt: c_int, st: *mut MPI_Status) -> c_int {
    access(fh, buf, c, dt, st, &write(At::Individual))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_write_c(fh: FileHandle, buf: *const c_void, c: c_long, dt: c_int, st: *mut MPI_Status) -> c_int {
    access(fh, buf, c, dt, st, &write(At::Individual))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_write_all(fh: FileHandle, buf: *const c_void, c: c_int, dt: c_int, st: *mut MPI_Status) -> c_int {
    access(fh, buf, c, dt, st, &write_all())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_write_all_c(fh: FileHandle, buf: *const c_void, c: c_long, dt: c_int, st: *mut MPI_Status) -> c_int {
    access(fh, buf, c, dt, st, &write_all())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_read_shared(fh: FileHandle, buf: *mut c_void, c: c_int, dt: c_int, st: *mut MPI_Status) -> c_int {
    access(fh, buf, c, dt, st, &read(At::Shared))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_read_shared_c(fh: FileHandle, buf: *mut c_void, c: c_long, dt: c_int, st: *mut MPI_Status) -> c_int {
    access(fh, buf, c, dt, st, &read(At::Shared))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_write_shared(fh: FileHandle, buf: *const c_void, c: c_int, dt: c_int, st: *mut MPI_Status) -> c_int {
    access(fh, buf, c, dt, st, &write(At::Shared))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_write_shared_c(fh: FileHandle, buf: *const c_void, c: c_long, dt: c_int, st: *mut MPI_Status) -> c_int {
    access(fh, buf, c, dt, st, &write(At::Shared))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_read_ordered(fh: FileHandle, buf: *mut c_void, c: c_int, dt: c_int, st: *mut MPI_Status) -> c_int {
    access(fh, buf, c, dt, st, &read_ordered())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_read_ordered_c(fh: FileHandle, buf: *mut c_void, c: c_long, dt: c_int, st: *mut MPI_Status) -> c_int {
    access(fh, buf, c, dt, st, &read_ordered())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_write_ordered(fh: FileHandle, buf: *const c_void, c: c_int, dt: c_int, st: *mut MPI_Status) -> c_int {
    access(fh, buf, c, dt, st, &write_ordered())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_write_ordered_c(fh: FileHandle, buf: *const c_void, c: c_long, dt: c_int, st: *mut MPI_Status) -> c_int {
    access(fh, buf, c, dt, st, &write_ordered())
}
