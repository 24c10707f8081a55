//! Info objects (MPI-3.1 chapter 9).

use std::ffi::c_char;
use std::os::raw::c_int;

use wanmpi_runtime::{ErrorClass, Info, MpiError, MAX_INFO_KEY, MAX_INFO_VAL};

use crate::args::{count, cstr, int, out, write_str};
use crate::error::{call, fail, R};
use crate::global::objs;
use crate::predef::{COMM_WORLD, INFO_ENV, INFO_NULL};

/// The info behind a handle; MPI_INFO_NULL and MPI_INFO_ENV are empty.
pub fn get(h: c_int) -> R<Info> {
    match h {
        INFO_NULL | INFO_ENV => Ok(Info::default()),
        _ => objs().infos.get(h).cloned().ok_or_else(|| MpiError::new(ErrorClass::Info, format!("{h:#x} is not a valid info handle"))),
    }
}

/// The info an info routine works on: MPI_INFO_NULL is not an info object
/// there (MPI-4.0 §10: MPI_Info_get, _dup, _get_nkeys ... raise MPI_ERR_INFO).
fn get_object(h: c_int) -> R<Info> {
    if h == INFO_NULL {
        return fail(ErrorClass::Info, "MPI_INFO_NULL is not an info object");
    }
    get(h)
}

pub fn insert(i: Info) -> R<c_int> {
    objs().infos.insert(i).ok_or_else(|| MpiError::new(ErrorClass::NoMem, "too many info objects"))
}

/// Sets `key` in the user's info object `h` (MPI_INFO_NULL and
/// MPI_INFO_ENV are left alone): for calls that report through their info
/// argument, as MPI_Comm_split_type with MPI_COMM_TYPE_HW_UNGUIDED does.
pub fn set_if_user(h: c_int, key: &str, value: &str) -> R<()> {
    match h {
        INFO_NULL | INFO_ENV => Ok(()),
        _ => with(h, |i| i.set(key, value)),
    }
}

fn with<T>(h: c_int, f: impl FnOnce(&mut Info) -> R<T>) -> R<T> {
    let mut o = objs();
    let i = o.infos.get_mut(h).ok_or_else(|| MpiError::new(ErrorClass::Info, format!("{h:#x} is not a valid (user) info handle")))?;
    f(i)
}

fn key<'a>(k: *const c_char) -> R<&'a str> {
    let k = cstr(k, "key")?;
    if k.is_empty() || k.len() > MAX_INFO_KEY {
        return fail(ErrorClass::InfoKey, format!("info key of {} characters", k.len()));
    }
    Ok(k)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Info_create(info: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        *out(info, "info")? = insert(Info::default())?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Info_set(info: c_int, k: *const c_char, v: *const c_char) -> c_int {
    call(COMM_WORLD, || {
        let (k, v) = (key(k)?, cstr(v, "value")?);
        with(info, |i| i.set(k, v))
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Info_get(info: c_int, k: *const c_char, valuelen: c_int, value: *mut c_char, flag: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        let k = key(k)?;
        let flag = out(flag, "flag")?;
        let n = count(valuelen)?;
        match get_object(info)?.get(k) {
            Some(v) => {
                *flag = 1;
                // valuelen excludes the terminating NUL.
                write_str(v, value, n + 1, std::ptr::null_mut())
            }
            None => {
                *flag = 0;
                Ok(())
            }
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Info_get_valuelen(info: c_int, k: *const c_char, valuelen: *mut c_int, flag: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        let k = key(k)?;
        let flag = out(flag, "flag")?;
        let len = out(valuelen, "valuelen")?;
        match get_object(info)?.get(k) {
            Some(v) => {
                *flag = 1;
                *len = int(v.len());
            }
            None => *flag = 0,
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Info_delete(info: c_int, k: *const c_char) -> c_int {
    call(COMM_WORLD, || {
        let k = key(k)?;
        with(info, |i| i.delete(k))
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Info_dup(info: c_int, newinfo: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        let o = out(newinfo, "newinfo")?;
        *o = insert(get_object(info)?)?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Info_free(info: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        let h = out(info, "info")?;
        objs().infos.remove(*h).ok_or_else(|| MpiError::new(ErrorClass::Info, format!("{:#x} is not a valid (user) info handle", *h)))?;
        *h = INFO_NULL;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Info_get_nkeys(info: c_int, nkeys: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        *out(nkeys, "nkeys")? = int(get_object(info)?.nkeys());
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Info_get_nthkey(info: c_int, n: c_int, k: *mut c_char) -> c_int {
    call(COMM_WORLD, || {
        let i = get_object(info)?;
        let key = i.nth_key(count(n)?).ok_or_else(|| MpiError::new(ErrorClass::Arg, format!("info has {} keys; no key {n}", i.nkeys())))?;
        write_str(key, k, MAX_INFO_KEY + 1, std::ptr::null_mut())
    })
}

/// MPI-4.0's MPI_Info_get_string: `*buflen` in, the value's length with its
/// NUL out; the value is truncated to fit the buffer.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Info_get_string(info: c_int, k: *const c_char, buflen: *mut c_int, value: *mut c_char, flag: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        let k = key(k)?;
        let flag = out(flag, "flag")?;
        let len = out(buflen, "buflen")?;
        let cap = count(*len)?;
        match get_object(info)?.get(k) {
            Some(v) => {
                *flag = 1;
                if cap > 0 {
                    write_str(v, value, cap, std::ptr::null_mut())?;
                }
                *len = int(v.len() + 1);
            }
            None => *flag = 0,
        }
        Ok(())
    })
}

/// MPI-4.0's MPI_Info_create_env: a new info object with what MPI_INFO_ENV
/// holds (nothing: wanmpi sets no environment keys).
#[no_mangle]
pub unsafe extern "C" fn PMPI_Info_create_env(_argc: c_int, _argv: *mut *mut c_char, info: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        *out(info, "info")? = insert(get(INFO_ENV)?)?;
        Ok(())
    })
}

/// Longest value MPI_Info_get may return (for callers sizing buffers).
pub const MAX_VALUE: usize = MAX_INFO_VAL;
