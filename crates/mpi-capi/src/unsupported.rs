//! What the generated functions of `stubs.rs` share: a function wanmpi does
//! not implement fails only its own call, with MPI_ERR_UNSUPPORTED_OPERATION
//! and a message naming it, through the error handler of its communicator
//! (MPI_COMM_WORLD's when it has none), after setting its output handles to
//! their null values so that a later MPI_Wait or free sees a null handle.
//! The list is in docs/c-api.md ("Not supported").
//!
//! Large-count (`_c`) forwarders use `narrow`/`widen` to call the int
//! version when the values fit.

use std::ffi::c_void;
use std::os::raw::{c_int, c_long};

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

/// An MPI_Count argument as an int, if it fits.
pub fn narrow(v: c_long) -> Option<c_int> {
    c_int::try_from(v).ok()
}

/// The large-count call's error when a value does not fit the int version.
pub fn too_large(name: &str, what: &str) -> c_int {
    raise(
        crate::predef::COMM_WORLD,
        MpiError::new(ErrorClass::Count, format!("{name}: {what} does not fit in an int, and wanmpi's large-count calls go through the int ones")),
    )
}

/// Writes an int result to the large-count output `p` after a successful call.
pub fn widen(v: c_int, p: *mut c_long, rc: c_int) {
    if rc != 0 {
        return;
    }
    // SAFETY: the caller's MPI_Count output argument, or null.
    if let Some(o) = unsafe { p.as_mut() } {
        // MPI_UNDEFINED stays MPI_UNDEFINED.
        *o = c_long::from(v);
    }
}
