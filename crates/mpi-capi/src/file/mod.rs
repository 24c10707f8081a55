//! MPI-IO's C interface (MPI-4.0 chapter 14) over `wanmpi-io`: the table
//! of file handles and how a file call fails. One file per group of calls.
//!
//! `MPI_File` is a pointer in our `mpi.h` (`struct wanmpi_file_s *`,
//! MPI_FILE_NULL is 0): a handle is the table index cast to a pointer, and
//! the same index is its Fortran integer (MPI_File_c2f). A failing file
//! call goes through the file's error handler (MPI_ERRORS_RETURN unless
//! the program set another, MPI-4.0 §9.3); calls without a valid file go
//! through MPI_FILE_NULL's, which new files inherit.

pub mod access;
pub mod datarep;
pub mod errhandler;
pub mod manage;
pub mod nonblocking;
pub mod open;
pub mod pointer;
pub mod split;
pub mod view;

use std::collections::HashMap;
use std::ffi::c_void;
use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};

use wanmpi_io::File;
use wanmpi_runtime::{ErrorClass, MpiError};

use crate::error::{code_of, R, SUCCESS};
use crate::global::{objs, rt_any, CErrhFn};
use crate::predef::{ERRORS_ABORT, ERRORS_ARE_FATAL, ERRORS_RETURN};

/// The C type of `MPI_File`.
pub type FileHandle = *mut c_void;

pub struct Entry {
    pub file: Arc<File>,
    /// The error handler handle set on the file.
    pub errh: c_int,
}

#[derive(Default)]
pub struct Files {
    items: HashMap<usize, Entry>,
    free: Vec<usize>,
    next: usize,
}

impl Files {
    pub fn insert(&mut self, e: Entry) -> FileHandle {
        let i = self.free.pop().unwrap_or_else(|| {
            self.next += 1;
            self.next
        });
        self.items.insert(i, e);
        i as FileHandle
    }
    pub fn get(&self, h: FileHandle) -> Option<&Entry> {
        self.items.get(&(h as usize))
    }
    pub fn get_mut(&mut self, h: FileHandle) -> Option<&mut Entry> {
        self.items.get_mut(&(h as usize))
    }
    pub fn remove(&mut self, h: FileHandle) -> Option<Entry> {
        let e = self.items.remove(&(h as usize))?;
        self.free.push(h as usize);
        Some(e)
    }
    /// Whether any open file uses error handler `eh` (MPI_Errhandler_free).
    pub fn uses_errhandler(&self, eh: c_int) -> bool {
        self.items.values().any(|e| e.errh == eh)
    }
}

/// The open files of this process; the C API's table, as `global.rs`'s
/// are for the other handles.
static FILES: LazyLock<Mutex<Files>> = LazyLock::new(Default::default);

pub fn files() -> MutexGuard<'static, Files> {
    FILES.lock().unwrap_or_else(|p| p.into_inner())
}

/// The file behind a handle (MPI_ERR_FILE when there is none).
pub fn file(h: FileHandle) -> R<Arc<File>> {
    if h.is_null() {
        return Err(MpiError::new(ErrorClass::File, "MPI_FILE_NULL is not an open file"));
    }
    files().get(h).map(|e| e.file.clone()).ok_or_else(|| MpiError::new(ErrorClass::File, format!("{h:p} is not an open file handle")))
}

/// The error handler that applies to a call on `h`.
pub fn errhandler_of(h: FileHandle) -> c_int {
    let set = files().get(h).map(|e| e.errh);
    set.unwrap_or_else(|| objs().file_null_errh)
}

/// Runs a file entry point: errors (and panics, as MPI_ERR_INTERN) go
/// through the error handler of `fh`.
pub fn call_file(fh: FileHandle, f: impl FnOnce() -> R<()>) -> c_int {
    let r = catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| Err(MpiError::new(ErrorClass::Intern, "internal error (a panic inside wanmpi)")));
    match r {
        Ok(()) => SUCCESS,
        Err(e) => raise_file(fh, e),
    }
}

/// Applies `fh`'s error handler to `e`; returns its code.
pub fn raise_file(fh: FileHandle, e: MpiError) -> c_int {
    let code = code_of(&e);
    apply(fh, errhandler_of(fh), code, &e.to_string());
    code
}

/// Calls handler `eh` as a failure of `code` on `fh` would.
pub fn apply(fh: FileHandle, eh: c_int, code: c_int, msg: &str) {
    match eh {
        ERRORS_RETURN => {}
        ERRORS_ARE_FATAL | ERRORS_ABORT => {
            if let Some(rt) = rt_any() {
                rt.die(msg, code);
            }
        }
        _ => {
            let f: Option<CErrhFn> = objs().errhs.get(eh).copied();
            if let Some(f) = f {
                let mut h = fh;
                let mut c = code;
                // SAFETY: the program's handler, called as MPI specifies
                // (a pointer to the file handle and one to the code).
                unsafe { f(&mut h as *mut FileHandle as *mut c_int, &mut c) };
            }
        }
    }
}
