//! Making and freeing windows (MPI-4.0 §12.2) and their memory: create,
//! allocate, allocate_shared, create_dynamic with attach/detach, free,
//! shared_query. Errors while making a window go to the communicator's
//! handler; the rest to the window's.

use std::ffi::c_void;
use std::os::raw::{c_int, c_long};

use wanmpi_runtime::{ErrorClass, MpiError, WinId};

use super::{call_win, win_id, Consts, WinEntry};
use crate::args::{comm_id, out};
use crate::error::{call, fail, R};
use crate::global::{objs, rt};
use crate::predef::WIN_NULL;

/// MPI_WIN_UNIFIED: the program and RMA see the same memory.
const WIN_UNIFIED: c_int = 2;

fn size_arg(size: c_long) -> R<usize> {
    usize::try_from(size).map_err(|_| MpiError::new(ErrorClass::Size, format!("window size {size} is negative")))
}

fn unit_arg(disp_unit: c_int) -> R<usize> {
    usize::try_from(disp_unit)
        .ok()
        .filter(|&u| u > 0)
        .ok_or_else(|| MpiError::new(ErrorClass::Disp, format!("displacement unit {disp_unit} is not positive")))
}

/// Registers runtime window `id` under a new handle, written to `win`.
fn register(id: WinId, win: *mut c_int) -> R<()> {
    let r = rt()?;
    let a = r.win_attrs(id)?;
    let consts = Box::new(Consts { size: a.size as isize, disp_unit: a.disp_unit as c_int, flavor: a.flavor as c_int, model: WIN_UNIFIED });
    let entry = WinEntry { id, base: a.base, errh: crate::predef::ERRORS_ARE_FATAL, consts, attrs: Default::default() };
    let h = objs().wins.insert(entry).ok_or_else(|| MpiError::new(ErrorClass::NoMem, "too many windows"))?;
    *out(win, "win")? = h;
    // A target must answer while the program computes (passive target).
    r.ensure_progress_thread();
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_create(base: *mut c_void, size: c_long, disp_unit: c_int, info: c_int, comm: c_int, win: *mut c_int) -> c_int {
    call(comm, || {
        out(win, "win")?;
        let (size, unit) = (size_arg(size)?, unit_arg(disp_unit)?);
        if base.is_null() && size > 0 {
            return fail(ErrorClass::Base, "a window of non-zero size needs a base address");
        }
        let id = rt()?.win_create(base as usize, size, unit, crate::info::get(info)?, comm_id(comm)?)?;
        register(id, win)
    })
}

unsafe fn allocate(size: c_long, disp_unit: c_int, info: c_int, comm: c_int, baseptr: *mut c_void, win: *mut c_int, shared: bool) -> c_int {
    call(comm, || {
        out(win, "win")?;
        let base = out(baseptr as *mut *mut c_void, "baseptr")?;
        let (size, unit) = (size_arg(size)?, unit_arg(disp_unit)?);
        let (r, info, c) = (rt()?, crate::info::get(info)?, comm_id(comm)?);
        let (id, addr) = if shared { r.win_allocate_shared(size, unit, info, c)? } else { r.win_allocate(size, unit, info, c)? };
        *base = addr as *mut c_void;
        register(id, win)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_allocate(size: c_long, disp_unit: c_int, info: c_int, comm: c_int, baseptr: *mut c_void, win: *mut c_int) -> c_int {
    allocate(size, disp_unit, info, comm, baseptr, win, false)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_allocate_shared(
    size: c_long,
    disp_unit: c_int,
    info: c_int,
    comm: c_int,
    baseptr: *mut c_void,
    win: *mut c_int,
) -> c_int {
    allocate(size, disp_unit, info, comm, baseptr, win, true)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_create_dynamic(info: c_int, comm: c_int, win: *mut c_int) -> c_int {
    call(comm, || {
        out(win, "win")?;
        let id = rt()?.win_create_dynamic(crate::info::get(info)?, comm_id(comm)?)?;
        register(id, win)
    })
}

/// MPI_Win_free: the window's attributes are deleted (their delete
/// callbacks run), then the runtime frees it collectively.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_free(win: *mut c_int) -> c_int {
    let h = if win.is_null() { WIN_NULL } else { *win };
    call_win(h, || {
        let w = out(win, "win")?;
        let id = win_id(*w)?;
        super::attr::delete_all(*w)?;
        rt()?.win_free(id)?;
        objs().wins.remove(*w);
        *w = WIN_NULL;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_attach(win: c_int, base: *mut c_void, size: c_long) -> c_int {
    call_win(win, || {
        let size = size_arg(size)?;
        if base.is_null() && size > 0 {
            return fail(ErrorClass::RmaAttach, "cannot attach memory at a null address");
        }
        rt()?.win_attach(win_id(win)?, base as usize, size)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_detach(win: c_int, base: *const c_void) -> c_int {
    call_win(win, || rt()?.win_detach(win_id(win)?, base as usize))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_shared_query(win: c_int, rank: c_int, size: *mut c_long, disp_unit: *mut c_int, baseptr: *mut c_void) -> c_int {
    call_win(win, || {
        let (s, u, b) = (out(size, "size")?, out(disp_unit, "disp_unit")?, out(baseptr as *mut *mut c_void, "baseptr")?);
        let (sz, unit, addr) = rt()?.win_shared_query(win_id(win)?, rank)?;
        (*s, *u, *b) = (sz as c_long, unit as c_int, addr as *mut c_void);
        Ok(())
    })
}

/// The `_c` forms take the displacement unit as MPI_Aint: `f` runs with
/// it as an int, or the call fails through `comm`'s handler.
fn unit_c(disp_unit: c_long, comm: c_int, f: impl FnOnce(c_int) -> c_int) -> c_int {
    match c_int::try_from(disp_unit) {
        Ok(u) => f(u),
        Err(_) => call(comm, || fail(ErrorClass::Disp, format!("displacement unit {disp_unit} does not fit an int"))),
    }
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_create_c(base: *mut c_void, size: c_long, disp_unit: c_long, info: c_int, comm: c_int, win: *mut c_int) -> c_int {
    unit_c(disp_unit, comm, |u| PMPI_Win_create(base, size, u, info, comm, win))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_allocate_c(
    size: c_long,
    disp_unit: c_long,
    info: c_int,
    comm: c_int,
    baseptr: *mut c_void,
    win: *mut c_int,
) -> c_int {
    unit_c(disp_unit, comm, |u| allocate(size, u, info, comm, baseptr, win, false))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_allocate_shared_c(
    size: c_long,
    disp_unit: c_long,
    info: c_int,
    comm: c_int,
    baseptr: *mut c_void,
    win: *mut c_int,
) -> c_int {
    unit_c(disp_unit, comm, |u| allocate(size, u, info, comm, baseptr, win, true))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_shared_query_c(win: c_int, rank: c_int, size: *mut c_long, disp_unit: *mut c_long, baseptr: *mut c_void) -> c_int {
    call_win(win, || {
        let (s, u, b) = (out(size, "size")?, out(disp_unit, "disp_unit")?, out(baseptr as *mut *mut c_void, "baseptr")?);
        let (sz, unit, addr) = rt()?.win_shared_query(win_id(win)?, rank)?;
        (*s, *u, *b) = (sz as c_long, unit as c_long, addr as *mut c_void);
        Ok(())
    })
}
