//! Environment management (MPI-3.1 chapter 8, §12.4 for threads).

use std::ffi::{c_char, c_void};
use std::os::raw::c_int;

use wanmpi_runtime::{ErrorClass, Runtime};

use crate::args::{out, write_str};
use crate::error::{call, code_of, fail, SUCCESS};
use crate::global::{self, rt, rt_any, MAIN_THREAD, THREAD_LEVEL};
use crate::predef::{self, COMM_WORLD};

pub const LIBRARY_VERSION: &str = concat!("wanmpi ", env!("CARGO_PKG_VERSION"), " (MPI 4.0, MPICH ABI)");

/// A session started the runtime before MPI_Init: MPI_Init then only sets
/// the thread level (the world model joins the running runtime).
static STARTED_BY_SESSION: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Starts the runtime for MPI_Session_init when MPI_Init has not run.
pub(crate) fn start_for_session() -> crate::error::R<()> {
    Runtime::init().and_then(global::install)?;
    let _ = MAIN_THREAD.set(std::thread::current().id());
    THREAD_LEVEL.store(predef::THREAD_MULTIPLE, std::sync::atomic::Ordering::SeqCst);
    STARTED_BY_SESSION.store(true, std::sync::atomic::Ordering::SeqCst);
    Ok(())
}

fn init(required: c_int) -> c_int {
    if global::initialized() {
        if STARTED_BY_SESSION.swap(false, std::sync::atomic::Ordering::SeqCst) {
            THREAD_LEVEL.store(required.clamp(predef::THREAD_SINGLE, predef::THREAD_MULTIPLE), std::sync::atomic::Ordering::SeqCst);
            return SUCCESS;
        }
        return code_of(&wanmpi_runtime::MpiError::new(ErrorClass::Other, "MPI_Init called twice"));
    }
    match Runtime::init().and_then(global::install) {
        Ok(()) => {
            let _ = MAIN_THREAD.set(std::thread::current().id());
            // One lock guards the runtime and blocking waits release it, so
            // any level up to MPI_THREAD_MULTIPLE is honoured.
            THREAD_LEVEL.store(required.clamp(predef::THREAD_SINGLE, predef::THREAD_MULTIPLE), std::sync::atomic::Ordering::SeqCst);
            SUCCESS
        }
        Err(e) => {
            // No communicator exists yet: the default handler is fatal.
            eprintln!("wanmpi: MPI_Init failed: {e}");
            std::process::exit(1);
        }
    }
}

#[no_mangle]
pub extern "C" fn PMPI_Init(_argc: *mut c_int, _argv: *mut *mut *mut c_char) -> c_int {
    init(predef::THREAD_SINGLE)
}

#[no_mangle]
pub extern "C" fn PMPI_Init_thread(_argc: *mut c_int, _argv: *mut *mut *mut c_char, required: c_int, provided: *mut c_int) -> c_int {
    if provided.is_null() {
        return code_of(&wanmpi_runtime::MpiError::new(ErrorClass::Arg, "provided is a null pointer"));
    }
    let r = init(required);
    // SAFETY: checked non-null.
    unsafe { *provided = THREAD_LEVEL.load(std::sync::atomic::Ordering::SeqCst) };
    r
}

#[no_mangle]
pub extern "C" fn PMPI_Initialized(flag: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        *out(flag, "flag")? = c_int::from(global::initialized());
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn PMPI_Finalized(flag: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        *out(flag, "flag")? = c_int::from(global::finalized());
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn PMPI_Finalize() -> c_int {
    call(COMM_WORLD, || {
        let r = rt()?;
        r.finalize()?;
        global::set_finalized();
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn PMPI_Abort(_comm: c_int, errorcode: c_int) -> c_int {
    match rt_any() {
        Some(r) => r.abort(errorcode, ""),
        None => std::process::exit(if errorcode == 0 { 1 } else { errorcode }),
    }
}

#[no_mangle]
pub extern "C" fn PMPI_Query_thread(provided: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        *out(provided, "provided")? = THREAD_LEVEL.load(std::sync::atomic::Ordering::SeqCst);
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn PMPI_Is_thread_main(flag: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        let main = MAIN_THREAD.get().copied();
        *out(flag, "flag")? = c_int::from(main == Some(std::thread::current().id()));
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn PMPI_Get_version(version: *mut c_int, subversion: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        *out(version, "version")? = 4;
        *out(subversion, "subversion")? = 0;
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn PMPI_Get_library_version(version: *mut c_char, resultlen: *mut c_int) -> c_int {
    call(COMM_WORLD, || write_str(LIBRARY_VERSION, version, predef::MAX_LIBRARY_VERSION_STRING, resultlen))
}

pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr() as *mut c_char, buf.len()) };
    if rc != 0 {
        return "localhost".into();
    }
    let n = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

#[no_mangle]
pub extern "C" fn PMPI_Get_processor_name(name: *mut c_char, resultlen: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        out(resultlen, "resultlen")?;
        write_str(&hostname(), name, predef::MAX_PROCESSOR_NAME, resultlen)
    })
}

#[no_mangle]
pub extern "C" fn PMPI_Wtime() -> f64 {
    match rt_any() {
        Some(r) => r.wtime(),
        None => std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64()),
    }
}

#[no_mangle]
pub extern "C" fn PMPI_Wtick() -> f64 {
    1e-9
}

#[no_mangle]
pub extern "C" fn PMPI_Alloc_mem(size: libc::c_long, _info: c_int, baseptr: *mut c_void) -> c_int {
    call(COMM_WORLD, || {
        let Ok(n) = usize::try_from(size) else { return fail(ErrorClass::Arg, format!("size {size} is negative")) };
        let p = out(baseptr as *mut *mut c_void, "baseptr")?;
        // SAFETY: plain allocation; freed by MPI_Free_mem.
        let m = unsafe { libc::malloc(n.max(1)) };
        if m.is_null() {
            return fail(ErrorClass::NoMem, format!("could not allocate {n} bytes"));
        }
        *p = m;
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn PMPI_Free_mem(base: *mut c_void) -> c_int {
    // SAFETY: memory from MPI_Alloc_mem (malloc), or null.
    unsafe { libc::free(base) };
    SUCCESS
}

/// MPI_Pcontrol: profiling control; the library itself ignores it.
#[no_mangle]
pub extern "C" fn PMPI_Pcontrol(_level: c_int) -> c_int {
    SUCCESS
}
