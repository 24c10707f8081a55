//! MPI_Register_datarep(_c) (MPI-4.0 §14.5.3): the program's conversion
//! and file-extent functions, kept per name (once each: again is
//! MPI_ERR_DUP_DATAREP, as are the predefined "native", "internal" and
//! "external32"), and offered to `wanmpi-io` as a [`Datarep`]: a view in
//! the name (MPI_File_set_view) sizes its types with the extent function
//! and converts every access through the conversion functions.
//!
//! A conversion function returning anything but MPI_SUCCESS fails the
//! access with MPI_ERR_CONVERSION, as the standard says; the message names
//! the code it returned. MPI_CONVERSION_FN_NULL copies bytes as they are
//! (for elements whose file extent is their memory size). Each call gets
//! the datatype handle the program passed to the access, `count` data
//! items (predefined elements of its type signature, the datatype tiled)
//! and `position`, the index of the first of them from the buffer start.
//! The functions may call MPI (MPI_Type_size and the like: no lock of the
//! C API is held while they run), but not the file's pointer calls during
//! an access at the individual pointer, which holds that pointer.

use std::collections::HashMap;
use std::ffi::{c_char, c_void};
use std::os::raw::{c_int, c_long};
use std::sync::{Arc, LazyLock, Mutex};

use wanmpi_io::Datarep;
use wanmpi_runtime::{BasicType, Datatype, ErrorClass, MpiError, MpiResult};

use super::call_file;
use crate::args::cstr;
use crate::error::fail;
use crate::global::objs;
use crate::predef;

/// MPI_MAX_DATAREP_STRING, with its NUL.
const MAX_DATAREP: usize = 128;

/// MPI_Datarep_conversion_function.
type ConvFn = unsafe extern "C" fn(*mut c_void, c_int, c_int, *mut c_void, c_long, *mut c_void) -> c_int;
/// MPI_Datarep_conversion_function_c (an MPI_Count count).
type ConvFnC = unsafe extern "C" fn(*mut c_void, c_int, c_long, *mut c_void, c_long, *mut c_void) -> c_int;
/// MPI_Datarep_extent_function.
type ExtentFn = unsafe extern "C" fn(c_int, *mut c_long, *mut c_void) -> c_int;

#[derive(Clone, Copy)]
enum Conv {
    Int(ConvFn),
    Count(ConvFnC),
}

/// One registered representation.
struct Registered {
    name: String,
    read: Option<Conv>,
    write: Option<Conv>,
    extent: ExtentFn,
    /// The program's `extra_state`, passed back as is.
    extra: usize,
}

static REGISTERED: LazyLock<Mutex<HashMap<String, Arc<Registered>>>> = LazyLock::new(Default::default);

/// The representation registered as `name`, for MPI_File_set_view.
pub fn lookup(name: &str) -> Option<Arc<dyn Datarep>> {
    let r = REGISTERED.lock().unwrap_or_else(|p| p.into_inner()).get(name).cloned();
    r.map(|r| r as Arc<dyn Datarep>)
}

/// The handle of `dt` to give the program's functions: the predefined
/// one, or the program's own handle of that very type; else one made for
/// the call (freed by the guard).
struct Handle(c_int, bool);

impl Handle {
    fn of(dt: &Datatype) -> MpiResult<Handle> {
        if let Some(h) = dt.basic_kind().filter(|_| dt.combiner() == wanmpi_engine::datatype::Combiner::Named).and_then(predef::datatype_handle) {
            return Ok(Handle(h, false));
        }
        let mut o = objs();
        if let Some((h, _)) = o.types.iter().find(|(_, t)| t.ptr_eq(dt)) {
            return Ok(Handle(h, false));
        }
        let h = o.types.insert(dt.clone()).ok_or_else(|| MpiError::new(ErrorClass::NoMem, "too many datatypes"))?;
        Ok(Handle(h, true))
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        if self.1 {
            objs().types.remove(self.0);
        }
    }
}

impl Registered {
    fn failed(&self, what: &str, code: c_int) -> MpiError {
        MpiError::new(ErrorClass::Conversion, format!("the {what} function of data representation \"{}\" returned error code {code}", self.name))
    }

    /// Calls conversion `f` on `count` items from `position`.
    unsafe fn convert(
        &self,
        f: Conv,
        what: &str,
        userbuf: *mut c_void,
        dt: &Datatype,
        count: usize,
        filebuf: *mut c_void,
        position: u64,
    ) -> MpiResult<()> {
        let h = Handle::of(dt)?;
        let pos = c_long::try_from(position).map_err(|_| MpiError::new(ErrorClass::Count, format!("data item {position} is out of range")))?;
        let extra = self.extra as *mut c_void;
        let rc = match f {
            Conv::Int(f) => {
                let n = c_int::try_from(count).map_err(|_| MpiError::new(ErrorClass::Count, format!("{count} data items do not fit an int")))?;
                f(userbuf, h.0, n, filebuf, pos, extra)
            }
            Conv::Count(f) => f(userbuf, h.0, count as c_long, filebuf, pos, extra),
        };
        if rc != 0 {
            return Err(self.failed(what, rc));
        }
        Ok(())
    }
}

impl Datarep for Registered {
    fn name(&self) -> &str {
        &self.name
    }

    fn file_extent(&self, basic: BasicType) -> MpiResult<usize> {
        let h = predef::datatype_handle(basic).ok_or_else(|| MpiError::new(ErrorClass::Type, format!("{basic:?} has no predefined handle")))?;
        let mut e: c_long = -1;
        // SAFETY: the program's extent function, called as MPI specifies.
        let rc = unsafe { (self.extent)(h, &mut e, self.extra as *mut c_void) };
        if rc != 0 {
            return Err(self.failed("file extent", rc));
        }
        usize::try_from(e).map_err(|_| {
            MpiError::new(ErrorClass::Conversion, format!("data representation \"{}\" gives {basic:?} a negative file extent ({e})", self.name))
        })
    }

    fn converts_reads(&self) -> bool {
        self.read.is_some()
    }

    fn converts_writes(&self) -> bool {
        self.write.is_some()
    }

    unsafe fn read(&self, userbuf: *mut u8, dt: &Datatype, count: usize, filebuf: &[u8], position: u64) -> MpiResult<()> {
        let Some(f) = self.read else { return Ok(()) };
        // The C type is not const; the function only reads it.
        self.convert(f, "read conversion", userbuf as *mut c_void, dt, count, filebuf.as_ptr() as *mut c_void, position)
    }

    unsafe fn write(&self, userbuf: *const u8, dt: &Datatype, count: usize, filebuf: &mut [u8], position: u64) -> MpiResult<()> {
        let Some(f) = self.write else { return Ok(()) };
        self.convert(f, "write conversion", userbuf as *mut c_void, dt, count, filebuf.as_mut_ptr() as *mut c_void, position)
    }
}

fn register(datarep: *const c_char, read: Option<Conv>, write: Option<Conv>, extent: Option<ExtentFn>, extra: *mut c_void) -> c_int {
    call_file(std::ptr::null_mut(), || {
        let name = cstr(datarep, "datarep")?;
        if name.is_empty() || name.len() >= MAX_DATAREP {
            return fail(ErrorClass::Arg, format!("a data representation name needs 1 to {} characters", MAX_DATAREP - 1));
        }
        let Some(extent) = extent else {
            return fail(ErrorClass::Arg, format!("data representation \"{name}\" needs a dtype_file_extent_fn"));
        };
        let mut all = REGISTERED.lock().unwrap_or_else(|p| p.into_inner());
        if wanmpi_io::DATAREPS.contains(&name) || all.contains_key(name) {
            return fail(ErrorClass::DupDatarep, format!("the data representation \"{name}\" is already defined"));
        }
        all.insert(name.to_string(), Arc::new(Registered { name: name.to_string(), read, write, extent, extra: extra as usize }));
        Ok(())
    })
}

/// MPI_Register_datarep.
///
/// # Safety
/// The functions must be the C types MPI names, or null for the
/// conversions (MPI_CONVERSION_FN_NULL).
#[no_mangle]
pub unsafe extern "C" fn PMPI_Register_datarep(
    datarep: *const c_char,
    read: Option<ConvFn>,
    write: Option<ConvFn>,
    extent: Option<ExtentFn>,
    extra: *mut c_void,
) -> c_int {
    register(datarep, read.map(Conv::Int), write.map(Conv::Int), extent, extra)
}

/// MPI_Register_datarep_c: conversion functions with an MPI_Count count.
///
/// # Safety
/// As for [`PMPI_Register_datarep`].
#[no_mangle]
pub unsafe extern "C" fn PMPI_Register_datarep_c(
    datarep: *const c_char,
    read: Option<ConvFnC>,
    write: Option<ConvFnC>,
    extent: Option<ExtentFn>,
    extra: *mut c_void,
) -> c_int {
    register(datarep, read.map(Conv::Count), write.map(Conv::Count), extent, extra)
}
