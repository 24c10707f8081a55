//! Attribute caching on communicators (MPI-3.1 §6.7) with C copy/delete
//! callbacks, the predefined attributes (pointers to ints, as MPICH gives
//! them), and the deprecated MPI-1 names.

use std::ffi::c_void;
use std::os::raw::c_int;
use std::sync::atomic::AtomicI32;
use std::sync::Arc;

use wanmpi_runtime::{CommId, CopyFn, DeleteFn, ErrorClass, TAG_UB};

use crate::args::{comm_handle, comm_id, out};
use crate::error::{call, fail, R};
use crate::global::rt;
use crate::handles::{make, split, Obj, KIND_DIRECT};
use crate::predef::{self, KEYVAL_INVALID};

/// `int copy(MPI_Comm, int keyval, void *extra, void *in, void *out, int *flag)`.
pub type CCopyFn = unsafe extern "C" fn(c_int, c_int, *mut c_void, *mut c_void, *mut c_void, *mut c_int) -> c_int;
/// `int delete(MPI_Comm, int keyval, void *value, void *extra)`.
pub type CDeleteFn = unsafe extern "C" fn(c_int, c_int, *mut c_void, *mut c_void) -> c_int;

// Values the predefined attributes point to; they live as long as the process.
static TAG_UB_VALUE: AtomicI32 = AtomicI32::new(TAG_UB);
static HOST_VALUE: AtomicI32 = AtomicI32::new(predef::PROC_NULL);
static IO_VALUE: AtomicI32 = AtomicI32::new(predef::ANY_SOURCE);
static WTIME_IS_GLOBAL_VALUE: AtomicI32 = AtomicI32::new(0);
static UNIVERSE_SIZE_VALUE: AtomicI32 = AtomicI32::new(1);
/// User error classes and codes come after MPI_ERR_LASTCODE (0x3fffffff),
/// as MPICH's do: a program may rely on them being above it.
pub(crate) static LASTUSEDCODE_VALUE: AtomicI32 = AtomicI32::new(0x3fff_ffff);
static APPNUM_VALUE: AtomicI32 = AtomicI32::new(0);

fn predefined(k: c_int) -> Option<&'static AtomicI32> {
    Some(match k {
        predef::TAG_UB => &TAG_UB_VALUE,
        predef::HOST => &HOST_VALUE,
        predef::IO => &IO_VALUE,
        predef::WTIME_IS_GLOBAL => &WTIME_IS_GLOBAL_VALUE,
        predef::UNIVERSE_SIZE => &UNIVERSE_SIZE_VALUE,
        predef::LASTUSEDCODE => &LASTUSEDCODE_VALUE,
        predef::APPNUM => &APPNUM_VALUE,
        _ => return None,
    })
}

fn keyval(h: c_int) -> R<i32> {
    match split(h) {
        (KIND_DIRECT, o, idx) if o == Obj::Keyval as u32 => Ok(idx as i32),
        _ => fail(ErrorClass::Keyval, format!("{h:#x} is not a valid keyval")),
    }
}

/// MPI_DUP_FN / MPI_COMM_DUP_FN: copies the attribute value.
#[no_mangle]
pub unsafe extern "C" fn MPIR_Dup_fn(_c: c_int, _k: c_int, _extra: *mut c_void, input: *mut c_void, output: *mut c_void, flag: *mut c_int) -> c_int {
    if !output.is_null() {
        *(output as *mut *mut c_void) = input;
    }
    if !flag.is_null() {
        *flag = 1;
    }
    0
}

/// `extra` is a user pointer carried into the callbacks.
#[derive(Clone, Copy)]
struct Extra(usize);

fn make_keyval(copy: Option<CCopyFn>, delete: Option<CDeleteFn>, extra: *mut c_void) -> R<c_int> {
    let extra = Extra(extra as usize);
    let copy: Option<CopyFn> = copy.map(|f| {
        Arc::new(move |c: CommId, k: i32, v: usize| {
            let mut newv: *mut c_void = std::ptr::null_mut();
            let mut flag: c_int = 0;
            let kh = make(KIND_DIRECT, Obj::Keyval, k as u32);
            // SAFETY: the user's callback with the arguments MPI specifies.
            let rc = unsafe { f(comm_handle(c), kh, extra.0 as *mut c_void, v as *mut c_void, &mut newv as *mut _ as *mut c_void, &mut flag) };
            if rc != 0 {
                return Err(rc);
            }
            Ok((flag != 0).then_some(newv as usize))
        }) as CopyFn
    });
    let delete: Option<DeleteFn> = delete.map(|f| {
        Arc::new(move |c: CommId, k: i32, v: usize| {
            let kh = make(KIND_DIRECT, Obj::Keyval, k as u32);
            // SAFETY: as above.
            let rc = unsafe { f(comm_handle(c), kh, v as *mut c_void, extra.0 as *mut c_void) };
            if rc != 0 {
                Err(rc)
            } else {
                Ok(())
            }
        }) as DeleteFn
    });
    let k = rt()?.create_keyval(copy, delete);
    Ok(make(KIND_DIRECT, Obj::Keyval, k as u32))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_create_keyval(copy: Option<CCopyFn>, delete: Option<CDeleteFn>, kv: *mut c_int, extra: *mut c_void) -> c_int {
    call(predef::COMM_WORLD, || {
        let o = out(kv, "comm_keyval")?;
        *o = make_keyval(copy, delete, extra)?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Keyval_create(copy: Option<CCopyFn>, delete: Option<CDeleteFn>, kv: *mut c_int, extra: *mut c_void) -> c_int {
    PMPI_Comm_create_keyval(copy, delete, kv, extra)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_free_keyval(kv: *mut c_int) -> c_int {
    call(predef::COMM_WORLD, || {
        let h = out(kv, "comm_keyval")?;
        if predefined(*h).is_some() {
            return fail(ErrorClass::Keyval, "predefined keyvals cannot be freed");
        }
        rt()?.free_keyval(keyval(*h)?)?;
        *h = KEYVAL_INVALID;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Keyval_free(kv: *mut c_int) -> c_int {
    PMPI_Comm_free_keyval(kv)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_set_attr(comm: c_int, kv: c_int, value: *mut c_void) -> c_int {
    call(comm, || {
        if predefined(kv).is_some() {
            return fail(ErrorClass::Keyval, "predefined attributes are read-only");
        }
        rt()?.set_attr(comm_id(comm)?, keyval(kv)?, value as usize)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Attr_put(comm: c_int, kv: c_int, value: *mut c_void) -> c_int {
    PMPI_Comm_set_attr(comm, kv, value)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_get_attr(comm: c_int, kv: c_int, value: *mut c_void, flag: *mut c_int) -> c_int {
    call(comm, || {
        let flag = out(flag, "flag")?;
        let dst = out(value as *mut *mut c_void, "attribute_val")?;
        let cid = comm_id(comm)?;
        let r = rt()?;
        if let Some(v) = predefined(kv) {
            r.comm_size(cid)?;
            if kv == predef::UNIVERSE_SIZE {
                // Set only when mpirun was told (--universe-size), as
                // MPICH's launcher does: spawning has no fixed limit.
                match std::env::var("WANMPI_UNIVERSE_SIZE").ok().and_then(|u| u.trim().parse::<i32>().ok()) {
                    Some(u) => v.store(u, std::sync::atomic::Ordering::Relaxed),
                    None => {
                        *flag = 0;
                        return Ok(());
                    }
                }
            }
            if kv == predef::APPNUM {
                v.store(r.appnum().unwrap_or(0), std::sync::atomic::Ordering::Relaxed);
            }
            *dst = v.as_ptr() as *mut c_void;
            *flag = 1;
            return Ok(());
        }
        match r.get_attr(cid, keyval(kv)?)? {
            Some(v) => {
                *dst = v as *mut c_void;
                *flag = 1;
            }
            None => *flag = 0,
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Attr_get(comm: c_int, kv: c_int, value: *mut c_void, flag: *mut c_int) -> c_int {
    PMPI_Comm_get_attr(comm, kv, value, flag)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_delete_attr(comm: c_int, kv: c_int) -> c_int {
    call(comm, || {
        if predefined(kv).is_some() {
            return fail(ErrorClass::Keyval, "predefined attributes cannot be deleted");
        }
        rt()?.delete_attr(comm_id(comm)?, keyval(kv)?)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Attr_delete(comm: c_int, kv: c_int) -> c_int {
    PMPI_Comm_delete_attr(comm, kv)
}
