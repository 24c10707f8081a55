//! The sessions model (MPI-4.0 §11.3), over the one job wanmpi runs: two
//! process sets, "mpi://WORLD" and "mpi://SELF", whose groups are those of
//! MPI_COMM_WORLD and MPI_COMM_SELF; communicators come from them through
//! MPI_Comm_create_from_group. A session started before MPI_Init starts
//! the runtime (MPI_Init after it is then accepted). Errors on a session
//! are returned as codes (its handler is MPI_ERRORS_RETURN unless set).

use std::ffi::c_char;
use std::os::raw::c_int;

use wanmpi_runtime::{ErrorClass, Group, Info, MpiError, COMM_SELF, COMM_WORLD};

use crate::args::{cstr, new_group, out};
use crate::error::{code_of, fail, R, SUCCESS};
use crate::global::{objs, rt};
use crate::predef::{ERRHANDLER_NULL, ERRORS_RETURN, SESSION_NULL};

/// What a session handle holds.
#[derive(Clone)]
pub struct Session {
    errhandler: c_int,
    info: Info,
}

const PSETS: [&str; 2] = ["mpi://WORLD", "mpi://SELF"];

/// Runs `f`, returning its error as a code (a session's default handler).
fn returned(f: impl FnOnce() -> R<()>) -> c_int {
    match f() {
        Ok(()) => SUCCESS,
        Err(e) => code_of(&e),
    }
}

fn session(h: c_int) -> R<Session> {
    objs().sessions.get(h).cloned().ok_or_else(|| MpiError::new(ErrorClass::Session, format!("{h:#x} is not a valid session")))
}

/// The group of a process set, by name (case-insensitive, as MPI allows).
fn pset_group(name: &str) -> R<Group> {
    let rt = rt()?;
    match name.to_ascii_lowercase().as_str() {
        "mpi://world" => rt.comm_group(COMM_WORLD),
        "mpi://self" => rt.comm_group(COMM_SELF),
        _ => fail(ErrorClass::Arg, format!("no process set {name:?} (wanmpi has mpi://WORLD and mpi://SELF)")),
    }
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Session_init(info: c_int, errhandler: c_int, s: *mut c_int) -> c_int {
    returned(|| {
        let o = out(s, "session")?;
        if !crate::global::initialized() {
            crate::env::start_for_session()?;
        }
        let info = if info == crate::predef::INFO_NULL { Info::default() } else { crate::info::get(info)? };
        let errhandler = if errhandler == ERRHANDLER_NULL { ERRORS_RETURN } else { errhandler };
        *o = objs().sessions.insert(Session { errhandler, info }).ok_or_else(|| MpiError::new(ErrorClass::NoMem, "too many sessions"))?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Session_finalize(s: *mut c_int) -> c_int {
    returned(|| {
        let h = out(s, "session")?;
        objs().sessions.remove(*h).ok_or_else(|| MpiError::new(ErrorClass::Session, format!("{:#x} is not a valid session", *h)))?;
        *h = SESSION_NULL;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Session_get_num_psets(s: c_int, _info: c_int, n: *mut c_int) -> c_int {
    returned(|| {
        session(s)?;
        *out(n, "npset_names")? = PSETS.len() as c_int;
        Ok(())
    })
}

/// MPI_Session_get_nth_pset: with `*pset_len` 0 it only says how long the
/// name is (with its terminating NUL); otherwise it copies at most that much.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Session_get_nth_pset(s: c_int, _info: c_int, n: c_int, pset_len: *mut c_int, name: *mut c_char) -> c_int {
    returned(|| {
        session(s)?;
        let len = out(pset_len, "pset_len")?;
        let pset = usize::try_from(n)
            .ok()
            .and_then(|n| PSETS.get(n))
            .ok_or_else(|| MpiError::new(ErrorClass::Arg, format!("process set {n} of {}", PSETS.len())))?;
        let need = pset.len() as c_int + 1;
        if *len <= 0 {
            *len = need;
            return Ok(());
        }
        if name.is_null() {
            return fail(ErrorClass::Arg, "pset_name is a null pointer");
        }
        let copy = (*len as usize).min(need as usize) - 1;
        std::ptr::copy_nonoverlapping(pset.as_ptr(), name as *mut u8, copy);
        *name.add(copy) = 0;
        *len = need;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Session_get_pset_info(s: c_int, name: *const c_char, info: *mut c_int) -> c_int {
    returned(|| {
        session(s)?;
        let o = out(info, "info")?;
        let g = pset_group(cstr(name, "pset_name")?)?;
        let mut i = Info::default();
        i.set("mpi_size", &g.size().to_string())?;
        *o = crate::info::insert(i)?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Session_get_info(s: c_int, info: *mut c_int) -> c_int {
    returned(|| {
        let o = out(info, "info_used")?;
        *o = crate::info::insert(session(s)?.info)?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Group_from_session_pset(s: c_int, name: *const c_char, group: *mut c_int) -> c_int {
    returned(|| {
        session(s)?;
        let o = out(group, "newgroup")?;
        *o = new_group(pset_group(cstr(name, "pset_name")?)?)?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Session_set_errhandler(s: c_int, errhandler: c_int) -> c_int {
    returned(|| {
        session(s)?;
        if let Some(x) = objs().sessions.get_mut(s) {
            x.errhandler = errhandler;
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Session_get_errhandler(s: c_int, errhandler: *mut c_int) -> c_int {
    returned(|| {
        *out(errhandler, "errhandler")? = session(s)?.errhandler;
        Ok(())
    })
}

/// MPI_Session_call_errhandler: the session's handler sees the code (a
/// user handler is called with the session and the code); the call itself
/// succeeds unless the handler ends the job.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Session_call_errhandler(s: c_int, code: c_int) -> c_int {
    let x = match session(s) {
        Ok(x) => x,
        Err(e) => return code_of(&e),
    };
    match x.errhandler {
        ERRORS_RETURN => SUCCESS,
        crate::predef::ERRORS_ARE_FATAL | crate::predef::ERRORS_ABORT => {
            crate::error::raise(crate::predef::COMM_WORLD, MpiError::new(ErrorClass::Session, format!("session error {code}")))
        }
        h => {
            // Copied out first: the handler may call MPI.
            let f = objs().errhs.get(h).copied();
            match f {
                Some(f) => {
                    let (mut s, mut c) = (s, code);
                    f(&mut s, &mut c);
                    SUCCESS
                }
                None => code_of(&MpiError::new(ErrorClass::Arg, format!("{h:#x} is not a valid error handler"))),
            }
        }
    }
}
