//! Error handlers and error strings (MPI-3.1 §8.3-8.5): C handler
//! functions become runtime `ErrHandler::User` closures that call them with
//! the communicator's handle and the error code.

use std::cell::Cell;
use std::ffi::c_char;
use std::os::raw::c_int;
use std::sync::Arc;

use wanmpi_runtime::{ErrHandler, ErrorClass, MpiError};

use crate::args::{comm_id, out, write_str};
use crate::error::{call, class_of, describe, fail, raise, R};
use crate::global::{objs, rt, CErrhFn};
use crate::predef::{self, COMM_WORLD, ERRHANDLER_NULL, ERRORS_ABORT, ERRORS_ARE_FATAL, ERRORS_RETURN};

thread_local! {
    /// The code MPI_Comm_call_errhandler hands a user handler while it
    /// runs: a class or code the program added (MPI_Add_error_class/_code)
    /// has no ErrorClass, so it travels beside the error.
    static CALLED_CODE: Cell<Option<c_int>> = const { Cell::new(None) };
}

/// Sets handler `eh` on communicator handle `comm`.
pub fn set(comm: c_int, eh: c_int) -> R<()> {
    let cid = comm_id(comm)?;
    let h = match eh {
        ERRORS_ARE_FATAL => ErrHandler::Fatal,
        ERRORS_RETURN => ErrHandler::Return,
        ERRORS_ABORT => ErrHandler::Abort,
        _ => {
            let f: CErrhFn = *objs().errhs.get(eh).ok_or_else(|| MpiError::new(ErrorClass::Arg, format!("{eh:#x} is not a valid error handler")))?;
            ErrHandler::User(Arc::new(move |on: wanmpi_runtime::CommId, e: &MpiError| {
                let mut c = crate::args::comm_handle(on);
                let mut code = CALLED_CODE.with(Cell::take).unwrap_or(e.class as c_int);
                // SAFETY: the user's handler, called as MPI specifies.
                unsafe { f(&mut c, &mut code) };
            }))
        }
    };
    rt()?.set_errhandler(cid, h)?;
    let mut o = objs();
    if matches!(eh, ERRORS_ARE_FATAL | ERRORS_RETURN | ERRORS_ABORT) {
        o.comm_errh.remove(&comm);
    } else {
        o.comm_errh.insert(comm, eh);
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_create_errhandler(f: Option<CErrhFn>, eh: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        let o = out(eh, "errhandler")?;
        let Some(f) = f else { return fail(ErrorClass::Arg, "error handler function is a null pointer") };
        *o = objs().errhs.insert(f).ok_or_else(|| MpiError::new(ErrorClass::NoMem, "too many error handlers"))?;
        Ok(())
    })
}

/// MPI-1's name for MPI_Comm_create_errhandler.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Errhandler_create(f: Option<CErrhFn>, eh: *mut c_int) -> c_int {
    PMPI_Comm_create_errhandler(f, eh)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_set_errhandler(comm: c_int, eh: c_int) -> c_int {
    call(comm, || set(comm, eh))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Errhandler_set(comm: c_int, eh: c_int) -> c_int {
    PMPI_Comm_set_errhandler(comm, eh)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_get_errhandler(comm: c_int, eh: *mut c_int) -> c_int {
    call(comm, || {
        let o = out(eh, "errhandler")?;
        *o = match rt()?.get_errhandler(comm_id(comm)?)? {
            ErrHandler::Fatal => ERRORS_ARE_FATAL,
            ErrHandler::Return => ERRORS_RETURN,
            ErrHandler::Abort => ERRORS_ABORT,
            ErrHandler::User(_) => objs().comm_errh.get(&comm).copied().unwrap_or(ERRHANDLER_NULL),
        };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Errhandler_get(comm: c_int, eh: *mut c_int) -> c_int {
    PMPI_Comm_get_errhandler(comm, eh)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Errhandler_free(eh: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        let h = out(eh, "errhandler")?;
        // Builtin handlers cannot go. A user handler attached to a
        // communicator, window or file lives on (MPI frees it when nothing
        // uses it): a communicator made from that one later inherits it by
        // its handle.
        if !matches!(*h, ERRORS_ARE_FATAL | ERRORS_RETURN | ERRORS_ABORT) {
            let mut o = objs();
            if o.errhs.get(*h).is_none() {
                return Err(MpiError::new(ErrorClass::Arg, format!("{:#x} is not a valid error handler", *h)));
            }
            let on_win = o.wins.iter().any(|(_, w)| w.errh == *h);
            if !o.comm_errh.values().any(|v| v == h) && !on_win && !crate::file::files().uses_errhandler(*h) {
                o.errhs.remove(*h);
            }
        }
        *h = ERRHANDLER_NULL;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_call_errhandler(comm: c_int, code: c_int) -> c_int {
    let class = crate::error::class_from_int(code).unwrap_or(ErrorClass::Other);
    CALLED_CODE.with(|c| c.set(Some(code)));
    raise(comm, MpiError::new(class, format!("MPI_Comm_call_errhandler with code {code}")));
    CALLED_CODE.with(|c| c.set(None));
    crate::error::SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Error_string(code: c_int, s: *mut c_char, len: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        out(len, "resultlen")?;
        write_str(&describe(code), s, predef::MAX_ERROR_STRING, len)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Error_class(code: c_int, class: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        let o = out(class, "errorclass")?;
        *o = class_of(code).ok_or_else(|| MpiError::new(ErrorClass::Arg, format!("{code} is not a valid error code")))?;
        Ok(())
    })
}

/// MPI_File_create_errhandler, MPI_Win_create_errhandler and
/// MPI_Session_create_errhandler: the handler functions have the same shape
/// (`void f(HANDLE *, int *, ...)`), so they share the table. Setting and
/// calling them on files is in `file/errhandler.rs`.
#[no_mangle]
pub unsafe extern "C" fn PMPI_File_create_errhandler(f: Option<CErrhFn>, eh: *mut c_int) -> c_int {
    PMPI_Comm_create_errhandler(f, eh)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_create_errhandler(f: Option<CErrhFn>, eh: *mut c_int) -> c_int {
    PMPI_Comm_create_errhandler(f, eh)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Session_create_errhandler(f: Option<CErrhFn>, eh: *mut c_int) -> c_int {
    PMPI_Comm_create_errhandler(f, eh)
}
