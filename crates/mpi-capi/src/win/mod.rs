//! One-sided communication's C interface (MPI-4.0 chapter 12): window
//! handles over the runtime's windows (`wanmpi_runtime::WinId`), each
//! with its error handler and attributes. The protocol, epochs and checks
//! live in the runtime (`crates/runtime/src/rma/`); these files translate.
//!
//! Files: `create.rs` (making, freeing, memory), `ops.rs` (put, get,
//! accumulates), `sync.rs` (fence, locks, flush, PSCW), `attr.rs`
//! (attributes, name, info, group), `errh.rs` (error handlers).

pub mod attr;
pub mod create;
pub mod errh;
pub mod ops;
pub mod sync;

use std::collections::BTreeMap;
use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

use wanmpi_runtime::{ErrorClass, MpiError, WinId};

use crate::error::{code_of, R, SUCCESS};
use crate::global::{objs, rt};
use crate::predef::{ERRORS_ABORT, ERRORS_ARE_FATAL, ERRORS_RETURN, WIN_NULL};

/// The values the predefined attributes point at (MPI_WIN_SIZE, ...):
/// boxed so their addresses stay put while the handle table changes.
pub struct Consts {
    pub size: isize,
    pub disp_unit: c_int,
    pub flavor: c_int,
    pub model: c_int,
}

pub struct WinEntry {
    pub id: WinId,
    pub base: usize,
    pub errh: c_int,
    pub consts: Box<Consts>,
    /// User attributes: keyval -> value.
    pub attrs: BTreeMap<c_int, usize>,
}

/// The runtime window of handle `h`.
pub fn win_id(h: c_int) -> R<WinId> {
    if h == WIN_NULL {
        return Err(MpiError::new(ErrorClass::Win, "MPI_WIN_NULL is not a window"));
    }
    objs().wins.get(h).map(|e| e.id).ok_or_else(|| MpiError::new(ErrorClass::Win, format!("{h:#x} is not a valid window")))
}

/// Runs an entry point on window `win`: a panic becomes MPI_ERR_INTERN;
/// an error goes through the window's error handler (MPI_ERRORS_ARE_FATAL
/// unless the program set another; the world's for an invalid window).
pub fn call_win(win: c_int, f: impl FnOnce() -> R<()>) -> c_int {
    let r = catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| Err(MpiError::new(ErrorClass::Intern, "internal error (a panic inside wanmpi)")));
    match r {
        Ok(()) => SUCCESS,
        Err(e) => raise_win(win, e),
    }
}

/// Applies `win`'s error handler to `e`; returns its code.
pub fn raise_win(win: c_int, e: MpiError) -> c_int {
    let errh = objs().wins.get(win).map(|w| w.errh);
    let Some(errh) = errh else { return crate::error::raise(crate::predef::COMM_WORLD, e) };
    let code = code_of(&e);
    match errh {
        ERRORS_RETURN => code,
        ERRORS_ARE_FATAL | ERRORS_ABORT => match rt() {
            Ok(r) => r.die(&format!("{e} (on window {win:#x})"), code),
            Err(_) => code,
        },
        user => {
            let f = objs().errhs.get(user).copied();
            if let Some(f) = f {
                let (mut w, mut c) = (win, code);
                // SAFETY: the program's handler, called as MPI specifies.
                unsafe { f(&mut w, &mut c) };
            }
            code
        }
    }
}
