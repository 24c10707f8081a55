//! Handle and status conversion between C and Fortran (MPI-4.0 §19.3.4-5),
//! and the variables MPICH's ABI exports for it. Handles are ints in both
//! languages (the MPICH ABI), so a conversion is the identity; mpi.h also
//! defines the int-handle conversions as macros, as MPICH does. A status is
//! the same five ints in C, Fortran and Fortran 2008. File handles, which
//! are pointers, convert in `file/open.rs`.

use std::ffi::c_void;
use std::os::raw::c_int;

use wanmpi_runtime::ErrorClass;

use crate::error::{call, fail};
use crate::predef::COMM_WORLD;
use crate::status::MPI_Status;

macro_rules! identity {
    ($($c2f:ident, $f2c:ident);* $(;)?) => {
        $(
            #[no_mangle]
            pub extern "C" fn $c2f(h: c_int) -> c_int {
                h
            }
            #[no_mangle]
            pub extern "C" fn $f2c(h: c_int) -> c_int {
                h
            }
        )*
    };
}

identity!(
    PMPI_Comm_c2f, PMPI_Comm_f2c;
    PMPI_Type_c2f, PMPI_Type_f2c;
    PMPI_Group_c2f, PMPI_Group_f2c;
    PMPI_Op_c2f, PMPI_Op_f2c;
    PMPI_Request_c2f, PMPI_Request_f2c;
    PMPI_Info_c2f, PMPI_Info_f2c;
    PMPI_Errhandler_c2f, PMPI_Errhandler_f2c;
    PMPI_Win_c2f, PMPI_Win_f2c;
    PMPI_Message_c2f, PMPI_Message_f2c;
    PMPI_Session_c2f, PMPI_Session_f2c;
);

/// A pointer exported as a C variable (`extern T *const NAME`).
#[repr(transparent)]
pub struct Exported<T>(pub *const T);
// SAFETY: the pointers name statics that are never written.
unsafe impl<T> Sync for Exported<T> {}

static F_STATUS_IGNORE_OBJ: [c_int; 5] = [0; 5];
static F_STATUSES_IGNORE_OBJ: [c_int; 5] = [0; 5];
static F08_STATUS_IGNORE_OBJ: MPI_Status = MPI_Status { count_lo: 0, count_hi_and_cancelled: 0, MPI_SOURCE: 0, MPI_TAG: 0, MPI_ERROR: 0 };
static F08_STATUSES_IGNORE_OBJ: MPI_Status = MPI_Status { count_lo: 0, count_hi_and_cancelled: 0, MPI_SOURCE: 0, MPI_TAG: 0, MPI_ERROR: 0 };

#[no_mangle]
pub static MPI_F_STATUS_IGNORE: Exported<c_int> = Exported(&F_STATUS_IGNORE_OBJ as *const [c_int; 5] as *const c_int);
#[no_mangle]
pub static MPI_F_STATUSES_IGNORE: Exported<c_int> = Exported(&F_STATUSES_IGNORE_OBJ as *const [c_int; 5] as *const c_int);
#[no_mangle]
pub static MPI_F08_STATUS_IGNORE: Exported<MPI_Status> = Exported(&F08_STATUS_IGNORE_OBJ);
#[no_mangle]
pub static MPI_F08_STATUSES_IGNORE: Exported<MPI_Status> = Exported(&F08_STATUSES_IGNORE_OBJ);

/// Copies a five-int status; `from`/`to` must not be an ignore marker.
fn copy_status(from: *const c_void, to: *mut c_void, ignore_from: &[*const c_void]) -> c_int {
    call(COMM_WORLD, || {
        if from.is_null() || to.is_null() || from as usize == 1 || ignore_from.contains(&from) {
            return fail(ErrorClass::Arg, "a status argument is null or an ignore marker");
        }
        // SAFETY: both are the caller's five-int statuses.
        unsafe { std::ptr::copy(from as *const MPI_Status, to as *mut MPI_Status, 1) };
        Ok(())
    })
}

fn fortran_ignores() -> [*const c_void; 4] {
    [
        MPI_F_STATUS_IGNORE.0 as *const c_void,
        MPI_F_STATUSES_IGNORE.0 as *const c_void,
        MPI_F08_STATUS_IGNORE.0 as *const c_void,
        MPI_F08_STATUSES_IGNORE.0 as *const c_void,
    ]
}

#[no_mangle]
pub extern "C" fn PMPI_Status_c2f(c: *const c_void, f: *mut c_void) -> c_int {
    copy_status(c, f, &[])
}

#[no_mangle]
pub extern "C" fn PMPI_Status_f2c(f: *const c_void, c: *mut c_void) -> c_int {
    copy_status(f, c, &fortran_ignores())
}

#[no_mangle]
pub extern "C" fn PMPI_Status_c2f08(c: *const c_void, f: *mut c_void) -> c_int {
    copy_status(c, f, &[])
}

#[no_mangle]
pub extern "C" fn PMPI_Status_f082c(f: *const c_void, c: *mut c_void) -> c_int {
    copy_status(f, c, &fortran_ignores())
}

#[no_mangle]
pub extern "C" fn PMPI_Status_f2f08(f: *const c_void, f08: *mut c_void) -> c_int {
    copy_status(f, f08, &fortran_ignores())
}

#[no_mangle]
pub extern "C" fn PMPI_Status_f082f(f08: *const c_void, f: *mut c_void) -> c_int {
    copy_status(f08, f, &fortran_ignores())
}
