//! Attribute caching on datatypes (MPI-4.0 §7.7.4): keyvals with C copy
//! and delete callbacks, attributes kept by datatype handle. MPI_Type_dup
//! copies them through the copy callbacks, MPI_Type_free deletes them
//! through the delete callbacks. Callbacks run without the handle-table
//! lock held, so they may call MPI.
//!
//! Datatype keyvals are indirect keyval handles, apart from the
//! communicators' (direct) ones.

use std::collections::BTreeMap;
use std::ffi::c_void;
use std::os::raw::c_int;

use wanmpi_runtime::{ErrorClass, MpiError};

use crate::args::out;
use crate::error::{call, fail, R};
use crate::global::objs;
use crate::predef::{COMM_WORLD, KEYVAL_INVALID};

/// `int copy(MPI_Datatype, int keyval, void *extra, void *in, void *out, int *flag)`.
pub type TypeCopyFn = unsafe extern "C" fn(c_int, c_int, *mut c_void, *mut c_void, *mut c_void, *mut c_int) -> c_int;
/// `int delete(MPI_Datatype, int keyval, void *value, void *extra)`.
pub type TypeDeleteFn = unsafe extern "C" fn(c_int, c_int, *mut c_void, *mut c_void) -> c_int;

#[derive(Clone, Copy)]
pub struct TypeKeyval {
    copy: Option<TypeCopyFn>,
    delete: Option<TypeDeleteFn>,
    extra: usize,
}

/// Datatype keyvals and the attributes of each datatype handle.
#[derive(Default)]
pub struct TypeAttrs {
    pub attrs: std::collections::HashMap<c_int, BTreeMap<c_int, usize>>,
}

fn keyval(k: c_int) -> R<TypeKeyval> {
    objs().type_keyvals.get(k).copied().ok_or_else(|| MpiError::new(ErrorClass::Keyval, format!("{k:#x} is not a datatype keyval")))
}

fn check_type(dt: c_int) -> R<()> {
    crate::args::datatype(dt).map(|_| ())
}

/// Runs a user callback's return code as an MPI result.
fn user_rc(rc: c_int, what: &str) -> R<()> {
    if rc == 0 {
        Ok(())
    } else {
        fail(crate::error::class_from_int(rc).unwrap_or(ErrorClass::Other), format!("the attribute {what} callback returned {rc}"))
    }
}

fn delete_value(dt: c_int, k: c_int, v: usize) -> R<()> {
    let kv = keyval(k)?;
    match kv.delete {
        // SAFETY: the user's delete callback with the arguments MPI specifies.
        Some(f) => user_rc(unsafe { f(dt, k, v as *mut c_void, kv.extra as *mut c_void) }, "delete"),
        None => Ok(()),
    }
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_keyval(copy: Option<TypeCopyFn>, delete: Option<TypeDeleteFn>, k: *mut c_int, extra: *mut c_void) -> c_int {
    call(COMM_WORLD, || {
        let o = out(k, "type_keyval")?;
        *o = objs()
            .type_keyvals
            .insert(TypeKeyval { copy, delete, extra: extra as usize })
            .ok_or_else(|| MpiError::new(ErrorClass::NoMem, "too many keyvals"))?;
        Ok(())
    })
}

/// Attributes already set keep their keyval's callbacks, so the keyval is
/// only marked free: its slot is not reused.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_free_keyval(k: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        let h = out(k, "type_keyval")?;
        keyval(*h)?;
        *h = KEYVAL_INVALID;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_set_attr(dt: c_int, k: c_int, value: *mut c_void) -> c_int {
    call(COMM_WORLD, || {
        check_type(dt)?;
        keyval(k)?;
        // The old value goes only once its delete callback agreed: on an
        // error the attribute stays as it was (MPICH's attrerrtype).
        let old = objs().type_attrs.attrs.get(&dt).and_then(|m| m.get(&k).copied());
        if let Some(v) = old {
            delete_value(dt, k, v)?;
        }
        objs().type_attrs.attrs.entry(dt).or_default().insert(k, value as usize);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_get_attr(dt: c_int, k: c_int, value: *mut c_void, flag: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        check_type(dt)?;
        keyval(k)?;
        let flag = out(flag, "flag")?;
        let v = objs().type_attrs.attrs.get(&dt).and_then(|m| m.get(&k).copied());
        *flag = c_int::from(v.is_some());
        if let Some(v) = v {
            *out(value as *mut usize, "attribute_val")? = v;
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_delete_attr(dt: c_int, k: c_int) -> c_int {
    call(COMM_WORLD, || {
        check_type(dt)?;
        keyval(k)?;
        let old = objs().type_attrs.attrs.get(&dt).and_then(|m| m.get(&k).copied());
        let Some(v) = old else { return fail(ErrorClass::Keyval, "the datatype has no attribute for this keyval") };
        delete_value(dt, k, v)?;
        if let Some(m) = objs().type_attrs.attrs.get_mut(&dt) {
            m.remove(&k);
        }
        Ok(())
    })
}

/// MPI_Type_dup: the new type gets the attributes the copy callbacks pass on.
pub fn copy_all(old: c_int, new: c_int) -> R<()> {
    let attrs: Vec<(c_int, usize)> = objs().type_attrs.attrs.get(&old).map(|m| m.iter().map(|(k, v)| (*k, *v)).collect()).unwrap_or_default();
    for (k, v) in attrs {
        let kv = keyval(k)?;
        let Some(f) = kv.copy else { continue };
        let mut newv: *mut c_void = std::ptr::null_mut();
        let mut flag: c_int = 0;
        // SAFETY: the user's copy callback with the arguments MPI specifies.
        let rc = unsafe { f(old, k, kv.extra as *mut c_void, v as *mut c_void, &mut newv as *mut _ as *mut c_void, &mut flag) };
        user_rc(rc, "copy")?;
        if flag != 0 {
            objs().type_attrs.attrs.entry(new).or_default().insert(k, newv as usize);
        }
    }
    Ok(())
}

/// MPI_Type_free: every attribute is deleted first.
pub fn delete_all(dt: c_int) -> R<()> {
    let attrs = objs().type_attrs.attrs.remove(&dt).unwrap_or_default();
    for (k, v) in attrs {
        delete_value(dt, k, v)?;
    }
    Ok(())
}
