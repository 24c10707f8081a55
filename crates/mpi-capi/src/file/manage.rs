//! File management (MPI-4.0 §14.2.4-14.2.8, §14.6.1, §14.3): size,
//! preallocation, sync, access mode, group, hints, atomicity, byte
//! offsets and type extents in the file.

use std::os::raw::{c_int, c_long};

use super::{call_file, file, FileHandle};
use crate::args::{datatype, new_group, out};

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_set_size(fh: FileHandle, size: c_long) -> c_int {
    call_file(fh, || file(fh)?.set_size(size))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_preallocate(fh: FileHandle, size: c_long) -> c_int {
    call_file(fh, || file(fh)?.preallocate(size))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_get_size(fh: FileHandle, size: *mut c_long) -> c_int {
    call_file(fh, || {
        let o = out(size, "size")?;
        *o = file(fh)?.size()?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_sync(fh: FileHandle) -> c_int {
    call_file(fh, || file(fh)?.sync())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_get_amode(fh: FileHandle, amode: *mut c_int) -> c_int {
    call_file(fh, || {
        let o = out(amode, "amode")?;
        *o = file(fh)?.amode();
        Ok(())
    })
}

/// MPI_File_get_group: a new group the program frees.
#[no_mangle]
pub unsafe extern "C" fn PMPI_File_get_group(fh: FileHandle, group: *mut c_int) -> c_int {
    call_file(fh, || {
        let o = out(group, "group")?;
        *o = new_group(file(fh)?.group()?)?;
        Ok(())
    })
}

/// MPI_File_get_info: a new info object the program frees.
#[no_mangle]
pub unsafe extern "C" fn PMPI_File_get_info(fh: FileHandle, info: *mut c_int) -> c_int {
    call_file(fh, || {
        let o = out(info, "info_used")?;
        *o = crate::info::insert(file(fh)?.info())?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_set_info(fh: FileHandle, info: c_int) -> c_int {
    call_file(fh, || file(fh)?.set_info(&crate::info::get(info)?))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_set_atomicity(fh: FileHandle, flag: c_int) -> c_int {
    call_file(fh, || file(fh)?.set_atomicity(flag != 0))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_get_atomicity(fh: FileHandle, flag: *mut c_int) -> c_int {
    call_file(fh, || {
        let o = out(flag, "flag")?;
        *o = c_int::from(file(fh)?.atomicity());
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_get_byte_offset(fh: FileHandle, offset: c_long, disp: *mut c_long) -> c_int {
    call_file(fh, || {
        let o = out(disp, "disp")?;
        *o = file(fh)?.byte_offset(offset)?;
        Ok(())
    })
}

/// MPI_File_get_type_extent: the extent in the file's representation (in
/// external32 or a registered one, from its element sizes; else the native extent).
#[no_mangle]
pub unsafe extern "C" fn PMPI_File_get_type_extent(fh: FileHandle, dt: c_int, extent: *mut c_long) -> c_int {
    call_file(fh, || {
        let o = out(extent, "extent")?;
        let f = file(fh)?;
        *o = f.type_extent(&datatype(dt)?)? as c_long;
        Ok(())
    })
}

/// MPI_File_get_type_extent_c: the same with an MPI_Count, which is as wide.
#[no_mangle]
pub unsafe extern "C" fn PMPI_File_get_type_extent_c(fh: FileHandle, dt: c_int, extent: *mut c_long) -> c_int {
    PMPI_File_get_type_extent(fh, dt, extent)
}
