//! What the generated functions of `stubs.rs` share: a function wanmpi does
//! not implement fails only its own call, with MPI_ERR_UNSUPPORTED_OPERATION
//! and a message naming it, through the error handler of its communicator
//! (MPI_COMM_WORLD's when it has none), after setting its output handles to
//! their null values so that a later MPI_Wait or free sees a null handle.
//! The list is in docs/c-api.md ("Not supported").

use std::ffi::c_void;
use std::os::raw::c_int;

use wanmpi_runtime::{ErrorClass, MpiError};

use crate::error::{code_of, raise};

fn not_supported(name: &str) -> MpiError {
    MpiError::new(ErrorClass::UnsupportedOperation, format!("{name} is not supported by wanmpi"))
}

/// Fails `name` through `comm`'s error handler.
pub fn unsupported(name: &str, comm: c_int) -> c_int {
    raise(comm, not_supported(name))
}

/// Fails `name` with the code only (sessions: there is no session whose
/// handler could apply).
pub fn unsupported_returned(name: &str) -> c_int {
    code_of(&not_supported(name))
}

/// Fails file call `name` through MPI_FILE_NULL's error handler
/// (MPI_ERRORS_RETURN unless the user set another), as MPI-IO errors
/// without a file go.
pub fn unsupported_file(name: &str) -> c_int {
    let code = code_of(&not_supported(name));
    // SAFETY: MPI_FILE_NULL is a valid argument.
    unsafe { crate::file::errhandler::PMPI_File_call_errhandler(std::ptr::null_mut(), code) };
    code
}

/// Sets a handle output argument to `null` (nothing when it is a null pointer).
pub fn null_out(p: *mut c_int, null: c_int) {
    // SAFETY: the caller's output argument, or null.
    if let Some(h) = unsafe { p.as_mut() } {
        *h = null;
    }
}

/// MPI_FILE_NULL is a null pointer.
pub fn null_file(p: *mut c_void) {
    let p = p as *mut *mut c_void;
    // SAFETY: the caller's MPI_File output argument, or null.
    if let Some(h) = unsafe { p.as_mut() } {
        *h = std::ptr::null_mut();
    }
}
