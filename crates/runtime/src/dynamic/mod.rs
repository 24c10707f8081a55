//! Dynamic processes (MPI-4.0 chapter 11): ports and accept/connect
//! between jobs started separately, spawning through mpirun, joining over
//! a socket, and the spawned job's parent.
//!
//! Every way in ends the same: the two groups' roots hold a connection
//! that proved a port's secret, and `join::join_groups` makes the
//! inter-communicator. A spawn is an accept on a port of the root's own,
//! whose name travels to the children through mpirun
//! (`WANMPI_PARENT_PORT`); the children connect to it in MPI_Init.
//!
//! Here: ports, accept/connect, join. `join.rs` makes the communicator,
//! `relay.rs` exchanges the joint transport's addresses, `spawn.rs` is both
//! sides of a spawn, `globals.rs` names processes among jobs, `names.rs`
//! is name publishing (in the directory `name_dir.rs` opens).

mod globals;
mod join;
mod name_dir;
mod names;
mod relay;
mod spawn;

use globals::Joined;
pub(crate) use globals::{job_uid, name_key, Global, GLOBAL_LEN};
pub(crate) use spawn::Spawned;

pub use names::ENV_NAME_DIR;

use std::collections::HashMap;
use std::os::fd::{FromRawFd, RawFd};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use wanmpi_bootstrap::port::{self, AcceptError, Port};
use wanmpi_engine::{ErrorClass, MpiError, MpiResult};

use crate::comm::{CommId, COMM_SELF};
use crate::runtime::Runtime;
use join::{Meeting, Side};

/// How long MPI_Comm_accept waits for a connector (seconds).
pub const ENV_ACCEPT_TIMEOUT: &str = "WANMPI_ACCEPT_TIMEOUT";
const DEFAULT_ACCEPT_TIMEOUT: Duration = Duration::from_secs(600);
/// The address a port is named after (default: the address this rank
/// publishes, chosen at init; else loopback).
pub const ENV_PORT_HOST: &str = "WANMPI_PORT_HOST";

/// What a process keeps for dynamic processes.
#[derive(Default)]
pub struct DynamicState {
    ports: Mutex<HashMap<String, Arc<Port>>>,
    parent: Mutex<Option<CommId>>,
    /// From mpirun, taken out of the environment at init.
    pub(crate) spawned: OnceLock<Spawned>,
    /// This job among jobs: equal in all its processes, different from
    /// other jobs' (names processes across jobs; orders groups that merge
    /// with equal `high`).
    pub(crate) job_uid: OnceLock<u64>,
    /// Peers joined from other jobs, in the order they were.
    joins: Mutex<Vec<Joined>>,
    /// The address this rank publishes (`WANMPI_ADDR`, or chosen by route
    /// at init): what other hosts reach it at.
    pub(crate) published_addr: OnceLock<String>,
}

/// A fresh port, named after `WANMPI_PORT_HOST`, else the address this
/// rank publishes (what other hosts reach it at), else loopback; bound in
/// the job's port range.
pub(super) fn new_port(published: Option<&str>) -> Result<Port, String> {
    let advertise = std::env::var(ENV_PORT_HOST)
        .ok()
        .or_else(|| published.map(str::to_string))
        .filter(|a| !a.trim().is_empty())
        .unwrap_or_else(|| "127.0.0.1".into());
    let loopback = advertise.trim().parse::<std::net::IpAddr>().is_ok_and(|a| a.is_loopback());
    let bind = if loopback { "127.0.0.1" } else { "0.0.0.0" };
    let range = wanmpi_bootstrap::PortRange::from_env()?;
    Port::open(bind, advertise.trim(), range).map_err(|e| e.to_string())
}

pub(super) fn port_error(e: impl std::fmt::Display) -> MpiError {
    MpiError::new(ErrorClass::Port, e.to_string())
}

/// A port name as messages show it: `host:port`, never its secret (a
/// string that is no port name, with any secret-like run hidden).
pub(super) fn shown(name: &str) -> String {
    port::PortName::parse(name).map_or_else(|_| format!("{:?}", port::redact(name.trim())), |p| p.redacted())
}

fn accept_timeout() -> MpiResult<Duration> {
    match std::env::var(ENV_ACCEPT_TIMEOUT) {
        Err(_) => Ok(DEFAULT_ACCEPT_TIMEOUT),
        Ok(v) => match v.trim().parse::<f64>() {
            Ok(s) if s.is_finite() && s > 0.0 && s < 1e9 => Ok(Duration::from_secs_f64(s)),
            _ => Err(MpiError::new(ErrorClass::Arg, format!("{ENV_ACCEPT_TIMEOUT}={v:?}: expected a positive number of seconds"))),
        },
    }
}

impl Runtime {
    /// MPI_Open_port (§11.2.2): a port others can MPI_Comm_connect to.
    pub fn open_port(&self) -> MpiResult<String> {
        let p = new_port(self.dynamic.published_addr.get().map(String::as_str)).map_err(port_error)?;
        let name = p.name();
        self.dynamic.ports.lock().unwrap_or_else(|e| e.into_inner()).insert(name.clone(), Arc::new(p));
        Ok(name)
    }

    /// MPI_Close_port.
    pub fn close_port(&self, name: &str) -> MpiResult<()> {
        match self.dynamic.ports.lock().unwrap_or_else(|e| e.into_inner()).remove(name.trim()) {
            Some(_) => Ok(()),
            None => Err(port_error(format!("{} is not a port this process opened", shown(name)))),
        }
    }

    /// MPI_Comm_accept (§11.2.3): collective over `comm`; `port` matters at
    /// `root` only.
    pub fn comm_accept(&self, port: Option<&str>, root: usize, comm: CommId) -> MpiResult<CommId> {
        let link = self.is_root(comm, root)?.then(|| -> Meeting {
            let name = port.ok_or_else(|| port_error("no port name at the root"))?;
            let p = self.dynamic.ports.lock().unwrap_or_else(|e| e.into_inner()).get(name.trim()).cloned();
            let p = p.ok_or_else(|| port_error(format!("{} is not a port this process opened (MPI_Open_port)", shown(name))))?;
            let size = self.comm_size(comm)? as u32;
            p.accept(size, accept_timeout()?, &format!("rank {}", self.rank)).map_err(|e| match e {
                AcceptError::Failed(t) => MpiError::new(ErrorClass::Spawn, t),
                e => port_error(format!("MPI_Comm_accept on port {}: {e}", p.shown())),
            })
        });
        self.join_groups(comm, root, Side::Accept, link, "the job that connected to this one")
    }

    /// MPI_Comm_connect (§11.2.3).
    pub fn comm_connect(&self, port: Option<&str>, root: usize, comm: CommId) -> MpiResult<CommId> {
        self.connect_as(port, root, comm, "the job this one connected to")
    }

    /// MPI_Comm_connect, naming the other group `what` in messages.
    pub(super) fn connect_as(&self, port: Option<&str>, root: usize, comm: CommId, what: &str) -> MpiResult<CommId> {
        let link = self.is_root(comm, root)?.then(|| -> Meeting {
            let name = port.ok_or_else(|| port_error("no port name at the root"))?;
            let size = self.comm_size(comm)? as u32;
            port::connect(name, size, wanmpi_bootstrap::timeout_from_env()).map_err(|e| port_error(format!("MPI_Comm_connect: {e}")))
        });
        self.join_groups(comm, root, Side::Connect, link, what)
    }

    /// MPI_Comm_join (§11.9): the two processes at the ends of the
    /// connected socket `fd` (which stays open). Each opens a port and
    /// sends its name; the smaller name accepts, the other connects.
    pub fn comm_join(&self, fd: RawFd) -> MpiResult<CommId> {
        let mine = self.open_port()?;
        let limit = wanmpi_bootstrap::timeout_from_env();
        let (side, link): (Side, Meeting) = match swap_names(fd, &mine, limit) {
            Err(e) => (Side::Connect, Err(e)),
            Ok(theirs) if mine < theirs => {
                let p = self.dynamic.ports.lock().unwrap_or_else(|e| e.into_inner()).get(&mine).cloned().expect("just opened");
                (Side::Accept, p.accept(1, limit, "MPI_Comm_join").map_err(port_error))
            }
            Ok(theirs) => (Side::Connect, port::connect(&theirs, 1, limit).map_err(port_error)),
        };
        let _ = self.close_port(&mine);
        self.join_groups(COMM_SELF, 0, side, Some(link), "the process joined by MPI_Comm_join")
    }

    /// MPI_Publish_name (see `names`).
    pub fn publish_name(&self, service: &str, port: &str) -> MpiResult<()> {
        names::publish(service, port)
    }

    /// MPI_Lookup_name.
    pub fn lookup_name(&self, service: &str) -> MpiResult<String> {
        names::lookup(service)
    }

    /// MPI_Unpublish_name.
    pub fn unpublish_name(&self, service: &str) -> MpiResult<()> {
        names::unpublish(service)
    }

    /// See `DynamicState::job_uid`.
    pub(crate) fn job_uid(&self) -> u64 {
        self.dynamic.job_uid.get().copied().unwrap_or(0)
    }

    pub(super) fn is_root(&self, comm: CommId, root: usize) -> MpiResult<bool> {
        Ok(self.comm_rank(comm)? == root)
    }
}

/// Sends `mine` over the caller's socket and reads the other end's name.
fn swap_names(fd: RawFd, mine: &str, limit: Duration) -> MpiResult<String> {
    use std::io::{BufRead, BufReader, Write};
    let io = |e: std::io::Error| MpiError::new(ErrorClass::Arg, format!("MPI_Comm_join: the socket: {e}"));
    // SAFETY: the caller's socket, borrowed: ManuallyDrop keeps it open.
    let sock = std::mem::ManuallyDrop::new(unsafe { std::net::TcpStream::from_raw_fd(fd) });
    let s: &std::net::TcpStream = &sock;
    let old = s.read_timeout().map_err(io)?;
    s.set_read_timeout(Some(limit)).map_err(io)?;
    let r = (|| {
        (&*s).write_all(format!("{mine}\n").as_bytes())?;
        // One line each way and nothing after it: a buffered reader takes
        // nothing that belongs to the caller.
        let mut theirs = String::new();
        if BufReader::new(s).read_line(&mut theirs)? == 0 {
            return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "closed before the other end's port name"));
        }
        Ok(theirs.trim().to_string())
    })();
    let _ = s.set_read_timeout(old);
    r.map_err(io)
}
