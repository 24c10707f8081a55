//! Error codes and error handlers (MPI-3.1 §8.3-8.5). Codes are the error
//! classes themselves (MPICH's numbers), which keeps programs that compare
//! codes against classes working; the latest detailed message of each class
//! is kept for MPI_Error_string.

use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

use wanmpi_runtime::{ErrorClass, MpiError};

use crate::args::comm_id;
use crate::global::{objs, rt_any};
use crate::predef::COMM_WORLD;

pub type R<T> = Result<T, MpiError>;

pub fn fail<T>(class: ErrorClass, msg: impl Into<String>) -> R<T> {
    Err(MpiError::new(class, msg))
}

pub const SUCCESS: c_int = 0;
/// MPI_ERR_IN_STATUS: look at each status's MPI_ERROR.
pub const ERR_IN_STATUS: c_int = 17;
pub const ERR_PENDING: c_int = 18;

/// Records the message and returns the code of `e`.
pub fn code_of(e: &MpiError) -> c_int {
    objs().messages.insert(e.class as c_int, e.msg.clone());
    e.class as c_int
}

/// Runs an entry point: a panic becomes MPI_ERR_INTERN, an error goes
/// through the error handler of `comm` (MPI_COMM_WORLD's when `comm` is
/// not a valid communicator or MPI is not running).
pub fn call(comm: c_int, f: impl FnOnce() -> R<()>) -> c_int {
    let r = catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| Err(MpiError::new(ErrorClass::Intern, "internal error (a panic inside wanmpi)")));
    match r {
        Ok(()) => SUCCESS,
        Err(e) => raise(comm, e),
    }
}

/// Applies `comm`'s error handler to `e` and returns its code.
pub fn raise(comm: c_int, e: MpiError) -> c_int {
    let code = code_of(&e);
    let Some(rt) = rt_any() else { return code };
    if crate::global::finalized() {
        return code;
    }
    let cid = comm_id(comm).or_else(|_| comm_id(COMM_WORLD)).unwrap_or(wanmpi_runtime::COMM_WORLD);
    let cid = if rt.comm_size(cid).is_ok() { cid } else { wanmpi_runtime::COMM_WORLD };
    match rt.handle_error::<()>(cid, Err(e)) {
        Ok(()) => SUCCESS,
        Err(_) => code,
    }
}

/// The error class of a code: predefined codes are their classes; codes
/// and classes the user added (MPI_Add_error_class/_code) are looked up.
pub fn class_of(code: c_int) -> Option<c_int> {
    if (0..=103).contains(&code) {
        return Some(code);
    }
    objs().user_codes.get(&code).map(|(class, _)| *class)
}

/// MPI_Error_string text for a code.
pub fn describe(code: c_int) -> String {
    if code == SUCCESS {
        return "MPI_SUCCESS: no errors".into();
    }
    if let Some((_, text)) = objs().user_codes.get(&code) {
        return text.clone();
    }
    let detail = objs().messages.get(&code).cloned();
    match class_from_int(code) {
        Some(c) => match detail {
            Some(d) => format!("{}: {}: {d}", c.mpi_name(), c.description()),
            None => format!("{}: {}", c.mpi_name(), c.description()),
        },
        None => match detail {
            Some(d) => format!("error code {code}: {d}"),
            None => format!("error code {code}"),
        },
    }
}

pub fn class_from_int(code: c_int) -> Option<ErrorClass> {
    ErrorClass::from_code(code)
}

/// MPI_Add_error_class (MPI-4.0 §9.5): a new class, which is also a code.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Add_error_class(errorclass: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        let o = crate::args::out(errorclass, "errorclass")?;
        *o = new_code(None)?;
        Ok(())
    })
}

/// MPI_Add_error_code: a new code of an existing class.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Add_error_code(errorclass: c_int, errorcode: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        let o = crate::args::out(errorcode, "errorcode")?;
        if class_of(errorclass) != Some(errorclass) {
            return fail(ErrorClass::Arg, format!("{errorclass} is not an error class"));
        }
        *o = new_code(Some(errorclass))?;
        Ok(())
    })
}

/// MPI_Add_error_string: the text MPI_Error_string gives for a user code.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Add_error_string(errorcode: c_int, string: *const std::ffi::c_char) -> c_int {
    call(COMM_WORLD, || {
        let s = crate::args::cstr(string, "string")?;
        if s.len() >= crate::predef::MAX_ERROR_STRING {
            return fail(ErrorClass::Arg, "the error string is longer than MPI_MAX_ERROR_STRING");
        }
        match objs().user_codes.get_mut(&errorcode) {
            Some(e) => {
                e.1 = s.to_string();
                Ok(())
            }
            None => fail(ErrorClass::Arg, format!("{errorcode} is not a code or class added by the user")),
        }
    })
}

/// Allocates the next code after MPI_LASTUSEDCODE and moves that attribute.
fn new_code(class: Option<c_int>) -> R<c_int> {
    use std::sync::atomic::Ordering;
    let mut o = objs();
    let code = crate::attr::LASTUSEDCODE_VALUE
        .load(Ordering::SeqCst)
        .checked_add(1)
        .ok_or_else(|| MpiError::new(ErrorClass::Intern, "no error codes left"))?;
    o.user_codes.insert(code, (class.unwrap_or(code), String::new()));
    crate::attr::LASTUSEDCODE_VALUE.store(code, Ordering::SeqCst);
    Ok(code)
}
