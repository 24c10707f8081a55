//! The tool information interface, MPI_T (MPI-4.0 chapter 15): control
//! variables for wanmpi's knobs (`cvars.rs`), performance variables for
//! what the engine and the transports count (`pvars.rs`, read through
//! sessions and handles in `sessions.rs`), categories grouping them
//! (`categories.rs`), enumerations (`enums.rs`), and the event interface,
//! which has no sources and no events here (`events.rs`). docs/mpit.md
//! lists the variables.
//!
//! MPI_T works before MPI_Init and after MPI_Finalize: it is initialized
//! and finalized on its own, reference counted (`MPI_T_init_thread` /
//! `MPI_T_finalize`). Its functions return error codes and never call an
//! error handler, as the standard says. Handles are opaque pointers made
//! of a number and a kind (`handles.rs`) that are looked up, never
//! dereferenced, so a stale or wrong handle is an error code, not a crash.

mod categories;
mod cvars;
mod enums;
mod events;
mod handles;
mod pvars;
mod sessions;
mod strings;

use std::collections::HashMap;
use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{LazyLock, Mutex, MutexGuard};

pub use handles::MPI_T_PVAR_ALL_HANDLES;

/// MPI_T's error classes (MPICH's numbers, include/mpi.h).
pub mod code {
    use std::os::raw::c_int;
    pub const SUCCESS: c_int = 0;
    /// A required pointer argument is null (MPICH answers MPI_ERR_ARG too).
    pub const ERR_ARG: c_int = 12;
    pub const ERR_INTERN: c_int = 16;
    pub const NOT_INITIALIZED: c_int = 60;
    pub const INVALID_INDEX: c_int = 62;
    pub const INVALID_HANDLE: c_int = 64;
    pub const INVALID_SESSION: c_int = 67;
    pub const CVAR_SET_NOT_NOW: c_int = 68;
    pub const CVAR_SET_NEVER: c_int = 69;
    pub const PVAR_NO_STARTSTOP: c_int = 70;
    pub const PVAR_NO_WRITE: c_int = 71;
    pub const PVAR_NO_ATOMIC: c_int = 72;
    pub const INVALID_NAME: c_int = 73;
    pub const INVALID: c_int = 74;
}

/// A failed MPI_T call: the error class to return.
pub type TResult<T> = Result<T, c_int>;

/// Values of MPICH's MPI_T enumerations (include/mpi.h).
pub mod consts {
    use std::os::raw::c_int;
    pub const VERBOSITY_USER_BASIC: c_int = 221;
    pub const VERBOSITY_USER_DETAIL: c_int = 222;
    pub const VERBOSITY_TUNER_BASIC: c_int = 224;
    pub const VERBOSITY_TUNER_DETAIL: c_int = 225;
    pub const BIND_NO_OBJECT: c_int = 9700;
    pub const SCOPE_CONSTANT: c_int = 60438;
    pub const SCOPE_READONLY: c_int = 60439;
    pub const SCOPE_LOCAL: c_int = 60440;
    pub const CLASS_LEVEL: c_int = 241;
    pub const CLASS_LOWWATERMARK: c_int = 245;
    pub const CLASS_COUNTER: c_int = 246;
}

/// Everything MPI_T holds between its init and its last finalize.
#[derive(Default)]
pub(crate) struct Tool {
    /// Successful MPI_T_init_thread calls not yet finalized.
    inits: u32,
    next_id: u64,
    /// Control-variable handles: handle value -> cvar index.
    cvar_handles: HashMap<usize, usize>,
    sessions: HashMap<usize, sessions::Session>,
    pvar_handles: HashMap<usize, sessions::PvarHandle>,
}

impl Tool {
    /// A fresh id for a new handle (never reused while the process runs).
    fn next(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }
}

static TOOL: LazyLock<Mutex<Tool>> = LazyLock::new(Default::default);

/// MPI_T's state. A panic while holding it leaves whole table entries
/// behind, so a poisoned lock is taken over.
fn tool() -> MutexGuard<'static, Tool> {
    TOOL.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs an MPI_T entry point that needs the interface initialized: a panic
/// becomes MPI_ERR_INTERN, never an unwind into C.
fn entry(f: impl FnOnce(&mut Tool) -> TResult<()>) -> c_int {
    let r = catch_unwind(AssertUnwindSafe(|| {
        let mut t = tool();
        if t.inits == 0 {
            return Err(code::NOT_INITIALIZED);
        }
        f(&mut t)
    }));
    match r {
        Ok(Ok(())) => code::SUCCESS,
        Ok(Err(c)) => c,
        Err(_) => code::ERR_INTERN,
    }
}

/// `p` as a place to write one output, or MPI_ERR_ARG when null.
fn out<'a, T>(p: *mut T) -> TResult<&'a mut T> {
    // SAFETY: a non-null output pointer from the caller, valid by MPI's contract.
    unsafe { p.as_mut() }.ok_or(code::ERR_ARG)
}

/// Writes `v` to `p` when the caller asked for it (non-null): the info
/// functions' outputs are optional.
fn put<T>(p: *mut T, v: T) {
    // SAFETY: as `out`; null means "not wanted".
    if let Some(p) = unsafe { p.as_mut() } {
        *p = v;
    }
}

#[no_mangle]
pub extern "C" fn PMPI_T_init_thread(required: c_int, provided: *mut c_int) -> c_int {
    if provided.is_null() {
        return code::ERR_ARG;
    }
    let mut t = tool();
    t.inits += 1;
    // Every MPI_T call takes one lock: any thread level is safe.
    put(provided, required.clamp(crate::predef::THREAD_SINGLE, crate::predef::THREAD_MULTIPLE));
    code::SUCCESS
}

#[no_mangle]
pub extern "C" fn PMPI_T_finalize() -> c_int {
    let mut t = tool();
    if t.inits == 0 {
        return code::NOT_INITIALIZED;
    }
    t.inits -= 1;
    if t.inits == 0 {
        // The last finalize frees every handle and session.
        let next_id = t.next_id;
        *t = Tool { next_id, ..Tool::default() };
    }
    code::SUCCESS
}
