//! Split collective data access (MPI-4.0 §14.4.5): the _begin call does
//! the collective access (`wanmpi_io::File::split_begin`), the _end call
//! returns its status.

use std::ffi::c_void;
use std::os::raw::{c_int, c_long};

use wanmpi_io::SplitKind;

use super::access::{self, with_buffer, Op};
use super::{call_file, file, FileHandle};
use crate::args::Count;
use crate::status::{self, MPI_Status};

unsafe fn begin<C: Count>(fh: FileHandle, kind: SplitKind, buf: *const c_void, c: C, dt: c_int, op: Op<'_>) -> c_int {
    call_file(fh, || file(fh)?.split_begin(kind, || with_buffer(fh, buf, c, dt, op)))
}

fn end(fh: FileHandle, kind: SplitKind, st: *mut MPI_Status) -> c_int {
    call_file(fh, || {
        let s = file(fh)?.split_end(kind)?;
        status::write(st, &s);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_read_all_begin(fh: FileHandle, buf: *mut c_void, c: c_int, dt: c_int) -> c_int {
    begin(fh, SplitKind::ReadAll, buf, c, dt, &access::read_all())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_read_all_begin_c(fh: FileHandle, buf: *mut c_void, c: c_long, dt: c_int) -> c_int {
    begin(fh, SplitKind::ReadAll, buf, c, dt, &access::read_all())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_read_all_end(fh: FileHandle, _buf: *mut c_void, st: *mut MPI_Status) -> c_int {
    end(fh, SplitKind::ReadAll, st)
}
#[no_mangle]
pub unsafe extern "C" fn PMPI_File_write_all_begin(fh: FileHandle, buf: *const c_void, c: c_int, dt: c_int) -> c_int {
    begin(fh, SplitKind::WriteAll, buf, c, dt, &access::write_all())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_write_all_begin_c(fh: FileHandle, buf: *const c_void, c: c_long, dt: c_int) -> c_int {
    begin(fh, SplitKind::WriteAll, buf, c, dt, &access::write_all())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_write_all_end(fh: FileHandle, _buf: *const c_void, st: *mut MPI_Status) -> c_int {
    end(fh, SplitKind::WriteAll, st)
}
#[no_mangle]
pub unsafe extern "C" fn PMPI_File_read_at_all_begin(fh: FileHandle, o: c_long, buf: *mut c_void, c: c_int, dt: c_int) -> c_int {
    begin(fh, SplitKind::ReadAtAll, buf, c, dt, &access::read_at_all(o))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_read_at_all_begin_c(fh: FileHandle, o: c_long, buf: *mut c_void, c: c_long, dt: c_int) -> c_int {
    begin(fh, SplitKind::ReadAtAll, buf, c, dt, &access::read_at_all(o))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_read_at_all_end(fh: FileHandle, _buf: *mut c_void, st: *mut MPI_Status) -> c_int {
    end(fh, SplitKind::ReadAtAll, st)
}
#[no_mangle]
pub unsafe extern "C" fn PMPI_File_write_at_all_begin(fh: FileHandle, o: c_long, buf: *const c_void, c: c_int, dt: c_int) -> c_int {
    begin(fh, SplitKind::WriteAtAll, buf, c, dt, &access::write_at_all(o))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_write_at_all_begin_c(fh: FileHandle, o: c_long, buf: *const c_void, c: c_long, dt: c_int) -> c_int {
    begin(fh, SplitKind::WriteAtAll, buf, c, dt, &access::write_at_all(o))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_write_at_all_end(fh: FileHandle, _buf: *const c_void, st: *mut MPI_Status) -> c_int {
    end(fh, SplitKind::WriteAtAll, st)
}
#[no_mangle]
pub unsafe extern "C" fn PMPI_File_read_ordered_begin(fh: FileHandle, buf: *mut c_void, c: c_int, dt: c_int) -> c_int {
    begin(fh, SplitKind::ReadOrdered, buf, c, dt, &access::read_ordered())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_read_ordered_begin_c(fh: FileHandle, buf: *mut c_void, c: c_long, dt: c_int) -> c_int {
    begin(fh, SplitKind::ReadOrdered, buf, c, dt, &access::read_ordered())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_read_ordered_end(fh: FileHandle, _buf: *mut c_void, st: *mut MPI_Status) -> c_int {
    end(fh, SplitKind::ReadOrdered, st)
}
#[no_mangle]
pub unsafe extern "C" fn PMPI_File_write_ordered_begin(fh: FileHandle, buf: *const c_void, c: c_int, dt: c_int) -> c_int {
    begin(fh, SplitKind::WriteOrdered, buf, c, dt, &access::write_ordered())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_write_ordered_begin_c(fh: FileHandle, buf: *const c_void, c: c_long, dt: c_int) -> c_int {
    begin(fh, SplitKind::WriteOrdered, buf, c, dt, &access::write_ordered())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_write_ordered_end(fh: FileHandle, _buf: *const c_void, st: *mut MPI_Status) -> c_int {
    end(fh, SplitKind::WriteOrdered, st)
}
