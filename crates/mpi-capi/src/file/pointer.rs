//! File pointers (MPI-4.0 §14.4.3-14.4.4): seek and position, individual
//! and shared.

use std::os::raw::{c_int, c_long};

use super::{call_file, file, FileHandle};
use crate::args::out;

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_seek(fh: FileHandle, offset: c_long, whence: c_int) -> c_int {
    call_file(fh, || file(fh)?.seek(offset, whence))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_get_position(fh: FileHandle, offset: *mut c_long) -> c_int {
    call_file(fh, || {
        let o = out(offset, "offset")?;
        *o = file(fh)?.position();
        Ok(())
    })
}

/// MPI_File_seek_shared: collective.
#[no_mangle]
pub unsafe extern "C" fn PMPI_File_seek_shared(fh: FileHandle, offset: c_long, whence: c_int) -> c_int {
    call_file(fh, || file(fh)?.seek_shared(offset, whence))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_get_position_shared(fh: FileHandle, offset: *mut c_long) -> c_int {
    call_file(fh, || {
        let o = out(offset, "offset")?;
        *o = file(fh)?.position_shared()?;
        Ok(())
    })
}
