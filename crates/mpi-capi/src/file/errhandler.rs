//! Error handlers on files (MPI-4.0 §9.3.3): set, get and call, on open
//! files and on MPI_FILE_NULL (whose handler new files start with).
//! MPI_File_create_errhandler shares the handler table in `errhandler.rs`.

use std::os::raw::c_int;

use wanmpi_runtime::ErrorClass;

use super::{apply, call_file, files, FileHandle};
use crate::args::out;
use crate::error::{fail, SUCCESS};
use crate::global::objs;
use crate::predef::{ERRORS_ABORT, ERRORS_ARE_FATAL, ERRORS_RETURN};

fn known(eh: c_int) -> bool {
    matches!(eh, ERRORS_ARE_FATAL | ERRORS_RETURN | ERRORS_ABORT) || objs().errhs.get(eh).is_some()
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_set_errhandler(fh: FileHandle, eh: c_int) -> c_int {
    call_file(fh, || {
        if !known(eh) {
            return fail(ErrorClass::Arg, format!("{eh:#x} is not a valid error handler"));
        }
        if fh.is_null() {
            objs().file_null_errh = eh;
            return Ok(());
        }
        match files().get_mut(fh) {
            Some(e) => {
                e.errh = eh;
                Ok(())
            }
            None => fail(ErrorClass::File, format!("{fh:p} is not an open file handle")),
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_get_errhandler(fh: FileHandle, eh: *mut c_int) -> c_int {
    call_file(fh, || {
        let o = out(eh, "errhandler")?;
        if fh.is_null() {
            *o = objs().file_null_errh;
            return Ok(());
        }
        let set = files().get(fh).map(|e| e.errh);
        match set {
            Some(h) => {
                *o = h;
                Ok(())
            }
            None => fail(ErrorClass::File, format!("{fh:p} is not an open file handle")),
        }
    })
}

/// MPI_File_call_errhandler: the file's handler with `code`.
#[no_mangle]
pub unsafe extern "C" fn PMPI_File_call_errhandler(fh: FileHandle, code: c_int) -> c_int {
    if !fh.is_null() && files().get(fh).is_none() {
        return call_file(fh, || fail(ErrorClass::File, format!("{fh:p} is not an open file handle")));
    }
    apply(fh, super::errhandler_of(fh), code, &crate::error::describe(code));
    SUCCESS
}
