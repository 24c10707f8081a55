//! Process creation and management (MPI-4.0 chapter 11): spawning through
//! mpirun, ports between jobs, name publishing, joining over a socket.
//! The work is the runtime's (`wanmpi_runtime`, dynamic/); this file reads
//! C arguments.

use std::ffi::c_char;
use std::os::raw::c_int;

use wanmpi_runtime::{ErrorClass, SpawnApp};

use crate::args::{comm_id, cstr, out, slice, slice_mut, write_str};
use crate::comm::adopt;
use crate::error::{call, fail, R};
use crate::global::rt;
use crate::predef::{COMM_NULL, COMM_WORLD};

const SUCCESS: c_int = 0;

/// MPICH's MPI_MAX_PORT_NAME.
const MAX_PORT_NAME: usize = 256;
/// Room for a published name (MPICH's MPI_MAX_PORT_NAME as well).
const MAX_LOOKUP: usize = 256;

fn root_of(root: c_int, comm: c_int) -> R<usize> {
    let size = rt()?.comm_size(comm_id(comm)?)?;
    usize::try_from(root)
        .ok()
        .filter(|r| *r < size)
        .map_or_else(|| fail(ErrorClass::Root, format!("root {root} is not a rank of a communicator of {size}")), Ok)
}

fn is_root(root: usize, comm: c_int) -> R<bool> {
    Ok(rt()?.comm_rank(comm_id(comm)?)? == root)
}

/// Whether this process is a valid `root` of `comm` (a bad root or
/// communicator: not, and the collective call reports it).
fn at_root(root: c_int, comm: c_int) -> bool {
    root_of(root, comm).and_then(|r| is_root(r, comm)).unwrap_or(false)
}

/// A NULL-terminated argv (MPI_ARGV_NULL is none).
unsafe fn argv(p: *mut *mut c_char) -> R<Vec<String>> {
    let mut v = Vec::new();
    if p.is_null() {
        return Ok(v);
    }
    for i in 0.. {
        // SAFETY: the caller's NULL-terminated array.
        let a = unsafe { *p.add(i) };
        if a.is_null() {
            break;
        }
        v.push(cstr(a, "an argument of argv")?.to_string());
    }
    Ok(v)
}

/// One command of a spawn, from its C arguments (the root's). Info keys
/// read: `wdir`, `host`, `path` (others, such as `soft` or `arch`, are
/// ignored).
unsafe fn app(command: *const c_char, args: *mut *mut c_char, maxprocs: c_int, info: c_int) -> R<SpawnApp> {
    let program = cstr(command, "command")?.to_string();
    if program.is_empty() {
        return fail(ErrorClass::Spawn, "an empty command");
    }
    let count = u32::try_from(maxprocs)
        .ok()
        .filter(|n| *n > 0)
        .map_or_else(|| fail(ErrorClass::Spawn, format!("maxprocs {maxprocs} must be positive")), Ok)?;
    let info = crate::info::get(info)?;
    let word = |k: &str| info.get(k).map(str::to_string).filter(|v| !v.is_empty());
    // SAFETY: forwarded from the caller.
    let args = unsafe { argv(args)? };
    // The `path` info key: directories to look for a bare command in first.
    let program = match word("path") {
        Some(dirs) if !program.contains('/') => dirs
            .split(':')
            .map(|d| std::path::Path::new(d).join(&program))
            .find(|p| p.is_file())
            .map_or(program, |p| p.to_string_lossy().into_owned()),
        _ => program,
    };
    Ok(SpawnApp { program, args, count, wdir: word("wdir"), host: word("host") })
}

/// Fills `errcodes` (when given) for the spawned processes.
unsafe fn codes(errcodes: *mut c_int, n: usize, code: c_int) -> R<()> {
    if !errcodes.is_null() && n > 0 {
        slice_mut(errcodes, n, "array_of_errcodes")?.fill(code);
    }
    Ok(())
}

unsafe fn spawn(apps: Option<R<Vec<SpawnApp>>>, root: c_int, comm: c_int, intercomm: *mut c_int, errcodes: *mut c_int, asked: usize) -> c_int {
    call(comm, || {
        let o = out(intercomm, "intercomm")?;
        *o = COMM_NULL;
        let root = root_of(root, comm)?;
        match rt()?.comm_spawn(apps, root, comm_id(comm)?) {
            Ok(c) => {
                let n = rt()?.comm_peer_size(c)?;
                // SAFETY: the caller gives one code per process asked for
                // (the root's count; elsewhere as many as started).
                unsafe { codes(errcodes, if asked > 0 { asked.min(n) } else { n }, SUCCESS)? };
                *o = adopt(comm, c, false)?;
                Ok(())
            }
            Err(e) => {
                // SAFETY: as above.
                unsafe { codes(errcodes, asked, ErrorClass::Spawn as c_int)? };
                Err(e)
            }
        }
    })
}

/// MPI_Comm_spawn (§11.8.2): mpirun starts `maxprocs` copies of `command`
/// as a job of their own, connected back by an inter-communicator.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_spawn(
    command: *const c_char,
    argv: *mut *mut c_char,
    maxprocs: c_int,
    info: c_int,
    root: c_int,
    comm: c_int,
    intercomm: *mut c_int,
    errcodes: *mut c_int,
) -> c_int {
    let here = at_root(root, comm);
    // SAFETY: the caller's arguments, read at the root only.
    let apps = here.then(|| unsafe { app(command, argv, maxprocs, info) }.map(|a| vec![a]));
    let asked = if here { usize::try_from(maxprocs).unwrap_or(0) } else { 0 };
    // SAFETY: forwarded.
    unsafe { spawn(apps, root, comm, intercomm, errcodes, asked) }
}

/// MPI_Comm_spawn_multiple (§11.8.3): the commands' processes form one
/// job, in order (MPI_APPNUM says which command a process runs).
#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_spawn_multiple(
    count: c_int,
    commands: *mut *mut c_char,
    argvs: *mut *mut *mut c_char,
    maxprocs: *const c_int,
    infos: *const c_int,
    root: c_int,
    comm: c_int,
    intercomm: *mut c_int,
    errcodes: *mut c_int,
) -> c_int {
    let here = at_root(root, comm);
    let mut asked = 0;
    let apps = here.then(|| {
        (|| -> R<Vec<SpawnApp>> {
            let n = usize::try_from(count)
                .ok()
                .filter(|n| *n > 0)
                .map_or_else(|| fail(ErrorClass::Arg, format!("count {count} must be positive")), Ok)?;
            let commands = slice(commands as *const *mut c_char, n, "array_of_commands")?;
            let maxprocs = slice(maxprocs, n, "array_of_maxprocs")?;
            let infos = if infos.is_null() { vec![crate::predef::INFO_NULL; n] } else { slice(infos, n, "array_of_info")?.to_vec() };
            let mut apps = Vec::with_capacity(n);
            for i in 0..n {
                // MPI_ARGVS_NULL: no arguments for any command.
                // SAFETY: the caller's arrays of `n` entries.
                let a = if argvs.is_null() { std::ptr::null_mut() } else { unsafe { *argvs.add(i) } };
                // SAFETY: as above.
                apps.push(unsafe { app(commands[i], a, maxprocs[i], infos[i])? });
            }
            asked = apps.iter().map(|a| a.count as usize).sum();
            Ok(apps)
        })()
    });
    // SAFETY: forwarded.
    unsafe { spawn(apps, root, comm, intercomm, errcodes, asked) }
}

/// MPI_Comm_get_parent (§11.8.2): the inter-communicator to the job that
/// spawned this one, until it is disconnected; MPI_COMM_NULL otherwise.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_get_parent(parent: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        let p = out(parent, "parent")?;
        *p = rt()?.comm_get_parent().map_or(COMM_NULL, crate::args::comm_handle);
        Ok(())
    })
}

/// MPI_Open_port (§11.2.2): a port that another job can connect to; its
/// name carries a secret, so only those it is given to can.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Open_port(_info: c_int, port_name: *mut c_char) -> c_int {
    call(COMM_WORLD, || {
        let name = rt()?.open_port()?;
        write_str(&name, port_name, MAX_PORT_NAME, std::ptr::null_mut())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Close_port(port_name: *const c_char) -> c_int {
    call(COMM_WORLD, || rt()?.close_port(cstr(port_name, "port_name")?))
}

unsafe fn accept_or_connect(port_name: *const c_char, root: c_int, comm: c_int, newcomm: *mut c_int, accept: bool) -> c_int {
    call(comm, || {
        let o = out(newcomm, "newcomm")?;
        *o = COMM_NULL;
        let root = root_of(root, comm)?;
        let name = if is_root(root, comm)? { Some(cstr(port_name, "port_name")?) } else { None };
        let id = comm_id(comm)?;
        let c = if accept { rt()?.comm_accept(name, root, id)? } else { rt()?.comm_connect(name, root, id)? };
        *o = adopt(comm, c, false)?;
        Ok(())
    })
}

/// MPI_Comm_accept (§11.2.3): collective over `comm`, waits (at most
/// WANMPI_ACCEPT_TIMEOUT seconds, 600 by default) for a connecting group.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_accept(port_name: *const c_char, _info: c_int, root: c_int, comm: c_int, newcomm: *mut c_int) -> c_int {
    // SAFETY: forwarded.
    unsafe { accept_or_connect(port_name, root, comm, newcomm, true) }
}

/// MPI_Comm_connect (§11.2.3).
#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_connect(port_name: *const c_char, _info: c_int, root: c_int, comm: c_int, newcomm: *mut c_int) -> c_int {
    // SAFETY: forwarded.
    unsafe { accept_or_connect(port_name, root, comm, newcomm, false) }
}

/// MPI_Comm_join (§11.9): the processes at the two ends of a connected
/// socket.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_join(fd: c_int, intercomm: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        let o = out(intercomm, "intercomm")?;
        *o = COMM_NULL;
        if fd < 0 {
            return fail(ErrorClass::Arg, format!("{fd} is not a socket"));
        }
        let c = rt()?.comm_join(fd)?;
        *o = adopt(crate::predef::COMM_SELF, c, false)?;
        Ok(())
    })
}

/// MPI_Publish_name (§11.2.4): for jobs of this user on this machine.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Publish_name(service: *const c_char, _info: c_int, port_name: *const c_char) -> c_int {
    call(COMM_WORLD, || rt()?.publish_name(cstr(service, "service_name")?, cstr(port_name, "port_name")?))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Lookup_name(service: *const c_char, _info: c_int, port_name: *mut c_char) -> c_int {
    call(COMM_WORLD, || {
        let p = rt()?.lookup_name(cstr(service, "service_name")?)?;
        write_str(&p, port_name, MAX_LOOKUP, std::ptr::null_mut())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Unpublish_name(service: *const c_char, _info: c_int, _port_name: *const c_char) -> c_int {
    call(COMM_WORLD, || rt()?.unpublish_name(cstr(service, "service_name")?))
}
