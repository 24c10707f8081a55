//! Opening, closing and deleting files (MPI-4.0 §14.2.1-14.2.3), and the
//! Fortran integer of a file handle (§19.3.4).

use std::ffi::c_char;
use std::os::raw::c_int;

use wanmpi_io::File;

use super::{call_file, file, files, Entry, FileHandle};
use crate::args::{comm_id, cstr, out};
use crate::global::{objs, rt};

/// MPI_File_open: collective over `comm`; errors go through
/// MPI_FILE_NULL's handler, as there is no file yet.
#[no_mangle]
pub unsafe extern "C" fn PMPI_File_open(comm: c_int, filename: *const c_char, amode: c_int, info: c_int, fh: *mut FileHandle) -> c_int {
    call_file(std::ptr::null_mut(), || {
        let o = out(fh, "fh")?;
        *o = std::ptr::null_mut();
        let cid = comm_id(comm)?;
        let name = cstr(filename, "filename")?;
        let info = crate::info::get(info)?;
        let f = File::open(rt()?, cid, name, amode, info)?;
        let errh = objs().file_null_errh;
        *o = files().insert(Entry { file: std::sync::Arc::new(f), errh });
        Ok(())
    })
}

/// MPI_File_close: collective; the handle becomes MPI_FILE_NULL.
#[no_mangle]
pub unsafe extern "C" fn PMPI_File_close(fh: *mut FileHandle) -> c_int {
    let h = fh.as_ref().copied().unwrap_or(std::ptr::null_mut());
    call_file(h, || {
        let o = out(fh, "fh")?;
        let f = file(*o)?;
        let r = f.close();
        files().remove(*o);
        *o = std::ptr::null_mut();
        r
    })
}

/// MPI_File_delete: not collective.
#[no_mangle]
pub unsafe extern "C" fn PMPI_File_delete(filename: *const c_char, _info: c_int) -> c_int {
    call_file(std::ptr::null_mut(), || File::delete(cstr(filename, "filename")?))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_c2f(fh: FileHandle) -> c_int {
    c_int::try_from(fh as usize).unwrap_or(0)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_f2c(f: c_int) -> FileHandle {
    usize::try_from(f).unwrap_or(0) as FileHandle
}
