//! Synchronisation calls (MPI-4.0 §12.5): MPI_Win_fence, the PSCW calls,
//! MPI_Win_lock/unlock(_all), MPI_Win_flush(_local)(_all), MPI_Win_sync.

use std::os::raw::c_int;

use wanmpi_runtime::{ErrorClass, LockType, MpiError, MODE_NOCHECK, MODE_NOPRECEDE, MODE_NOPUT, MODE_NOSTORE, MODE_NOSUCCEED};

use super::{call_win, win_id};
use crate::args::{group, out};
use crate::error::R;
use crate::global::rt;
use crate::predef::PROC_NULL;

/// An assert argument: a bitwise or of the MPI_MODE_* values.
fn assert_arg(a: c_int) -> R<c_int> {
    let all = MODE_NOCHECK | MODE_NOSTORE | MODE_NOPUT | MODE_NOPRECEDE | MODE_NOSUCCEED;
    if a & !all != 0 {
        return Err(MpiError::new(ErrorClass::Assert, format!("assert {a:#x} has bits that are not MPI_MODE_* values")));
    }
    Ok(a)
}

#[no_mangle]
pub extern "C" fn PMPI_Win_fence(assert: c_int, win: c_int) -> c_int {
    call_win(win, || rt()?.win_fence(win_id(win)?, assert_arg(assert)?))
}

#[no_mangle]
pub extern "C" fn PMPI_Win_lock(lock_type: c_int, rank: c_int, assert: c_int, win: c_int) -> c_int {
    call_win(win, || {
        let t = match lock_type {
            234 => LockType::Exclusive,
            235 => LockType::Shared,
            _ => return Err(MpiError::new(ErrorClass::Locktype, format!("{lock_type} is neither MPI_LOCK_EXCLUSIVE nor MPI_LOCK_SHARED"))),
        };
        let (r, id) = (rt()?, win_id(win)?);
        if rank == PROC_NULL {
            return Ok(());
        }
        r.win_lock(id, t, rank, assert_arg(assert)?)
    })
}

#[no_mangle]
pub extern "C" fn PMPI_Win_unlock(rank: c_int, win: c_int) -> c_int {
    call_win(win, || {
        let id = win_id(win)?;
        if rank == PROC_NULL {
            return Ok(());
        }
        rt()?.win_unlock(id, rank)
    })
}

#[no_mangle]
pub extern "C" fn PMPI_Win_lock_all(assert: c_int, win: c_int) -> c_int {
    call_win(win, || rt()?.win_lock_all(win_id(win)?, assert_arg(assert)?))
}

#[no_mangle]
pub extern "C" fn PMPI_Win_unlock_all(win: c_int) -> c_int {
    call_win(win, || rt()?.win_unlock_all(win_id(win)?))
}

fn flush(win: c_int, rank: Option<c_int>, local: bool) -> c_int {
    call_win(win, || {
        let id = win_id(win)?;
        if rank == Some(PROC_NULL) {
            return Ok(());
        }
        if local {
            rt()?.win_flush_local(id, rank)
        } else {
            rt()?.win_flush(id, rank)
        }
    })
}

#[no_mangle]
pub extern "C" fn PMPI_Win_flush(rank: c_int, win: c_int) -> c_int {
    flush(win, Some(rank), false)
}

#[no_mangle]
pub extern "C" fn PMPI_Win_flush_local(rank: c_int, win: c_int) -> c_int {
    flush(win, Some(rank), true)
}

#[no_mangle]
pub extern "C" fn PMPI_Win_flush_all(win: c_int) -> c_int {
    flush(win, None, false)
}

#[no_mangle]
pub extern "C" fn PMPI_Win_flush_local_all(win: c_int) -> c_int {
    flush(win, None, true)
}

#[no_mangle]
pub extern "C" fn PMPI_Win_sync(win: c_int) -> c_int {
    call_win(win, || rt()?.win_sync(win_id(win)?))
}

#[no_mangle]
pub extern "C" fn PMPI_Win_post(grp: c_int, assert: c_int, win: c_int) -> c_int {
    call_win(win, || rt()?.win_post(win_id(win)?, &*group(grp)?, assert_arg(assert)?))
}

#[no_mangle]
pub extern "C" fn PMPI_Win_start(grp: c_int, assert: c_int, win: c_int) -> c_int {
    call_win(win, || rt()?.win_start(win_id(win)?, &*group(grp)?, assert_arg(assert)?))
}

#[no_mangle]
pub extern "C" fn PMPI_Win_complete(win: c_int) -> c_int {
    call_win(win, || rt()?.win_complete(win_id(win)?))
}

#[no_mangle]
pub extern "C" fn PMPI_Win_wait(win: c_int) -> c_int {
    call_win(win, || rt()?.win_wait(win_id(win)?, true).map(|_| ()))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_test(win: c_int, flag: *mut c_int) -> c_int {
    call_win(win, || {
        let f = out(flag, "flag")?;
        *f = rt()?.win_wait(win_id(win)?, false)? as c_int;
        Ok(())
    })
}
