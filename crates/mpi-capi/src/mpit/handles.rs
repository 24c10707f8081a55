//! MPI_T's handles as C sees them: opaque pointers whose value is a number
//! and a kind (low 4 bits), looked up in MPI_T's tables and never
//! dereferenced. A handle of the wrong kind or one already freed is
//! refused with an error code.

use std::ffi::c_void;

/// What a handle value names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Enum = 2,
    Cvar = 3,
    Pvar = 4,
    Session = 5,
}

/// `MPI_T_PVAR_ALL_HANDLES`, exported as MPICH exports it (a constant
/// pointer, read by value by programs): a value no handle takes.
#[no_mangle]
pub static MPI_T_PVAR_ALL_HANDLES: usize = ALL_HANDLES;
pub(super) const ALL_HANDLES: usize = 1;

pub(super) fn make(kind: Kind, id: u64) -> usize {
    ((id as usize) << 4) | kind as usize
}

/// The id of handle `h` if it is of `kind`.
pub(super) fn id_of(h: *const c_void, kind: Kind) -> Option<u64> {
    let v = h as usize;
    (v & 0xf == kind as usize && v >> 4 != 0).then_some((v >> 4) as u64)
}
