//! Control variables: wanmpi's knobs with the environment variables that
//! set them (mpirun's flags export those). All are read-only once MPI is
//! running except the eager limit of this process's sends, which a tool
//! may lower (and restore) at run time (`Engine::set_eager_limit`).

use std::ffi::{c_char, c_void};
use std::os::raw::c_int;

use wanmpi_runtime::{RuntimeOptions, WanPeers};

use super::consts::*;
use super::enums::EnumId;
use super::handles::{self, Kind};
use super::strings::{in_str, put_str};
use super::{code, entry, out, put, TResult};

/// How a control variable's value is laid out in the caller's buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ty {
    /// One C int (MPI_INT).
    Int,
    /// One unsigned long long (MPI_UNSIGNED_LONG_LONG).
    U64,
    /// A NUL-terminated string in a buffer of `STR_COUNT` chars (MPI_CHAR).
    Str,
}

/// The buffer a string variable needs, in chars, NUL included.
pub(super) const STR_COUNT: c_int = 256;

pub(super) const MPI_INT: c_int = 0x4c00_0405;
pub(super) const MPI_UNSIGNED_LONG_LONG: c_int = 0x4c00_0819;
pub(super) const MPI_CHAR: c_int = 0x4c00_0101;
pub(super) const MPI_DOUBLE: c_int = 0x4c00_080b;

impl Ty {
    pub(super) fn datatype(self) -> c_int {
        match self {
            Ty::Int => MPI_INT,
            Ty::U64 => MPI_UNSIGNED_LONG_LONG,
            Ty::Str => MPI_CHAR,
        }
    }
    fn count(self) -> c_int {
        if self == Ty::Str {
            STR_COUNT
        } else {
            1
        }
    }
}

pub(super) struct Cvar {
    pub name: &'static str,
    pub desc: &'static str,
    pub ty: Ty,
    pub scope: c_int,
    pub verbosity: c_int,
    pub enumtype: Option<EnumId>,
}

const fn cvar(name: &'static str, desc: &'static str, ty: Ty, scope: c_int, verbosity: c_int) -> Cvar {
    Cvar { name, desc, ty, scope, verbosity, enumtype: None }
}

/// Every control variable, by index (categories name them by index too).
pub(super) const CVARS: &[Cvar] = &[
    cvar(
        "wanmpi_eager_limit",
        "Messages up to this many bytes are sent eagerly (WANMPI_EAGER_LIMIT, default 65536). Writable at run time, per process, from 0 up to the value the job started with (receivers accept eager messages up to that).",
        Ty::Int,
        SCOPE_LOCAL,
        VERBOSITY_TUNER_BASIC,
    ),
    cvar("wanmpi_recv_credits", "1: a posted long receive is announced to its source, which may then send without a rendezvous round trip (WANMPI_RECV_CREDITS, default 1).", Ty::Int, SCOPE_READONLY, VERBOSITY_TUNER_DETAIL),
    cvar("wanmpi_shm_cma_from", "Long messages of at least this many bytes to a rank of this host may go by single copy (WANMPI_SHM_CMA_FROM, default 1048576).", Ty::U64, SCOPE_READONLY, VERBOSITY_TUNER_DETAIL),
    cvar("wanmpi_wan_window", "Bytes of receive buffer granted to each far peer for long messages sent before their receive is posted (WANMPI_WAN_WINDOW, default 16 MiB; 0: off).", Ty::U64, SCOPE_READONLY, VERBOSITY_TUNER_BASIC),
    cvar("wanmpi_wan_buffer", "All far peers' WAN windows together at most, in bytes (WANMPI_WAN_BUFFER, default 64 MiB).", Ty::U64, SCOPE_READONLY, VERBOSITY_TUNER_DETAIL),
    Cvar { enumtype: Some(EnumId::WanPeers), ..cvar("wanmpi_wan_peers", "Which peers get a WAN window: far (measured at least 2 ms away), all, none (WANMPI_WAN_PEERS, default far).", Ty::Int, SCOPE_READONLY, VERBOSITY_TUNER_DETAIL) },
    cvar("wanmpi_outage_limit", "Seconds a path may stay silent before its peer counts as lost (WANMPI_OUTAGE_LIMIT, mpirun --outage-limit, default 600).", Ty::U64, SCOPE_READONLY, VERBOSITY_USER_DETAIL),
    cvar("wanmpi_transport", "The transport of this process: auto (shm, tcp within a site, the WAN transport between sites), tcp, sctp, wamp, adaptive, shm (WANMPI_TRANSPORT, mpirun --transport, default auto).", Ty::Str, SCOPE_READONLY, VERBOSITY_USER_BASIC),
    cvar("wanmpi_wamp_fec", "wamp's forward error correction: auto, off, or K:M repair packets per K data packets (WANMPI_WAMP_FEC, default auto).", Ty::Str, SCOPE_READONLY, VERBOSITY_TUNER_DETAIL),
    Cvar { enumtype: Some(EnumId::ProgressThread), ..cvar("wanmpi_progress_thread", "Whether a progress thread runs: off, on, or auto (the transport's choice: on with a far wamp or sctp peer) (WANMPI_PROGRESS_THREAD unset, 0 or 1).", Ty::Int, SCOPE_READONLY, VERBOSITY_TUNER_BASIC) },
    cvar("wanmpi_progress_interval_us", "Microseconds the idle progress thread sleeps on the transport (WANMPI_PROGRESS_INTERVAL_US, default 1000).", Ty::U64, SCOPE_READONLY, VERBOSITY_TUNER_DETAIL),
    cvar("wanmpi_spin_rounds", "Progress rounds a blocking call spins before it sleeps (WANMPI_SPIN_ROUNDS, default 2000).", Ty::Int, SCOPE_READONLY, VERBOSITY_TUNER_DETAIL),
    cvar("wanmpi_tolerate_rank_failure", "1: a lost rank fails only the operations that involve it (WANMPI_TOLERATE_RANK_FAILURE, mpirun --tolerate-rank-failure).", Ty::Int, SCOPE_READONLY, VERBOSITY_USER_BASIC),
    cvar("wanmpi_stats", "1: the engine's and transports' counters are printed at MPI_Finalize (WANMPI_STATS).", Ty::Int, SCOPE_READONLY, VERBOSITY_USER_DETAIL),
];

/// Index of `wanmpi_eager_limit`, the writable one.
const EAGER_LIMIT: usize = 0;

/// A control variable's value now.
enum Value {
    Int(i64),
    Str(String),
}

/// The options in force: the running runtime's, else what the environment
/// says now (before MPI_Init), else the defaults.
fn options() -> RuntimeOptions {
    match crate::global::rt_any() {
        Some(rt) => rt.options().clone(),
        None => RuntimeOptions::from_env().unwrap_or_default(),
    }
}

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).map(|v| v.trim().to_string()).unwrap_or_else(|_| default.to_string())
}

fn value(i: usize) -> Value {
    let o = options();
    let live = crate::global::rt_any();
    match CVARS[i].name {
        "wanmpi_eager_limit" => Value::Int(live.map_or(o.engine.eager_limit, |rt| rt.eager_limit()) as i64),
        "wanmpi_recv_credits" => Value::Int(i64::from(o.engine.recv_credits)),
        "wanmpi_shm_cma_from" => Value::Int(o.engine.single_copy_from as i64),
        "wanmpi_wan_window" => Value::Int(o.wan_window as i64),
        "wanmpi_wan_buffer" => Value::Int(o.wan_buffer as i64),
        "wanmpi_wan_peers" => Value::Int(match o.wan_peers {
            WanPeers::Far => 0,
            WanPeers::All => 1,
            WanPeers::None => 2,
        }),
        "wanmpi_outage_limit" => Value::Int(wanmpi_transport::outage::limit_from_env().unwrap_or(wanmpi_transport::outage::DEFAULT).as_secs() as i64),
        "wanmpi_transport" => Value::Str(live.map_or_else(|| env_or("WANMPI_TRANSPORT", "auto"), |rt| rt.transport_name().to_string())),
        "wanmpi_wamp_fec" => Value::Str(env_or("WANMPI_WAMP_FEC", "auto")),
        "wanmpi_progress_thread" => Value::Int(match o.progress_thread {
            Some(false) => 0,
            Some(true) => 1,
            None => 2,
        }),
        "wanmpi_progress_interval_us" => Value::Int(o.progress_interval.as_micros() as i64),
        "wanmpi_spin_rounds" => Value::Int(i64::from(o.spin_rounds)),
        "wanmpi_tolerate_rank_failure" => Value::Int(i64::from(o.tolerate_rank_failure)),
        "wanmpi_stats" => Value::Int(i64::from(o.print_stats)),
        _ => Value::Int(0),
    }
}

fn index(i: c_int) -> TResult<usize> {
    usize::try_from(i).ok().filter(|&i| i < CVARS.len()).ok_or(code::INVALID_INDEX)
}

/// The cvar index behind handle `h`.
fn handle(t: &super::Tool, h: *const c_void) -> TResult<usize> {
    handles::id_of(h, Kind::Cvar).and_then(|_| t.cvar_handles.get(&(h as usize)).copied()).ok_or(code::INVALID_HANDLE)
}

#[no_mangle]
pub extern "C" fn PMPI_T_cvar_get_num(num: *mut c_int) -> c_int {
    entry(|_| {
        *out(num)? = CVARS.len() as c_int;
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn PMPI_T_cvar_get_info(
    cvar_index: c_int,
    name: *mut c_char,
    name_len: *mut c_int,
    verbosity: *mut c_int,
    datatype: *mut c_int,
    enumtype: *mut *mut c_void,
    desc: *mut c_char,
    desc_len: *mut c_int,
    bind: *mut c_int,
    scope: *mut c_int,
) -> c_int {
    entry(|_| {
        let v = &CVARS[index(cvar_index)?];
        put_str(v.name, name, name_len);
        put(verbosity, v.verbosity);
        put(datatype, v.ty.datatype());
        put(enumtype, v.enumtype.map_or(std::ptr::null_mut(), |e| e.handle()));
        put_str(v.desc, desc, desc_len);
        put(bind, BIND_NO_OBJECT);
        put(scope, v.scope);
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn PMPI_T_cvar_get_index(name: *const c_char, cvar_index: *mut c_int) -> c_int {
    entry(|_| {
        let name = in_str(name)?;
        let out = out(cvar_index)?;
        *out = CVARS.iter().position(|v| v.name == name).ok_or(code::INVALID_NAME)? as c_int;
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn PMPI_T_cvar_handle_alloc(cvar_index: c_int, _obj_handle: *mut c_void, handle: *mut *mut c_void, count: *mut c_int) -> c_int {
    entry(|t| {
        // Every variable is bound to no object: obj_handle is ignored.
        let i = index(cvar_index)?;
        let (h, c) = (out(handle)?, out(count)?);
        let id = t.next();
        let v = handles::make(Kind::Cvar, id);
        t.cvar_handles.insert(v, i);
        *h = v as *mut c_void;
        *c = CVARS[i].ty.count();
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn PMPI_T_cvar_handle_free(handle: *mut *mut c_void) -> c_int {
    entry(|t| {
        let h = out(handle)?;
        self::handle(t, *h)?;
        t.cvar_handles.remove(&(*h as usize));
        *h = std::ptr::null_mut();
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn PMPI_T_cvar_read(handle: *mut c_void, buf: *mut c_void) -> c_int {
    entry(|t| {
        let i = self::handle(t, handle)?;
        if buf.is_null() {
            return Err(code::ERR_ARG);
        }
        match (CVARS[i].ty, value(i)) {
            // SAFETY: the caller's buffer holds `count` items of the
            // variable's datatype (MPI_T_cvar_handle_alloc said which).
            (Ty::Int, Value::Int(v)) => unsafe { *buf.cast::<c_int>() = c_int::try_from(v).unwrap_or(c_int::MAX) },
            (Ty::U64, Value::Int(v)) => unsafe { *buf.cast::<u64>() = v as u64 },
            (Ty::Str, Value::Str(s)) => {
                let mut len = STR_COUNT;
                put_str(&s, buf.cast::<c_char>(), &mut len);
            }
            _ => return Err(code::ERR_INTERN),
        }
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn PMPI_T_cvar_write(handle: *mut c_void, buf: *const c_void) -> c_int {
    entry(|t| {
        let i = self::handle(t, handle)?;
        if buf.is_null() {
            return Err(code::ERR_ARG);
        }
        if i != EAGER_LIMIT {
            return Err(code::CVAR_SET_NEVER);
        }
        // SAFETY: one int, the variable's datatype.
        let v = unsafe { *buf.cast::<c_int>() };
        let rt = match crate::global::rt_any() {
            Some(rt) if !crate::global::finalized() => rt,
            // Before MPI_Init there is no engine to tell; after MPI_Finalize none left.
            _ => return Err(code::CVAR_SET_NOT_NOW),
        };
        let v = usize::try_from(v).map_err(|_| code::INVALID)?;
        rt.set_eager_limit(v).map_err(|_| code::INVALID)
    })
}
