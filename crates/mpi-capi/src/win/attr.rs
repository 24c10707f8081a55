//! What hangs on a window (MPI-4.0 §§12.2.6-12.2.7, 7.7.3): attributes
//! (the predefined MPI_WIN_BASE, _SIZE, _DISP_UNIT, _CREATE_FLAVOR,
//! _MODEL, and the program's, whose delete callbacks run when an attribute
//! is replaced or deleted and when the window is freed), name, info, group.
//! Windows are never duplicated, so copy callbacks are kept but not called.

use std::ffi::{c_char, c_void};
use std::os::raw::c_int;

use wanmpi_runtime::{ErrorClass, MpiError};

use super::{call_win, win_id};
use crate::args::{cstr, new_group, out, write_str};
use crate::error::{call, R};
use crate::global::{objs, rt};
use crate::predef::{COMM_WORLD, KEYVAL_INVALID};

/// `int delete(MPI_Win, int keyval, void *value, void *extra)`.
pub type WinDeleteFn = unsafe extern "C" fn(c_int, c_int, *mut c_void, *mut c_void) -> c_int;

#[derive(Clone, Copy)]
pub struct WinKeyval {
    delete: Option<WinDeleteFn>,
    extra: usize,
    /// MPI_Win_free_keyval was called; the keyval lives while attributes use it.
    freed: bool,
}

/// MPICH's handles of the predefined window attributes.
const WIN_BASE: c_int = 0x6600_0001;
const WIN_SIZE: c_int = 0x6600_0003;
const WIN_DISP_UNIT: c_int = 0x6600_0005;
const WIN_CREATE_FLAVOR: c_int = 0x6600_0007;
const WIN_MODEL: c_int = 0x6600_0009;

fn keyval(k: c_int) -> R<WinKeyval> {
    objs().win_keyvals.get(k).copied().ok_or_else(|| MpiError::new(ErrorClass::Keyval, format!("{k:#x} is not a window keyval")))
}

fn bad_win(win: c_int) -> MpiError {
    MpiError::new(ErrorClass::Win, format!("{win:#x} is not a valid window"))
}

/// Runs `kv`'s delete callback on `value` of window `win`.
fn run_delete(win: c_int, kv: c_int, k: WinKeyval, value: usize) -> R<()> {
    if let Some(f) = k.delete {
        // SAFETY: the program's callback with the arguments it registered.
        let rc = unsafe { f(win, kv, value as *mut c_void, k.extra as *mut c_void) };
        if rc != 0 {
            return Err(MpiError::new(ErrorClass::Other, format!("a window attribute delete callback returned {rc}")));
        }
    }
    Ok(())
}

/// Drops a freed keyval once no window holds an attribute with it.
fn forget_if_unused(kv: c_int) {
    let mut o = objs();
    if o.win_keyvals.get(kv).is_some_and(|k| k.freed) && !o.wins.iter().any(|(_, w)| w.attrs.contains_key(&kv)) {
        o.win_keyvals.remove(kv);
    }
}

/// Deletes every attribute of `win` (MPI_Win_free), callbacks first.
pub fn delete_all(win: c_int) -> R<()> {
    let attrs: Vec<(c_int, usize)> = objs().wins.get(win).map(|w| w.attrs.iter().map(|(k, v)| (*k, *v)).collect()).unwrap_or_default();
    for (kv, v) in attrs {
        // Not in the `if let`: its guard would live through the callback,
        // which may call MPI (and so lock the tables) itself.
        let k = objs().win_keyvals.get(kv).copied();
        if let Some(k) = k {
            run_delete(win, kv, k, v)?;
        }
        if let Some(w) = objs().wins.get_mut(win) {
            w.attrs.remove(&kv);
        }
        forget_if_unused(kv);
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_create_keyval(_copy: *const c_void, delete: Option<WinDeleteFn>, kv: *mut c_int, extra: *mut c_void) -> c_int {
    call(COMM_WORLD, || {
        let dst = out(kv, "win_keyval")?;
        *dst = objs()
            .win_keyvals
            .insert(WinKeyval { delete, extra: extra as usize, freed: false })
            .ok_or_else(|| MpiError::new(ErrorClass::NoMem, "too many keyvals"))?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_free_keyval(kv: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        let k = out(kv, "win_keyval")?;
        keyval(*k)?;
        // Attributes set with it keep their callbacks until deleted; a
        // delete callback may free it again meanwhile (MPICH's tests do).
        if let Some(e) = objs().win_keyvals.get_mut(*k) {
            e.freed = true;
        }
        forget_if_unused(*k);
        *k = KEYVAL_INVALID;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_set_attr(win: c_int, kv: c_int, value: *mut c_void) -> c_int {
    call_win(win, || {
        let k = keyval(kv)?;
        if k.freed {
            return Err(MpiError::new(ErrorClass::Keyval, format!("keyval {kv:#x} was freed")));
        }
        let old = objs().wins.get(win).ok_or_else(|| bad_win(win))?.attrs.get(&kv).copied();
        if let Some(v) = old {
            run_delete(win, kv, k, v)?;
        }
        objs().wins.get_mut(win).ok_or_else(|| bad_win(win))?.attrs.insert(kv, value as usize);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_get_attr(win: c_int, kv: c_int, value: *mut c_void, flag: *mut c_int) -> c_int {
    call_win(win, || {
        let (dst, flag) = (out(value as *mut *mut c_void, "attribute_val")?, out(flag, "flag")?);
        let o = objs();
        let w = o.wins.get(win).ok_or_else(|| bad_win(win))?;
        let c = &*w.consts;
        let v: Option<*mut c_void> = match kv {
            WIN_BASE => Some(w.base as *mut c_void),
            WIN_SIZE => Some(&c.size as *const isize as *mut c_void),
            WIN_DISP_UNIT => Some(&c.disp_unit as *const c_int as *mut c_void),
            WIN_CREATE_FLAVOR => Some(&c.flavor as *const c_int as *mut c_void),
            WIN_MODEL => Some(&c.model as *const c_int as *mut c_void),
            _ => {
                if o.win_keyvals.get(kv).is_none() {
                    return Err(MpiError::new(ErrorClass::Keyval, format!("{kv:#x} is not a window keyval")));
                }
                w.attrs.get(&kv).map(|&v| v as *mut c_void)
            }
        };
        *flag = v.is_some() as c_int;
        if let Some(v) = v {
            *dst = v;
        }
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn PMPI_Win_delete_attr(win: c_int, kv: c_int) -> c_int {
    call_win(win, || {
        let k = keyval(kv)?;
        let v = objs().wins.get(win).ok_or_else(|| bad_win(win))?.attrs.get(&kv).copied();
        let Some(v) = v else { return Err(MpiError::new(ErrorClass::Keyval, "the window has no attribute for this keyval")) };
        run_delete(win, kv, k, v)?;
        objs().wins.get_mut(win).ok_or_else(|| bad_win(win))?.attrs.remove(&kv);
        forget_if_unused(kv);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_set_name(win: c_int, name: *const c_char) -> c_int {
    call_win(win, || {
        let n = cstr(name, "win_name")?;
        rt()?.win_set_name(win_id(win)?, n)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_get_name(win: c_int, name: *mut c_char, len: *mut c_int) -> c_int {
    call_win(win, || {
        let n = rt()?.win_get_name(win_id(win)?)?;
        write_str(&n, name, crate::predef::MAX_OBJECT_NAME, len)
    })
}

#[no_mangle]
pub extern "C" fn PMPI_Win_set_info(win: c_int, info: c_int) -> c_int {
    call_win(win, || rt()?.win_set_info(win_id(win)?, crate::info::get(info)?))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_get_info(win: c_int, info: *mut c_int) -> c_int {
    call_win(win, || {
        let dst = out(info, "info_used")?;
        let i = rt()?.win_get_info(win_id(win)?)?;
        *dst = crate::info::insert(i)?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_get_group(win: c_int, group: *mut c_int) -> c_int {
    call_win(win, || {
        let dst = out(group, "group")?;
        *dst = new_group(rt()?.win_group(win_id(win)?)?)?;
        Ok(())
    })
}
