//! File views (MPI-4.0 §14.3): MPI_File_set_view and MPI_File_get_view.

use std::ffi::c_char;
use std::os::raw::{c_int, c_long};

use super::{call_file, file, FileHandle};
use crate::args::{cstr, datatype, datatype_handle, out, write_str};

/// MPI_MAX_DATAREP_STRING.
const MAX_DATAREP: usize = 128;

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_set_view(
    fh: FileHandle,
    disp: c_long,
    etype: c_int,
    filetype: c_int,
    datarep: *const c_char,
    info: c_int,
) -> c_int {
    call_file(fh, || {
        let f = file(fh)?;
        // A missing datarep is "native", as in ROMIO.
        let rep = if datarep.is_null() { "native" } else { cstr(datarep, "datarep")? };
        f.set_view(disp, datatype(etype)?, datatype(filetype)?, rep, super::datarep::lookup(rep), &crate::info::get(info)?)
    })
}

/// MPI_File_get_view: derived etypes and filetypes come back as new
/// handles the program frees (MPI-4.0 §14.3).
#[no_mangle]
pub unsafe extern "C" fn PMPI_File_get_view(
    fh: FileHandle,
    disp: *mut c_long,
    etype: *mut c_int,
    filetype: *mut c_int,
    datarep: *mut c_char,
) -> c_int {
    call_file(fh, || {
        let v = file(fh)?.view();
        *out(disp, "disp")? = v.disp as c_long;
        *out(etype, "etype")? = datatype_handle(&v.etype)?;
        *out(filetype, "filetype")? = datatype_handle(&v.filetype)?;
        write_str(&v.datarep, datarep, MAX_DATAREP, std::ptr::null_mut())
    })
}
