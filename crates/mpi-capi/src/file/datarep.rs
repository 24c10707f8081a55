//! MPI_Register_datarep (MPI-4.0 §14.5.3): names are registered, once
//! each (again: MPI_ERR_DUP_DATAREP, as are the predefined "native",
//! "internal" and "external32"), but wanmpi does not convert through the
//! program's functions: a view in a registered representation fails with
//! MPI_ERR_UNSUPPORTED_DATAREP (`wanmpi_io::View::new`).

use std::collections::HashSet;
use std::ffi::{c_char, c_void};
use std::os::raw::c_int;
use std::sync::{LazyLock, Mutex};

use wanmpi_runtime::ErrorClass;

use super::call_file;
use crate::args::cstr;
use crate::error::fail;

/// MPI_MAX_DATAREP_STRING, with its NUL.
const MAX_DATAREP: usize = 128;

static REGISTERED: LazyLock<Mutex<HashSet<String>>> = LazyLock::new(Default::default);

fn register(datarep: *const c_char) -> c_int {
    call_file(std::ptr::null_mut(), || {
        let name = cstr(datarep, "datarep")?;
        if name.is_empty() || name.len() >= MAX_DATAREP {
            return fail(ErrorClass::Arg, format!("a data representation name needs 1 to {} characters", MAX_DATAREP - 1));
        }
        let predefined = ["native", "internal", "external32"].contains(&name);
        if predefined || !REGISTERED.lock().unwrap_or_else(|p| p.into_inner()).insert(name.to_string()) {
            return fail(ErrorClass::DupDatarep, format!("the data representation \"{name}\" is already defined"));
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Register_datarep(
    datarep: *const c_char,
    _read: *mut c_void,
    _write: *mut c_void,
    _extent: *mut c_void,
    _extra: *mut c_void,
) -> c_int {
    register(datarep)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Register_datarep_c(
    datarep: *const c_char,
    _read: *mut c_void,
    _write: *mut c_void,
    _extent: *mut c_void,
    _extra: *mut c_void,
) -> c_int {
    register(datarep)
}
