//! Performance-variable sessions and handles. A COUNTER handle starts
//! stopped at zero and accrues only while started: its value is what it
//! held when last stopped (or written) plus what the counter grew since
//! its start, so two tools, or two sessions of one tool, each see their
//! own. Continuous variables (levels, watermarks) are read as they are
//! and cannot be started, stopped, written or reset.

use std::ffi::c_void;
use std::os::raw::c_int;

use super::handles::{self, Kind, ALL_HANDLES};
use super::pvars::{self, Values, PVARS};
use super::{code, entry, out, TResult, Tool};

#[derive(Default)]
pub(crate) struct Session {
    /// Its handles, in allocation order.
    handles: Vec<usize>,
}

pub(crate) struct PvarHandle {
    session: usize,
    index: usize,
    count: usize,
    started: bool,
    /// The counter's values when the handle was last started (or reset
    /// while running).
    base: Vec<u64>,
    /// What accrued before that.
    acc: Vec<u64>,
}

fn counts(v: Values) -> Vec<u64> {
    match v {
        Values::Counts(c) => c,
        Values::Seconds(s) => s.iter().map(|&x| x as u64).collect(),
    }
}

impl PvarHandle {
    fn now(&self) -> Vec<u64> {
        let var = &PVARS[self.index];
        counts(var.read(&pvars::view(var.want()), self.count))
    }

    /// The handle's values now.
    fn value(&self) -> Values {
        let var = &PVARS[self.index];
        if !var.is_counter() {
            return var.read(&pvars::view(var.want()), self.count);
        }
        let mut v = self.acc.clone();
        if self.started {
            for ((v, now), base) in v.iter_mut().zip(self.now()).zip(&self.base) {
                // A kernel counter restarts with a new connection (tcp).
                *v += now.saturating_sub(*base);
            }
        }
        Values::Counts(v)
    }

    fn start(&mut self) -> TResult<()> {
        if !PVARS[self.index].is_counter() {
            return Err(code::PVAR_NO_STARTSTOP);
        }
        if !self.started {
            self.base = self.now();
            self.started = true;
        }
        Ok(())
    }

    fn stop(&mut self) -> TResult<()> {
        if !PVARS[self.index].is_counter() {
            return Err(code::PVAR_NO_STARTSTOP);
        }
        if let Values::Counts(v) = self.value() {
            self.acc = v;
        }
        self.started = false;
        Ok(())
    }

    /// Sets the handle's value to `v` (reset: zero).
    fn set(&mut self, v: Vec<u64>) -> TResult<()> {
        if !PVARS[self.index].is_counter() {
            return Err(code::PVAR_NO_WRITE);
        }
        self.acc = v;
        if self.started {
            self.base = self.now();
        }
        Ok(())
    }
}

fn session_of(t: &Tool, s: *const c_void) -> TResult<usize> {
    let v = s as usize;
    match handles::id_of(s, Kind::Session) {
        Some(_) if t.sessions.contains_key(&v) => Ok(v),
        _ => Err(code::INVALID_SESSION),
    }
}

/// The handle `h` of session `s` (not ALL_HANDLES).
fn handle_of(t: &mut Tool, s: *const c_void, h: *const c_void) -> TResult<&mut PvarHandle> {
    let s = session_of(t, s)?;
    if handles::id_of(h, Kind::Pvar).is_none() {
        return Err(code::INVALID_HANDLE);
    }
    t.pvar_handles.get_mut(&(h as usize)).filter(|p| p.session == s).ok_or(code::INVALID_HANDLE)
}

/// Applies `f` to handle `h` of session `s`, or with ALL_HANDLES to every
/// handle of the session it applies to (`skip`: the error that marks a
/// handle it does not apply to).
fn each(t: &mut Tool, s: *const c_void, h: *const c_void, skip: c_int, f: impl Fn(&mut PvarHandle) -> TResult<()>) -> TResult<()> {
    if h as usize != ALL_HANDLES {
        return f(handle_of(t, s, h)?);
    }
    let s = session_of(t, s)?;
    let hs = t.sessions.get(&s).map(|x| x.handles.clone()).unwrap_or_default();
    for h in hs {
        if let Some(p) = t.pvar_handles.get_mut(&h) {
            match f(p) {
                Err(e) if e == skip => {}
                r => r?,
            }
        }
    }
    Ok(())
}

/// Writes the handle's values to `buf`.
fn write_out(v: &Values, buf: *mut c_void) -> TResult<()> {
    if buf.is_null() {
        return Err(code::ERR_ARG);
    }
    // SAFETY: the caller's buffer holds `count` items of the variable's
    // datatype (MPI_T_pvar_handle_alloc said how many).
    unsafe {
        match v {
            Values::Counts(c) => std::ptr::copy_nonoverlapping(c.as_ptr(), buf.cast::<u64>(), c.len()),
            Values::Seconds(s) => std::ptr::copy_nonoverlapping(s.as_ptr(), buf.cast::<f64>(), s.len()),
        }
    }
    Ok(())
}

#[no_mangle]
pub extern "C" fn PMPI_T_pvar_session_create(session: *mut *mut c_void) -> c_int {
    entry(|t| {
        let s = out(session)?;
        let v = handles::make(Kind::Session, t.next());
        t.sessions.insert(v, Session::default());
        *s = v as *mut c_void;
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn PMPI_T_pvar_session_free(session: *mut *mut c_void) -> c_int {
    entry(|t| {
        let s = out(session)?;
        let v = session_of(t, *s)?;
        if let Some(x) = t.sessions.remove(&v) {
            for h in x.handles {
                t.pvar_handles.remove(&h);
            }
        }
        *s = std::ptr::null_mut();
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn PMPI_T_pvar_handle_alloc(
    session: *mut c_void,
    pvar_index: c_int,
    _obj_handle: *mut c_void,
    handle: *mut *mut c_void,
    count: *mut c_int,
) -> c_int {
    entry(|t| {
        let s = session_of(t, session)?;
        // Every variable is bound to no object: obj_handle is ignored.
        let index = pvars::index(pvar_index)?;
        let (h, c) = (out(handle)?, out(count)?);
        // A per-peer variable's size is the job's: known from MPI_Init on.
        let n = PVARS[index].count().ok_or(code::INVALID)?;
        let v = handles::make(Kind::Pvar, t.next());
        t.pvar_handles.insert(v, PvarHandle { session: s, index, count: n, started: false, base: vec![0; n], acc: vec![0; n] });
        t.sessions.entry(s).or_default().handles.push(v);
        *h = v as *mut c_void;
        *c = c_int::try_from(n).map_err(|_| code::INVALID)?;
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn PMPI_T_pvar_handle_free(session: *mut c_void, handle: *mut *mut c_void) -> c_int {
    entry(|t| {
        let h = out(handle)?;
        handle_of(t, session, *h)?;
        let v = *h as usize;
        t.pvar_handles.remove(&v);
        if let Some(x) = t.sessions.get_mut(&(session as usize)) {
            x.handles.retain(|&k| k != v);
        }
        *h = std::ptr::null_mut();
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn PMPI_T_pvar_start(session: *mut c_void, handle: *mut c_void) -> c_int {
    entry(|t| each(t, session, handle, code::PVAR_NO_STARTSTOP, PvarHandle::start))
}

#[no_mangle]
pub extern "C" fn PMPI_T_pvar_stop(session: *mut c_void, handle: *mut c_void) -> c_int {
    entry(|t| each(t, session, handle, code::PVAR_NO_STARTSTOP, PvarHandle::stop))
}

#[no_mangle]
pub extern "C" fn PMPI_T_pvar_reset(session: *mut c_void, handle: *mut c_void) -> c_int {
    entry(|t| each(t, session, handle, code::PVAR_NO_WRITE, |p| p.set(vec![0; p.count])))
}

#[no_mangle]
pub extern "C" fn PMPI_T_pvar_read(session: *mut c_void, handle: *mut c_void, buf: *mut c_void) -> c_int {
    entry(|t| write_out(&handle_of(t, session, handle)?.value(), buf))
}

#[no_mangle]
pub extern "C" fn PMPI_T_pvar_readreset(session: *mut c_void, handle: *mut c_void, buf: *mut c_void) -> c_int {
    entry(|t| {
        let p = handle_of(t, session, handle)?;
        if !PVARS[p.index].is_counter() {
            return Err(code::PVAR_NO_WRITE);
        }
        write_out(&p.value(), buf)?;
        p.set(vec![0; p.count])
    })
}

#[no_mangle]
pub extern "C" fn PMPI_T_pvar_write(session: *mut c_void, handle: *mut c_void, buf: *const c_void) -> c_int {
    entry(|t| {
        let p = handle_of(t, session, handle)?;
        if !PVARS[p.index].is_counter() {
            return Err(code::PVAR_NO_WRITE);
        }
        if buf.is_null() {
            return Err(code::ERR_ARG);
        }
        // SAFETY: `count` unsigned long longs of the caller's.
        let v = unsafe { std::slice::from_raw_parts(buf.cast::<u64>(), p.count) }.to_vec();
        p.set(v)
    })
}
