//! Error handlers on windows (MPI-4.0 §9.3.2). The handler functions are
//! created by MPI_Win_create_errhandler (`errhandler.rs`, one table for
//! every kind); a window starts with MPI_ERRORS_ARE_FATAL.

use std::os::raw::c_int;

use wanmpi_runtime::{ErrorClass, MpiError};

use super::call_win;
use crate::args::out;
use crate::global::objs;
use crate::predef::{ERRORS_ABORT, ERRORS_ARE_FATAL, ERRORS_RETURN};

#[no_mangle]
pub extern "C" fn PMPI_Win_set_errhandler(win: c_int, eh: c_int) -> c_int {
    call_win(win, || {
        let mut o = objs();
        if !matches!(eh, ERRORS_ARE_FATAL | ERRORS_RETURN | ERRORS_ABORT) && o.errhs.get(eh).is_none() {
            return Err(MpiError::new(ErrorClass::Arg, format!("{eh:#x} is not a valid error handler")));
        }
        let w = o.wins.get_mut(win).ok_or_else(|| MpiError::new(ErrorClass::Win, format!("{win:#x} is not a valid window")))?;
        w.errh = eh;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_get_errhandler(win: c_int, eh: *mut c_int) -> c_int {
    call_win(win, || {
        let dst = out(eh, "errhandler")?;
        *dst = objs().wins.get(win).map(|w| w.errh).ok_or_else(|| MpiError::new(ErrorClass::Win, format!("{win:#x} is not a valid window")))?;
        Ok(())
    })
}

/// MPI_Win_call_errhandler: runs the window's handler on `code` (the
/// code itself, which may be one the program added).
#[no_mangle]
pub extern "C" fn PMPI_Win_call_errhandler(win: c_int, code: c_int) -> c_int {
    let Some(errh) = objs().wins.get(win).map(|w| w.errh) else {
        return call_win(win, || Err(MpiError::new(ErrorClass::Win, format!("{win:#x} is not a valid window"))));
    };
    match errh {
        ERRORS_RETURN => {}
        ERRORS_ARE_FATAL | ERRORS_ABORT => {
            if let Ok(r) = crate::global::rt() {
                r.die(&format!("{} (MPI_Win_call_errhandler on window {win:#x})", crate::error::describe(code)), code);
            }
        }
        user => {
            let f = objs().errhs.get(user).copied();
            if let Some(f) = f {
                let (mut w, mut c) = (win, code);
                // SAFETY: the program's handler, called as MPI specifies.
                unsafe { f(&mut w, &mut c) };
            }
        }
    }
    crate::error::SUCCESS
}
